"""The registry of every surface: each HTTP route, console page, CLI command and exported
signal (span, metric, log field), who receives it and where each string it emits gets its
label (DESIGN.md, "What a chunk means for the promises").

A surface that exists but is not registered here is a surface nobody modelled: the project
tests enumerate the FastAPI app's routes, the argparse parser's commands, the span names in
the code, :data:`affidavit.observability.metrics.SPECS` and
:data:`affidavit.observability.logs.LOGGED_FIELDS`, and fail
on anything missing here (or registered here and gone). The permissions oracle iterates over
:data:`SURFACES` and fails on a surface it has no exerciser for.

Pure data: this module imports nothing of the pipeline, so any layer may read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Kind(StrEnum):
    ROUTE = "route"  # an HTTP route of the API: "METHOD /path"
    PAGE = "page"  # a console route under /ui: "METHOD /ui/path"
    COMMAND = "command"  # a CLI command: "affidavit group action"
    SIGNAL = "signal"  # "span NAME", "metric NAME" or "log FIELD"


class Audience(StrEnum):
    """Who receives what the surface emits, which decides how its strings are screened."""

    CALLER = "caller"  # a verified principal: only what it may read now
    ADMIN = "admin"  # a tenant's admin role: the tenant's policy, nothing of another tenant
    OPERATOR = "operator"  # whoever opens the database (CLI without --as): one tenant
    ANYONE = "anyone"  # no credential needed: fixed text only
    EXPORTER = "exporter"  # telemetry and log backends outside the permission model


class LabelSource(StrEnum):
    """Where the label of an emitted string comes from."""

    CHUNK = "chunk"  # a chunk's text: the chunk's own label
    DERIVED = "derived"  # title, heading path, locator, path, source id, SIRE term, reference
    #                      label: labelled at ingest, the most severe of what it came from
    LEDGER = "ledger"  # a ledger record: its asker only, evidence redacted to what it reads now
    CALLER_TEXT = "caller_text"  # what the caller wrote (question, reason, tuple, file name)
    SUBMITTED = "submitted"  # submitted bytes that never got a label (a quarantine message):
    #                          whoever answers for the run only
    IDENTITY = "identity"  # the caller's own principal, tenant, role or new key
    POLICY = "policy"  # tuples, grants, key records, policy events: the tenant's policy
    CONFIG = "config"  # settings and fixed text: label names, versions, templates, help
    NONE = "none"  # ids, hashes, counts, enums, scores, times: no content


CONTENT = frozenset({LabelSource.CHUNK, LabelSource.DERIVED, LabelSource.LEDGER,
                     LabelSource.CALLER_TEXT, LabelSource.SUBMITTED})
"""Sources whose strings can carry document content (the oracle checks each against the
receiver); every other source is checked by a scan that finds no document content at all."""


@dataclass(frozen=True)
class Emitted:
    field: str  # where the string appears: a JSON path, a header, a page part, an attribute
    source: LabelSource


@dataclass(frozen=True)
class Surface:
    kind: Kind
    name: str
    audience: Audience
    emits: tuple[Emitted, ...]
    note: str = ""

    @property
    def emits_content(self) -> bool:
        return any(e.source in CONTENT for e in self.emits)


def _emits(spec: str) -> tuple[Emitted, ...]:
    """``"field:source field:source"`` -> emitted strings (fields hold no spaces)."""
    pairs = (item.rsplit(":", 1) for item in spec.split())
    return tuple(Emitted(field, LabelSource(source)) for field, source in pairs)


def _surface(kind: Kind, name: str, audience: Audience, emits: str, note: str = "") -> Surface:
    return Surface(kind, name, audience, _emits(emits), note)


# Short names for the tables below.
C, A, OP, N = Audience.CALLER, Audience.ADMIN, Audience.OPERATOR, Audience.ANYONE

# Field lists several surfaces share.
HIT = ("hits[].text:chunk hits[].title:derived hits[].locator:derived hits[].source_id:derived "
       "hits[].via_reference:derived hits[].chunk_id:none hits[].doc_id:none "
       "hits[].label:config hits[].score:none hits[].gates:config")
ANSWER = ("answer:chunk claims[].text:chunk citations[].title:derived "
          "citations[].locator:derived citations[].chunk_id:none reasons[]:derived "
          "output_state:none request_id:none ledger_record_id:none ledger_record_hash:none")
LEDGER_VIEW = "record:ledger seq:none record_hash:none"
RUN_VIEW = ("summary.names:derived quarantined[].alias:derived quarantined[].message:submitted "
            "quarantined[].reason_code:none run_id:none status:none")
SIRE_VIEW = ("alias:derived title:derived subject:derived included:derived relevant:derived "
             "excluded:derived sire_id:none state:none approved_by:policy")
REFERENCE = ("reason:caller_text label:derived classification:config ref_id:none "
             "source_id:none target_id:none created_by:policy")
PROBLEM = "problem.detail:caller_text problem.type:config"
PAGE = "me:identity"

_ROUTES = (
    (N, "GET /v1/openapi.json", "document:config"),
    (C, "POST /v1/query", ANSWER + " " + PROBLEM),
    (C, "POST /v1/search", HIT + " " + PROBLEM),
    (C, "POST /v1/query/stream", "token.text:chunk envelope.answer:chunk "
        "envelope.claims:chunk envelope.citations:derived envelope.reasons:derived "
        "error.problem.detail:caller_text"),
    (C, "GET /v1/ledger/{request_id}", LEDGER_VIEW),
    (C, "GET /v1/ledger/{request_id}/claims", "claims:ledger output_state:none"),
    (C, "POST /v1/ledger/{request_id}/verify", "first_difference:ledger passed:none"),
    (C, "GET /v1/documents/{doc_id}", "sections[].text:chunk title:derived "
        "sections[].heading:derived sections[].placeholder:config doc_id:none"),
    (C, "GET /v1/documents/{doc_id}/original", "body:chunk Content-Disposition:derived "
        "X-Affidavit-Removed-Pages:none " + PROBLEM),
    (C, "POST /v1/ingest", "run_id:none status:none documents:none " + PROBLEM),
    (C, "GET /v1/ingest/{run_id}", RUN_VIEW),
    (C, "GET /v1/ingest/{run_id}/boundary", RUN_VIEW + " boundary:none"),
    (A, "GET /v1/admin/authz", "tuples[].tuple:policy grants:policy"),
    (A, "POST /v1/admin/authz/tuples", "tuple:caller_text added:none"),
    (A, "POST /v1/admin/authz/tuples/remove", "tuple:caller_text removed:none"),
    (A, "POST /v1/admin/authz/grants", "subject:caller_text granted:none"),
    (A, "POST /v1/admin/authz/grants/revoke", "subject:caller_text revoked:none"),
    (A, "POST /v1/admin/keys", "key:identity key_id:none principal:policy role:policy"),
    (A, "GET /v1/admin/keys", "keys[]:policy"),
    (A, "POST /v1/admin/keys/{key_id}/revoke", "key_id:none revoked:none"),
    (C, "GET /v1/admin/runs", "runs[].run_id:none runs[].status:none"),
    (C, "GET /v1/admin/runs/{run_id}", RUN_VIEW),
    (C, "GET /v1/admin/quarantine", "quarantined[].alias:derived "
        "quarantined[].message:submitted quarantined[].reason_code:none"),
    (C, "POST /v1/admin/quarantine/release", "alias:caller_text released_by:identity"),
    (C, "GET /v1/review/sire", SIRE_VIEW),
    (C, "POST /v1/review/sire/{sire_id}/approve", SIRE_VIEW + " " + PROBLEM),
    (C, "POST /v1/references", REFERENCE + " " + PROBLEM),
    (C, "GET /v1/references", REFERENCE),
    (C, "GET /v1/references/search", REFERENCE),
    (A, "GET /metrics", "metrics:none"),
    (A, "GET /v1/admin/readiness", "tenant:identity ready:none checks[].name:config "
        "checks[].status:none checks[].detail:config"),
    (N, "GET /healthz", "status:none"),
    (N, "GET /readyz", "status:none checks[].name:config checks[].ok:none "
        "checks[].reason_code:none"),
)

_PAGES = (
    (N, "GET /ui", "redirect:none"),
    (N, "GET /ui/login", "form:config"),
    (N, "POST /ui/login", "error:config"),
    (C, "POST /ui/logout", "redirect:none"),
    (C, "GET /ui/ask", f"{PAGE} answer:ledger question:ledger turns[].question:ledger "
        "turns[].answer:ledger cards[].passage:chunk cards[].title:derived"),
    (C, "POST /ui/ask", "redirect:none " + PAGE),
    (C, "POST /ui/ask/stream", "token.text:chunk envelope.answer:chunk "
        "envelope.citations:derived envelope.reasons:derived"),
    (C, "GET /ui/ask/result/{request_id}", "answer:ledger citations:ledger "
        "cards[].passage:chunk cards[].title:derived"),
    (C, "GET /ui/history", f"{PAGE} rows[].question:ledger rows[].output_state:none "
        "rows[].created_at:none"),
    (C, "GET /ui/documents/{doc_id}", f"{PAGE} sections[].text:chunk title:derived "
        "sections[].heading:derived sections[].placeholder:config"),
    (C, "GET /ui/documents", f"{PAGE} rows[].title:derived rows[].withheld_labels:config "
        "rows[].doc_id:none"),
    (C, "GET /ui/documents/{doc_id}/original", "body:chunk Content-Disposition:derived"),
    (C, "GET /ui/upload", f"{PAGE} form:config"),
    (C, "POST /ui/upload", "redirect:none error:caller_text " + PAGE),
    (C, "GET /ui/upload/{run_id}", f"{PAGE} " + RUN_VIEW),
    (C, "GET /ui/ledger", f"{PAGE} rows[].principal:policy rows[].output_state:none"),
    (C, "GET /ui/ledger/{request_id}", f"{PAGE} answer:ledger"),
    (C, "POST /ui/ledger/{request_id}/replay", f"{PAGE} answer:ledger replay:ledger"),
    (C, "GET /ui/review", f"{PAGE} proposals:derived runs:derived runs.messages:submitted"),
    (C, "POST /ui/review/sire/{sire_id}", "message.sire_id:none message.by:identity"),
    (C, "POST /ui/review/quarantine/release", "message.alias:caller_text"),
    (A, "GET /ui/permissions", f"{PAGE} alias:policy path:policy chunks[].label:config "
        "principal:caller_text"),
    (A, "GET /ui/permissions.json", "alias:policy path:policy chunks[].label:config "
        "principal:caller_text"),
    (N, "GET /ui/static/{name}", "file:config"),
)

_COMMANDS = (
    (OP, "affidavit init", "message:config"),
    (OP, "affidavit ingest", "summary.quarantined[].alias:derived "
        "summary.quarantined[].message:submitted summary.names:derived run_id:none"),
    (OP, "affidavit runs list", "runs[].run_id:none runs[].status:none"),
    (OP, "affidavit runs show", "summary.names:derived quarantined[].alias:derived "
        "quarantined[].message:submitted"),
    (OP, "affidavit quarantine list", "entries[].alias:derived entries[].message:submitted"),
    (OP, "affidavit quarantine show", "entries[].alias:derived entries[].message:submitted"),
    (OP, "affidavit quarantine release", "alias:derived by:caller_text"),
    (OP, "affidavit worker", "message:config counts:none"),
    (C, "affidavit search", HIT),
    (C, "affidavit ask", ANSWER),
    (C, "affidavit ledger show", LEDGER_VIEW + " policy_events_after:policy"),
    (OP, "affidavit ledger verify", "report:none policy_events:policy"),
    (OP, "affidavit ledger keygen", "files:caller_text"),
    (OP, "affidavit ledger checkpoint", "checkpoint:none"),
    (OP, "affidavit ledger replay", "first_difference:ledger checked:none"),
    (OP, "affidavit authz add", "tuple:caller_text"),
    (OP, "affidavit authz remove", "tuple:caller_text"),
    (OP, "affidavit authz grant", "subject:caller_text count:none"),
    (OP, "affidavit authz revoke", "subject:caller_text count:none"),
    (OP, "affidavit authz list", "tuples:policy grants:policy"),
    (OP, "affidavit authz explain", "alias:derived path:policy chunks[].label:config "
        "chunks[].reason:policy sire_note:none"),
    (OP, "affidavit audit list", "events[]:policy"),
    (OP, "affidavit audit verify", "report:none"),
    (OP, "affidavit audit checkpoint", "checkpoint:none"),
    (OP, "affidavit canary run", "probes:none pass_ratio:none"),
    (C, "affidavit refs add", REFERENCE),
    (C, "affidavit refs list", REFERENCE),
    (C, "affidavit refs search", REFERENCE),
    (OP, "affidavit labels override", "seq:none node_id:none label:config actor:policy"),
    (OP, "affidavit labels sources", "paragraphs[].label:config paragraphs[].reasons:derived"),
    (OP, "affidavit labels lapsed", "lapses[].node_id:none lapses[].label:config "
        "lapses[].reason:none lapses[].decision:policy"),
    (OP, "affidavit whoami", "groups:policy grants:policy counts:none"),
    (OP, "affidavit sire list", SIRE_VIEW, "--as narrows it to what the principal may read"),
    (OP, "affidavit sire approve", "sire_id:none approved_by:caller_text"),
    (OP, "affidavit identity resolve", "path:caller_text owner:derived"),
    (OP, "affidavit identity list", "open[].alias:derived open[].message:submitted "
        "resolutions:policy"),
    (OP, "affidavit requalify", "documents[].alias:derived changes:config estimate:none"),
    (OP, "affidavit serve", "openapi:config message:config"),
    (OP, "affidavit keys create", "key:identity key_id:none principal:policy"),
    (OP, "affidavit keys list", "keys[]:policy"),
    (OP, "affidavit keys revoke", "key_id:none"),
    (OP, "affidavit verify-claims", "results[].status:none results[].reasons:caller_text"),
    (OP, "affidavit doctor", "checks[].name:config checks[].explanation:config ready:none"),
    (OP, "affidavit backup", "manifest.heads:none manifest.sha256:none folder:caller_text"),
    (OP, "affidavit restore", "manifest.heads:none database:caller_text"),
    (N, "affidavit completion", "script:config"),
    (N, "affidavit demo", "answer:config", "the bundled example corpus in a temporary database"),
)

# Span attributes and metric attributes: counts, states, model ids and keyed hashes only.
_SIGNALS = (
    ("span query.authz_context", "affidavit.principal_hash:none affidavit.granted_labels:none"),
    ("span query.search", "affidavit.hits:none"),
    ("span query.ask", "affidavit.output_state:none affidavit.citations:none"),
    ("span query.retrieve.lexical", "gen_ai.operation.name:none gen_ai.retrieval.top_k:none "
     "affidavit.queries:none affidavit.hits:none"),
    ("span query.retrieve.vector", "gen_ai.operation.name:none gen_ai.retrieval.top_k:none "
     "affidavit.queries:none affidavit.hits:none affidavit.vector.exact:none"),
    ("span query.rerank", "affidavit.reranked:none"),
    ("span query.synthesize", ""),
    ("span chat *", "gen_ai.operation.name:none gen_ai.provider.name:config "
     "gen_ai.request.model:config affidavit.evidence:none gen_ai.response.model:config "
     "gen_ai.response.finish_reasons:none"),
    ("span query.verify", "affidavit.output_state:none affidavit.claims:none "
     "gen_ai.evaluation.name:none gen_ai.evaluation.score.label:none "
     "gen_ai.evaluation.score.value:none"),
    ("span ledger.append", "affidavit.ledger_seq:none"),
    ("span ingest.run", "affidavit.run_status:none affidavit.documents:none"),
    ("span ingest.fetch", ""),
    ("span ingest.document", "affidavit.status:none affidavit.reason_code:none "
     "affidavit.chunks:none"),
    ("span extract.*", "affidavit.source_id_hash:none affidavit.raw_digest_prefix:none "
     "affidavit.bytes:none"),
    ("span classify", "affidavit.paragraphs:none"),
    ("span index.commit", "affidavit.chunks:none"),
    ("span index.vectors", ""),
    ("span * request", "http.request.method:none http.route:config "
     "http.response.status_code:none"),
    ("metric affidavit.stage.duration", "affidavit.stage:config"),
    ("metric affidavit.answers", "affidavit.output_state:none"),
    ("metric affidavit.ingest.documents", "affidavit.status:none"),
    ("metric affidavit.ingest.quarantine_ratio", ""),
    ("metric affidavit.ingest.unresolved_link_ratio", ""),
    ("metric affidavit.document.tokens", ""),
    ("metric affidavit.document.cost_proxy", ""),
    ("metric affidavit.leak_test.pass_ratio", ""),
    # Log fields some code writes (the formatter admits others that nothing writes yet);
    # error_type and reason_code the formatter itself derives from a logged exception.
    *((f"log {name}", f"{name}:none") for name in (
        "request_id", "trace_id", "span_id", "principal_hash", "route", "method", "status",
        "duration_ms", "stage", "count", "error_type", "reason_code")),
)
# Any span that fails says how: the exception's class and reason code, never its message.
SPAN_FAILURE = " error.type:none affidavit.reason_code:none"

SURFACES: tuple[Surface, ...] = (
    *(_surface(Kind.ROUTE, name, who, emits) for who, name, emits in _ROUTES),
    *(_surface(Kind.PAGE, name, who, emits) for who, name, emits in _PAGES),
    *(_surface(Kind.COMMAND, entry[1], entry[0], entry[2], *entry[3:])
      for entry in _COMMANDS),
    *(_surface(Kind.SIGNAL, name, Audience.EXPORTER,
               emits + SPAN_FAILURE * name.startswith("span ")) for name, emits in _SIGNALS),
)
"""Every registered surface, routes first, then pages, commands and signals."""


def named(kind: Kind) -> frozenset[str]:
    """The names of the registered surfaces of ``kind``."""
    return frozenset(s.name for s in SURFACES if s.kind == kind)


def surface(name: str) -> Surface:
    """The registered surface called ``name`` (KeyError when there is none)."""
    for found in SURFACES:
        if found.name == name:
            return found
    raise KeyError(name)


def signal_names(prefix: str) -> frozenset[str]:
    """Registered signal names of one sort, without the sort: ``signal_names("span")``."""
    return frozenset(s.name.split(" ", 1)[1] for s in SURFACES
                     if s.kind == Kind.SIGNAL and s.name.startswith(prefix + " "))


def unregistered(kind: Kind, present: set[str] | frozenset[str]) -> tuple[list[str], list[str]]:
    """(present but not registered, registered but not present) for one kind of surface."""
    registered = named(kind)
    return sorted(present - registered), sorted(registered - present)
