"""What a service caller may see of ingestion runs: a document's name is derived text that
carries its document's label.

A run's summary and quarantine name documents: the ones it ingested or quarantined, every
stale document of the tenant that a policy change made it relabel, the ones its listing
withdrew, the ones its boundary left out, the ones whose links did not resolve. A name
reaches a caller only when the caller may read that whole document now (the rule
references follow, :class:`~affidavit.references.access.ReadableEnds`), or when no document
of the tenant has that name (a submission that never reached the store, so no label was
ever decided for it) and the caller answers for the run: the principal that submitted it,
or an administrator of the tenant (who releases what an operator's runs quarantined).

A quarantine message quotes the refused bytes (a parser's error shows the offending line),
which never received a label: it is shown only to whoever answers for the run.

One screen covers every part of a run view: any list element (a string, or an object with
any string in it) that mentions a name the caller may not see is left out, and any other
string that mentions one is replaced; so a field added to the summary later is covered
without being named here. The candidates are every head document's path in the tenant and
every name the run itself lists, so a name is withheld even where it appears inside a
message.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from affidavit.records import AuthzContext
from affidavit.references.access import ReadableEnds
from affidavit.store.protocol import QuarantineRecord, Store

WITHHELD_NAME = "[withheld]"
# Summary lists whose entries are document paths (``moved`` holds "old -> new").
_NAME_LISTS = ("relabelled", "withdrawn", "moved")
_BOUNDARY_NAME_LISTS = ("excluded", "restored", "withdrawn")
# What an entry naming a hidden document keeps: codes, ids and times, never text.
_ENTRY_FIELDS_SHOWN = frozenset({"run_id", "reason_code", "at", "released_at", "released_by"})


class RunScreen:
    """The names of runs one caller may see, decided once per view."""

    def __init__(self, store: Store, authz: AuthzContext, principal: str, *,
                 administers: bool = False):
        self._principal = principal
        self._administers = administers
        self._ends = ReadableEnds(store, authz)
        # Paths are not unique (two submitters' uploads of one file name): a path is the
        # caller's to see when any document carrying it is.
        self._heads: dict[str, list[str]] = {}
        for head in store.heads(authz.tenant):
            self._heads.setdefault(head.alias, []).append(head.node_id)

    def run_view(self, summary: Mapping[str, Any], quarantine: Sequence[QuarantineRecord],
                 submitted_by: str | None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The summary and the quarantine entries of one run, as this caller may see them."""
        entries = [dict(q.__dict__) for q in quarantine]
        hidden = self._hidden(_run_names(summary, quarantine), submitted_by,
                              _strings([summary, entries]))
        own = self._own(submitted_by)
        shown, kept = _screened(dict(summary), hidden, own), _screened(entries, hidden, own)
        if not own:
            if "quarantined" in shown:
                shown["quarantined"] = _without_messages(shown["quarantined"])
            kept = _without_messages(kept)
        return shown, kept

    def quarantine(self, records: Iterable[tuple[QuarantineRecord, str | None]]
                   ) -> list[dict[str, Any]]:
        """Quarantine entries of several runs (each with its run's submitter)."""
        shown: list[dict[str, Any]] = []
        for record, submitted_by in records:
            entry = dict(record.__dict__)
            hidden = self._hidden(_run_names({}, [record]), submitted_by, _strings(entry))
            own = self._own(submitted_by)
            screened = _screened([entry], hidden, own)
            shown.extend(screened if own else _without_messages(screened))
        return shown

    def names(self, record: QuarantineRecord, submitted_by: str | None) -> bool:
        """Whether the caller sees ``record`` with its name: only such an entry may it act
        on (a release by a guessed name would confirm the guess)."""
        shown = self.quarantine([(record, submitted_by)])
        return bool(shown) and shown[0].get("alias") == record.alias

    def _own(self, submitted_by: str | None) -> bool:
        """Whether the caller answers for the run: it submitted it, or administers."""
        return self._administers or (submitted_by is not None
                                     and submitted_by == self._principal)

    def _hidden(self, run_names: tuple[set[str], dict[str, str]], submitted_by: str | None,
                text: str) -> tuple[str, ...]:
        """The names mentioned in ``text`` that the caller may not see (a head document is
        checked only when the view mentions it: readability costs a store read)."""
        own = self._own(submitted_by)
        hidden = {alias for alias, nodes in self._heads.items()
                  if alias in text and not any(self._ends.document(n) for n in nodes)}
        names, source_of = run_names
        hidden |= {n for n in names if n not in self._heads and not own}
        # A source id names the document as much as its path: withheld with it.
        hidden |= {source for source, alias in source_of.items() if alias in hidden}
        return tuple(sorted((n for n in hidden if n), key=len, reverse=True))


