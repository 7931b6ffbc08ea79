"""Term keys and postings are written in bulk (one JSON array of terms per version) and are the
same rows, with the same keys, as one row per term gave them: new terms get keys in term
order, whatever the script, and a term is never read back as another."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

import affidavit.store.sqlite.commits as sqlite_module
from affidavit.config.settings import Settings
from affidavit.ingest.run import Ingestor
from affidavit.records import DocumentMetadata, SourceDocument, sha256_hex
from affidavit.sources.memory import StaticSource
from affidavit.store import SQLiteStore
from affidavit.store.sqlite.lexical import term_keys

ENGLISH = ("The harbour master clears containers on the quay before the customs officer "
           "signs; clause cc6.1 and section 164.312 apply. Naïve Ωmega ｆｕｌｌ-width text.")
CHINESE = ("第三季度营收增长百分之十二，海关官员在码头清关之前签字。"
           "合同第六条适用于所有集装箱，𠀀𠀁为扩展汉字。")
ODD_TERMS = ("a", "b", "营收", "营", "𠀀", "e\u0301", "é", "ß", "ǅ", "\u2028", '"quoted"',
             "back\\slash", "\\u0000", "\x01", "\x7f", "\uffff", "null", "true", "123", "1e5",
             "RESTRICTED", "[\"a\"]", "{}", "Ωmega", "ｆ")


def document(source_id: str, body: str) -> SourceDocument:
    content = body.encode()
    meta = DocumentMetadata(source_id=source_id, title=source_id, acl=("group:all#member",))
    return SourceDocument("memory", source_id, sha256_hex(content), content,
                          f"{source_id}.md", meta)


def corpus(round_: int) -> list[SourceDocument]:
    docs = []
    for i in range(6):
        body = "\n\n".join((ENGLISH if (i + p) % 2 else CHINESE) + f" {i} {p} 第{p}段"
                           for p in range(4))
        if round_ and i % 2:
            body += f"\n\nAddendum {round_} 附录{i} harbour 新词{i}\n"
        docs.append(document(f"doc-{i}", f"# Doc {i} 文档\n\n{body}\n"))
    return docs


def rows_term_keys(conn: sqlite3.Connection, tenant: str, terms: Sequence[str], *,
                   create: bool) -> dict[str, int]:
    """The previous algorithm: one row per term, keys read back in slices of parameters."""
    unique = sorted(set(terms))
    if create:
        conn.executemany("INSERT OR IGNORE INTO lexical_terms (tenant_id, term) VALUES (?, ?)",
                         [(tenant, term) for term in unique])
    keys: dict[str, int] = {}
    for start in range(0, len(unique), 500):
        part = unique[start:start + 500]
        marks = ",".join("?" * len(part))
        for term, key in conn.execute(
                "SELECT term, term_key FROM lexical_terms WHERE tenant_id = ? "
                f"AND term IN ({marks})", (tenant, *part)):
            keys[str(term)] = int(key)
    return keys


def rows_write_postings(conn: sqlite3.Connection, tenant: str, chunk_keys: Mapping[str, int],
                        postings: Mapping[str, tuple[tuple[str, int], ...]], *,
                        known: object = None) -> None:
    """The previous write of a version's postings, row by row, every key read from SQLite."""
    keys = rows_term_keys(conn, tenant,
                          [term for pairs in postings.values() for term, _ in pairs], create=True)
    conn.executemany(
        "INSERT INTO lexical_postings (term_key, chunk_key, tf) VALUES (?, ?, ?)",
        sorted((keys[term], chunk_keys[chunk_id], tf)
               for chunk_id, pairs in postings.items() for term, tf in pairs))


def build(path: Path) -> None:
    store = SQLiteStore(path)
    try:
        for tenant in ("acme", "globex"):
            settings = Settings(tenant=tenant)
            store.ensure_tenant(tenant)
            for round_ in (0, 1, 2):
                docs = corpus(round_)
                Ingestor(store, settings).run(
                    [StaticSource(docs if tenant == "acme" else docs[::-1])])
    finally:
        store.close()


