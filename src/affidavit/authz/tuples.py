"""Relationship tuples in Zanzibar notation, and subjects as ACL tokens.

``group:finance#member@user:alice``   alice is a member of finance
``group:finance#member@group:exec#member``   every member of exec is a member of finance
``doc:<node>#viewer@group:finance#member``   members of finance may read a document

A *subject* (``user:alice``, ``group:exec#member``, ``*``) is also what a document's ACL
lists and what an ACL token is: a chunk is readable by a principal whose expanded token set
contains one of the chunk's tokens.
"""

from __future__ import annotations

import re

from affidavit.errors import AuthorizationError, InputRejected
from affidavit.store.base import RelationTuple

EVERYONE = "*"
_NAME = r"[A-Za-z0-9_.@*-]+"
_SUBJECT = re.compile(rf"^(?:(user|service):{_NAME}|group:{_NAME}#[a-z_]+|\*)$")
_OBJECT = re.compile(rf"^(group|doc|folder|collection):{_NAME}$")
_PRINCIPAL = re.compile(r"^(user|service):[A-Za-z0-9_.@-]+$")
_RELATION = re.compile(r"^[a-z_]+$")


def is_subject(text: str) -> bool:
    return bool(_SUBJECT.match(text))


def parse_subject(text: str) -> str:
    """Validate an ACL subject and return it unchanged."""
    candidate = text.strip()
    if not _SUBJECT.match(candidate):
        raise InputRejected(
            "MALFORMED_SUBJECT",
            f"{text!r} is not a subject (user:NAME, service:NAME, group:NAME#member or *)")
    return candidate


def parse_tuple(text: str, *, source: str = "cli") -> RelationTuple:
    """Parse ``object#relation@subject``; raise InputRejected with a clear message."""
    raw = text.strip()
    head, sep, subject = raw.partition("@")
    obj, sep2, relation = head.partition("#")
    if not sep or not sep2:
        raise InputRejected("MALFORMED_TUPLE",
                            f"{text!r} is not a tuple of the form object#relation@subject")
    if not _OBJECT.match(obj):
        raise InputRejected("MALFORMED_TUPLE",
                            f"{obj!r} is not an object (group:, doc:, folder: or collection:)")
    if not _RELATION.match(relation):
        raise InputRejected("MALFORMED_TUPLE", f"{relation!r} is not a relation name")
    return RelationTuple(obj, relation, parse_subject(subject), source)


def parse_principal(text: str | None) -> str:
    """The principal a request runs as. Missing or malformed fails closed."""
    if text is None or not text.strip():
        raise AuthorizationError("no principal given: every read needs --as user:NAME")
    candidate = text.strip()
    if not _PRINCIPAL.match(candidate):
        raise AuthorizationError(
            f"{text!r} is not a principal; use user:NAME or service:NAME")
    return candidate