def _run_names(summary: Mapping[str, Any], quarantine: Sequence[QuarantineRecord]
               ) -> tuple[set[str], dict[str, str]]:
    """The names a run lists (paths), and the source id of each quarantined path: a source
    id is shown or withheld with its path."""
    pairs = [(q.alias, q.source_id) for q in quarantine]
    pairs += [(str(e.get("alias") or ""), str(e.get("source_id") or ""))
              for e in summary.get("quarantined") or () if isinstance(e, Mapping)]
    names = {alias for alias, _ in pairs}
    source_of = {source_id: alias for alias, source_id in pairs if source_id != alias}
    for key in _NAME_LISTS:
        for entry in summary.get(key) or ():
            if isinstance(entry, str):
                names.update(part.strip() for part in entry.split(" -> "))
    # A run whose boundary failed names what it took back (affidavit.ingest.boundary_gate).
    boundary = summary.get("boundary")
    if isinstance(boundary, Mapping):
        for key in _BOUNDARY_NAME_LISTS:
            names.update(str(n) for n in boundary.get(key) or () if isinstance(n, str))
    return names, source_of


def _strings(value: Any) -> str:
    """Every string in ``value`` (keys too), one a line: what a name could hide in."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return "\n".join(_strings(k) + "\n" + _strings(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return "\n".join(_strings(v) for v in value)
    return ""


def _mentions(value: Any, hidden: tuple[str, ...]) -> bool:
    if isinstance(value, str):
        return any(name in value for name in hidden)
    if isinstance(value, Mapping):
        return any(_mentions(k, hidden) or _mentions(v, hidden) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_mentions(v, hidden) for v in value)
    return False


def _screened(value: Any, hidden: tuple[str, ...], own: bool) -> Any:
    """``value`` without the names in ``hidden``. In the caller's own run an entry (an
    object in a list) that names a hidden document keeps its place with only its reason
    code and times, so that the submitter learns why a document it sent was refused
    (the rest, a message above all, can quote that document); elsewhere it is left out,
    count and all."""
    if not hidden:
        return value
    if isinstance(value, Mapping):
        return {k: _screened(v, hidden, own) for k, v in value.items()
                if not _mentions(k, hidden)}
    if isinstance(value, list | tuple):
        return [_reduced(v) if own and isinstance(v, Mapping) and _mentions(v, hidden)
                else _screened(v, hidden, own) for v in value
                if not _mentions(v, hidden) or (own and isinstance(v, Mapping))]
    if isinstance(value, str) and _mentions(value, hidden):
        return WITHHELD_NAME
    return value


def _without_messages(entries: Any) -> Any:
    """Quarantine entries without their messages. A message quotes the refused bytes
    (a parser's error shows the offending line), which were never labelled: only who
    answers for the run reads it."""
    if not isinstance(entries, list):
        return entries
    return [{**e, "message": WITHHELD_NAME} if isinstance(e, Mapping) and "message" in e
            else e for e in entries]


def _reduced(entry: Mapping[str, Any]) -> dict[str, Any]:
    """An entry naming a hidden document: its fixed-vocabulary fields, the rest withheld."""
    return {k: v if k in _ENTRY_FIELDS_SHOWN or v is None else WITHHELD_NAME
            for k, v in entry.items()}
