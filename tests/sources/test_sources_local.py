"""The local folder transport: walking, sidecars, limits and symlink containment."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from affidavit.errors import InputRejected
from affidavit.records import SourceDocument
from affidavit.sources import LocalFolderSource, StaticSource, Transport

LIMIT = 1024


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    path.write_bytes(data)
    return path


def listing(root: Path, **options) -> list[SourceDocument]:
    options.setdefault("max_document_bytes", LIMIT)
    return list(LocalFolderSource(root, **options).list_documents())


def by_alias(documents: list[SourceDocument]) -> dict[str, SourceDocument]:
    return {document.alias: document for document in documents}


def test_walks_recursively_in_source_id_order(tmp_path):
    write(tmp_path / "b.md", "# B")
    write(tmp_path / "a" / "z.txt", "z")
    write(tmp_path / "a" / "deeper" / "c.md", "c")
    documents = listing(tmp_path)
    assert [d.source_id for d in documents] == ["a/deeper/c.md", "a/z.txt", "b.md"]
    assert [d.alias for d in documents] == ["a/deeper/c.md", "a/z.txt", "b.md"]
    first = documents[0]
    assert first.content == b"c"
    assert first.source_rev == hashlib.sha256(b"c").hexdigest()
    assert first.source_system == "files" and first.rejection is None


def test_listing_is_deterministic(tmp_path):
    for name in ("q.md", "a.md", "m/n.md", "Z.md"):
        write(tmp_path / name, name)
    assert listing(tmp_path) == listing(tmp_path)


def test_skips_hidden_files_and_folders(tmp_path):
    write(tmp_path / ".secret.md", "x")
    write(tmp_path / ".git" / "config.md", "x")
    write(tmp_path / "visible.md", "x")
    assert [d.alias for d in listing(tmp_path)] == ["visible.md"]


def test_sidecar_supplies_metadata_and_source_id(tmp_path):
    write(tmp_path / "policy.md", "# Policy")
    write(
        tmp_path / "policy.md.meta.yaml",
        "source_id: POL-1\nacl: [group:hr#member]\nclassification: internal\n",
    )
    (document,) = listing(tmp_path, source_system="wiki")
    assert document.source_id == "POL-1"
    assert document.alias == "policy.md"
    assert document.source_system == "wiki"
    assert document.metadata.acl == ("group:hr#member",)
    assert document.metadata.classification == "INTERNAL"


def test_orphan_sidecars_are_not_documents(tmp_path):
    write(tmp_path / "gone.md.meta.yaml", "title: x\n")
    assert listing(tmp_path) == []


@pytest.mark.parametrize(
    ("sidecar", "reason"),
    [
        ("a: &x 1\nb: *x\n", "MALFORMED_SIDECAR"),
        ("!!python/object/apply:os.system ['id']\n", "MALFORMED_SIDECAR"),
        ("acl: 7\n", "MALFORMED_METADATA"),
    ],
)
def test_broken_sidecar_yields_a_rejected_document(tmp_path, sidecar, reason):
    write(tmp_path / "doc.md", "secret text")
    write(tmp_path / "doc.md.meta.yaml", sidecar)
    (document,) = listing(tmp_path)
    assert document.rejection is not None and document.rejection[0] == reason
    assert document.content == b""
    assert document.alias == "doc.md"


def test_oversize_file_is_not_read_and_is_rejected(tmp_path):
    write(tmp_path / "big.txt", b"x" * (LIMIT + 1))
    write(tmp_path / "fits.txt", b"x" * LIMIT)
    documents = by_alias(listing(tmp_path))
    big = documents["big.txt"]
    assert big.content == b""
    assert big.rejection is not None and big.rejection[0] == "TOO_LARGE"
    assert str(LIMIT + 1) in big.rejection[1] and str(LIMIT) in big.rejection[1]
    assert documents["fits.txt"].rejection is None
    assert len(documents["fits.txt"].content) == LIMIT


def test_single_file_root(tmp_path):
    path = write(tmp_path / "notes.txt", "hello")
    write(tmp_path / "notes.txt.meta.yaml", "title: Notes\n")
    (document,) = listing(path)
    assert document.source_id == "notes.txt"
    assert document.alias == "notes.txt"
    assert document.content == b"hello"
    assert document.metadata.title == "Notes"


def test_missing_root_is_refused(tmp_path):
    with pytest.raises(InputRejected) as info:
        listing(tmp_path / "nowhere")
    assert info.value.reason_code == "SOURCE_NOT_FOUND"


def test_symlinks_are_skipped_by_default(tmp_path):
    root = tmp_path / "root"
    write(root / "real.md", "real")
    (root / "link.md").symlink_to(root / "real.md")
    (root / "linked_dir").symlink_to(root, target_is_directory=True)
    assert [d.alias for d in listing(root)] == ["real.md"]


def test_symlink_escaping_the_root_is_refused_even_when_following(tmp_path):
    outside = write(tmp_path / "outside" / "payroll.md", "salaries")
    root = tmp_path / "root"
    write(root / "inside.md", "inside")
    (root / "escape.md").symlink_to(outside)
    (root / "escape_dir").symlink_to(outside.parent, target_is_directory=True)
    (root / "dotdot.md").symlink_to(Path("..") / "outside" / "payroll.md")
    documents = listing(root, follow_symlinks=True)
    assert [d.alias for d in documents] == ["inside.md"]
    assert all(b"salaries" not in d.content for d in documents)


def test_followed_symlinks_inside_the_root_are_read_once(tmp_path):
    root = tmp_path / "root"
    write(root / "docs" / "a.md", "a")
    (root / "alias.md").symlink_to(root / "docs" / "a.md")
    (root / "loop").symlink_to(root, target_is_directory=True)
    (root / "dangling.md").symlink_to(root / "missing.md")
    aliases = [d.alias for d in listing(root, follow_symlinks=True)]
    assert aliases == ["alias.md", "docs/a.md"]


def test_symlinked_sidecar_is_refused_when_not_following(tmp_path):
    root = tmp_path / "root"
    write(root / "doc.md", "text")
    sidecar = write(tmp_path / "elsewhere.yaml", "acl: ['*']\n")
    (root / "doc.md.meta.yaml").symlink_to(sidecar)
    (document,) = listing(root)
    assert document.rejection is not None and document.rejection[0] == "MALFORMED_SIDECAR"
    assert document.metadata.acl is None


def test_special_files_are_skipped(tmp_path):
    write(tmp_path / "a.md", "a")
    os.mkfifo(tmp_path / "pipe.md")
    assert [d.alias for d in listing(tmp_path)] == ["a.md"]


def test_two_files_claiming_one_source_id_are_both_rejected(tmp_path):
    write(tmp_path / "a.md", "a")
    write(tmp_path / "b.md", "b")
    write(tmp_path / "b.md.meta.yaml", "source_id: a.md\n")
    documents = listing(tmp_path)
    assert [d.alias for d in documents] == ["a.md", "b.md"]
    assert all(d.rejection and d.rejection[0] == "DUPLICATE_SOURCE_ID" for d in documents)


def test_undecodable_file_name_is_rejected_not_crashing(tmp_path):
    name = os.fsdecode(b"caf\xe9.md")
    (tmp_path / name).write_bytes(b"x")
    (document,) = listing(tmp_path)
    assert document.rejection is not None and document.rejection[0] == "UNDECODABLE_FILENAME"
    document.source_id.encode("utf-8")  # printable and encodable


def test_local_and_static_sources_satisfy_the_transport_protocol(tmp_path):
    def source_ids(transport: Transport) -> list[str]:
        return [d.source_id for d in transport.list_documents()]

    write(tmp_path / "x.md", "x")
    assert source_ids(LocalFolderSource(tmp_path, max_document_bytes=LIMIT)) == ["x.md"]
    documents = [SourceDocument("memory", sid, "rev", b"", alias=sid) for sid in ("b", "a", "c")]
    static = StaticSource(documents)
    assert static.source_system == "memory"
    assert source_ids(static) == ["a", "b", "c"]


def test_sources_export_list_is_complete():
    import affidavit.sources as package

    assert sorted(package.__all__) == [
        "AddressPolicy", "HttpsSource", "LocalFolderSource", "SIDECAR_SUFFIX", "SftpSource",
        "StaticSource", "Transport", "address_problem", "is_acl_subject", "listing_key",
        "load_sidecar", "load_yaml_documents", "location_scheme", "parse_ip_literal",
        "parse_manifest", "parse_metadata", "parse_sftp_url", "source_for", "vet_host",
    ]
    assert all(getattr(package, name) is not None for name in package.__all__)
