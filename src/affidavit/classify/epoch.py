"""The label epoch: which sensitivity policy a chunk's label was computed under.

Every chunk is stored with the epoch of the policy that labelled it, and every read made
for a caller or a model admits only chunks of the reader's current epoch (the filter sits
inside the store query, beside the label and ACL filters). So a policy change — a new
RESTRICTED keyword, a detector moved to another label — is in force on the very next
request: chunks labelled under the old policy are not served until they are re-labelled
from their stored blob (:mod:`affidavit.ingest.relabel`, run at the start of every ingestion run).
"""

from __future__ import annotations

from affidavit.config.settings import SensitivitySettings
from affidavit.policy.policy import SensitivityPolicy
from affidavit.records import canonical_json, stable_hash

LABEL_RULES_VERSION = "1"
"""Bump when the classifier's code changes what label a paragraph gets for one policy
(a new detector, a different text normaliser): every stored label becomes stale."""


def label_epoch(settings: SensitivitySettings) -> str:
    """A short, stable id of the labelling rules in force under ``settings``."""
    policy = SensitivityPolicy.from_settings(settings)
    # The classifier model and its prompt, and the inherited labels, decide labels too:
    # changing any of them requalifies every chunk. Left out when unused, so a deployment
    # without them keeps its epoch.
    parts = [LABEL_RULES_VERSION, policy.fingerprint]
    if settings.model.enabled:
        from affidavit.classify.model import classifier_identity

        parts.extend(("model", *classifier_identity(settings.model, policy)))
    if settings.inherit:
        parts.extend(("inherit", canonical_json(dict(sorted(settings.inherit.items())))))
    return stable_hash("label-epoch", *parts)[:16]
