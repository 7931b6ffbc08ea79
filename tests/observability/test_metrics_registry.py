"""The metric registry's Prometheus text and the link resolution behind the
unresolved-link ratio."""

from __future__ import annotations

from affidavit.observability.metrics import SPECS, Registry, _relative_target, prometheus_name


def test_prometheus_text_has_cumulative_buckets_and_every_unit() -> None:
    registry = Registry()
    for seconds in (0.004, 0.2, 40.0):
        registry.add("affidavit.stage.duration", seconds, {"affidavit.stage": "classify"})
    registry.add("affidavit.answers", 1, {"affidavit.output_state": "AUTHORIZED"})
    registry.set_gauge("affidavit.leak_test.pass_ratio", 0.5)
    text = registry.prometheus_text()
    assert ('affidavit_stage_duration_seconds_bucket{affidavit_stage="classify",le="0.005"} 1'
            in text)
    assert ('affidavit_stage_duration_seconds_bucket{affidavit_stage="classify",le="0.25"} 2'
            in text)
    assert 'affidavit_stage_duration_seconds_bucket{affidavit_stage="classify",le="+Inf"} 3' in text
    assert 'affidavit_answers_total{affidavit_output_state="AUTHORIZED"} 1.0' in text
    assert "affidavit_leak_test_pass_ratio 0.5" in text
    for spec in SPECS.values():
        assert f"# UNIT {prometheus_name(spec).removesuffix('_total')} {spec.unit}" in text


def test_a_relative_link_resolves_from_the_linking_document_and_urls_do_not_count() -> None:
    assert _relative_target("policies/travel.md", "../hr/leave.md#days") == "hr/leave.md"
    assert _relative_target("policies/travel.md", "./rates.md") == "policies/rates.md"
    for link in ("https://example.org/x.md", "#section", "/etc/passwd", "mailto:a@b.c"):
        assert _relative_target("policies/travel.md", link) is None
    assert _relative_target("travel.md", "../../outside.md") is None
