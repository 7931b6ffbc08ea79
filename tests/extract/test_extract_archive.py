"""Safe ZIP reading: directory caps, overlapping and duplicate entries, bounded inflating."""

from __future__ import annotations

import io
import struct
import tracemalloc
import zipfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.fixtures.hostile.build import MIB, ZipMember, spaces_member, zip_archive

from affidavit.config.settings import IngestSettings
from affidavit.errors import InputRejected
from affidavit.extract.archive import ArchiveLimits, SafeZip

LIMITS = ArchiveLimits(max_entries=10, max_decompressed_bytes=8 * MIB, max_compression_ratio=100)
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")


def written_by_zipfile(members: dict[str, bytes], **options: object) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data, **options)  # type: ignore[arg-type]
    return buffer.getvalue()


def reason(content: bytes, limits: ArchiveLimits = LIMITS, read: str | None = None) -> str:
    with pytest.raises(InputRejected) as info:
        package = SafeZip(content, limits)
        if read is not None:
            package.read(read)
    return info.value.reason_code


def patch_central(content: bytes, index: int, **fields: int) -> bytes:
    """``content`` with fields of the ``index``-th central directory record rewritten."""
    names = ["signature", "made_by", "needed", "flags", "method", "time", "date", "crc",
             "compressed", "size", "name_length", "extra_length", "comment_length", "disk",
             "internal", "external", "offset"]
    position = -1
    for _ in range(index + 1):
        position = content.index(b"PK\x01\x02", position + 1)
    values = dict(zip(names, _CENTRAL.unpack_from(content, position), strict=True))
    values.update(fields)
    patched = bytearray(content)
    _CENTRAL.pack_into(patched, position, *values.values())
    return bytes(patched)


def test_reads_members_written_by_zipfile_case_insensitively():
    content = written_by_zipfile({"word/document.xml": b"<w/>" * 1000, "a.txt": b"plain"})
    package = SafeZip(content, LIMITS)
    assert package.names == ("word/document.xml", "a.txt")
    assert package.read("WORD/Document.xml") == b"<w/>" * 1000
    assert "A.TXT" in package and "b.txt" not in package
    with pytest.raises(KeyError):
        package.read("b.txt")


def test_reads_stored_members_and_data_descriptors():
    class Unseekable(io.RawIOBase):
        def __init__(self) -> None:
            self.data = bytearray()

        def writable(self) -> bool:
            return True

        def write(self, block) -> int:  # type: ignore[no-untyped-def]
            self.data += block
            return len(block)

    sink = Unseekable()
    with zipfile.ZipFile(sink, "w") as archive:  # unseekable: sizes follow in descriptors
        archive.writestr("stored.txt", b"as is", compress_type=zipfile.ZIP_STORED)
        archive.writestr("deflated.txt", b"squeezed " * 50, compress_type=zipfile.ZIP_DEFLATED)
    package = SafeZip(bytes(sink.data), LIMITS)
    assert package.read("stored.txt") == b"as is"
    assert package.read("deflated.txt") == b"squeezed " * 50


def test_reads_zip64_records(monkeypatch: pytest.MonkeyPatch):
    # A writer that believes every size is "large" writes zip64 fields and end records.
    monkeypatch.setattr(zipfile, "ZIP64_LIMIT", 0)
    monkeypatch.setattr(zipfile, "ZIP_FILECOUNT_LIMIT", 0)
    content = written_by_zipfile({"a.xml": b"<a/>" * 100, "b.xml": b"<b/>"})
    monkeypatch.undo()
    assert b"PK\x06\x06" in content
    package = SafeZip(content, LIMITS)
    assert package.read("a.xml") == b"<a/>" * 100
    assert package.read("b.xml") == b"<b/>"


def test_too_many_entries_are_refused_while_the_directory_is_read():
    members = [ZipMember.deflated(f"f{i}.txt", b"x") for i in range(12)]
    assert reason(zip_archive(members)) == "TOO_MANY_ARCHIVE_ENTRIES"
    # An end record that understates the count does not get more entries past the cap.
    content = bytearray(zip_archive(members))
    end = content.rindex(b"PK\x05\x06")
    struct.pack_into("<HH", content, end + 8, 1, 1)
    assert reason(bytes(content)) == "TOO_MANY_ARCHIVE_ENTRIES"


def test_names_that_differ_only_in_case_are_duplicates():
    members = [ZipMember.deflated("word/document.xml", b"a"),
               ZipMember.deflated("Word/Document.XML", b"b")]
    assert reason(zip_archive(members)) == "DUPLICATE_ARCHIVE_ENTRY"


