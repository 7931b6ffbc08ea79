"""Who may replace a document: a submission over the service supersedes a head only when
its submitter may read that whole head and owns it (or administers the tenant).

A node's owner is the principal that submitted its first version (kept with its identity
claim, :meth:`~affidavit.store.protocol.Store.first_submitter`); a node an operator ingested
has none, so only an administrator supersedes it over the service. "May read the whole
head" is the reader's rule for derived text: every head chunk is admitted by the
submitter's authorization context and none of its title, path or headings is withheld.

The check runs inside :meth:`affidavit.ingest.run.Ingestor.ingest_one` for every submitted
document, whatever brought it there (an upload, a source URL, a queued run a worker
drains). A refusal names nothing of the document it protects: one reason code and one
message, whichever part of the rule failed, so it tells a submitter no more than that the
source id it sent is not one it may write to. An admitted supersession is a policy event
(``document.supersede``) naming the versions, the owner and the submitter.

Uploads that declare no ``source_id`` are scoped to their submitter
(:func:`upload_source_id`): two principals sending a file of the same name write two
documents.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from affidavit.audit.events import DOCUMENT_SUPERSEDE, record_policy_event
from affidavit.authz import FailClosedAuthorizer, StoreAuthorizer, parse_tuple
from affidavit.config.settings import Settings
from affidavit.errors import AffidavitError, InputRejected
from affidavit.records import stable_hash
from affidavit.store.protocol import HeadInfo, RelationTuple, Store, VersionBundle

SUPERSESSION_REFUSED = "SUPERSESSION_REFUSED"
REFUSAL_MESSAGE = ("this source id is not one the submitter may write to: superseding a "
                   "document takes its owner or an administrator who may read all of it")


@dataclass(frozen=True)
class Submitter:
    """The verified principal a submission acts for, as the run carries it."""

    principal: str
    administers: bool = False
    # group memberships its credential carried (OIDC), which count as they did for it
    groups: tuple[str, ...] = field(default=())

    def to_params(self) -> dict[str, Any]:
        """The run parameters a queued run carries it in (read back by :meth:`from_params`)."""
        return {"submitted_by": self.principal, "submitter_administers": self.administers,
                "submitter_groups": list(self.groups)}

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Submitter | None:
        principal = params.get("submitted_by")
        if not isinstance(principal, str) or not principal:
            return None
        groups = params.get("submitter_groups") or ()
        return cls(principal, params.get("submitter_administers") is True,
                   tuple(str(g) for g in groups))


def upload_source_id(principal: str, filename: str) -> str:
    """The source id of an upload that declares none: scoped to its submitter."""
    return f"upload/{stable_hash('upload-submitter', principal)[:16]}/{filename}"


class _SubmitterAuthorizer(StoreAuthorizer):
    """The store's policy plus the group memberships the submitter's credential carried."""

    def __init__(self, store: Store, settings: Settings, submitter: Submitter):
        super().__init__(store, settings)
        self._submitter = submitter

    def all_tuples(self, tenant: str) -> list[RelationTuple]:
        member = self._submitter.principal
        return [*super().all_tuples(tenant),
                *(parse_tuple(f"group:{g}#member@{member}", source="token")
                  for g in self._submitter.groups)]

    def request_facts(self, tenant: str) -> tuple[str, ...]:
        return ("groups", *sorted(self._submitter.groups))


class SupersessionGate:
    """Decides, for one run, which submitted documents may supersede their node's head."""

    def __init__(self, store: Store, settings: Settings, tenant: str, submitter: Submitter):
        self.store = store
        self.tenant = tenant
        self.submitter = submitter
        self._authorizer = FailClosedAuthorizer(_SubmitterAuthorizer(store, settings, submitter))

    def admit(self, node_id: str) -> HeadInfo | None:
        """The head a submission to ``node_id`` would supersede (None: no head, nothing to
        supersede); InputRejected when the submitter may not supersede it."""
        head = self.store.head(self.tenant, node_id)
        if head is None:
            return None
        owner = self.store.first_submitter(self.tenant, node_id)
        owns = self.submitter.administers or owner == self.submitter.principal
        # Read first, whatever the owner: the refusal costs the same either way.
        if not self._reads_whole_head(node_id) or not owns:
            raise InputRejected(SUPERSESSION_REFUSED, REFUSAL_MESSAGE)
        return head

    def _reads_whole_head(self, node_id: str) -> bool:
        try:
            authz = self._authorizer.context_for(self.tenant, self.submitter.principal)
        except AffidavitError:
            return False  # no context, no supersession: fail closed
        ids = self.store.document_chunk_ids(self.tenant, node_id)
        shown = self.store.get_chunks(authz, ids or [node_id])
        return bool(ids) and len(shown) == len(ids) and all(
            record.chunk.derived is not None and not record.chunk.derived.withheld
            for record in shown)

    def record(self, superseded: HeadInfo, bundle: VersionBundle) -> None:
        """The policy event of an admitted supersession (identifiers only, no text)."""
        owner = self.store.first_submitter(self.tenant, superseded.node_id)
        principal = self.submitter.principal
        record_policy_event(
            self.store, self.tenant, DOCUMENT_SUPERSEDE, principal,
            {"node_id": superseded.node_id, "version_id": superseded.version_id,
             "owner": owner},
            {"node_id": bundle.node_id, "version_id": bundle.version_id,
             "run_id": bundle.run_id, "submitted_by": principal,
             # whether it took an administrator's authority (not the owner's)
             "as_admin": owner != principal})
