"""Relationship tuples in Zanzibar notation, subjects and objects as ACL tokens.

``group:finance#member@user:alice``   alice is a member of finance
``group:finance#member@group:exec#member``   every member of exec is a member of finance
``doc:<node>#viewer@group:finance#member``   members of finance may read a document
``folder:policies/hr#viewer@user:helen``   helen may read everything under policies/hr
``doc:<node>#parent@folder:policies``   the document also sits in the policies folder
``folder:archive/hr#parent@collection:hr-records``   a folder placed in a collection

A *subject* (``user:alice``, ``group:exec#member``, ``*``) is what a document's ACL lists
and what the tuples grant things to. An *object* (``doc:``, ``folder:``, ``collection:``,
``group:``) is what a tuple is about. Both become ACL tokens: a document version carries
the subjects of its ACL plus its own ``doc:`` object and the ``folder:`` objects of every
folder on its path (see :func:`document_object_tokens`); a principal's context carries the
subjects it is and the objects it may view. A chunk is readable when the two sets meet.

Folder objects name a path: segments joined by ``/``, each segment percent-encoded except
for letters, digits and ``-_.~`` (``folder:HR%20Policies/2024``), so that any path can be
written in a tuple and ``#``, ``@`` or spaces in a folder name cannot change its meaning.
"""

from __future__ import annotations

import re
from urllib.parse import quote

from affidavit.errors import AuthorizationError, InputRejected
from affidavit.store.protocol import RelationTuple

EVERYONE = "*"
VIEWER = "viewer"
PARENT = "parent"
MEMBER = "member"

# Objects whose viewers may read documents; a container may hold documents and folders.
VIEWABLE_TYPES = ("doc", "folder", "collection")
CONTAINER_TYPES = ("folder", "collection")

_NAME = r"[A-Za-z0-9_.@*-]+"
_SEGMENT = r"[A-Za-z0-9_.~%-]+"
_SUBJECT = re.compile(rf"^(?:(user|service):{_NAME}|group:{_NAME}#[a-z_]+|\*)$")
_OBJECT = re.compile(rf"^(?:(group|doc|collection):{_NAME}|folder:{_SEGMENT}(?:/{_SEGMENT})*)$")
_PRINCIPAL = re.compile(r"^(user|service):[A-Za-z0-9_.@-]+$")
_RELATION = re.compile(r"^[a-z_]+$")
_SAFE_IN_SEGMENT = "-_.~"


def is_subject(text: str) -> bool:
    """Whether ``text`` is a subject (``user:``, ``service:``, ``group:X#rel`` or ``*``)."""
    return bool(_SUBJECT.match(text))


def object_type(text: str) -> str:
    """The type of an object or subject token: ``doc``, ``folder``, ``group``, ``user`` ..."""
    return text.partition(":")[0] if ":" in text else text


def parse_subject(text: str) -> str:
    """Validate an ACL subject and return it unchanged."""
    candidate = text.strip()
    if not _SUBJECT.match(candidate):
        raise InputRejected(
            "MALFORMED_SUBJECT",
            f"{text!r} is not a subject (user:NAME, service:NAME, group:NAME#member or *)")
    return candidate


def parse_object(text: str) -> str:
    """Validate an object (``group:``, ``doc:``, ``folder:PATH``, ``collection:``)."""
    candidate = text.strip()
    if not _OBJECT.match(candidate):
        raise InputRejected(
            "MALFORMED_TUPLE",
            f"{text!r} is not an object (group:NAME, doc:NODE, folder:PATH or collection:NAME;"
            " folder path segments percent-encoded)")
    return candidate


def parse_tuple(text: str, *, source: str = "cli") -> RelationTuple:
    """Parse ``object#relation@subject``; raise InputRejected with a clear message.

    ``parent`` tuples place a document, folder or collection inside a folder or collection;
    their subject is that container. Every other relation takes a subject.
    """
    raw = text.strip()
    head, sep, subject = raw.partition("@")
    obj, sep2, relation = head.partition("#")
    if not sep or not sep2:
        raise InputRejected("MALFORMED_TUPLE",
                            f"{text!r} is not a tuple of the form object#relation@subject")
    obj = parse_object(obj)
    if not _RELATION.match(relation):
        raise InputRejected("MALFORMED_TUPLE", f"{relation!r} is not a relation name")
    if relation == PARENT:
        return RelationTuple(obj, relation, _parse_container(obj, subject), source)
    return RelationTuple(obj, relation, parse_subject(subject), source)


def _parse_container(child: str, container: str) -> str:
    if object_type(child) not in VIEWABLE_TYPES:
        raise InputRejected("MALFORMED_TUPLE",
                            f"{child!r} cannot have a parent (only doc:, folder:, collection:)")
    if object_type(container.strip()) not in CONTAINER_TYPES:
        raise InputRejected("MALFORMED_TUPLE",
                            f"{container!r} is not a container (folder:PATH or collection:NAME)")
    parent = parse_object(container)
    if parent == child:
        raise InputRejected("MALFORMED_TUPLE", f"{child!r} cannot be its own parent")
    return parent


def parse_principal(text: str | None) -> str:
    """The principal a request runs as. Missing or malformed fails closed."""
    if text is None or not text.strip():
        raise AuthorizationError("no principal given: every read needs --as user:NAME")
    candidate = text.strip()
    if not _PRINCIPAL.match(candidate):
        raise AuthorizationError(
            f"{text!r} is not a principal; use user:NAME or service:NAME")
    return candidate


# --------------------------------------------------------------------------- objects


def doc_object(node_id: str) -> str:
    """The object of one logical document: ``doc:<node_id>``."""
    return f"doc:{node_id}"


def folder_object(path: str) -> str:
    """The object of a folder path (``policies/hr`` -> ``folder:policies/hr``), encoded."""
    segments = _folder_segments(path)
    if not segments:
        raise InputRejected("MALFORMED_TUPLE", f"{path!r} names no folder")
    return "folder:" + "/".join(segments)


def _folder_segments(path: str) -> list[str]:
    return [quote(s, safe=_SAFE_IN_SEGMENT) for s in path.split("/") if s not in ("", ".")]


def folder_ancestors(folder: str) -> tuple[str, ...]:
    """A folder object and every folder above it on its path, nearest first."""
    if object_type(folder) != "folder":
        return (folder,)
    segments = folder.removeprefix("folder:").split("/")
    return tuple("folder:" + "/".join(segments[:n]) for n in range(len(segments), 0, -1))


def document_object_tokens(node_id: str, alias: str) -> tuple[str, ...]:
    """The object tokens a document's versions carry: its ``doc:`` object and the folders
    of every level of its alias path (``policies/hr/leave.md`` -> ``folder:policies`` and
    ``folder:policies/hr``). Viewer tuples on any of them admit readers with no re-index."""
    segments = _folder_segments(alias)[:-1]
    folders = ["folder:" + "/".join(segments[:n]) for n in range(1, len(segments) + 1)]
    return (doc_object(node_id), *folders)
