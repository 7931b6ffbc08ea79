"""Principals, relationship tuples, label grants and the per-request authz context."""

from affidavit.authz.context import (
    Authorizer,
    StoreAuthorizer,
    expand_tokens,
    granted_labels,
    policy_version,
)
from affidavit.authz.tuples import EVERYONE, parse_principal, parse_subject, parse_tuple

__all__ = [
    "EVERYONE",
    "Authorizer",
    "StoreAuthorizer",
    "expand_tokens",
    "granted_labels",
    "parse_principal",
    "parse_subject",
    "parse_tuple",
    "policy_version",
]
