"""The model-assisted paragraph classifier, against a scripted OpenAI-compatible server on
127.0.0.1: it raises an unlabelled salary paragraph, never receives a RESTRICTED one, can
only raise, and splits a large document into page windows whose overlaps keep the more
severe answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.answer.answer_fake_openai import FakeOpenAI, chat, fake_openai

from affidavit.classify.document import label_document
from affidavit.classify.model import (
    ModelParagraphClassifier,
    classifier_identity,
    label_sources,
    page_windows,
)
from affidavit.config.settings import ModelClassifierSettings, SensitivitySettings, Settings
from affidavit.extract import extract
from affidavit.ingest.run import Ingestor
from affidavit.policy.labels import classify_paragraphs
from affidavit.policy.policy import SensitivityPolicy
from affidavit.records import ExtractedDocument, Paragraph
from affidavit.sources import LocalFolderSource
from affidavit.store import SQLiteStore

__all__ = ["fake_openai"]

SALARY = "Maria's monthly gross pay rises to 5200 with the new bonus scheme."
NIGHTJAR = "Project Nightjar shortlists the three harbour operators to acquire next spring."
EMAIL = "Questions go to the pilots' desk at desk@example.com every morning."
BODY = f"# Crew notes\n\nThe crew meets on Mondays.\n\n{SALARY}\n\n{NIGHTJAR}\n\n{EMAIL}\n"


def _settings(fake: FakeOpenAI, **model: object) -> SensitivitySettings:
    return SensitivitySettings(
        restricted_keywords=("project nightjar",),
        model=ModelClassifierSettings(enabled=True, base_url=fake.base_url,
                                      model="label-model-1", **model))  # type: ignore[arg-type]


def _index_of(doc: ExtractedDocument, text: str) -> int:
    return next(p.index for p in doc.paragraphs if text in doc.paragraph_text(p))


def _sent_texts(fake: FakeOpenAI) -> str:
    return json.dumps(fake.bodies("/v1/chat/completions"))


def test_model_raises_unlabelled_salary_paragraph_and_never_sees_restricted(
        fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    doc = extract(BODY.encode(), filename="crew.md", limits=Settings().ingest)
    salary, nightjar, email = (_index_of(doc, t) for t in (SALARY, NIGHTJAR, EMAIL))
    # The model says the salary is FINANCIAL, tries to lower the e-mail paragraph to PUBLIC
    # and names the RESTRICTED paragraph it was never shown.
    fake_openai.defaults["/v1/chat/completions"] = chat(json.dumps(
        {str(salary): "FINANCIAL", str(email): "PUBLIC", str(nightjar): "PUBLIC"}))
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "crew.md").write_text(BODY, encoding="utf-8")
    store = SQLiteStore(tmp_path / "model.db")
    try:
        settings = Settings(sensitivity=_settings(fake_openai))
        Ingestor(store, settings).run([LocalFolderSource(root, max_document_bytes=1 << 20)])
        rows = store._read("SELECT idx, label, reasons_json FROM paragraph_labels "
                           "ORDER BY idx")
    finally:
        store.close()
    labels = {int(str(r[0])): (str(r[1]), tuple(json.loads(str(r[2])))) for r in rows}
    assert labels[salary][0] == "FINANCIAL"
    assert label_sources(labels[salary][1]) == ("model",)
    assert labels[email][0] == "PII", "the model can only raise a label"
    assert labels[nightjar][0] == "RESTRICTED"
    sent = _sent_texts(fake_openai)
    assert "Maria" in sent
    assert "Nightjar" not in sent and "acquire" not in sent


def test_model_id_is_part_of_the_label_epoch_and_witness(fake_openai: FakeOpenAI) -> None:
    from affidavit.classify.epoch import label_epoch

    base = SensitivitySettings()
    one, two = _settings(fake_openai), _settings(fake_openai)
    two = SensitivitySettings(restricted_keywords=two.restricted_keywords,
                              model=ModelClassifierSettings(
                                  enabled=True, base_url=fake_openai.base_url,
                                  model="label-model-2"))
    assert len({label_epoch(base), label_epoch(one), label_epoch(two)}) == 3


def _paged_document(pages: int, per_page: int, chars: int) -> ExtractedDocument:
    texts: list[str] = []
    paragraphs: list[Paragraph] = []
    position = 0
    for page in range(1, pages + 1):
        for n in range(per_page):
            text = f"Page {page} paragraph {n}: " + "x" * (chars - 25)
            paragraphs.append(Paragraph(len(paragraphs), position, position + len(text),
                                        "paragraph", (), page))
            texts.append(text)
            position += len(text) + 2
    return ExtractedDocument("\n\n".join(texts), tuple(paragraphs), "pdf")


def test_page_windows_cut_at_pages_with_two_page_overlap() -> None:
    pages = [1, 1, 2, 3, 3, 4, 5, 6, 7]
    lengths = [10_000] * len(pages)
    windows = page_windows(pages, lengths, window_chars=40_000, overlap_pages=2)
    as_pages = [sorted({pages[p] for p in w}) for w in windows]
    # Page 1 and 3 hold 20,000 characters each; a window of two pages can only share one
    # with the next (a window always moves on by at least one page).
    assert as_pages == [[1, 2], [2, 3, 4], [3, 4, 5], [4, 5, 6, 7]]
    assert all(sum(lengths[p] for p in w) <= 40_000 for w in windows)


def test_large_document_is_classified_in_windows_and_overlap_keeps_the_more_severe(
        fake_openai: FakeOpenAI) -> None:
    doc = _paged_document(pages=10, per_page=2, chars=5_000)  # 100,000 characters
    policy = SensitivityPolicy.from_settings(SensitivitySettings())
    rules = classify_paragraphs(doc, policy=policy, declared=None, path="big.pdf")
    windows = page_windows([p.page for p in doc.paragraphs], [5_000] * 20,
                           window_chars=40_000, overlap_pages=2)
    assert len(windows) >= 3
    overlap = sorted(set(windows[0]) & set(windows[1]))
    assert overlap, "consecutive windows share two pages"
    first = {str(doc.paragraphs[p].index): "INTERNAL" for p in windows[0]}
    second = {str(doc.paragraphs[p].index): "FINANCIAL" for p in overlap}
    fake_openai.script("/v1/chat/completions", chat(json.dumps(first)), chat(json.dumps(second)))
    fake_openai.defaults["/v1/chat/completions"] = chat("{}")
    classifier = ModelParagraphClassifier.from_settings(
        _settings(fake_openai).model, policy)
    assert classifier is not None
    answers = classifier.classify_document(doc, rules)
    requests = fake_openai.bodies("/v1/chat/completions")
    assert len(requests) == len(windows)
    assert all(len(json.dumps(r)) < 45_000 for r in requests)
    assert [answers[p] for p in overlap] == ["FINANCIAL"] * len(overlap)
    only_first = sorted(set(windows[0]) - set(windows[1]))
    assert [answers[p] for p in only_first] == ["INTERNAL"] * len(only_first)
    labels = label_document(doc, policy=policy, declared=None, path="big.pdf", inherit={},
                            classifier=None)
    assert labels == rules


def test_local_classifier_is_its_own_epoch_and_an_unknown_provider_is_refused(
        fake_openai: FakeOpenAI) -> None:
    from affidavit.classify.epoch import label_epoch
    from affidavit.errors import ConfigurationError
    from affidavit.llm.local import LocalProvider

    policy = SensitivityPolicy.from_settings(SensitivitySettings())
    local = ModelClassifierSettings(enabled=True, provider="local")
    classifier = ModelParagraphClassifier.from_settings(local, policy)
    assert classifier is not None and isinstance(classifier.provider, LocalProvider)
    # The model file's name (not a setting's text) is the model id; loading is deferred.
    model_id, prompt_hash = classifier.identity
    assert model_id == classifier.provider.model_id and classifier.provider._llm is None
    remote = _settings(fake_openai).model
    assert prompt_hash != classifier_identity(remote, policy)[1]
    assert label_epoch(SensitivitySettings(model=local)) != label_epoch(
        SensitivitySettings(model=remote))
    with pytest.raises(ConfigurationError):
        ModelParagraphClassifier.from_settings(
            ModelClassifierSettings(enabled=True, provider="llamafile"), policy)


def test_a_long_paragraph_is_judged_in_pieces_cut_at_spaces() -> None:
    from affidavit.classify.likelihood import candidate_labels, descriptions, pieces

    text = " ".join(f"word{n}" for n in range(600))
    cut = pieces(text, 100)
    assert all(len(piece) <= 100 for piece in cut) and " ".join(cut) == text
    assert pieces("x" * 250, 100) == ["x" * 100, "x" * 100, "x" * 50]
    assert pieces("   ") == []
    policy = SensitivityPolicy.from_settings(SensitivitySettings(
        labels=("PUBLIC", "INTERNAL", "TRADE_SECRET", "RESTRICTED"), detectors={}))
    # RESTRICTED belongs to the rules alone; an unknown label is described by its name.
    assert candidate_labels(policy) == ("PUBLIC", "INTERNAL", "TRADE_SECRET")
    assert descriptions("TRADE_SECRET") == ("trade secret",)
