"""One document, one identity: the same tree ingested from a local folder, over HTTPS and
over SFTP gives identical node ids, raw digests and chunk ids."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from urllib.parse import quote

import pytest
import yaml

from affidavit.config.settings import IngestSettings, Settings
from affidavit.errors import InputRejected
from affidavit.ingest.run import Ingestor
from affidavit.sources import (
    HttpsSource,
    LocalFolderSource,
    SftpSource,
    Transport,
    listing_key,
    source_for,
)
from affidavit.store import SQLiteStore

SOURCE_SYSTEM = "policies"

TREE = {
    "handbook/leave policy.md": (
        "---\ntitle: Leave policy\nsource_id: POL-LEAVE\nacl: ['group:staff#member']\n"
        "classification: INTERNAL\n---\n# Leave\n\nStaff SHALL book leave two weeks ahead.\n\n"
        "## Carry-over\n\nUp to five days carry over into the next year.\n"),
    "board/minutes.txt": "The board approved the budget.\n\nThe CFO, ann@example.org, presented.\n",
    "board/minutes.txt.meta.yaml": (
        "source_id: BOARD-2024-03\ntitle: Board minutes\nacl: [user:cfo]\n"
        "classification: CONFIDENTIAL\n"),
    "data/rates.json": json.dumps({"rates": [{"band": "A", "rate": 0.02},
                                             {"band": "B", "rate": 0.035}]}),
}


def build_tree(root: Path) -> None:
    for name, text in TREE.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def manifest_for(root: Path) -> dict[str, object]:
    """The manifest a publisher would generate: each file's path and its sidecar's keys."""
    documents: list[dict[str, object]] = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.name.endswith(".meta.yaml") or path.name == "manifest.json":
            continue
        relative = path.relative_to(root).as_posix()
        entry: dict[str, object] = {"url": quote(relative)}
        sidecar = path.with_name(path.name + ".meta.yaml")
        if sidecar.exists():
            entry.update(yaml.safe_load(sidecar.read_text(encoding="utf-8")))
        documents.append(entry)
    return {"documents": documents}


def ingest(source: Transport, db: Path, settings: Settings) -> dict[str, list[tuple[str, ...]]]:
    store = SQLiteStore(db)
    try:
        summary = Ingestor(store, settings).run([source])
    finally:
        store.close()
    assert summary.status == "COMPLETED", summary.to_dict()
    connection = sqlite3.connect(db)
    try:
        def rows(sql: str) -> list[tuple[str, ...]]:
            return sorted(tuple(str(value) for value in row) for row in connection.execute(sql))

        return {
            "nodes": rows("SELECT node_id, source_system, source_id FROM nodes"),
            "versions": rows("SELECT version_id, node_id, raw_digest FROM versions"),
            "blobs": rows("SELECT raw_digest, source_id FROM blobs"),
            "chunks": rows("SELECT chunk_id, node_id, version_id, label FROM chunks"),
        }
    finally:
        connection.close()


def test_local_https_and_sftp_give_the_same_identities(
        tmp_path, https_server, https_root, https_settings, sftp_server, sftp_root,
        sftp_settings):
    local_root = tmp_path / "local"
    for root in (local_root, https_root, sftp_root):
        build_tree(root)
    (https_root / "manifest.json").write_text(json.dumps(manifest_for(https_root)),
                                              encoding="utf-8")
    settings = Settings(https=https_settings, sftp=sftp_settings)
    limit = settings.ingest.max_document_bytes
    sources: dict[str, Transport] = {
        "local": LocalFolderSource(local_root, source_system=SOURCE_SYSTEM,
                                   max_document_bytes=limit),
        "https": HttpsSource(https_server.url("manifest.json"), settings=https_settings,
                             source_system=SOURCE_SYSTEM, max_document_bytes=limit),
        "sftp": SftpSource(sftp_server.url("/"), settings=sftp_settings,
                           source_system=SOURCE_SYSTEM, max_document_bytes=limit),
    }
    results = {name: ingest(source, tmp_path / f"{name}.db", settings)
               for name, source in sources.items()}
    local = results["local"]
    assert sorted(row[2] for row in local["nodes"]) == [
        "BOARD-2024-03", "POL-LEAVE", "data/rates.json"]
    assert len(local["chunks"]) >= 4
    assert {row[3] for row in local["chunks"]} >= {"INTERNAL", "CONFIDENTIAL", "PII"}
    assert results["https"] == local
    assert results["sftp"] == local


def test_source_for_picks_the_transport_from_the_location(tmp_path, https_settings,
                                                          sftp_settings):
    settings = Settings(https=https_settings, sftp=sftp_settings,
                        ingest=IngestSettings(max_document_bytes=99, fetch_attempts=5))
    local = source_for(str(tmp_path), settings, source_system="s")
    https = source_for("https://docs.example/manifest.json", settings, source_system="s")
    sftp = source_for("sftp://ann@files.example:2022/srv", settings, source_system="s")
    assert isinstance(local, LocalFolderSource) and local.max_document_bytes == 99
    assert isinstance(https, HttpsSource) and https.is_manifest
    assert https.retry.attempts == 5 and https.max_document_bytes == 99
    assert isinstance(sftp, SftpSource) and sftp.location.port == 2022
    assert {local.source_system, https.source_system, sftp.source_system} == {"s"}


@pytest.mark.parametrize("location", ["file:///etc/passwd", "http://docs.example/a.md",
                                      "ftp://docs.example/", "gopher://x/", "FILE://x"])
def test_other_schemes_are_refused(location):
    with pytest.raises(InputRejected) as caught:
        source_for(location, Settings())
    assert caught.value.reason_code == "UNSUPPORTED_SCHEME"


def test_listing_keys_name_what_was_listed_without_credentials(tmp_path):
    (tmp_path / "one.md").write_text("x", encoding="utf-8")
    assert listing_key(str(tmp_path)) == f"local:{tmp_path.resolve()}"
    assert listing_key(str(tmp_path / "one.md")) is None
    assert listing_key("https://u:p@Docs.Example/m.manifest.json?token=1") == (
        "https:docs.example/m.manifest.json")
    assert listing_key("sftp://ann@files.example:2022/srv") == "sftp:files.example:2022/srv"

