"""Principals, relationship tuples, label grants and the per-request authz context.

The names below are imported on first use (PEP 562), so that importing one small piece (the
CLI's parser reads the key roles) does not load every stage behind the context.
"""

import typing

from affidavit.util.lazy import lazy_exports as _lazy_exports

if typing.TYPE_CHECKING:
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

_EXPORTS = {
    "Authorizer": "context",
    "EVERYONE": "tuples",
    "FailClosedAuthorizer": "context",
    "PARENT": "tuples",
    "StaticAuthorizer": "context",
    "StoreAuthorizer": "context",
    "VIEWER": "tuples",
    "build_context": "context",
    "checked_context": "context",
    "doc_object": "tuples",
    "document_object_tokens": "tuples",
    "expand_tokens": "expand",
    "folder_ancestors": "tuples",
    "folder_object": "tuples",
    "granted_labels": "expand",
    "may_view_record": "ledger_view",
    "parse_object": "tuples",
    "parse_principal": "tuples",
    "parse_subject": "tuples",
    "parse_tuple": "tuples",
    "policy_version": "expand",
    "subject_tokens": "expand",
    "viewed_objects": "expand",
}

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

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals())
