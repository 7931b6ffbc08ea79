"""Many rows a statement: every row written, in order, within the connection's limit on
host parameters."""

from __future__ import annotations

import sqlite3

import pytest

from affidavit.store.sqlite.lexical import insert_rows


def table() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (seq INTEGER PRIMARY KEY AUTOINCREMENT, a INTEGER, "
                 "b INTEGER, c INTEGER)")
    return conn


@pytest.mark.parametrize("count", [0, 1, 332, 333, 334, 999, 1000, 2501])
def test_every_row_is_written_in_order(count: int) -> None:
    conn = table()
    rows = [(i, -i, i * 7 % 11) for i in range(count)]
    insert_rows(conn, "INSERT INTO t (a, b, c) VALUES ", rows)
    assert conn.execute("SELECT a, b, c FROM t ORDER BY seq").fetchall() == rows


def test_a_connection_with_a_lower_parameter_limit_is_respected() -> None:
    conn = table()
    conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 10)  # three rows of three a statement
    rows = [(i, i, i) for i in range(20)]
    insert_rows(conn, "INSERT INTO t (a, b, c) VALUES ", rows)
    assert conn.execute("SELECT a, b, c FROM t ORDER BY seq").fetchall() == rows
    with pytest.raises(sqlite3.OperationalError, match="too many SQL variables"):
        conn.execute("INSERT INTO t (a, b, c) VALUES (?,?,?),(?,?,?),(?,?,?),(?,?,?)",
                     list(range(12)))