def test_entries_sharing_bytes_are_refused():
    members = [ZipMember.deflated("a.xml", b"<a/>" * 100)]
    assert reason(zip_archive(members, aliases=[("b.xml", 0)])) == "OVERLAPPING_ARCHIVE_ENTRIES"


def test_an_entry_running_into_the_directory_is_refused():
    content = zip_archive([ZipMember.deflated("a.xml", b"<a/>" * 100)])
    assert reason(patch_central(content, 0, compressed=10_000)) == "OVERLAPPING_ARCHIVE_ENTRIES"


def test_a_declared_ratio_over_the_cap_is_refused_before_inflating():
    content = zip_archive([spaces_member("bomb.xml", 64)])
    assert reason(content) == "COMPRESSION_RATIO_TOO_HIGH"


def test_small_entries_are_not_held_to_the_ratio():
    content = zip_archive([ZipMember.deflated("small.xml", b" " * 100_000)])
    assert SafeZip(content, LIMITS).read("small.xml") == b" " * 100_000


def test_declared_sizes_over_the_cap_are_refused_in_total():
    members = [ZipMember(f"{i}.bin", b"x" * MIB, MIB, 0, method=0) for i in range(3)]
    limits = ArchiveLimits(max_entries=10, max_decompressed_bytes=2 * MIB,
                           max_compression_ratio=100)
    assert reason(zip_archive(members), limits) == "DECOMPRESSED_TOO_LARGE"


def test_absurd_zip64_sizes_are_refused():
    content = zip_archive([ZipMember.deflated("a.xml", b"<a/>")])
    # 0xFFFFFFFF sizes without a zip64 field are malformed ...
    assert reason(patch_central(content, 0, size=0xFFFFFFFF)) == "MALFORMED_ARCHIVE"
    # ... and a plain 4 GiB claim from a few bytes is a bomb.
    assert reason(patch_central(content, 0, size=0xFFFFFFFE)) == "COMPRESSION_RATIO_TOO_HIGH"


def test_an_entry_that_lies_about_its_size_stops_after_one_block():
    bomb = spaces_member("bomb.xml", 256, declared_size=1000)  # 256 MiB said to be 1 kB
    package = SafeZip(zip_archive([bomb]), LIMITS)
    tracemalloc.start()
    try:
        with pytest.raises(InputRejected) as info:
            package.read("bomb.xml")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.value.reason_code == "MALFORMED_ARCHIVE"
    assert "declared" in info.value.detail
    assert peak < 2 * MIB


def test_encrypted_and_unsupported_entries_are_refused():
    content = zip_archive([ZipMember.deflated("a.xml", b"<a/>")])
    assert reason(patch_central(content, 0, flags=0x0801)) == "ENCRYPTED_ARCHIVE"
    bzip2 = written_by_zipfile({"a.xml": b"<a/>"}, compress_type=zipfile.ZIP_BZIP2)
    assert reason(bzip2) == "MALFORMED_ARCHIVE"


def test_crc_and_name_mismatches_are_malformed():
    content = zip_archive([ZipMember.deflated("a.xml", b"<a/>")])
    assert reason(patch_central(content, 0, crc=1), read="a.xml") == "MALFORMED_ARCHIVE"
    renamed = content.replace(b"a.xml", b"b.xml", 1)  # the local header only
    assert reason(renamed) == "MALFORMED_ARCHIVE"


@pytest.mark.parametrize(
    "content",
    [b"", b"not a zip at all", b"PK\x05\x06" + b"\x00" * 17,
     b"junk" + zip_archive([ZipMember.deflated("a.xml", b"<a/>")])],
)
def test_non_archives_and_prepended_data_are_malformed(content: bytes):
    assert reason(content) == "MALFORMED_ARCHIVE"


def test_an_empty_archive_has_no_names():
    assert SafeZip(b"PK\x05\x06" + b"\x00" * 18, LIMITS).names == ()


def test_limits_come_from_the_ingest_settings():
    limits = ArchiveLimits.from_settings(
        IngestSettings(max_archive_entries=3, max_decompressed_bytes=5, max_compression_ratio=7)
    )
    assert limits == ArchiveLimits(3, 5, 7)


_SAMPLE = written_by_zipfile({"word/document.xml": b"<w:document>text</w:document>" * 20,
                              "docProps/core.xml": b"<core/>"})


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(_SAMPLE) - 1), st.integers(0, 255)), max_size=6))
def test_any_corruption_is_read_or_refused(flips: list[tuple[int, int]]):
    content = bytearray(_SAMPLE)
    for position, value in flips:
        content[position] = value
    try:
        package = SafeZip(bytes(content), LIMITS)
        for name in package.names:
            package.read(name)
    except InputRejected as error:
        assert error.reason_code.isupper()
