"""The parse guard: a forked child under a time limit and an address-space budget."""

from __future__ import annotations

import os
import signal
import time

import pytest
from tests.fixtures.hostile.build import MIB, text_pdf

from affidavit.config.settings import IngestSettings
from affidavit.errors import InputRejected
from affidavit.extract import extract, guard
from affidavit.extract.guard import MIN_MEMORY_BUDGET_BYTES, memory_budget, parse_isolated

BUDGET = 256 * MIB
touched: list[str] = []


def isolated(task, timeout: float = 30.0):  # type: ignore[no-untyped-def]
    return parse_isolated(task, timeout_seconds=timeout, memory_bytes=BUDGET)


def refusal(task, timeout: float = 30.0) -> InputRejected:  # type: ignore[no-untyped-def]
    with pytest.raises(InputRejected) as info:
        isolated(task, timeout)
    return info.value


def test_the_value_comes_back_from_the_child():
    assert isolated(lambda: ("text", (1, 2), {"k": None})) == ("text", (1, 2), {"k": None})


def test_a_large_value_comes_back_whole():
    text = "paragraph\n" * 2_000_000
    assert isolated(lambda: text) == text


def test_the_child_cannot_change_the_parent():
    def task() -> int:
        touched.append("child")
        return os.getpid()

    assert isolated(task) != os.getpid()
    assert touched == []


def test_a_refusal_in_the_child_keeps_its_reason():
    def task() -> None:
        raise InputRejected("MALFORMED_PDF", "broken xref")

    error = refusal(task)
    assert (error.reason_code, error.detail) == ("MALFORMED_PDF", "broken xref")


def test_a_parse_over_time_is_killed():
    assert refusal(lambda: time.sleep(30), timeout=0.2).reason_code == "PARSE_TIMEOUT"


def test_a_parse_over_its_memory_budget_is_refused():
    def task() -> int:
        return len(bytearray(4 * BUDGET))

    assert refusal(task).reason_code == "PARSE_MEMORY_LIMIT"


def test_a_parser_bug_quarantines_instead_of_crashing():
    def task() -> None:
        raise TypeError("unexpected")

    error = refusal(task)
    assert error.reason_code == "PARSE_FAILED" and "TypeError" in error.detail


def test_runaway_recursion_is_nesting():
    def deep(n: int) -> int:
        return deep(n + 1) + 1

    assert refusal(lambda: deep(0)).reason_code == "NESTING_TOO_DEEP"


@pytest.mark.parametrize(
    ("sent", "code"), [(signal.SIGTERM, "PARSE_FAILED"), (signal.SIGKILL, "PARSE_MEMORY_LIMIT")]
)
def test_a_child_that_dies_is_refused(sent: signal.Signals, code: str):
    assert refusal(lambda: os.kill(os.getpid(), sent)).reason_code == code


def test_extract_applies_the_parse_time_limit_to_binary_formats():
    limits = IngestSettings(parse_timeout_seconds=0.0)
    with pytest.raises(InputRejected) as info:
        extract(text_pdf([["Words."]]), filename="a.pdf", limits=limits)
    assert info.value.reason_code == "PARSE_TIMEOUT"
    # Text formats are parsed in-process: their parsers are linear by construction.
    assert extract(b"Words.", filename="a.txt", limits=limits).text == "Words."


def test_the_memory_budget_grows_with_the_decompression_cap():
    assert memory_budget(IngestSettings()) == MIN_MEMORY_BUDGET_BYTES
    assert memory_budget(IngestSettings(max_decompressed_bytes=1024 * MIB)) == 3072 * MIB


def test_without_fork_the_task_runs_in_process_with_the_same_codes(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setattr(guard, "_CAN_FORK", False)
    assert isolated(os.getpid) == os.getpid()

    def task() -> None:
        raise TypeError("unexpected")

    assert refusal(task).reason_code == "PARSE_FAILED"
