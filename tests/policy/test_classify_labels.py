"""Paragraph labels, segments and the classifier seam."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from affidavit.config.settings import SensitivitySettings
from affidavit.errors import GovernanceError, InputRejected
from affidavit.policy.classifier import RecordingClassifier, consult_classifier
from affidavit.policy.labels import classify_paragraphs
from affidavit.policy.policy import SensitivityPolicy
from affidavit.policy.segments import build_segments
from affidavit.records import ExtractedDocument, Paragraph, ParagraphLabel


def make_doc(*blocks: str) -> ExtractedDocument:
    """Blocks joined by blank lines; a block starting with '#' is a heading."""
    paragraphs: list[Paragraph] = []
    offset = 0
    for index, block in enumerate(blocks):
        kind = "heading" if block.startswith("#") else "paragraph"
        paragraphs.append(Paragraph(index, offset, offset + len(block), kind))
        offset += len(block) + 2
    return ExtractedDocument("\n\n".join(blocks), tuple(paragraphs), "markdown")


def policy(**changes: object) -> SensitivityPolicy:
    return SensitivityPolicy.from_settings(SensitivitySettings(**changes))  # type: ignore[arg-type]


def classify(
    doc: ExtractedDocument,
    pol: SensitivityPolicy | None = None,
    *,
    declared: str | None = None,
    path: str = "docs/report.md",
    overrides: Mapping[int, str] | None = None,
    extra: Sequence[str | None] | None = None,
) -> tuple[ParagraphLabel, ...]:
    return classify_paragraphs(
        doc,
        policy=pol or policy(),
        declared=declared,
        path=path,
        overrides=overrides,
        extra=extra,
    )


def label_list(labels: Sequence[ParagraphLabel]) -> list[str]:
    return [label.label for label in labels]


def test_mixed_document_yields_public_pii_public_segments() -> None:
    doc = make_doc(
        "Our annual report is published every spring.",
        "It covers the group's results.",
        "Questions go to jordan.whitcombe@example.com or +44 7700 900461.",
        "The report is free to download.",
    )
    labels = classify(doc, declared="PUBLIC")
    assert label_list(labels) == ["PUBLIC", "PUBLIC", "PII", "PUBLIC"]
    assert labels[2].reasons == ("declared:PUBLIC", "detector:email", "detector:phone")
    segments = build_segments(doc, labels)
    assert [(s.label, s.first, s.last) for s in segments] == [
        ("PUBLIC", 0, 1),
        ("PII", 2, 2),
        ("PUBLIC", 3, 3),
    ]
    assert segments[0].start == 0 and segments[0].end == doc.paragraphs[1].end
    assert (segments[1].start, segments[1].end) == (doc.paragraphs[2].start, doc.paragraphs[2].end)


def test_declared_internal_never_hides_an_ssn() -> None:
    doc = make_doc("Overtime was reviewed.", "His SSN, 212-45-7781, is on file.", "Closed.")
    labels = classify(doc, declared="INTERNAL")
    assert label_list(labels) == ["INTERNAL", "PII_SENSITIVE", "INTERNAL"]
    assert labels[1].reasons == ("declared:INTERNAL", "detector:national_id")


def test_declared_label_is_case_insensitive_and_must_be_known() -> None:
    doc = make_doc("Quarterly figures.")
    assert classify(doc, declared="financial")[0].reasons == ("declared:FINANCIAL",)
    with pytest.raises(InputRejected) as caught:
        classify(doc, declared="TOP_SECRET")
    assert caught.value.reason_code == "UNKNOWN_LABEL"


def test_no_signal_gets_default_level() -> None:
    labels = classify(make_doc("Plain words.", "More plain words."))
    assert label_list(labels) == ["INTERNAL", "INTERNAL"]
    assert labels[0].reasons == ("default:INTERNAL",)
    public_default = policy(default_level="PUBLIC")
    assert label_list(classify(make_doc("Plain."), public_default)) == ["PUBLIC"]


def test_strict_switch_escalates_a_document_without_any_signal() -> None:
    strict = policy(escalate_unknown_to_restricted=True)
    labels = classify(make_doc("Plain words.", "More plain words."), strict)
    assert label_list(labels) == ["RESTRICTED", "RESTRICTED"]
    assert labels[0].reasons == ("escalated:no_signal",)


def test_strict_switch_leaves_signal_bearing_documents_to_their_signals() -> None:
    strict = policy(escalate_unknown_to_restricted=True)
    labels = classify(make_doc("Plain words.", "Mail a@example.com."), strict)
    assert label_list(labels) == ["INTERNAL", "PII"]
    declared = classify(make_doc("Plain words."), strict, declared="PUBLIC")
    assert label_list(declared) == ["PUBLIC"]


def test_override_is_the_only_way_down_and_is_recorded() -> None:
    doc = make_doc("Press contact: press@example.com.", "Other text.")
    labels = classify(doc, declared="PUBLIC", overrides={0: "public"})
    assert labels[0].label == "PUBLIC"
    assert labels[0].reasons == ("declared:PUBLIC", "detector:email", "override:PUBLIC")
    assert labels[1].reasons == ("declared:PUBLIC",)


def test_override_must_name_a_known_label_and_paragraph() -> None:
    doc = make_doc("Text.")
    with pytest.raises(InputRejected) as unknown:
        classify(doc, overrides={0: "WHATEVER"})
    assert unknown.value.reason_code == "UNKNOWN_LABEL"
    with pytest.raises(InputRejected) as missing:
        classify(doc, overrides={5: "PUBLIC"})
    assert missing.value.reason_code == "OVERRIDE_OUT_OF_RANGE"


def test_restricted_filename_patterns_match_path_or_basename_case_insensitively() -> None:
    pol = policy(restricted_filename_patterns=("*board-minutes*", "secret/*"))
    doc = make_doc("Minutes.")
    by_basename = classify(doc, pol, path="corpus/Board/2024-10-23-BOARD-MINUTES.md")
    assert by_basename[0].label == "RESTRICTED"
    assert by_basename[0].reasons == ("filename:*board-minutes*",)
    by_path = classify(doc, pol, path="Secret\\plans.md")
    assert by_path[0].reasons == ("filename:secret/*",)
    assert classify(doc, pol, path="corpus/board/agenda.md")[0].label == "INTERNAL"


def test_restricted_keyword_marks_only_its_paragraph() -> None:
    pol = policy(restricted_keywords=("Project Lighthouse", "董事会纪要"))
    doc = make_doc(
        "Status of project\nlighthouse: on track.", "Nothing here.", "本次董事会纪要如下"
    )
    labels = classify(doc, pol)
    assert label_list(labels) == ["RESTRICTED", "INTERNAL", "RESTRICTED"]
    assert labels[0].reasons == ("restricted_keyword:Project Lighthouse",)
    assert labels[2].reasons == ("restricted_keyword:董事会纪要",)


@pytest.mark.parametrize(
    ("text", "hit"),
    [
        ("This holds PII data.", True),
        ("pii.", True),
        ("The piie field.", False),
        ("spii", False),
        ("pii_field", False),
        ("含有PII的数据", True),  # CJK neighbours are a word boundary
    ],
)
def test_keywords_match_at_word_boundaries(text: str, hit: bool) -> None:
    pol = policy(keywords={"PII": ("pii",)})
    labels = classify(make_doc(text), pol)
    assert (labels[0].label == "PII") is hit
    if hit:
        assert labels[0].reasons == ("keyword:PII:pii",)


def test_cjk_keywords_match_as_substrings() -> None:
    pol = policy(keywords={"FINANCIAL": ("薪酬",)})
    assert classify(make_doc("员工薪酬调整方案"), pol)[0].label == "FINANCIAL"


def test_reasons_are_ordered_by_kind_then_name() -> None:
    pol = policy(
        restricted_keywords=("lighthouse",),
        keywords={"PII": ("salary",), "CONFIDENTIAL": ("strictly confidential",)},
    )
    doc = make_doc("Strictly confidential: salary of a@example.com, +44 7700 900461, lighthouse.")
    reasons = classify(doc, pol, declared="INTERNAL", path="x/board.md")[0].reasons
    assert reasons == (
        "declared:INTERNAL",
        "restricted_keyword:lighthouse",
        "keyword:CONFIDENTIAL:strictly confidential",
        "keyword:PII:salary",
        "detector:email",
        "detector:phone",
    )


def test_only_enabled_detectors_fire() -> None:
    doc = make_doc("Mail a@example.com.")
    assert classify(doc, policy(detectors={}))[0].label == "INTERNAL"
    custom = policy(detectors={"email": "CONFIDENTIAL"})
    assert classify(doc, custom)[0].reasons == ("detector:email",)
    assert classify(doc, custom)[0].label == "CONFIDENTIAL"


def test_classifier_answer_raises_but_never_lowers() -> None:
    doc = make_doc("Deal terms.", "Mail a@example.com.")
    labels = classify(doc, extra=["SECRET", "PUBLIC"])
    assert label_list(labels) == ["SECRET", "PII"]
    assert labels[0].reasons == ("classifier:SECRET",)
    assert labels[1].reasons == ("detector:email", "classifier:PUBLIC")


def test_classifier_answers_must_match_the_paragraphs() -> None:
    doc = make_doc("One.", "Two.")
    with pytest.raises(GovernanceError):
        classify(doc, extra=["PUBLIC"])
    with pytest.raises(GovernanceError):
        classify(doc, extra=["PUBLIC", "NOT_A_LABEL"])


@pytest.mark.invariant
def test_invariant_restricted_paragraphs_are_never_shown_to_a_classifier() -> None:
    pol = policy(restricted_keywords=("lighthouse",))
    doc = make_doc("Lighthouse budget is 4m.", "Deal terms for Apollo.", "Canteen menu.")
    first = classify(doc, pol)
    classifier = RecordingClassifier([("Deal terms", "SECRET")])
    extra = consult_classifier(classifier, doc, first)
    assert classifier.seen == ["Deal terms for Apollo.", "Canteen menu."]
    assert extra == (None, "SECRET", None)
    final = classify(doc, pol, extra=extra)
    assert label_list(final) == ["RESTRICTED", "SECRET", "INTERNAL"]


def test_strict_unsignalled_document_shows_nothing_to_a_classifier() -> None:
    strict = policy(escalate_unknown_to_restricted=True)
    doc = make_doc("Plain words.")
    classifier = RecordingClassifier([("Plain", "PUBLIC")])
    assert consult_classifier(classifier, doc, classify(doc, strict)) == (None,)
    assert classifier.seen == []


def test_build_segments_needs_one_label_per_paragraph() -> None:
    doc = make_doc("One.", "Two.")
    with pytest.raises(InputRejected) as caught:
        build_segments(doc, [ParagraphLabel(0, "PUBLIC", ())])
    assert caught.value.reason_code == "LABELS_MISMATCH"
    with pytest.raises(InputRejected):
        build_segments(doc, [ParagraphLabel(0, "PUBLIC", ()), ParagraphLabel(0, "PII", ())])
    assert build_segments(make_doc(), []) == ()


def test_classification_is_deterministic() -> None:
    pol = policy(keywords={"PII": ("salary", "bonus"), "FINANCIAL": ("EBITDA",)})
    doc = make_doc("Salary, bonus and EBITDA for a@example.com.", "Other.")
    assert classify(doc, pol) == classify(doc, pol)
    reordered = policy(keywords={"FINANCIAL": ("EBITDA",), "PII": ("salary", "bonus")})
    assert classify(doc, pol) == classify(doc, reordered)
