"""The sensitivity policy: label order as a tie-breaker, validation, and the public surface."""

from __future__ import annotations

import types

import pytest

import affidavit.classify as classify_package
from affidavit.config.settings import DEFAULT_LABELS, SensitivitySettings
from affidavit.errors import ConfigurationError, InputRejected
from affidavit.policy.policy import SensitivityPolicy


def test_default_order_and_severity() -> None:
    pol = SensitivityPolicy.from_settings(SensitivitySettings())
    assert pol.labels == DEFAULT_LABELS
    assert pol.severity("PUBLIC") == 0
    assert pol.severity("restricted") == len(DEFAULT_LABELS) - 1
    assert pol.most_severe(["PII", "FINANCIAL", "INTERNAL"]) == "FINANCIAL"
    assert pol.most_severe(["pii"]) == "PII"
    assert pol.is_known("Confidential") and not pol.is_known("TOP_SECRET")


def test_most_severe_rejects_unknown_and_empty() -> None:
    pol = SensitivityPolicy(DEFAULT_LABELS)
    with pytest.raises(InputRejected) as unknown:
        pol.most_severe(["PUBLIC", "TOP_SECRET"])
    assert unknown.value.reason_code == "UNKNOWN_LABEL"
    with pytest.raises(InputRejected) as empty:
        pol.most_severe([])
    assert empty.value.reason_code == "NO_LABEL"


def test_deployment_labels_keep_their_configured_order() -> None:
    labels = ("PUBLIC", "INTERNAL", "EXPORT_CONTROLLED", "ATTORNEY_CLIENT", "RESTRICTED")
    pol = SensitivityPolicy(labels, keywords={"EXPORT_CONTROLLED": ("ITAR",)}, detectors={})
    assert pol.most_severe(["ATTORNEY_CLIENT", "EXPORT_CONTROLLED"]) == "ATTORNEY_CLIENT"
    assert pol.keyword_sets[0][0] == "EXPORT_CONTROLLED"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"labels": ()},
        {"labels": ("PUBLIC", "public", "RESTRICTED")},
        {"labels": ("PUBLIC", "INTERNAL")},
        {"labels": DEFAULT_LABELS, "default_level": "NOPE"},
        {"labels": DEFAULT_LABELS, "keywords": {"NOPE": ("x",)}},
        {"labels": DEFAULT_LABELS, "detectors": {"email": "NOPE"}},
        {"labels": DEFAULT_LABELS, "detectors": {"passport": "PII"}},
    ],
)
def test_bad_policies_are_configuration_errors(kwargs: dict[str, object]) -> None:
    labels = kwargs.pop("labels")
    with pytest.raises(ConfigurationError):
        SensitivityPolicy(labels, **kwargs)  # type: ignore[arg-type]


def test_fingerprint_tracks_policy_content_not_mapping_order() -> None:
    a = SensitivityPolicy(DEFAULT_LABELS, keywords={"PII": ("salary",), "FINANCIAL": ("x",)})
    b = SensitivityPolicy(DEFAULT_LABELS, keywords={"FINANCIAL": ("x",), "PII": ("salary",)})
    c = SensitivityPolicy(DEFAULT_LABELS, keywords={"PII": ("bonus",)})
    assert a.fingerprint == b.fingerprint != c.fingerprint
    assert a.to_dict()["keywords"] == {"FINANCIAL": ["x"], "PII": ["salary"]}


def test_export_list_is_complete() -> None:
    public = {
        name
        for name, value in vars(classify_package).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public == set(classify_package.__all__)
