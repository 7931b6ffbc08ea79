"""The geometric boundary of a corpus (spec 003 §4.7, §6.2): centroid and Ledoit–Wolf
shrunk covariance of its chunk vectors, the Mahalanobis distance to it, and the
chi-squared control limit that distance is judged against (:mod:`.control_limit`).

Computed once per ingestion run that has vectors, over the head chunks the run leaves
served; immutable for that run. The distance of a query or of an evidence chunk is a
plausibility signal for the ledger, not semantic proof: the ledger records whether each lies
inside the limit, and nothing is refused for lying outside. Pure numpy, closed form, so the
same vectors give the same boundary.

A run whose boundary cannot be computed (too few vectors, a covariance with no spread at
all, vectors that are not finite, an embedder that fails) does not promote its chunks (spec
003 §10.1):
:func:`lock_boundary` raises :class:`BoundaryFailure` with a reason code, and the run keeps
the previous heads serving (:mod:`affidavit.ingest.boundary_gate`).

Ledoit–Wolf, as in Ledoit & Wolf (2004) and scikit-learn's ``ledoit_wolf``: with ``X`` the
centred ``n × p`` data and ``S = XᵀX / n``, ``m = tr(S) / p``,
``δ = ‖S − m·I‖²_F / p``, ``β = min(δ, (Σᵢ ‖xᵢxᵢᵀ − S‖²_F) / (n² p))``, shrinkage
``s = β / δ`` and ``Σ = (1 − s)·S + s·m·I``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from affidavit.errors import GovernanceError, InputRejected
from affidavit.index.control_limit import DEFAULT_CONFIDENCE, ControlLimit
from affidavit.index.serving import DEGRADED_BOUNDARY as DEGRADED_BOUNDARY
from affidavit.records import canonical_json, sha256_hex
from affidavit.store.protocol import Store

Matrix = npt.NDArray[np.float64]
BOUNDARY_VERSION = "ledoit-wolf-v1"
BOUNDARY_TOO_FEW_VECTORS = "BOUNDARY_TOO_FEW_VECTORS"
BOUNDARY_SINGULAR = "BOUNDARY_SINGULAR"
BOUNDARY_NOT_FINITE = "BOUNDARY_NOT_FINITE"
BOUNDARY_EMBEDDER_FAILED = "BOUNDARY_EMBEDDER_FAILED"


class BoundaryFailure(GovernanceError):
    """The run's boundary cannot be computed: its chunks are not promoted."""

    def __init__(self, reason_code: str, detail: str):
        super().__init__(f"{reason_code}: {detail}")
        self.reason_code = reason_code
        self.detail = detail


def ledoit_wolf(vectors: npt.ArrayLike) -> tuple[Matrix, float]:
    """(shrunk covariance, shrinkage) of the rows of ``vectors`` (centred here)."""
    x = np.asarray(vectors, dtype=np.float64)
    n, p = x.shape
    x = x - x.mean(axis=0)
    if p == 1:  # one feature: shrinking towards itself changes nothing
        return np.array([[float((x ** 2).mean())]]), 0.0
    x2 = x ** 2
    trace_terms = x2.sum(axis=0) / n
    mu = float(trace_terms.sum()) / p
    beta_sum = float(np.sum(x2.T @ x2))
    delta_sum = float(np.sum((x.T @ x) ** 2)) / n ** 2
    beta = (beta_sum / n - delta_sum) / (p * n)
    delta = (delta_sum - 2.0 * mu * float(trace_terms.sum()) + p * mu ** 2) / p
    beta = min(beta, delta)
    shrinkage = 0.0 if beta == 0 else beta / delta
    covariance = (1.0 - shrinkage) * (x.T @ x) / n
    covariance.flat[:: p + 1] += shrinkage * mu
    return covariance, shrinkage


