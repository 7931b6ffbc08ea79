"""Identity is never taken over.

Two documents claiming one ``source_id`` (front matter or sidecar, in one run or across
runs, under two paths) is an identity collision: the newcomer is quarantined with
IDENTITY_COLLISION, the existing node keeps its content and ACL, and only an operator's
recorded ``affidavit identity resolve`` changes that. Nothing derived (SIRE approvals, FAQ
entries) follows a collided id.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from tests.e2e.conftest import Run, as_json

SETTINGS = """\
[grants]
"*" = ["INTERNAL"]
"""

OWNER = "---\nsource_id: policy-7\nacl: [\"user:alice\"]\n---\n# Travel policy\n\n" \
        "Economy class applies to every flight under six hours.\n"
INTRUDER_BODY = "# Travel policy\n\nBusiness class applies to every flight, says the intruder.\n"
INTRUDER = "---\nsource_id: policy-7\nacl: [\"*\"]\n---\n" + INTRUDER_BODY


def _vetted_against(text: str) -> str:
    """An FAQ entry's binding to the bytes of source policy-7 as ``text``."""
    return f'vetted_against = {{ "policy-7" = "{hashlib.sha256(text.encode()).hexdigest()}" }}\n'


def setup(run: Run, tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / "affidavit.toml").write_text(SETTINGS, encoding="utf-8")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    write(corpus, files)
    assert run("init")[0] == 0
    return corpus


