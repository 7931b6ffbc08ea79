"""The cross-field rules a loaded :class:`~affidavit.config.settings.Settings` must satisfy.

Every broken rule raises :class:`~affidavit.errors.ConfigurationError` naming the key and
the file it came from.
"""

from __future__ import annotations

from affidavit.config.gate import validate_gate
from affidavit.config.settings import (
    _MODEL_LABELS,
    HNSW_EF_SEARCH_MAX,
    PUBLIC,
    RESTRICTED,
    Settings,
)
from affidavit.errors import ConfigurationError


def validate(settings: Settings) -> None:
    """Raise on the first rule ``settings`` breaks."""
    source = settings.source_file or "defaults"
    labels = settings.sensitivity.labels
    if len(set(labels)) != len(labels) or not labels:
        raise ConfigurationError("labels must be unique and non-empty", key="sensitivity.labels",
                                 source=source)
    for required in (PUBLIC, RESTRICTED):
        if required not in labels:
            raise ConfigurationError(f"the label set must contain {required}",
                                     key="sensitivity.labels", source=source)
    if settings.sensitivity.default_level not in labels:
        raise ConfigurationError("is not one of the configured labels",
                                 key="sensitivity.default_level", source=source)
    for label in settings.sensitivity.keywords:
        if label not in labels:
            raise ConfigurationError("names an unknown label",
                                     key=f"sensitivity.keywords.{label}", source=source)
    for name, label in settings.sensitivity.detectors.items():
        if label not in labels:
            raise ConfigurationError("names an unknown label",
                                     key=f"sensitivity.detectors.{name}", source=source)
    for pattern, label in settings.sensitivity.inherit.items():
        if label not in labels:
            raise ConfigurationError("names an unknown label",
                                     key=f"sensitivity.inherit.{pattern}", source=source)
    _validate_tenant_policies(settings, source)
    _validate_egress(settings, source)
    _validate_store(settings, source)
    _validate_ocr(settings, source)
    validate_gate(settings.gate, source)
    if not 0 <= settings.answer.deep_reasoning_draws <= 16:  # stability.MAX_STABILITY_DRAWS
        raise ConfigurationError("must be between 0 and 16", key="answer.deep_reasoning_draws",
                                 source=source)
    ingest = settings.ingest
    if (ingest.max_expansion_ratio < 1 or ingest.expansion_floor_chars < 0
            or ingest.max_rendered_chars < ingest.expansion_floor_chars
            or ingest.max_chunks_per_document < 1):
        raise ConfigurationError("need max_expansion_ratio >= 1, 0 <= expansion_floor_chars "
                                 "<= max_rendered_chars and max_chunks_per_document >= 1",
                                 key="ingest", source=source)
    c = settings.chunking
    if (c.max_chars <= 0 or c.overlap_chars < 0 or c.overlap_chars >= c.max_chars
            or not 0 <= c.min_chars <= c.max_chars):
        raise ConfigurationError(
            "need max_chars > 0, 0 <= overlap_chars < max_chars, 0 <= min_chars <= max_chars",
                                 key="chunking", source=source)
    if settings.vectors.backend not in ("none", "hash", "minilm", "openai"):
        raise ConfigurationError("must be one of none, hash, minilm, openai",
                                 key="vectors.backend", source=source)
    if settings.vectors.runtime not in ("onnx", "torch"):
        raise ConfigurationError("must be 'onnx' or 'torch'", key="vectors.runtime",
                                 source=source)
    if settings.vectors.max_seq_length < 0:
        raise ConfigurationError("must be 0 (the model's own limit) or more",
                                 key="vectors.max_seq_length", source=source)
    if (settings.vectors.backend == "minilm" and settings.vectors.model_path
            and settings.vectors.runtime != "torch"):
        raise ConfigurationError("a model_path of your own runs on runtime = 'torch' (the "
                                 "onnx runtime runs the packaged model)",
                                 key="vectors.runtime", source=source)
    if settings.vectors.compute not in ("ingest", "lazy"):
        raise ConfigurationError("must be 'ingest' or 'lazy'", key="vectors.compute",
                                 source=source)
    if not 0.5 <= settings.vectors.boundary_confidence < 1.0:
        raise ConfigurationError("must be at least 0.5 and below 1",
                                 key="vectors.boundary_confidence", source=source)
    if settings.answer.provider not in ("extractive", "openai", "local"):
        raise ConfigurationError("must be 'extractive', 'openai' or 'local'",
                                 key="answer.provider", source=source)
    local = settings.local
    if local.context_size < 256 or local.threads < 0 or local.seed < 0 or local.max_tokens < 1:
        raise ConfigurationError("need context_size >= 256, threads >= 0, seed >= 0 and "
                                 "max_tokens >= 1", key="local", source=source)
    if settings.answer.role not in ("authoritative", "advisory"):
        raise ConfigurationError("must be 'authoritative' or 'advisory'", key="answer.role",
                                 source=source)
    for tenant in (settings.tenant, settings.home):
        if not tenant or not tenant.replace("-", "").replace("_", "").isalnum():
            raise ConfigurationError("must be letters, digits, '-' or '_'", key="tenant",
                                     source=source)