@dataclass(frozen=True, eq=False)
class Boundary:
    """B = (μ, Σ) over ``n`` vectors, with the Ledoit–Wolf ``shrinkage`` that made Σ."""

    mu: Matrix
    sigma: Matrix
    n: int
    shrinkage: float

    @property
    def dimensions(self) -> int:
        """Vector length."""
        return int(self.mu.shape[0])

    @functools.cached_property
    def degrees_of_freedom(self) -> int:
        """The dimensions Σ actually spans (its numerical rank): all of them once
        Ledoit–Wolf has shrunk it; fewer when it could not (two vectors give no shrinkage
        and a rank of one), and then distances are measured within that span, through the
        pseudo-inverse. Zero only when every vector is the same."""
        return int(np.linalg.matrix_rank(self.sigma, hermitian=True))

    def control_limit(self, confidence: float = DEFAULT_CONFIDENCE) -> ControlLimit:
        """The chi-squared upper control limit at ``confidence`` (spec 003 §4.7), with as
        many degrees of freedom as Σ spans dimensions."""
        return ControlLimit.for_dimensions(max(self.degrees_of_freedom, 1), confidence)

    @functools.cached_property
    def _precision(self) -> Matrix:
        if self.degrees_of_freedom < self.dimensions:
            return np.asarray(np.linalg.pinv(self.sigma, hermitian=True), dtype=np.float64)
        try:
            return np.asarray(np.linalg.inv(self.sigma), dtype=np.float64)
        except np.linalg.LinAlgError:  # all vectors equal: no spread in some direction
            return np.asarray(np.linalg.pinv(self.sigma, hermitian=True), dtype=np.float64)

    def distances(self, vectors: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Mahalanobis distance of each row: ``sqrt((x − μ)ᵀ Σ⁻¹ (x − μ))``."""
        x = np.atleast_2d(np.asarray(vectors, dtype=np.float64))
        if x.shape[1] != self.dimensions:
            raise InputRejected("VECTOR_DIMENSION_MISMATCH",
                                f"vectors have {x.shape[1]} dimensions, the boundary "
                                f"{self.dimensions}")
        d = x - self.mu
        squared = np.einsum("ij,jk,ik->i", d, self._precision, d)
        return np.asarray(np.sqrt(np.maximum(squared, 0.0)), dtype=np.float64)

    def distance(self, vector: npt.ArrayLike) -> float:
        """Mahalanobis distance of one vector."""
        return float(self.distances(np.asarray(vector, dtype=np.float64).reshape(1, -1))[0])

    def digest(self) -> str:
        """sha256 of the stored form: names this exact boundary in summaries and the ledger."""
        return sha256_hex(canonical_json(self.to_dict()).encode("utf-8"))

    def to_dict(self) -> dict[str, Any]:
        """Plain lists, for storing with the run; :meth:`from_dict` reads it back exactly."""
        return {"version": BOUNDARY_VERSION, "n": self.n, "shrinkage": self.shrinkage,
                "mu": self.mu.tolist(), "sigma": self.sigma.tolist()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Boundary:
        """Read a stored boundary; anything malformed is ``MALFORMED_BOUNDARY``."""
        try:
            mu = np.asarray(data["mu"], dtype=np.float64)
            sigma = np.asarray(data["sigma"], dtype=np.float64)
            n, shrinkage = int(data["n"]), float(data["shrinkage"])
        except (KeyError, TypeError, ValueError) as exc:
            raise InputRejected("MALFORMED_BOUNDARY", f"not a boundary: {exc}") from exc
        p = mu.shape[0] if mu.ndim == 1 else -1
        if (data.get("version") != BOUNDARY_VERSION or sigma.shape != (p, p) or n < 2
                or not np.all(np.isfinite(sigma)) or not np.all(np.isfinite(mu))):
            raise InputRejected("MALFORMED_BOUNDARY", "boundary shapes or values are invalid")
        return cls(mu, sigma, n, shrinkage)


def compute_boundary(vectors: npt.ArrayLike) -> Boundary:
    """Centroid and Ledoit–Wolf covariance of at least two finite vectors."""
    x = np.asarray(vectors, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 1:
        raise InputRejected(BOUNDARY_TOO_FEW_VECTORS,
                            "a boundary needs at least two vectors of one length")
    if not np.all(np.isfinite(x)):
        raise InputRejected(BOUNDARY_NOT_FINITE, "vectors must be finite")
    sigma, shrinkage = ledoit_wolf(x)
    return Boundary(mu=x.mean(axis=0), sigma=sigma, n=int(x.shape[0]), shrinkage=shrinkage)


def corpus_boundary(store: Store, tenant: str, model_id: str) -> Boundary | None:
    """The boundary of the tenant's served chunk vectors for ``model_id``; ``None`` when
    fewer than two head chunks have one."""
    _, blobs = store.head_vectors(tenant, model_id)
    if len(blobs) < 2:
        return None
    return compute_boundary(np.vstack([np.frombuffer(b, dtype=np.float32) for b in blobs]))


def lock_boundary(vectors: npt.ArrayLike) -> Boundary:
    """The boundary a run locks, or :class:`BoundaryFailure`: at least two finite vectors
    with some spread. A covariance of rank zero (every vector the same) is singular in every
    direction: no ellipsoid to judge a distance against."""
    try:
        boundary = compute_boundary(vectors)
    except InputRejected as exc:
        raise BoundaryFailure(exc.reason_code, exc.detail) from exc
    if boundary.degrees_of_freedom == 0:
        raise BoundaryFailure(BOUNDARY_SINGULAR, "the covariance of the chunk vectors is "
                              "zero: every vector is the same")
    return boundary


def locked_corpus_boundary(store: Store, tenant: str, model_id: str) -> Boundary:
    """The boundary of the tenant's served chunk vectors, as a run locks it."""
    _, blobs = store.head_vectors(tenant, model_id)
    if len(blobs) < 2:
        raise BoundaryFailure(BOUNDARY_TOO_FEW_VECTORS,
                              f"{len(blobs)} served chunk vector(s); a boundary needs two")
    return lock_boundary(np.vstack([np.frombuffer(b, dtype=np.float32) for b in blobs]))


def boundary_record(boundary: Boundary | None, model_id: str,
                    quarantined: Sequence[str], *,
                    confidence: float = DEFAULT_CONFIDENCE) -> dict[str, Any]:
    """What a run stores about its boundary: the boundary itself, and ``DEGRADED_BOUNDARY``
    naming the quarantined documents it was computed without (an annotation, not a failure).
    """
    names = sorted(set(quarantined))
    return {
        "model_id": model_id,
        "boundary": boundary.to_dict() if boundary is not None else None,
        "digest": boundary.digest() if boundary is not None else None,
        "n": boundary.n if boundary is not None else 0,
        "degraded": bool(names),
        "annotations": [DEGRADED_BOUNDARY] if names else [],
        "excluded": names,
        "version": BOUNDARY_VERSION,
        "control_limit": (boundary.control_limit(confidence).to_dict()
                          if boundary is not None else None),
    }


def plausibility(boundary: Boundary, query: npt.ArrayLike,
                 evidence: Mapping[str, npt.ArrayLike | None], *,
                 confidence: float = DEFAULT_CONFIDENCE) -> dict[str, Any]:
    """Ledger entry: the query's and each evidence chunk's distance to the boundary, the
    control limit they are judged against, and whether each lies inside it (``None`` for
    a distance that is not a number)."""
    limit = boundary.control_limit(confidence)
    # An evidence chunk with no vector (its label is not sent to the embedder) has none.
    distances = {cid: None if v is None else _finite(boundary.distance(v))
                 for cid, v in sorted(evidence.items())}
    query_distance = _finite(boundary.distance(query))
    return {
        "query": query_distance,
        "evidence": distances,
        "dimensions": boundary.dimensions,
        "control_limit": limit.to_dict(),
        "query_inside": limit.inside(query_distance),
        "evidence_inside": {cid: limit.inside(d) for cid, d in distances.items()},
    }


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
