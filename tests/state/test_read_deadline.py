"""A view read has a deadline (`state.readTimeoutMs`): a view that never ends is a stub.

The bound is the database's own — SQLite's progress handler, PostgreSQL's statement
timeout — set for the read alone: the turn's transaction around it goes on as before,
unbounded and usable.
"""

from __future__ import annotations

import time

import pytest
from sqlalchemy import Connection, Engine, text

from keel.brain.specs import ViewRef
from keel.state.views import read_view, timed_read, too_slow
from tests.state.guard import guarded

# Counts up for ever: with LIMIT its first rows come at once, but counting them never ends.
FOREVER = (
    "CREATE VIEW forever AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
    "SELECT i FROM n"
)
# Work enough (some million steps of SQLite's machine) that a bound left behind would stop it.
BUSY = (
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200000) "
    "SELECT COUNT(*) FROM n"
)
MS = 50


def _setup(engine: Engine) -> None:
    with engine.begin() as conn:
        conn.execute(text(FOREVER))
        conn.execute(text("CREATE TABLE card (ticket_id TEXT, note TEXT)"))
        conn.execute(text("INSERT INTO card VALUES ('T-1', 'first'), ('T-2', 'second')"))
        conn.execute(text("CREATE TABLE written (x INTEGER)"))


def _timeout_setting(conn: Connection) -> str | None:
    if conn.dialect.name != "postgresql":
        return None
    return str(conn.execute(text("SHOW statement_timeout")).scalar_one())


@pytest.mark.parametrize(
    "ref",
    [
        pytest.param(ViewRef(view="forever"), id="whole"),
        pytest.param(ViewRef(view="forever", by="i"), id="by-key"),
    ],
)
def test_a_view_that_never_ends_is_a_stub_at_its_deadline_and_the_turn_goes_on(
    engine: Engine, ref: ViewRef, caplog: pytest.LogCaptureFixture
) -> None:
    _setup(engine)
    with guarded(engine), engine.connect() as conn, conn.begin():
        conn.execute(text("INSERT INTO written VALUES (1)"))
        late = read_view(conn, ref, "7", limit=5, timeout_ms=MS)
        good = read_view(conn, ViewRef(view="card", by="ticket_id"), "T-1", limit=5, timeout_ms=MS)
        conn.execute(text("INSERT INTO written VALUES (2)"))
    assert late.problem == too_slow(MS)
    assert late.problem.startswith(f"took longer than state.readTimeoutMs ({MS} ms) — ")
    assert good.rows == (("T-1", "first"),)
    assert any(
        "forever" in r.getMessage() and "state.readTimeoutMs" in r.getMessage()
        for r in caplog.records
    ), "the log says which view and which knob"
    with engine.connect() as conn:
        assert conn.execute(text("SELECT x FROM written ORDER BY x")).scalars().all() == [1, 2]


@pytest.mark.parametrize("view", ["forever", "card"])
def test_the_deadline_is_the_reads_alone(engine: Engine, view: str) -> None:
    """After a read, late or not, the transaction's statements run unbounded as before."""
    _setup(engine)
    with guarded(engine), engine.connect() as conn, conn.begin():
        before = _timeout_setting(conn)
        read_view(conn, ViewRef(view=view), None, limit=5, timeout_ms=MS)
        assert _timeout_setting(conn) == before
        time.sleep(2 * MS / 1000)  # past the read's deadline, had it been left behind
        assert conn.execute(text(BUSY)).scalar_one() == 200000
        conn.execute(text("INSERT INTO written VALUES (1)"))
    with engine.connect() as conn:
        assert conn.execute(text("SELECT COUNT(*) FROM written")).scalar_one() == 1


def test_a_view_inside_its_deadline_reads_whole(engine: Engine) -> None:
    _setup(engine)
    with engine.connect() as conn:
        rows = read_view(conn, ViewRef(view="card"), None, limit=1, timeout_ms=60_000)
    assert (rows.problem, rows.rows, rows.total) == (None, (("T-1", "first"),), 2)


def test_doctor_reads_a_by_view_with_a_key_it_holds_and_times_it(engine: Engine) -> None:
    _setup(engine)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE empty_card (ticket_id TEXT)"))
    looks = iter([10.0, 10.25, 20.0, 20.0])
    with engine.connect() as conn:
        card, seconds = timed_read(
            conn,
            ViewRef(view="card", by="ticket_id"),
            limit=5,
            timeout_ms=60_000,
            clock=looks.__next__,
        )
        empty, _ = timed_read(
            conn,
            ViewRef(view="empty_card", by="ticket_id"),
            limit=5,
            timeout_ms=60_000,
            clock=looks.__next__,
        )
    assert seconds == 0.25
    assert card.problem is None
    assert card.total == 1, "one key's rows, as a turn reads them"
    assert (empty.problem, empty.total) == (None, 0)


def test_doctor_times_a_by_view_that_never_ends_to_its_deadline(engine: Engine) -> None:
    _setup(engine)
    with guarded(engine), engine.connect() as conn:
        rows, _ = timed_read(
            conn, ViewRef(view="forever", by="i"), limit=5, timeout_ms=MS, clock=time.monotonic
        )
    assert rows.problem == too_slow(MS)
