"""The policy audit trail: append-only, hash-chained events of every policy change.

:func:`record_policy_event` is the one way to record a change; :func:`verify_policy_chain`
walks a tenant's events and finds an edited or deleted one; every ledger record names the
:func:`policy_version` in force when it was written.
"""

from affidavit.audit.chain import PolicyChainReport, verify_policy_chain
from affidavit.audit.events import (
    API_KEY_CREATE,
    API_KEY_REVOKE,
    DECISION_LAPSE,
    GRANT_ADD,
    GRANT_REVOKE,
    IDENTITY_RESOLVE,
    LABEL_OVERRIDE,
    POLICY_EVENT_KINDS,
    QUARANTINE_RELEASE,
    REFERENCE_ADD,
    SETTINGS_EFFECTIVE,
    SIRE_STATE,
    TUPLE_ADD,
    TUPLE_REMOVE,
    event_dict,
    events_after,
    operator_actor,
    policy_version,
    record_effective_settings,
    record_policy_event,
)

__all__ = [
    "API_KEY_CREATE", "API_KEY_REVOKE", "DECISION_LAPSE", "GRANT_ADD", "GRANT_REVOKE",
    "IDENTITY_RESOLVE", "LABEL_OVERRIDE", "POLICY_EVENT_KINDS", "QUARANTINE_RELEASE",
    "REFERENCE_ADD", "SETTINGS_EFFECTIVE",
    "SIRE_STATE", "TUPLE_ADD", "TUPLE_REMOVE", "PolicyChainReport", "event_dict",
    "events_after", "operator_actor", "policy_version", "record_effective_settings",
    "record_policy_event", "verify_policy_chain",
]
