"""SIRE terms come only from text the audience may see.

Algorithm 1 runs over the non-RESTRICTED paragraphs; every term carries the most severe
label of the paragraphs it was found in; ``sire list --as`` and ledger views show a term
only to a reader granted its label.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from affidavit.cli.main import main
from affidavit.config.settings import SensitivitySettings, SireSettings
from affidavit.identity import SireInputs, propose_labelled_sire, sire_shown_to
from affidavit.identity.sire_labels import SUBJECT_WITHHELD
from affidavit.policy.labels import label_text
from affidavit.policy.policy import SensitivityPolicy

SECRET_WORD = "zephyrine"          # a significant word, only in the RESTRICTED paragraph
SECRET_ACRONYM = "QVXZ"            # an acronym, only there too
SECRET_NAME = "Marrow Heron"       # a capitalized term, only there too
PII_WORD = "quillwort"             # a significant word, only in the PII paragraph

RESTRICTED_PARAGRAPH = " ".join(
    [f"Under Project Nightjar the {SECRET_WORD} deal with {SECRET_NAME} and {SECRET_ACRONYM} "
     "closes." for _ in range(5)])
PII_PARAGRAPH = " ".join(
    [f"The {PII_WORD} claim of jane.doe@example.org is open." for _ in range(5)])
PUBLIC_PARAGRAPHS = [
    "The harbour tariff applies to every vessel. The harbour tariff is reviewed yearly.",
    "The harbour master sets the tariff. The harbour opens at dawn and the tariff is due.",
]

SETTINGS = """\
[acl]
default = ["*"]
[grants]
"user:reader" = ["INTERNAL"]
"user:clerk" = ["INTERNAL", "PII"]
"user:board" = ["INTERNAL", "PII", "RESTRICTED"]
[sensitivity]
restricted_keywords = ["Project Nightjar"]
"""

DOCUMENT = (
    "# Harbour tariffs\n\n" + PUBLIC_PARAGRAPHS[0] + "\n\n" + RESTRICTED_PARAGRAPH + "\n\n"
    + PII_PARAGRAPH + "\n\n" + PUBLIC_PARAGRAPHS[1] + "\n")


def terms_of(sire_dict: dict[str, Any]) -> list[str]:
    return [*sire_dict["included"], *sire_dict["relevant"], *sire_dict["excluded"]]


def policy() -> SensitivityPolicy:
    return SensitivityPolicy.from_settings(SensitivitySettings())


def labelled(paragraphs: list[tuple[str, str]]) -> Any:
    inputs = SireInputs(oracle_id=None, title="Harbour tariffs", frameworks=(),
                        source_id="tariffs.md")
    return propose_labelled_sire(inputs, paragraphs, SireSettings(),
                                 most_severe=policy().most_severe,
                                 label_metadata=lambda text: "INTERNAL")


# --------------------------------------------------------------------------- pure


def test_sire_terms_never_come_from_a_restricted_paragraph() -> None:
    sire = labelled([(PUBLIC_PARAGRAPHS[0], "INTERNAL"), (RESTRICTED_PARAGRAPH, "RESTRICTED"),
                     (PUBLIC_PARAGRAPHS[1], "INTERNAL")])
    text = json.dumps(sire.to_dict()).casefold()
    assert "harbour" in sire.included and "tariff" in sire.included
    for secret in (SECRET_WORD, SECRET_ACRONYM, SECRET_NAME, "nightjar"):
        assert secret.casefold() not in text


def test_a_restricted_paragraph_never_tips_a_visible_word_over_a_threshold() -> None:
    # "vessel" three times in visible text and twice in the RESTRICTED paragraph: counted
    # over everything it would be a significant word (four or more); it must not be.
    visible = "The vessel docks. The vessel leaves. The vessel returns."
    hidden = "Project Nightjar moves the vessel. The vessel is sold."
    sire = labelled([(visible, "INTERNAL"), (hidden, "RESTRICTED")])
    assert "vessel" not in sire.included


def test_each_sire_term_carries_the_most_severe_label_of_its_paragraphs() -> None:
    sire = labelled([(PUBLIC_PARAGRAPHS[0], "INTERNAL"), (PII_PARAGRAPH, "PII"),
                     (PUBLIC_PARAGRAPHS[1], "INTERNAL"), ("The claim is the harbour's.", "PII")])
    assert sire.label_of(PII_WORD) == "PII"
    assert sire.label_of("tariff") == "INTERNAL"
    assert sire.label_of("harbour") == "PII"  # also in a PII paragraph: the most severe wins
    assert all(sire.label_of(t) == "PUBLIC" for t in sire.excluded)
    assert sire.subject_label == "INTERNAL"


def test_the_sire_subject_carries_the_label_of_the_title_it_was_made_from() -> None:
    strict = SensitivityPolicy.from_settings(
        SensitivitySettings(restricted_keywords=("Project Nightjar",)))

    def label_metadata(text: str) -> str:
        return label_text(text, policy=strict, declared=None, path="plan.md",
                          fallback="INTERNAL")

    inputs = SireInputs(oracle_id=None, title="Project Nightjar plan", frameworks=("SOC 2",),
                        source_id="plan.md")
    sire = propose_labelled_sire(inputs, [(PUBLIC_PARAGRAPHS[0], "INTERNAL")], SireSettings(),
                                 most_severe=strict.most_severe, label_metadata=label_metadata)
    assert sire.subject == "project_nightjar_plan" and sire.subject_label == "RESTRICTED"
    assert sire.label_of("soc 2") == "INTERNAL"
    shown = sire_shown_to(sire, frozenset({"INTERNAL", "PII"}))
    assert "nightjar" not in json.dumps(shown.to_dict()) and "soc 2" in shown.relevant


def test_a_sire_term_is_shown_only_to_readers_granted_its_label() -> None:
    sire = labelled([(PUBLIC_PARAGRAPHS[0], "INTERNAL"), (PII_PARAGRAPH, "PII"),
                     (PUBLIC_PARAGRAPHS[1], "INTERNAL")])
    reader = sire_shown_to(sire, frozenset({"INTERNAL"}))
    clerk = sire_shown_to(sire, frozenset({"INTERNAL", "PII"}))
    assert PII_WORD in sire.included and PII_WORD not in reader.included
    assert PII_WORD in clerk.included and "tariff" in reader.included
    nobody = sire_shown_to(sire, frozenset())
    assert nobody.subject == SUBJECT_WITHHELD and nobody.included == ()
    assert nobody.excluded == sire.excluded  # configuration terms are PUBLIC


def test_a_sire_term_without_a_label_is_never_shown() -> None:
    # Tuples proposed before terms were labelled carry no labels: nothing of them is shown.
    sire = labelled([(PUBLIC_PARAGRAPHS[0], "INTERNAL"), (PUBLIC_PARAGRAPHS[1], "INTERNAL")])
    unlabelled = type(sire)(sire.subject, sire.included, sire.relevant, sire.excluded)
    shown = sire_shown_to(unlabelled, frozenset({"INTERNAL", "PII", "RESTRICTED"}))
    assert (shown.included, shown.relevant, shown.excluded) == ((), (), ())
    assert shown.subject == SUBJECT_WITHHELD


def test_labelled_sire_proposal_is_deterministic() -> None:
    paragraphs = [(PUBLIC_PARAGRAPHS[0], "INTERNAL"), (PII_PARAGRAPH, "PII"),
                  (RESTRICTED_PARAGRAPH, "RESTRICTED"), (PUBLIC_PARAGRAPHS[1], "INTERNAL")]
    assert labelled(paragraphs) == labelled(list(paragraphs))
    assert labelled(paragraphs).to_dict() == type(labelled(paragraphs)).from_dict(
        json.loads(json.dumps(labelled(paragraphs).to_dict()))).to_dict()


# --------------------------------------------------------------------------- end to end

Run = Any


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> Iterator[Run]:
    monkeypatch.chdir(tmp_path)
    for name in ("AFFIDAVIT_DB", "AFFIDAVIT_TENANT", "AFFIDAVIT_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "affidavit.toml").write_text(SETTINGS, encoding="utf-8")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "tariffs.md").write_text(DOCUMENT, encoding="utf-8")

    def invoke(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    assert invoke("init")[0] == 0
    code, out, err = invoke("ingest", "corpus", "--json")
    assert code == 0, out + err
    yield invoke


def test_sire_list_never_shows_a_word_only_a_restricted_paragraph_holds(cli: Run) -> None:
    for extra in ((), ("--as", "user:reader"), ("--as", "user:board")):
        code, out, _ = cli("sire", "list", "--json", *extra)
        assert code == 0 and json.loads(out)
        for secret in (SECRET_WORD, SECRET_ACRONYM, SECRET_NAME, "nightjar"):
            assert secret.casefold() not in out.casefold()
        code, out, _ = cli("sire", "list", *extra)
        assert SECRET_WORD not in out.casefold()


def test_sire_list_as_a_reader_shows_only_terms_whose_labels_it_is_granted(cli: Run) -> None:
    operator = json.loads(cli("sire", "list", "--json")[1])
    reader = json.loads(cli("sire", "list", "--json", "--as", "user:reader")[1])
    clerk = json.loads(cli("sire", "list", "--json", "--as", "user:clerk")[1])
    assert PII_WORD in terms_of(operator[0])
    assert PII_WORD not in terms_of(reader[0]) and "tariff" in terms_of(reader[0])
    assert PII_WORD in terms_of(clerk[0])
    # a principal that may read no chunk of the document sees no record of it at all
    assert json.loads(cli("sire", "list", "--json", "--as", "user:stranger")[1]) == []


def test_ledger_views_never_show_a_sire_term_the_reader_may_not_see(
        cli: Run, tmp_path: Path) -> None:
    assert cli("sire", "approve", "--all", "--by", "tester")[0] == 0
    shown: dict[str, str] = {}
    for principal in ("user:reader", "user:clerk"):
        code, out, err = cli("ask", "What is the harbour tariff?", "--as", principal, "--json")
        assert code == 0, out + err
        record_id = json.loads(out)["ledger_record_id"]
        code, out, _ = cli("ledger", "show", record_id, "--as", principal, "--json")
        assert code == 0
        shown[principal] = out
        assert json.loads(out)["record"]["sire"], "the readable source's SIRE is shown"
    assert PII_WORD not in shown["user:reader"] and "tariff" in shown["user:reader"]
    assert PII_WORD in shown["user:clerk"]
    with sqlite3.connect(tmp_path / ".affidavit" / "affidavit.db") as conn:
        payloads = " ".join(str(r[0]) for r in conn.execute("SELECT payload FROM ledger"))
    for secret in (SECRET_WORD, SECRET_ACRONYM.casefold(), "marrow heron", "nightjar"):
        assert secret not in payloads.casefold()


def test_sire_list_as_a_reader_never_shows_a_restricted_title_or_its_subject(
        cli: Run, tmp_path: Path) -> None:
    (tmp_path / "corpus" / "plan.md").write_text(
        "# Project Nightjar plan\n\nThe harbour tariff applies to every vessel.\n",
        encoding="utf-8")
    assert cli("ingest", "corpus", "--json")[0] in (0, 3)
    code, out, _ = cli("sire", "list", "--json", "--as", "user:reader")
    assert code == 0
    assert "nightjar" not in out.casefold()


def test_no_ledger_record_names_a_subject_made_from_a_restricted_title(
        cli: Run, tmp_path: Path) -> None:
    (tmp_path / "corpus" / "plan.md").write_text(
        "# Project Nightjar plan\n\nThe harbour tariff is reviewed by the harbour master.\n",
        encoding="utf-8")
    assert cli("ingest", "corpus", "--json")[0] in (0, 3)
    assert cli("sire", "approve", "--all", "--by", "tester")[0] == 0
    code, out, err = cli("ask", "Who reviews the harbour tariff?", "--as", "user:reader",
                         "--json")
    assert code == 0, out + err
    with sqlite3.connect(tmp_path / ".affidavit" / "affidavit.db") as conn:
        (payload,) = [str(r[0]) for r in conn.execute("SELECT payload FROM ledger")]
    record = json.loads(payload)
    assert any(g["chunk_ids"] for g in record["compliance"]["groups"])
    assert "nightjar" not in payload.casefold()
