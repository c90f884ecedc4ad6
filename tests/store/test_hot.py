"""The turn's hot statements run on the driver as SQLAlchemy would run them: values through
their types both ways, on SQLite and on PostgreSQL; a driver's error as SQLAlchemy's; and
SQLite's trace sees every statement."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest
from sqlalchemy import Engine, bindparam, select

from keel.errors import StoreError
from keel.store import Store, schema
from keel.store.hot import Hot, traced
from keel.store.sql import failing_as

_TURNS = schema.turns
_INSERT = Hot(_TURNS.insert(), columns=("bot", "chat", "thread", "turn"))
_SELECT = Hot(select(_TURNS.c.turn).where(_TURNS.c.chat == bindparam("chat")))
AT = datetime(2026, 12, 3, 20, 0, 0, 123456, tzinfo=UTC)


def test_a_statement_runs_in_the_connections_transaction(store: Store) -> None:
    row = {"bot": "nova", "chat": "c1", "thread": "", "turn": 7}
    with store.transaction() as tx:
        assert _INSERT.run(tx.connection, row) == 1
        assert _SELECT.rows(tx.connection, {"chat": "c1"}) == [(7,)]

    def rolled_back() -> None:
        with store.transaction() as tx:
            _INSERT.run(tx.connection, row | {"chat": "c2"})
            raise RuntimeError("roll it back")

    with pytest.raises(RuntimeError):
        rolled_back()
    with store.reading() as tx:
        assert _SELECT.rows(tx.connection, {"chat": "c2"}) == []


def test_a_time_goes_in_and_comes_out_through_its_type(store: Store) -> None:
    steps = schema.run_steps
    columns = ("run_id", "seq", "name", "status", "started_at", "detail")
    insert = Hot(steps.insert(), columns=columns)
    read = Hot(select(steps.c.started_at).where(steps.c.run_id == bindparam("r")))
    with store.transaction() as tx:
        values = ("r1", 1, "start", "done", AT, "")
        insert.run(tx.connection, dict(zip(columns, values, strict=True)))
        assert read.rows(tx.connection, {"r": "r1"}) == [(AT,)], "aware UTC, as it went in"


def test_many_writes_every_row_in_one_call(store: Store) -> None:
    rows = [{"bot": "nova", "chat": "c3", "thread": str(n), "turn": n} for n in range(1, 4)]
    with store.transaction() as tx:
        assert _INSERT.many(tx.connection, rows) == 3
        assert sorted(_SELECT.rows(tx.connection, {"chat": "c3"})) == [(1,), (2,), (3,)]


def test_a_drivers_error_is_the_stores_error(store: Store) -> None:
    row = {"bot": "nova", "chat": "c4", "thread": "", "turn": 1}
    with store.transaction() as tx:
        _INSERT.run(tx.connection, row)
        with pytest.raises(StoreError, match="write the turn"), failing_as("write the turn"):
            _INSERT.run(tx.connection, row)  # the same key again


def test_a_parameter_left_out_is_refused_by_name(store: Store) -> None:
    with pytest.raises(StoreError, match="'chat'"), store.reading() as tx:
        _SELECT.rows(tx.connection, {})


def test_a_list_parameter_is_refused(store: Store) -> None:
    listed = Hot(select(_TURNS.c.turn).where(_TURNS.c.chat.in_(bindparam("c", expanding=True))))
    with pytest.raises(StoreError, match="cannot take a list"), store.reading() as tx:
        listed.rows(tx.connection, {"c": ["c1"]})


def test_the_trace_sees_each_statement_and_only_this_threads(sqlite_engine: Engine) -> None:
    store = Store(sqlite_engine)
    store.migrate()
    row = {"bot": "nova", "chat": "c5", "thread": "", "turn": 1}

    def elsewhere() -> None:
        with store.reading() as tx:
            _SELECT.rows(tx.connection, {"chat": "c5"})

    with traced(sqlite_engine, this_thread=True) as sent:
        with store.transaction() as tx:
            _INSERT.run(tx.connection, row)
        worker = threading.Thread(target=elsewhere)
        worker.start()
        worker.join()
    assert sent[0] == "BEGIN IMMEDIATE"
    assert sent[1].startswith("INSERT INTO keel_turns")
    assert sent[2] == "COMMIT"
    assert len(sent) == 3, "the other thread's read is not counted"
    with traced(sqlite_engine) as every:
        elsewhere()
    assert len(every) == 3  # BEGIN, SELECT, ROLLBACK


def test_only_sqlite_traces(engine: Engine) -> None:
    if engine.dialect.name == "sqlite":
        with traced(engine) as sent:
            pass
        assert sent == []
    else:
        with pytest.raises(StoreError, match="SQLite only"), traced(engine):
            pass
