"""Canaries in documents a principal may not read never reach that principal, whatever
command it runs.

Principal-scoped commands (they take ``--as`` and show document content): ``search``,
``ask``, ``ledger show``. Operator commands take no principal and are for whoever runs the
deployment: ``init``, ``ingest``, ``runs``, ``quarantine``, ``sire list|approve`` (it shows
every source's SIRE terms, which are derived from document text), ``authz
add|remove|grant|revoke|list`` and ``ledger verify``. Of those, the ones a reader could be
tempted to share (``authz list``, ``ledger verify``) are checked to carry no document text.
"""

from __future__ import annotations

import pytest

from tests.canary.conftest import CANARIES, Run, as_json, canaries_except

QUESTIONS = (
    "What did the quarterly review find?",
    "Which items are open after the review?",
    "What does the handbook say about hotel bookings?",
)
SEARCHES = ("quarterly review item open", "review travel hotel", *(
    word for pair in CANARIES.values() for word in pair))

READERS = {
    "user:sam": (),
    "user:helen": ("hr/case-017.md",),
    "user:farid": ("finance/q3-results.md",),
    "user:dana": ("legal/contracts/supplier.md",),
    "user:grace": ("board/minutes.md",),  # FINANCIAL granted, but not on the ACL
}


def received_by(cli: Run, principal: str) -> str:
    """Everything ``principal`` gets back from every principal-scoped command."""
    outputs: list[str] = []
    for query in SEARCHES:
        outputs.extend(cli("search", query, "--as", principal, "--json")[1:])
        outputs.extend(cli("search", query, "--as", principal)[1:])
    for question in QUESTIONS:
        code, out, err = cli("ask", question, "--as", principal, "--json")
        # A question the reader's evidence does not address is refused (REQUIRES_SPEC, exit
        # 6), never answered from what the reader may not see.
        assert code in (0, 6), err
        outputs.extend((out, err))
        record_id = as_json(out)["ledger_record_id"]
        outputs.extend(cli("ledger", "show", record_id, "--as", principal, "--json")[1:])
        outputs.extend(cli("ledger", "show", record_id, "--as", principal)[1:])
        outputs.extend(cli("ask", question, "--as", principal)[1:])
    return "\n".join(outputs)


@pytest.mark.parametrize("principal", sorted(READERS))
def test_canaries_never_reach_a_principal_that_may_not_read_them(cli: Run,
                                                                 principal: str) -> None:
    received = received_by(cli, principal)
    for canary in canaries_except(*READERS[principal]):
        assert canary not in received, f"{principal} received {canary}"


def test_readers_do_get_their_own_canaries(cli: Run) -> None:
    # Without this the test above could pass on an engine that returns nothing at all.
    for principal, readable in READERS.items():
        hits = cli("search", "quarterly review item open", "--as", principal, "--json", "--limit",
                   "50")[1]
        for alias in readable:
            assert CANARIES[alias][0] in hits, f"{principal} cannot find {alias}"


def test_someone_elses_record_reads_like_a_record_that_never_existed(cli: Run) -> None:
    asked = as_json(cli("ask", QUESTIONS[0], "--as", "user:farid", "--json")[1])
    record_id = asked["ledger_record_id"]
    assert cli("ledger", "show", record_id, "--as", "user:farid", "--json")[0] == 0
    missing_id = "led-" + "f" * 20
    theirs = cli("ledger", "show", record_id, "--as", "user:sam", "--json")
    never = cli("ledger", "show", missing_id, "--as", "user:sam", "--json")
    assert theirs[0] == never[0] != 0
    assert theirs[1] == never[1] == ""
    assert theirs[2].replace(record_id, "<id>") == never[2].replace(missing_id, "<id>")
    assert CANARIES["finance/q3-results.md"][0] not in theirs[2]


def test_search_for_a_forbidden_canary_looks_like_a_search_for_nothing(cli: Run) -> None:
    for code, word in CANARIES.values():
        for query in (code, word):
            forbidden = cli("search", query, "--as", "user:sam", "--json")
            nothing = cli("search", "xqzvwnotaword", "--as", "user:sam", "--json")
            assert forbidden == nothing


@pytest.mark.parametrize("revocation", [
    ("authz", "remove", "group:hr#member@user:hana"),
    ("authz", "revoke", "user:hana", "PII"),
])
def test_a_revoked_reader_keeps_no_canary_in_its_own_old_records(
        cli: Run, revocation: tuple[str, ...]) -> None:
    assert cli("authz", "add", "group:hr#member@user:hana")[0] == 0
    assert cli("authz", "grant", "user:hana", "PII")[0] == 0
    asked = as_json(cli("ask", QUESTIONS[0], "--as", "user:hana", "--json")[1])
    assert CANARIES["hr/case-017.md"][0] in asked["answer"]
    record_id = asked["ledger_record_id"]
    before = cli("ledger", "show", record_id, "--as", "user:hana", "--json")[1]
    assert CANARIES["hr/case-017.md"][1] in before, "SIRE terms of read sources are shown"
    assert cli(*revocation)[0] == 0
    after = cli("ledger", "show", record_id, "--as", "user:hana", "--json")
    assert after[0] == 0
    for canary in CANARIES["hr/case-017.md"]:
        assert canary not in after[1] + after[2]


def test_operator_listings_carry_no_document_text(cli: Run) -> None:
    for command in (("authz", "list", "--json"), ("authz", "list"), ("ledger", "verify"),
                    ("ledger", "verify", "--json")):
        code, out, err = cli(*command)
        assert code == 0, err
        for canary in canaries_except():
            assert canary not in out + err
