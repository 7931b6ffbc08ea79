"""The epochs a derived artifact depends on, made explicit and recorded.

Five things decide what ingestion derives from a document's stored bytes, and each is an
epoch: the ``policy`` (sensitivity rules, chunking, ACL default, SIRE, tokenizer and caps:
:func:`affidavit.ingest.run.policy_epoch`, whose ``label`` part every chunk carries), the
record ``schema``, the identity ``resolver``, the ``embedding_model`` vectors are computed
with and the classifier's ``prompt_template``. A version's witness hashes its raw digest
with all but the embedding model; a vector is keyed by its model.

Each ingestion run and each requalification records the vector in force in the policy
audit trail when it differs from the last one recorded (``epochs.recorded``), so the
requalification planner can say which epoch changed since the corpus was derived.

Serving checks the whole family through one key. Every chunk row carries the
:func:`serving_epoch` it was derived under (in its ``label_epoch`` column: the key refines
the label epoch, which is one of its parts), and every read made for a caller or a model
pins the reader's current key in the same SQL predicate as the label and ACL filters
(``AuthzContext.label_epoch``). A change of policy, schema, resolver or classifier prompt
therefore withholds every chunk derived before it, with its SIRE record (consulted only
for served chunks), until requalification derives it again or marks it current. Vectors
are keyed by their embedding model, and a search reads only the current model's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from affidavit.audit.events import EPOCHS_RECORDED, record_policy_event
from affidavit.classify.epoch import label_epoch
from affidavit.config.settings import Settings
from affidavit.policy.policy import SensitivityPolicy
from affidavit.records import SCHEMA_VERSION, canonical_json, stable_hash
from affidavit.store.protocol import Store
from affidavit.text.tokenize import Tokenizer

RESOLVER_VERSION = "1"
"""Bump when the identity resolver's code changes which node a document is."""
RETRIEVAL_TIME_SIRE = frozenset({"default_excludes", "require_excludes"})
"""The ``[sire]`` settings read at retrieval time or checked before ingest, never derived."""
EPOCH_KINDS = ("policy", "schema", "resolver", "embedding_model", "prompt_template")
NO_EMBEDDING = "none"


@dataclass(frozen=True)
class Epochs:
    """The epochs in force for one tenant (``label`` is the sensitivity part of ``policy``)."""

    policy: str
    label: str
    schema: str
    resolver: str
    embedding_model: str
    classifier_model: str
    prompt_template: str
    serving: str = ""  # the family's serving key (see serving_epoch): derived, not recorded

    def to_dict(self) -> dict[str, str]:
        return {"policy": self.policy, "label": self.label, "schema": self.schema,
                "resolver": self.resolver, "embedding_model": self.embedding_model,
                "classifier_model": self.classifier_model,
                "prompt_template": self.prompt_template}

    def changed_since(self, recorded: dict[str, Any] | None) -> list[str]:
        """The epoch kinds that differ from ``recorded`` (all of them when none was)."""
        if recorded is None:
            return list(EPOCH_KINDS)
        now = self.to_dict()
        changed = [k for k in EPOCH_KINDS if recorded.get(k) != now[k]]
        if "prompt_template" not in changed and \
                recorded.get("classifier_model") != now["classifier_model"]:
            changed.append("prompt_template")
        return changed



def _classifier_identity(settings: Settings, policy: SensitivityPolicy) -> tuple[str, str]:
    """The model classifier's (model id, prompt hash); its module, and the answering code
    it builds on, load only when a classifier is configured (a search computes this)."""
    if not settings.sensitivity.model.enabled:
        return "none", "none"
    from affidavit.classify.model import classifier_identity

    return classifier_identity(settings.sensitivity.model, policy)

def current_epochs(settings: Settings, tenant: str | None = None) -> Epochs:
    """The epochs ``settings`` put in force for ``tenant``."""
    from affidavit.index.backends import make_backend

    lex = settings.lexical
    tokenizer = Tokenizer(lex.language, lex.stem, lex.stop_words)
    policy = SensitivityPolicy.from_settings(settings.sensitivity)
    model_id, prompt_hash = _classifier_identity(settings, policy)
    backend = make_backend(settings.vectors)
    return Epochs(
        policy=policy_epoch(settings, tokenizer, tenant or settings.tenant),
        label=label_epoch(settings.sensitivity), schema=str(SCHEMA_VERSION),
        resolver=RESOLVER_VERSION,
        embedding_model=backend.model_id if backend is not None else NO_EMBEDDING,
        classifier_model=model_id, prompt_template=prompt_hash,
        serving=serving_epoch(settings, tenant))


def policy_epoch(settings: Settings, tokenizer: Tokenizer, tenant: str | None = None) -> str:
    """Everything in the settings that changes derived artifacts when it changes."""
    data = {
        "sensitivity": settings.to_dict()["sensitivity"],
        "label_epoch": label_epoch(settings.sensitivity),
        "chunking": settings.to_dict()["chunking"],
        "acl_default": list(settings.policy_for(tenant or settings.tenant).acl.default),
        # The default exclusions apply at retrieval time (retrieval.gates.sire_gate), so a
        # change to them derives nothing again and withholds nothing (spec 003 §10.3).
        "sire": {k: v for k, v in settings.to_dict()["sire"].items()
                 if k not in RETRIEVAL_TIME_SIRE},
        "tokenizer": tokenizer.signature,
        "ingest": settings.to_dict()["ingest"],
    }
    return stable_hash("policy-epoch", canonical_json(data))[:16]


def serving_epoch(settings: Settings, tenant: str | None = None) -> str:
    """The key a derived artifact must carry to be served under ``settings``: the witness
    family (policy with its label part, schema, resolver, classifier model and prompt)
    without the raw digest. Ingestion stamps it; every read pins it."""
    lex = settings.lexical
    tokenizer = Tokenizer(lex.language, lex.stem, lex.stop_words)
    policy = SensitivityPolicy.from_settings(settings.sensitivity)
    model_id, prompt_hash = _classifier_identity(settings, policy)
    return stable_hash("serving-epoch", policy_epoch(settings, tokenizer, tenant or
                                                     settings.tenant),
                       str(SCHEMA_VERSION), RESOLVER_VERSION, model_id, prompt_hash)[:16]


def serving_state(store: Store, tenant: str, serving: str,
                  embedding_model: str | None, *,
                  stale_documents: int | None = None) -> dict[str, Any]:
    """What an answer records about the epochs it was served under: the key, how many
    head documents were derived under another one (withheld until requalified; counted
    here unless the caller kept the count for this corpus generation) and the embedding
    model whose vectors alone are searched."""
    stale = (len(store.label_stale_heads(tenant, serving)) if stale_documents is None
             else stale_documents)
    return {"serving": serving, "stale_documents": stale,
            "embedding_model": embedding_model or NO_EMBEDDING}


def recorded_epochs(store: Store, tenant: str) -> dict[str, Any] | None:
    """The epoch vector last recorded for ``tenant``, or ``None`` when none was."""
    last: dict[str, Any] | None = None
    for event in store.iter_policy_events(tenant):
        if event.kind == EPOCHS_RECORDED:
            value = json.loads(event.after_json)
            last = value if isinstance(value, dict) else None
    return last


def record_epochs(store: Store, tenant: str, epochs: Epochs, *, actor: str) -> bool:
    """Record ``epochs`` as in force unless they already are; True when recorded."""
    before = recorded_epochs(store, tenant)
    if before == epochs.to_dict():
        return False
    record_policy_event(store, tenant, EPOCHS_RECORDED, actor, before, epochs.to_dict())
    return True