def dump(path: Path) -> Iterator[tuple[object, ...]]:
    with sqlite3.connect(path) as conn:
        yield from conn.execute("SELECT term_key, tenant_id, term FROM lexical_terms "
                                "ORDER BY term_key")
        yield from conn.execute("SELECT term_key, chunk_key, tf FROM lexical_postings "
                                "ORDER BY term_key, chunk_key")
        yield from conn.execute("SELECT chunk_key, tenant_id, chunk_id, version_id FROM chunks "
                                "ORDER BY chunk_key")


@pytest.fixture
def lexical_db(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    path = tmp_path / "terms.db"
    SQLiteStore(path).close()  # the schema, migrated
    conn = sqlite3.connect(path)
    try:
        yield conn
    finally:
        conn.close()


def test_bulk_writes_give_the_keys_and_postings_the_row_writes_gave(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build(tmp_path / "bulk.db")
    monkeypatch.setattr(sqlite_module, "write_postings", rows_write_postings)
    build(tmp_path / "rows.db")
    bulk, rows = list(dump(tmp_path / "bulk.db")), list(dump(tmp_path / "rows.db"))
    terms = {row[2] for row in bulk if len(row) == 3 and isinstance(row[2], str)}
    assert {"营收", "harbour", "cc6.1", "164.312", "新词", "附录"} <= terms  # both scripts, edits
    assert len(bulk) > 500
    assert bulk == rows


def test_new_terms_get_keys_in_term_order_whatever_the_script(
        lexical_db: sqlite3.Connection) -> None:
    keys = term_keys(lexical_db, "acme", list(ODD_TERMS) * 2, create=True)
    assert sorted(keys, key=keys.__getitem__) == sorted(set(ODD_TERMS))
    stored = dict(lexical_db.execute("SELECT term, term_key FROM lexical_terms"))
    assert stored == keys  # every term read back as itself, none cut or unescaped


def test_bulk_and_row_keys_agree_on_odd_terms_across_tenants(tmp_path: Path) -> None:
    paths = (tmp_path / "bulk.db", tmp_path / "rows.db")
    results = []
    for path, assign in zip(paths, (term_keys, rows_term_keys), strict=True):
        SQLiteStore(path).close()
        with sqlite3.connect(path) as conn:
            first = assign(conn, "acme", ODD_TERMS[:12], create=True)
            other = assign(conn, "globex", ODD_TERMS[6:], create=True)
            again = assign(conn, "acme", ODD_TERMS, create=True)
            results.append((first, other, again))
    assert results[0] == results[1]
    first, other, again = results[0]
    assert not set(first.values()) & set(other.values())  # a key belongs to one tenant
    assert all(again[term] == key for term, key in first.items())  # keys never move


def test_lookup_without_create_adds_nothing_and_stays_in_its_tenant(
        lexical_db: sqlite3.Connection) -> None:
    term_keys(lexical_db, "acme", ["RESTRICTED", "营收"], create=True)
    assert term_keys(lexical_db, "globex", ["RESTRICTED", "营收"], create=False) == {}
    found = term_keys(lexical_db, "acme", ["营收", "unknown"], create=False)
    assert list(found) == ["营收"]
    assert lexical_db.execute("SELECT COUNT(*) FROM lexical_terms").fetchone()[0] == 2


def test_a_term_holding_nul_is_never_read_as_its_prefix(lexical_db: sqlite3.Connection) -> None:
    # SQLite's JSON reader ends a string at \\u0000: "secret\0x" must not become "secret".
    keys = term_keys(lexical_db, "acme", ["secret", "secret\x00x", "营\x00收"], create=True)
    assert len(set(keys.values())) == 3
    stored = dict(lexical_db.execute("SELECT term, term_key FROM lexical_terms"))
    assert stored == keys
    assert term_keys(lexical_db, "acme", ["secret\x00x"], create=False) == {
        "secret\x00x": keys["secret\x00x"]}
