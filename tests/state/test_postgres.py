"""The same apply / read_schema on a real PostgreSQL server, in a throwaway schema."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from sqlalchemy import Engine, create_engine, text

from keel.brain import load_brain
from keel.brain.specs import SqlFile
from keel.errors import StoreError
from keel.state.database import apply_sql, connect
from keel.state.schema import read_schema

SERVER = os.environ.get("KEEL_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A URL whose search_path is a fresh, randomly named schema, dropped afterwards."""
    schema = f"keel_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(SERVER.replace("postgresql://", "postgresql+psycopg://", 1))
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    separator = "&" if "?" in SERVER else "?"
    try:
        yield f"{SERVER}{separator}options={quote(f'-csearch_path={schema}')}"
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture
def engine(pg_url: str, tmp_path: Path) -> Iterator[Engine]:
    (tmp_path / "state").mkdir()
    # A server database is used as it is: connect applies nothing to it.
    (tmp_path / "state" / "001.sql").write_text("CREATE TABLE never (x TEXT);", encoding="utf-8")
    engine = connect(pg_url, load_brain(tmp_path))
    yield engine
    engine.dispose()


def test_connect_to_a_server_applies_nothing(engine: Engine) -> None:
    assert read_schema(engine).names == ()


def test_apply_then_read_schema(engine: Engine) -> None:
    apply_sql(
        engine,
        [
            SqlFile(
                path="state/001_tables.sql",
                text="CREATE TABLE tickets (ticket_id TEXT PRIMARY KEY, subject TEXT);\n"
                "INSERT INTO tickets VALUES ('T-1', 'Refund; twice');\n",
            ),
            SqlFile(
                path="state/002_views.sql",
                text="CREATE VIEW ticket_card AS SELECT ticket_id, subject FROM tickets;",
            ),
        ],
    )
    schema = read_schema(engine)
    assert schema.names == ("ticket_card", "tickets")
    assert schema.views == frozenset({"ticket_card"})
    assert schema.columns("ticket_card") == ("ticket_id", "subject")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT subject FROM ticket_card")).scalar() == "Refund; twice"


def test_a_bad_file_rolls_back_and_names_file_and_line(engine: Engine) -> None:
    files = [
        SqlFile(path="state/001_ok.sql", text="CREATE TABLE fine (x TEXT);"),
        SqlFile(path="state/002_bad.sql", text="CREATE TABLE also (y TEXT);\n\nSELEKT 1;\n"),
    ]
    with pytest.raises(StoreError, match=r"^state/002_bad\.sql:3: the database refused"):
        apply_sql(engine, files)
    assert read_schema(engine).names == ()