def _validate_tenant_policies(settings: Settings, source: str) -> None:
    labels = settings.sensitivity.labels
    policies = [("", settings.grants)]
    policies += [(f"tenants.{t}.", p.grants) for t, p in sorted(settings.tenants.items())]
    for prefix, grants in policies:
        for subject, granted in grants.items():
            for label in granted:
                if label not in labels:
                    raise ConfigurationError(f"grants unknown label {label!r}",
                                             key=f"{prefix}grants.{subject}", source=source)
    for tenant in settings.tenants:
        if not tenant or not tenant.replace("-", "").replace("_", "").isalnum():
            raise ConfigurationError("a tenant id must be letters, digits, '-' or '_'",
                                     key=f"tenants.{tenant}", source=source)
    top_level = settings.acl.default or settings.authz.tuples or settings.grants
    if settings.home in settings.tenants and top_level:
        # Two policies for one tenant: which one counts would be a guess.
        raise ConfigurationError(
            "the home tenant has a [tenants] section and top-level acl/authz/grants; "
            "keep one", key=f"tenants.{settings.home}", source=source)


def _validate_egress(settings: Settings, source: str) -> None:
    labels = settings.sensitivity.labels
    for name in ("answer_labels", "embedding_labels"):
        declared: tuple[str, ...] = getattr(settings.egress, name)
        if RESTRICTED in declared:
            raise ConfigurationError("RESTRICTED text may never be sent to a model",
                                     key=f"egress.{name}", source=source)
        # The built-in default may name labels a deployment dropped; those simply match
        # nothing. A declared list must name configured labels only.
        for label in declared if declared != _MODEL_LABELS else ():
            if label not in labels:
                raise ConfigurationError(f"names unknown label {label!r}",
                                         key=f"egress.{name}", source=source)


def _validate_store(settings: Settings, source: str) -> None:
    if settings.store.exact_vector_threshold < 0:
        raise ConfigurationError("must be 0 or more (0: the HNSW walk for every caller)",
                                 key="store.exact_vector_threshold", source=source)
    if not 1 <= settings.store.hnsw_ef_search <= HNSW_EF_SEARCH_MAX:
        raise ConfigurationError(f"must be 1 to {HNSW_EF_SEARCH_MAX} (pgvector's range)",
                                 key="store.hnsw_ef_search", source=source)


def _validate_ocr(settings: Settings, source: str) -> None:
    ocr = settings.ingest.ocr
    # tesseract language codes: eng, deu, chi_sim; never a path
    if not ocr.languages or not all(code.replace("_", "").isalnum() and code.isascii()
                                    for code in ocr.languages):
        raise ConfigurationError("must be tesseract language codes such as \"eng\"",
                                 key="ingest.ocr.languages", source=source)
    if not 0 <= ocr.min_confidence <= 100:
        raise ConfigurationError("must be between 0 and 100", key="ingest.ocr.min_confidence",
                                 source=source)
    if not 50 <= ocr.dpi <= 600:
        raise ConfigurationError("must be between 50 and 600", key="ingest.ocr.dpi",
                                 source=source)
    if ocr.max_pages < 1:
        raise ConfigurationError("must be at least 1", key="ingest.ocr.max_pages", source=source)
