"""Attacks on the model-assisted classifier: RESTRICTED text never reaches a model, and a
paragraph an administrator has labelled RESTRICTED by a recorded override is RESTRICTED
text, whatever the deterministic rules said about it."""

from __future__ import annotations

import json

from affidavit.classify.document import label_document
from affidavit.classify.model import ModelParagraphClassifier
from affidavit.classify.overrides import LabelOverride
from affidavit.config.settings import ModelClassifierSettings, SensitivitySettings, Settings
from affidavit.extract import extract
from affidavit.policy.policy import SensitivityPolicy
from affidavit.text.bindings import ContentBinding, text_sha256
from tests.answer.answer_fake_openai import FakeOpenAI, chat, fake_openai

__all__ = ["fake_openai"]

SALARY = "Maria's monthly gross pay rises to 5200 with the new bonus scheme."
CREW = "The crew meets on Mondays in the harbour office."
BODY = f"# Crew notes\n\n{CREW}\n\n{SALARY}\n"


def test_a_paragraph_overridden_to_restricted_is_never_sent_to_the_classifier_model(
        fake_openai: FakeOpenAI) -> None:
    settings = SensitivitySettings(model=ModelClassifierSettings(
        enabled=True, base_url=fake_openai.base_url, model="label-model-1"))
    policy = SensitivityPolicy.from_settings(settings)
    doc = extract(BODY.encode(), filename="crew.md", limits=Settings().ingest)
    salary = next(p.index for p in doc.paragraphs if SALARY in doc.paragraph_text(p))
    fake_openai.defaults["/v1/chat/completions"] = chat(json.dumps({}))
    classifier = ModelParagraphClassifier.from_settings(settings.model, policy)
    # The override as recorded: bound to the paragraph's text and the label it replaced.
    paragraph = doc.paragraphs[salary]
    detected = label_document(doc, policy=policy, declared=None, path="crew.md",
                              inherit={})[salary].label
    override = LabelOverride(seq=1, node_id="crew", paragraph=salary, label="RESTRICTED",
                             binding=ContentBinding(text_sha256(doc.paragraph_text(paragraph)),
                                                    replaced=detected))
    labels = label_document(doc, policy=policy, declared=None, path="crew.md", inherit={},
                            classifier=classifier, overrides=[override])
    assert labels[salary].label == "RESTRICTED"
    sent = json.dumps(fake_openai.bodies("/v1/chat/completions"))
    assert "harbour office" in sent, "the model still classifies the other paragraphs"
    assert "Maria" not in sent and "5200" not in sent
