"""The geometric boundary: Ledoit–Wolf equals scikit-learn's, Mahalanobis equals SciPy's,
the stored form round-trips, and a run with a quarantined document is DEGRADED."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.distance import mahalanobis
from sklearn.covariance import ledoit_wolf as sk_ledoit_wolf
from tests.retrieval.governed_corpus import document, governed_settings

from affidavit.errors import InputRejected
from affidavit.index import (
    DEGRADED_BOUNDARY,
    Boundary,
    HashEmbeddingBackend,
    boundary_record,
    compute_boundary,
    corpus_boundary,
    embed_missing,
    ledoit_wolf,
)
from affidavit.ingest.run import Ingestor
from affidavit.records import SourceDocument
from affidavit.sources.memory import StaticSource
from affidavit.store import SQLiteStore

SHAPES = [(50, 5), (200, 16), (12, 40), (3, 8), (40, 1)]


def fixed_data(n: int, p: int, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    mixing = rng.normal(size=(p, p))
    return rng.normal(size=(n, p)) @ mixing + rng.normal(size=p)


@pytest.mark.parametrize(("n", "p"), SHAPES)
def test_ledoit_wolf_matches_scikit_learn(n: int, p: int) -> None:
    data = fixed_data(n, p)
    covariance, shrinkage = ledoit_wolf(data)
    expected, expected_shrinkage = sk_ledoit_wolf(data)
    assert shrinkage == pytest.approx(expected_shrinkage, abs=1e-8)
    np.testing.assert_allclose(covariance, expected, rtol=0, atol=1e-8)


def test_boundary_distance_matches_scipy_mahalanobis() -> None:
    data = fixed_data(100, 6)
    boundary = compute_boundary(data)
    precision = np.linalg.inv(sk_ledoit_wolf(data)[0])
    probes = np.vstack([data[:5], data.mean(axis=0), data[0] * 3])
    for probe in probes:
        expected = mahalanobis(probe, data.mean(axis=0), precision)
        assert boundary.distance(probe) == pytest.approx(expected, rel=1e-9)
    assert boundary.distance(data.mean(axis=0)) == pytest.approx(0.0, abs=1e-9)
    np.testing.assert_allclose(boundary.distances(probes),
                               [boundary.distance(p) for p in probes], rtol=1e-12)


def test_far_vectors_are_farther() -> None:
    data = fixed_data(300, 8)
    boundary = compute_boundary(data)
    centre = data.mean(axis=0)
    assert boundary.distance(centre + 10 * data.std(axis=0)) > boundary.distance(data[0])


def test_stored_form_round_trips_exactly_through_json() -> None:
    boundary = compute_boundary(fixed_data(30, 4))
    restored = Boundary.from_dict(json.loads(json.dumps(boundary.to_dict())))
    assert np.array_equal(restored.mu, boundary.mu)
    assert np.array_equal(restored.sigma, boundary.sigma)
    assert (restored.n, restored.shrinkage) == (boundary.n, boundary.shrinkage)
    assert restored.digest() == boundary.digest()


@pytest.mark.parametrize("change", [{"sigma": [[1.0]]}, {"version": "other"}, {"n": 1},
                                    {"mu": "x"}, {"sigma": None}])
def test_malformed_stored_boundary_is_rejected(change: dict[str, object]) -> None:
    data = {**compute_boundary(fixed_data(30, 3)).to_dict(), **change}
    with pytest.raises(InputRejected) as caught:
        Boundary.from_dict(data)
    assert caught.value.reason_code == "MALFORMED_BOUNDARY"


def test_too_few_vectors_cannot_make_a_boundary() -> None:
    with pytest.raises(InputRejected) as caught:
        compute_boundary(np.ones((1, 4)))
    assert caught.value.reason_code == "BOUNDARY_TOO_FEW_VECTORS"


def test_identical_vectors_still_give_finite_distances() -> None:
    boundary = compute_boundary(np.ones((5, 3)))
    assert np.isfinite(boundary.distance([1.0, 1.0, 1.0]))


def test_a_run_with_a_quarantined_document_is_degraded_and_names_it(tmp_path: Path) -> None:
    settings = governed_settings()
    store = SQLiteStore(tmp_path / "boundary.db")
    good = [document(f"ok-{i}", f"Travel policy number {i} covers hotel and flight.",
                     acl=("group:staff#member",)) for i in range(4)]
    broken = SourceDocument("memory", "broken", "r1", b"\xff\xfe\x00garbage", "broken.bin")
    summary = Ingestor(store, settings).run([StaticSource([*good, broken])])
    assert summary.status == "DEGRADED"
    backend = HashEmbeddingBackend(32)
    embed_missing(store, settings.tenant, backend)
    boundary = corpus_boundary(store, settings.tenant, backend.model_id)
    assert boundary is not None and boundary.n == 4
    quarantined = [q["alias"] for q in summary.to_dict()["quarantined"]]
    record = boundary_record(boundary, backend.model_id, quarantined)
    assert record["degraded"] is True
    assert record["annotations"] == [DEGRADED_BOUNDARY]
    assert record["excluded"] == ["broken.bin"]
    assert Boundary.from_dict(record["boundary"]).n == 4


def test_a_clean_run_is_not_degraded() -> None:
    record = boundary_record(compute_boundary(fixed_data(10, 2)), "m", [])
    assert record["degraded"] is False and record["annotations"] == []