def write(corpus: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (corpus / name).parent.mkdir(parents=True, exist_ok=True)
        (corpus / name).write_text(text, encoding="utf-8")


def ingest(run: Run, corpus: Path) -> tuple[int, dict[str, Any]]:
    code, out, err = run("ingest", str(corpus), "--json")
    assert code in (0, 3), out + err
    return code, as_json(out)


def texts(run: Run, principal: str, query: str = "class flight") -> list[str]:
    return [h["text"] for h in as_json(run("search", query, "--as", principal, "--json")[1])]


def quarantined(summary: dict[str, Any]) -> dict[str, str]:
    return {q["alias"]: q["reason_code"] for q in summary["quarantined"]}


def assert_owner_kept(run: Run) -> None:
    """The node serves the owner's text, to the owner's ACL only; the intruder's nowhere."""
    assert any("Economy" in t for t in texts(run, "user:alice"))
    for principal in ("user:alice", "user:bob"):
        assert not any("intruder" in t for t in texts(run, principal, "intruder business"))
    assert texts(run, "user:bob") == []


def test_a_second_path_claiming_a_source_id_in_one_run_is_an_identity_collision(
        run: Run, tmp_path: Path) -> None:
    corpus = setup(run, tmp_path, {"a-policy.md": OWNER, "b-copy.md": INTRUDER})
    code, summary = ingest(run, corpus)
    assert code == 3 and quarantined(summary) == {"b-copy.md": "IDENTITY_COLLISION"}
    assert summary["ingested"] == 1
    assert_owner_kept(run)


def test_a_second_path_claiming_a_source_id_across_runs_is_an_identity_collision(
        run: Run, tmp_path: Path) -> None:
    corpus = setup(run, tmp_path, {"a-policy.md": OWNER})
    assert ingest(run, corpus)[0] == 0
    write(corpus, {"z-copy.md": INTRUDER})
    code, summary = ingest(run, corpus)
    assert code == 3 and quarantined(summary) == {"z-copy.md": "IDENTITY_COLLISION"}
    assert summary["withdrawn"] == [] and summary["unchanged"] == 1
    assert_owner_kept(run)
    # and again on the next run: a collision stays refused until an operator decides
    assert quarantined(ingest(run, corpus)[1]) == {"z-copy.md": "IDENTITY_COLLISION"}
    assert_owner_kept(run)


def test_a_sidecar_claiming_a_held_source_id_is_an_identity_collision(
        run: Run, tmp_path: Path) -> None:
    corpus = setup(run, tmp_path, {"a-policy.md": OWNER})
    assert ingest(run, corpus)[0] == 0
    write(corpus, {"other/travel.md": INTRUDER_BODY,
                   "other/travel.md.meta.yaml": "source_id: policy-7\nacl: [\"*\"]\n"})
    code, summary = ingest(run, corpus)
    assert code == 3 and quarantined(summary) == {"other/travel.md": "IDENTITY_COLLISION"}
    assert_owner_kept(run)


def test_a_moved_document_under_a_declared_id_waits_for_an_operator(
        run: Run, tmp_path: Path) -> None:
    corpus = setup(run, tmp_path, {"a-policy.md": OWNER})
    assert ingest(run, corpus)[0] == 0
    (corpus / "a-policy.md").rename(corpus / "moved.md")
    code, summary = ingest(run, corpus)
    assert code == 3 and quarantined(summary) == {"moved.md": "IDENTITY_COLLISION"}
    # the owner's path is gone: its node is withdrawn, never handed to the new path
    assert summary["withdrawn"] == ["a-policy.md"]
    assert texts(run, "user:alice") == []
    assert run("identity", "resolve", "moved.md", "--take-over", "--by", "ops:ann")[0] == 0
    code, summary = ingest(run, corpus)
    assert code == 0 and summary["ingested"] == 1
    assert any("Economy" in t for t in texts(run, "user:alice"))
    assert texts(run, "user:bob") == []


def test_resolving_an_identity_collision_is_a_recorded_operator_command(
        run: Run, tmp_path: Path) -> None:
    corpus = setup(run, tmp_path, {"a-policy.md": OWNER})
    assert ingest(run, corpus)[0] == 0
    assert run("sire", "approve", "--all", "--by", "curator")[0] == 0
    write(corpus, {"z-copy.md": INTRUDER})
    ingest(run, corpus)
    listed = as_json(run("identity", "list", "--json")[1])
    assert [c["alias"] for c in listed["open"]] == ["z-copy.md"]
    code, _, err = run("identity", "resolve", "z-copy.md", "--take-over", "--by", " ")
    assert code != 0 and listed == as_json(run("identity", "list", "--json")[1])
    code, out, err = run("identity", "resolve", "z-copy.md", "--take-over", "--by", "ops:ann",
                         "--note", "the copy is the maintained one")
    assert code == 0, out + err
    listed = as_json(run("identity", "list", "--json")[1])
    assert listed["open"] == []
    (resolution,) = listed["resolutions"]
    assert resolution["claimant"] == "z-copy.md" and resolution["owner"] == "a-policy.md"
    assert (resolution["decision"], resolution["resolved_by"]) == ("take-over", "ops:ann")
    released = as_json(run("quarantine", "list", "--all", "--json")[1])
    assert {(q["alias"], q["released_by"]) for q in released} == {("z-copy.md", "ops:ann")}
    # the next ingest supersedes the node from the new owner, with the new owner's ACL ...
    code, summary = ingest(run, corpus)
    assert quarantined(summary) == {"a-policy.md": "IDENTITY_COLLISION"}
    assert any("intruder" in t for t in texts(run, "user:bob", "intruder business"))
    assert not any("Economy" in t for t in texts(run, "user:alice"))
    # ... and the approval given to the old owner's text does not follow the id
    (head,) = as_json(run("sire", "list", "--json")[1])
    assert head["alias"] == "z-copy.md" and head["state"] == "PROPOSED"


def test_a_keep_decision_leaves_the_claimant_refused(run: Run, tmp_path: Path) -> None:
    corpus = setup(run, tmp_path, {"a-policy.md": OWNER})
    ingest(run, corpus)
    write(corpus, {"z-copy.md": INTRUDER})
    ingest(run, corpus)
    assert run("identity", "resolve", "z-copy.md", "--keep", "--by", "ops:ann")[0] == 0
    assert quarantined(ingest(run, corpus)[1]) == {"z-copy.md": "IDENTITY_COLLISION"}
    assert_owner_kept(run)
    assert run("identity", "resolve", "a-policy.md", "--take-over", "--by", "ops:ann")[0] != 0


def test_an_faq_entry_does_not_follow_a_taken_over_id(run: Run, tmp_path: Path) -> None:
    owner = OWNER.replace('["user:alice"]', '["*"]')
    corpus = setup(run, tmp_path, {"a-policy.md": owner})
    faq = tmp_path / "faq.toml"
    entry = ('[[entries]]\nquestion = "Which class applies to short flights?"\n'
             'answer = "Economy class."\nsources = ["policy-7"]\n')
    faq.write_text(entry + _vetted_against(owner), encoding="utf-8")
    (tmp_path / "affidavit.toml").write_text(
        SETTINGS.replace("[grants]", f"[answer]\nfaq_file = {json.dumps(str(faq))}\n[grants]"),
        encoding="utf-8")
    ingest(run, corpus)
    # an entry answers only from sources with an ACTIVE SIRE, verified against their text
    assert run("sire", "approve", "--all", "--by", "curator")[0] == 0
    asked = as_json(run("ask", "Which class applies to short flights?", "--as", "user:bob",
                        "--json")[1])
    assert asked["reasons"][0] == "FAQ_SHORT_CIRCUIT"
    write(corpus, {"z-copy.md": INTRUDER})
    ingest(run, corpus)
    assert run("identity", "resolve", "z-copy.md", "--take-over", "--by", "ops:ann")[0] == 0
    ingest(run, corpus)
    # (approved before asking: a replay of a record made before an approval would differ)
    assert run("sire", "approve", "--all", "--by", "curator")[0] == 0
    asked = as_json(run("ask", "Which class applies to short flights?", "--as", "user:bob",
                        "--json")[1])
    assert "FAQ_SHORT_CIRCUIT" not in asked["reasons"]
    # an entry vetted again after the take-over, against the new owner's text, is used,
    # and only as far as it says what the text says
    revetted = entry.replace('"Economy class."', '"Business class applies to every flight."')
    faq.write_text(revetted + 'vetted_at = "2999-01-01T00:00:00Z"\n' +
                   _vetted_against(INTRUDER), encoding="utf-8")
    asked = as_json(run("ask", "Which class applies to short flights?", "--as", "user:bob",
                        "--json")[1])
    # (the entry is used again; its answer is then verified against the new text, which says
    # nothing about short flights, so the gate does not authorize it)
    assert asked["reasons"][0] == "FAQ_SHORT_CIRCUIT"


def test_a_take_over_lapses_when_the_claimants_bytes_change_before_it_acts(
        run: Run, tmp_path: Path) -> None:
    """The take-over was decided about the claimant's bytes as its collision showed them:
    other bytes at the next ingest lapse it (a decision.lapse event, in review), give the
    node back to its owner and are a collision again."""
    corpus = setup(run, tmp_path, {"a-policy.md": OWNER})
    assert ingest(run, corpus)[0] == 0
    write(corpus, {"z-copy.md": INTRUDER})
    ingest(run, corpus)
    (entry,) = as_json(run("quarantine", "list", "--json")[1])
    assert f"bytes sha256:{hashlib.sha256(INTRUDER.encode()).hexdigest()}" in entry["message"]
    assert run("identity", "resolve", "z-copy.md", "--take-over", "--by", "ops:ann")[0] == 0
    write(corpus, {"z-copy.md": INTRUDER + "\nA paragraph added after the decision.\n"})
    _, summary = ingest(run, corpus)
    assert quarantined(summary) == {"z-copy.md": "IDENTITY_COLLISION"}
    assert_owner_kept(run)
    (lapse,) = as_json(run("labels", "lapsed", "--json")[1])
    assert (lapse["decision"], lapse["reason"]) == ("identity.resolve", "content_changed")
    # The owner is the old one again; a new decision about the new bytes takes over.
    assert run("identity", "resolve", "z-copy.md", "--take-over", "--by", "ops:ann")[0] == 0
    _, summary = ingest(run, corpus)
    assert "z-copy.md" not in quarantined(summary)
    assert any("intruder" in t for t in texts(run, "user:bob", "intruder business"))
