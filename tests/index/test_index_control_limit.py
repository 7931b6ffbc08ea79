"""The chi-squared control limit of the boundary: quantiles equal published table values and
SciPy's, the limit is deterministic, and a boundary's degrees of freedom are the dimensions
its covariance spans."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import chi2

from affidavit.errors import InputRejected
from affidavit.index.boundary import (
    BOUNDARY_SINGULAR,
    BOUNDARY_TOO_FEW_VECTORS,
    BoundaryFailure,
    compute_boundary,
    lock_boundary,
    plausibility,
)
from affidavit.index.control_limit import (
    ControlLimit,
    chi_squared_cdf,
    chi_squared_quantile,
    upper_control_limit,
)

# Upper percentage points of the chi-squared distribution as printed in statistical tables
# (NIST/SEMATECH e-Handbook of Statistical Methods, table 1.3.6.7.4), to three decimals.
TABLE = [
    (1, 0.95, 3.841), (1, 0.99, 6.635), (1, 0.999, 10.828),
    (2, 0.95, 5.991), (2, 0.99, 9.210),
    (5, 0.90, 9.236), (5, 0.95, 11.070), (5, 0.99, 15.086),
    (10, 0.95, 18.307), (10, 0.99, 23.209), (10, 0.999, 29.588),
    (30, 0.95, 43.773), (30, 0.99, 50.892),
    (100, 0.90, 118.498), (100, 0.95, 124.342), (100, 0.99, 135.807),
    (10, 0.05, 3.940), (100, 0.10, 82.358),
]


@pytest.mark.parametrize(("df", "probability", "printed"), TABLE)
def test_chi_squared_quantile_equals_the_printed_table(df: int, probability: float,
                                                       printed: float) -> None:
    assert round(chi_squared_quantile(probability, df), 3) == printed


@pytest.mark.parametrize("df", [1, 2, 3, 7, 16, 32, 64, 256, 384, 768, 1536, 3072])
@pytest.mark.parametrize("probability", [1e-6, 0.01, 0.3, 0.5, 0.9, 0.95, 0.99, 0.999,
                                         0.999999, 1 - 1e-12])
def test_chi_squared_quantile_equals_scipy(df: int, probability: float) -> None:
    assert chi_squared_quantile(probability, df) == pytest.approx(chi2.ppf(probability, df),
                                                                  rel=1e-10)


@pytest.mark.parametrize("df", [1, 4, 50, 384])
def test_chi_squared_cdf_equals_scipy_and_inverts_the_quantile(df: int) -> None:
    for x in (0.01, 0.5, df / 2, df, 2 * df + 10):
        assert chi_squared_cdf(x, df) == pytest.approx(chi2.cdf(x, df), rel=1e-12, abs=1e-15)
    for probability in (0.05, 0.5, 0.99):
        assert chi_squared_cdf(chi_squared_quantile(probability, df), df) == pytest.approx(
            probability, rel=1e-12)


def test_upper_control_limit_is_the_root_of_the_quantile_and_deterministic() -> None:
    first = [upper_control_limit(p, 0.99) for p in (16, 64, 384)]
    assert first == [upper_control_limit(p, 0.99) for p in (16, 64, 384)]
    assert first[2] == pytest.approx(math.sqrt(chi2.ppf(0.99, 384)), rel=1e-12)
    assert first[0] < first[1] < first[2]


@pytest.mark.parametrize(("probability", "df"), [(0.0, 3), (1.0, 3), (-0.2, 3), (0.5, 0)])
def test_a_confidence_outside_zero_one_or_no_degrees_of_freedom_is_refused(
        probability: float, df: int) -> None:
    with pytest.raises(InputRejected):
        chi_squared_quantile(probability, df)


def test_the_limit_counts_a_distance_that_is_not_a_number_as_unknown() -> None:
    limit = ControlLimit.for_dimensions(4, 0.95)
    assert limit.inside(limit.ucl) is True and limit.inside(limit.ucl * 1.0001) is False
    assert limit.inside(None) is None and limit.inside(math.inf) is None


def test_boundary_degrees_of_freedom_are_the_dimensions_its_covariance_spans() -> None:
    rng = np.random.default_rng(7)
    full = compute_boundary(rng.normal(size=(40, 6)))
    assert full.degrees_of_freedom == 6
    assert full.control_limit(0.99).ucl == pytest.approx(math.sqrt(chi2.ppf(0.99, 6)))
    # Two vectors: Ledoit–Wolf does not shrink, Σ spans the one line through them.
    pair = compute_boundary(rng.normal(size=(2, 6)))
    assert pair.shrinkage == 0.0 and pair.degrees_of_freedom == 1
    assert pair.control_limit(0.99).degrees_of_freedom == 1
    assert np.isfinite(pair.distance(rng.normal(size=6)))


def test_plausibility_records_the_limit_and_which_vectors_are_inside() -> None:
    rng = np.random.default_rng(11)
    data = rng.normal(size=(200, 5))
    boundary = compute_boundary(data)
    far = data.mean(axis=0) + 50 * data.std(axis=0)
    entry = plausibility(boundary, data.mean(axis=0), {"b-far": far, "a-near": data[0],
                                                        "c-none": None}, confidence=0.95)
    assert entry["control_limit"]["ucl"] == pytest.approx(math.sqrt(chi2.ppf(0.95, 5)))
    assert entry["control_limit"]["degrees_of_freedom"] == 5
    assert entry["query_inside"] is True
    assert entry["evidence_inside"] == {"a-near": True, "b-far": False, "c-none": None}
    assert list(entry["evidence"]) == ["a-near", "b-far", "c-none"]


def test_a_run_cannot_lock_a_boundary_over_too_few_or_identical_vectors() -> None:
    with pytest.raises(BoundaryFailure) as few:
        lock_boundary(np.ones((1, 4)))
    assert few.value.reason_code == BOUNDARY_TOO_FEW_VECTORS
    with pytest.raises(BoundaryFailure) as same:
        lock_boundary(np.ones((5, 4)))
    assert same.value.reason_code == BOUNDARY_SINGULAR
    assert lock_boundary(np.random.default_rng(1).normal(size=(5, 4))).n == 5
