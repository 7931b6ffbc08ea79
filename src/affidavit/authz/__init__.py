"""Principals, relationship tuples, label grants and the per-request authz context."""

from affidavit.authz.context import (
    Authorizer,
    FailClosedAuthorizer,
    StaticAuthorizer,
    StoreAuthorizer,
    build_context,
    checked_context,
)
from affidavit.authz.expand import (
    expand_tokens,
    granted_labels,
    policy_version,
    subject_tokens,
    viewed_objects,
)
from affidavit.authz.ledger_view import may_view_record
from affidavit.authz.tuples import (
    EVERYONE,
    PARENT,
    VIEWER,
    doc_object,
    document_object_tokens,
    folder_ancestors,
    folder_object,
    parse_object,
    parse_principal,
    parse_subject,
    parse_tuple,
)

__all__ = [
    "EVERYONE",
    "PARENT",
    "VIEWER",
    "Authorizer",
    "FailClosedAuthorizer",
    "StaticAuthorizer",
    "StoreAuthorizer",
    "build_context",
    "checked_context",
    "doc_object",
    "document_object_tokens",
    "expand_tokens",
    "folder_ancestors",
    "folder_object",
    "granted_labels",
    "may_view_record",
    "parse_object",
    "parse_principal",
    "parse_subject",
    "parse_tuple",
    "policy_version",
    "subject_tokens",
    "viewed_objects",
]
