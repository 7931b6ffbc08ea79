"""Hostile structure is bounded: rendered text stays in proportion to the input.

Each fixture is a few tens of kilobytes that rendered, before the cap, to tens or hundreds
of megabytes (every leaf line repeats its whole key path; every CSV row repeats the column
names). Each must be refused with EXPANSION_LIMIT quickly and without building the text.
"""

from __future__ import annotations

import json
import time
import tracemalloc
from collections.abc import Callable

import pytest
from tests.fixtures.hostile.build import (
    long_key_spine_json,
    many_short_keys_yaml,
    nested_lists_json,
    wide_header_csv,
)

from affidavit.config.settings import IngestSettings
from affidavit.errors import InputRejected
from affidavit.extract import REASON_CODES, extract

LIMITS = IngestSettings()
MIB = 1024 * 1024
PEAK_BYTES = 24 * MIB
SECONDS = 2.0


HOSTILE: dict[str, Callable[[], bytes]] = {
    "spine.json": long_key_spine_json,
    "lists.json": nested_lists_json,
    "spine.yaml": many_short_keys_yaml,
    "wide.csv": wide_header_csv,
}


def refusal_and_cost(content: bytes, filename: str,
                     limits: IngestSettings = LIMITS) -> tuple[str, float, int]:
    """The reason code, the seconds taken and the peak bytes allocated while refusing.

    Timed and traced in two passes: tracing allocations slows the parsers down severalfold.
    """
    started = time.monotonic()
    with pytest.raises(InputRejected) as refused:
        extract(content, filename=filename, limits=limits)
    seconds = time.monotonic() - started
    tracemalloc.start()
    try:
        with pytest.raises(InputRejected):
            extract(content, filename=filename, limits=limits)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return refused.value.reason_code, seconds, peak


@pytest.mark.parametrize("filename", sorted(HOSTILE))
def test_hostile_structure_is_refused_quickly_and_in_bounded_memory(filename: str) -> None:
    content = HOSTILE[filename]()
    assert len(content) < 64 * 1024
    code, seconds, peak = refusal_and_cost(content, filename)
    assert code == "EXPANSION_LIMIT"
    assert seconds < SECONDS
    assert peak < PEAK_BYTES, f"{peak / MIB:.1f} MiB allocated"


def test_the_refusal_names_sizes_not_content() -> None:
    secret = "Project Lighthouse merger terms "
    content = json.dumps({secret * 500: {f"k{i}": 0 for i in range(4000)}}).encode()
    with pytest.raises(InputRejected) as refused:
        extract(content, filename="secret.json", limits=LIMITS)
    assert refused.value.reason_code == "EXPANSION_LIMIT"
    assert "Lighthouse" not in str(refused.value)


def test_the_ratio_and_the_floor_come_from_the_settings() -> None:
    content = json.dumps({"a" * 50: {f"k{i}": i for i in range(200)}}).encode()
    rendered = extract(content, filename="x.json", limits=LIMITS).text
    assert len(rendered) > 4 * len(content)  # the paths repeat: legitimately larger
    tight = IngestSettings(max_expansion_ratio=2.0, expansion_floor_chars=1_000)
    assert refusal_and_cost(content, "x.json", tight)[0] == "EXPANSION_LIMIT"
    floor = IngestSettings(max_expansion_ratio=1.0, expansion_floor_chars=len(rendered))
    assert extract(content, filename="x.json", limits=floor).text == rendered


def test_ordinary_structured_documents_stay_under_the_cap() -> None:
    records = [{"name": f"Vendor {i}", "tier": i % 3, "contacts": [{"email": "a@example.com"}]}
               for i in range(500)]
    assert extract(json.dumps({"vendors": records}).encode(), filename="v.json",
                   limits=LIMITS).paragraphs
    header = "id,name,region,tier\n"
    rows = "".join(f"{i},Vendor {i},EMEA,{i % 3}\n" for i in range(5000))
    assert len(extract((header + rows).encode(), filename="v.csv",
                       limits=LIMITS).paragraphs) == 5000


def test_every_format_is_held_to_the_same_proportion() -> None:
    # Plain text cannot expand; the cap is checked after every parser all the same.
    text = ("word " * 400).encode()
    tight = IngestSettings(max_expansion_ratio=1.0, expansion_floor_chars=0)
    assert extract(text, filename="a.txt", limits=tight).text
    assert "EXPANSION_LIMIT" in REASON_CODES


def deep_list_html(depth: int = 30, breaks: int = 10_000) -> bytes:
    """One item at the bottom of nested lists: every line break is indented by depth."""
    opening = "<ul><li>" * depth
    return (f"<html><body>{opening}{'a<br>' * breaks}{'</li></ul>' * depth}"
            "</body></html>").encode()


def test_html_list_indentation_counts_against_the_budget_as_it_is_read() -> None:
    content = deep_list_html()
    rendered = extract(content, filename="lists.html", limits=LIMITS).text
    assert len(rendered) > 10 * len(content)  # within the default ratio, but far larger
    tight = IngestSettings(max_expansion_ratio=4.0, expansion_floor_chars=0)
    code, _, peak = refusal_and_cost(content, "lists.html", tight)
    assert code == "EXPANSION_LIMIT"
    assert peak < 8 * len(content) + 4 * MIB  # refused before the indented text was built


def test_the_rendered_text_never_passes_the_absolute_ceiling() -> None:
    header = "id,name,region,tier\n"
    content = (header + "".join(f"{i},Vendor {i},EMEA,{i % 3}\n" for i in range(5000))).encode()
    assert extract(content, filename="v.csv", limits=LIMITS).paragraphs
    ceiling = IngestSettings(expansion_floor_chars=1_000, max_rendered_chars=50_000)
    assert refusal_and_cost(content, "v.csv", ceiling)[0] == "EXPANSION_LIMIT"
