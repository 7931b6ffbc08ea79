"""The chi-squared control limit of the geometric boundary (spec 003 §4.7).

For vectors drawn from the distribution the boundary ``B = (μ, Σ)`` describes, the squared
Mahalanobis distance ``D²`` follows a chi-squared distribution with as many degrees of
freedom as the vectors have dimensions. The upper control limit at confidence ``c`` is
``UCL = sqrt(χ²_p⁻¹(c))``: a vector farther than that lies outside the ellipsoid that holds
a share ``c`` of the corpus. It is a plausibility signal for reviewers, never a gate.

The quantile is computed here rather than taken from SciPy, which is not a dependency: the
regularised lower incomplete gamma function ``P(k/2, x/2)`` (its series below ``a + 1``, its
continued fraction above, as in Numerical Recipes §6.2), inverted by Newton steps kept
inside a bracket, starting from the Wilson–Hilferty approximation. Plain float arithmetic in
a fixed order: the same inputs give the same limit on every machine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

from affidavit.errors import InputRejected

DEFAULT_CONFIDENCE = 0.99
_EPS = 1e-15
_TINY = 1e-300
_MAX_ITERATIONS = 500


def chi_squared_cdf(x: float, df: float) -> float:
    """``P(X ≤ x)`` for ``X ~ χ²(df)``."""
    if df <= 0:
        raise InputRejected("BAD_DEGREES_OF_FREEDOM", "degrees of freedom must be positive")
    if x <= 0:
        return 0.0
    return _lower_regularised_gamma(df / 2.0, x / 2.0)


def chi_squared_quantile(probability: float, df: float) -> float:
    """The ``x`` with ``P(X ≤ x) = probability`` for ``X ~ χ²(df)``, to about 1e-12
    relative."""
    if not 0.0 < probability < 1.0:
        raise InputRejected("BAD_CONFIDENCE", "a confidence must lie strictly between 0 and 1")
    if df <= 0:
        raise InputRejected("BAD_DEGREES_OF_FREEDOM", "degrees of freedom must be positive")
    low, high = 0.0, _upper_bracket(probability, df)
    start = _wilson_hilferty(probability, df)
    x = start if 0.0 < start < high else high / 2.0
    for _ in range(_MAX_ITERATIONS):
        error = _cdf_minus(x, df, probability)
        if error == 0.0:
            return x
        if error > 0:
            high = x
        else:
            low = x
        density = _density(x, df)
        candidate = x - error / density if density > 0 else math.nan
        if abs(candidate - x) <= 1e-14 * x or high - low <= 1e-15 * high:
            return candidate if low <= candidate <= high else x
        # A Newton step that leaves the bracket (flat tails) is replaced by bisection.
        x = candidate if low < candidate < high else (low + high) / 2.0
    return x


def upper_control_limit(df: int, confidence: float = DEFAULT_CONFIDENCE) -> float:
    """The largest Mahalanobis distance still inside the boundary at ``confidence``."""
    return math.sqrt(chi_squared_quantile(confidence, df))


@dataclass(frozen=True)
class ControlLimit:
    """The control limit one boundary was judged with: ``ucl`` at ``confidence`` with
    ``degrees_of_freedom`` (the dimensions of the boundary's covariance)."""

    confidence: float
    degrees_of_freedom: int
    ucl: float

    @classmethod
    def for_dimensions(cls, dimensions: int,
                       confidence: float = DEFAULT_CONFIDENCE) -> ControlLimit:
        """The limit for a boundary of ``dimensions`` dimensions."""
        return cls(confidence, dimensions, upper_control_limit(dimensions, confidence))

    def inside(self, distance: float | None) -> bool | None:
        """Whether a distance lies within the limit; ``None`` when it is not a number."""
        if distance is None or not math.isfinite(distance):
            return None
        return distance <= self.ucl

    def to_dict(self) -> dict[str, Any]:
        """For the ledger."""
        return {"distribution": "chi-squared", "confidence": self.confidence,
                "degrees_of_freedom": self.degrees_of_freedom, "ucl": self.ucl}


def _cdf_minus(x: float, df: float, probability: float) -> float:
    """``cdf(x) − probability``; in the upper tail as ``(1 − probability) − sf(x)``, which
    keeps its digits where the cdf rounds to 1."""
    if probability <= 0.5:
        return chi_squared_cdf(x, df) - probability
    a, half = df / 2.0, x / 2.0
    log_prefactor = a * math.log(half) - half - math.lgamma(a)
    if half < a + 1.0:
        survival = 1.0 - _gamma_series(a, half) * math.exp(log_prefactor)
    else:
        survival = _gamma_continued_fraction(a, half) * math.exp(log_prefactor)
    return (1.0 - probability) - survival


def _wilson_hilferty(probability: float, df: float) -> float:
    """Wilson & Hilferty (1931): ``(X/k)^(1/3)`` is nearly normal; a starting point."""
    z = NormalDist().inv_cdf(probability)
    h = 2.0 / (9.0 * df)
    return df * max(1.0 - h + z * math.sqrt(h), 0.0) ** 3


def _upper_bracket(probability: float, df: float) -> float:
    high = max(2.0 * df, 1.0)
    while chi_squared_cdf(high, df) < probability:
        high *= 2.0
    return high


def _density(x: float, df: float) -> float:
    a = df / 2.0
    return math.exp((a - 1.0) * math.log(x) - x / 2.0 - a * math.log(2.0) - math.lgamma(a))


def _lower_regularised_gamma(a: float, x: float) -> float:
    """``P(a, x) = γ(a, x) / Γ(a)``."""
    log_prefactor = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1.0:
        return _gamma_series(a, x) * math.exp(log_prefactor)
    return 1.0 - _gamma_continued_fraction(a, x) * math.exp(log_prefactor)


def _gamma_series(a: float, x: float) -> float:
    term = total = 1.0 / a
    denominator = a
    for _ in range(_MAX_ITERATIONS * 20):
        denominator += 1.0
        term *= x / denominator
        total += term
        if abs(term) < abs(total) * _EPS:
            break
    return total


def _gamma_continued_fraction(a: float, x: float) -> float:
    """Modified Lentz evaluation of the continued fraction of ``Γ(a, x)``."""
    b = x + 1.0 - a
    c = 1.0 / _TINY
    d = 1.0 / b
    h = d
    for i in range(1, _MAX_ITERATIONS * 20):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = _TINY if abs(d) < _TINY else d
        c = b + an / c
        c = _TINY if abs(c) < _TINY else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _EPS:
            break
    return h
