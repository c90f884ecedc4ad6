"""Connecting to the brain's database, and applying `state/*.sql` to it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from keel.brain import load_brain
from keel.brain.snapshot import Brain
from keel.brain.specs import SqlFile
from keel.errors import StoreError
from keel.state.database import anchored, apply_sql, connect, default_url
from keel.state.schema import read_schema

COUNTED = "CREATE TABLE IF NOT EXISTS marks (n INTEGER);\nINSERT INTO marks VALUES (1);\n"


def _rows(engine: Engine, sql: str) -> list[tuple[object, ...]]:
    with engine.connect() as conn:
        return [tuple(row) for row in conn.execute(text(sql))]


def _brain(root: Path, sql: dict[str, str]) -> Brain:
    for name, body in sql.items():
        target = root / "state" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body, encoding="utf-8")
    root.mkdir(exist_ok=True)
    return load_brain(root)


def test_default_url_is_a_sqlite_file_inside_the_brain(tmp_path: Path) -> None:
    assert default_url(tmp_path) == f"sqlite:///{tmp_path.as_posix()}/.keel/keel.db"


def test_connect_creates_the_default_database_and_applies_state_once(tmp_path: Path) -> None:
    brain = _brain(tmp_path, {"001_marks.sql": COUNTED})
    engine = connect(default_url(tmp_path), brain)
    assert (tmp_path / ".keel" / "keel.db").is_file()
    assert _rows(engine, "SELECT count(*) FROM marks") == [(1,)]
    engine.dispose()

    again = connect(default_url(tmp_path), brain)
    # A second apply would have inserted a second row.
    assert _rows(again, "SELECT count(*) FROM marks") == [(1,)]
    again.dispose()


def test_state_files_run_in_name_order(tmp_path: Path) -> None:
    brain = _brain(
        tmp_path,
        {
            "002_view.sql": "CREATE VIEW big AS SELECT n FROM nums WHERE n > 1;",
            "001_table.sql": "CREATE TABLE nums (n INTEGER); INSERT INTO nums VALUES (1), (2);",
        },
    )
    engine = connect(f"sqlite:///{tmp_path / 'db.sqlite'}", brain)
    assert _rows(engine, "SELECT n FROM big") == [(2,)]
    engine.dispose()


def test_an_existing_sqlite_file_is_used_as_it_is(tmp_path: Path) -> None:
    existing = tmp_path / "mine.db"
    sqlite3.connect(existing).close()
    brain = _brain(tmp_path / "brain", {"001_marks.sql": COUNTED})
    engine = connect(f"sqlite:///{existing}", brain)
    assert not read_schema(engine).has("marks")
    engine.dispose()


def test_an_in_memory_database_gets_the_state_files(tmp_path: Path) -> None:
    brain = _brain(tmp_path, {"001_marks.sql": COUNTED})
    engine = connect("sqlite://", brain)
    assert _rows(engine, "SELECT n FROM marks") == [(1,)]


def test_a_bad_file_rolls_back_everything_and_names_file_and_line(tmp_path: Path) -> None:
    brain = _brain(tmp_path / "brain", {})
    engine = connect(f"sqlite:///{tmp_path / 'db.sqlite'}", brain)
    files = [
        SqlFile(path="state/001_ok.sql", text="CREATE TABLE fine (x TEXT);\n"),
        SqlFile(
            path="state/002_bad.sql",
            text="CREATE TABLE also (y TEXT);\n\nCREATE VIEW broken AS SELEKT 1;\n",
        ),
    ]
    with pytest.raises(StoreError, match=r"^state/002_bad\.sql:3: the database refused") as err:
        apply_sql(engine, files)
    assert "rolled back" in str(err.value)
    assert [n for n in read_schema(engine).names if not n.startswith("keel_")] == []
    engine.dispose()


def test_connect_leaves_no_half_made_database_behind(tmp_path: Path) -> None:
    root = tmp_path / "brain"
    brain = _brain(root, {"001_bad.sql": "CREATE TABLE t (x);\nNOT SQL AT ALL;\n"})
    with pytest.raises(StoreError, match=r"state/001_bad\.sql:2"):
        connect(default_url(root), brain)
    assert not (root / ".keel" / "keel.db").exists()

    (root / "state" / "001_bad.sql").write_text("CREATE TABLE t (x);\n", encoding="utf-8")
    engine = connect(default_url(root), load_brain(root))
    assert read_schema(engine).has("t")
    engine.dispose()


def test_transactions_on_a_connected_sqlite_engine_are_real(tmp_path: Path) -> None:
    engine = connect(f"sqlite:///{tmp_path / 'db.sqlite'}", _brain(tmp_path / "b", {}))

    conn = engine.connect()
    transaction = conn.begin()
    conn.execute(text("CREATE TABLE ghost (x INTEGER)"))
    transaction.rollback()
    conn.close()
    # pysqlite alone would have committed the CREATE TABLE before the rollback.
    assert not read_schema(engine).has("ghost")
    engine.dispose()


def test_an_unreachable_server_names_the_url_without_its_password(tmp_path: Path) -> None:
    brain = _brain(tmp_path, {})
    with pytest.raises(StoreError, match=r"cannot reach the database") as err:
        connect("postgresql://keel:s3cret@127.0.0.1:1/nothing", brain)
    message = str(err.value)
    assert "postgresql://keel:***@127.0.0.1:1/nothing" in message
    assert "s3cret" not in message
    assert "check that the server is running" in message


def test_a_string_that_is_no_url_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"is not a database URL — write e\.g\. sqlite:///"):
        connect("just words", _brain(tmp_path, {}))


def test_a_dump_with_its_own_transaction_applies(tmp_path: Path) -> None:
    dump = "PRAGMA foreign_keys=OFF;\nBEGIN TRANSACTION;\nCREATE TABLE d (x);\nCOMMIT;\n"
    engine = connect("sqlite://", _brain(tmp_path, {"001_dump.sql": dump}))
    assert read_schema(engine).has("d")


def test_a_relative_sqlite_file_is_anchored_to_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert anchored("sqlite:///k.db") == f"sqlite:///{tmp_path / 'k.db'}"
    for url in (
        f"sqlite:///{tmp_path / 'k.db'}",
        "sqlite://",
        "sqlite:///:memory:",
        "postgresql://u@127.0.0.1:5432/test",
    ):
        assert anchored(url) == url
