"""`render` reads the brain's own database through `ctx.query`, and can never write to it."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import create_engine, text

from keel.brain import Brain
from keel.code import CodeRunner, RenderCall, Section
from keel.code.readonly import ReadOnly, source_for
from tests.code.support import SHORT_MS, guarded, write_code

PATH = "features/support/who.context.py"
READS = """\
from keel.code import define_context


async def render(entity, ctx):
    rows = ctx.query(
        "SELECT customer, priority FROM support_ticket_card WHERE ticket_id = :id",
        {"id": entity},
    )
    return [{"key": "who", "text": f"{rows[0]['customer']} ({rows[0]['priority']})"}]


context = define_context(render=render)
"""
WRITES = """\
from keel.code import define_context


def render(entity, ctx):
    ctx.query("UPDATE support_tickets SET status = 'solved' WHERE ticket_id = :id", {"id": entity})
    return []


context = define_context(render=render)
"""


def _render(brain: Brain, url: str, source: str) -> tuple[Section, ...] | str:
    path = write_code(brain.root, source, path=PATH)
    call = RenderCall(context="ticket", path=path, entity="T-481", views=("support_ticket_card",))
    with CodeRunner(brain.root, db_url=url, workers=1) as runner:
        (answer,) = runner.render_all([call])
    return answer.failure.reason if answer.failure is not None else answer.sections


@pytest.mark.usefixtures("reference_store")
def test_render_reads_the_views_of_the_brain_database(
    reference_brain: Brain, database_url: str
) -> None:
    assert _render(reference_brain, database_url, READS) == (
        Section(key="who", text="Maria Lopes (urgent)"),
    )


@pytest.mark.usefixtures("reference_store")
def test_a_write_from_render_is_refused_and_changes_nothing(
    reference_brain: Brain, database_url: str
) -> None:
    said = _render(reference_brain, database_url, WRITES)
    assert isinstance(said, str)
    assert said.startswith("render raised ")
    assert "readonly database" in said or "read-only transaction" in said
    engine = create_engine(database_url)
    try:
        with engine.connect() as conn:
            status = conn.execute(
                text("SELECT status FROM support_tickets WHERE ticket_id = 'T-481'")
            ).scalar_one()
    finally:
        engine.dispose()
    assert status == "open"


@pytest.mark.parametrize(
    ("url", "source"),
    [
        pytest.param(None, {"kind": "none", "why": "this runner was given no database"}, id="none"),
        pytest.param(
            "sqlite:////srv/brain/keel.db",
            {"kind": "sqlite", "path": "/srv/brain/keel.db"},
            id="sqlite-file",
        ),
        pytest.param(
            "sqlite:///file:/srv/k.db?uri=true",
            {"kind": "sqlite", "uri": "file:/srv/k.db"},
            id="sqlite-uri",
        ),
        pytest.param(
            "postgresql://keel:secret@db.example:5433/brain?options=-csearch_path%3Dx",
            {
                "kind": "postgresql",
                "params": {
                    "host": "db.example",
                    "port": 5433,
                    "user": "keel",
                    "password": "secret",
                    "dbname": "brain",
                    "options": "-csearch_path=x",
                },
            },
            id="postgresql",
        ),
    ],
)
def test_how_a_worker_reaches_the_database(url: str | None, source: dict[str, object]) -> None:
    assert source_for(url) == source


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:"])
def test_an_in_memory_database_cannot_be_read_from_a_worker(url: str) -> None:
    source = source_for(url)
    assert source["kind"] == "none"
    assert "in-memory SQLite" in str(source["why"])


@pytest.mark.usefixtures("reference_store")
def test_queries_read_rows_as_dicts_and_never_write(database_url: str) -> None:
    database = ReadOnly(source_for(database_url))
    database.warm()
    try:
        _read_twice_then_write(database)
    finally:
        database.close()


def _read_twice_then_write(database: ReadOnly) -> None:
    for _ in range(2):  # the second call borrows what the first gave back (PostgreSQL)
        call = database.for_call(time.monotonic() + 5)
        try:
            rows = call.query(
                "SELECT ticket_id, priority FROM support_tickets WHERE priority = :p ORDER BY ticket_id",
                {"p": "urgent"},
            )
            assert rows == [{"ticket_id": "T-481", "priority": "urgent"}]
            assert call.query(
                "SELECT COUNT(*) AS n FROM support_tickets WHERE subject LIKE '%size%'"
            ) == [{"n": 1}]
        finally:
            call.close()
    call = database.for_call(time.monotonic() + 5)
    try:
        with pytest.raises(Exception, match=r"readonly database|read-only transaction"):
            call.query("DELETE FROM support_tickets")
    finally:
        call.close()


def test_a_query_without_a_database_says_why() -> None:
    call = ReadOnly(source_for("sqlite://")).for_call(time.monotonic() + 5)
    with pytest.raises(
        RuntimeError,
        match=r"ctx.query cannot read the database: the database is an in-memory SQLite one",
    ):
        call.query("SELECT 1")
    call.close()


ENDLESS = """\
from keel.code import define_context


def render(entity, ctx):
    ctx.query(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT COUNT(*) FROM n"
    )
    return []


context = define_context(render=render)
"""


@pytest.mark.usefixtures("reference_store")
def test_a_query_that_never_ends_is_stopped_at_the_code_timeout(
    reference_brain: Brain, database_url: str
) -> None:
    """`ctx.query` does not go through the views' reader: its bound is the call's own."""
    path = write_code(reference_brain.root, ENDLESS, path=PATH)
    call = RenderCall(context="ticket", path=path, entity="T-481", timeout_ms=SHORT_MS)
    with guarded(), CodeRunner(reference_brain.root, db_url=database_url, workers=1) as runner:
        (answer,) = runner.render_all([call])
    assert answer.failure is not None
    assert answer.failure.kind == "timeout", answer.failure
    assert f"render ran past its {SHORT_MS} ms timeout" in answer.failure.reason
    assert answer.sections == ()
