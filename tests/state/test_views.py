"""Reading views inside a turn's transaction: a broken view is stubbed, the turn goes on."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, text

from keel.brain.constitution import DEFAULT_STATE_READ_TIMEOUT_MS as TIMEOUT_MS
from keel.brain.specs import ContextSpec, ViewRef
from keel.budget.rows import ViewRows
from keel.link.values import Link
from keel.state.views import UNREADABLE, TurnViews, late_warnings, read_view, too_slow


def test_a_view_that_cannot_be_read_leaves_the_transaction_usable(
    engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE card (ticket_id TEXT, note TEXT)"))
        conn.execute(text("INSERT INTO card VALUES ('T-1', 'first'), ('T-2', 'second')"))
    with engine.connect() as conn, conn.begin():
        conn.execute(text("CREATE TABLE written (x INTEGER)"))
        missing = read_view(
            conn, ViewRef(view="no_such_view"), None, limit=5, timeout_ms=TIMEOUT_MS
        )
        bad_by = read_view(
            conn, ViewRef(view="card", by="ticket_no"), "T-1", limit=5, timeout_ms=TIMEOUT_MS
        )
        good = read_view(
            conn, ViewRef(view="card", by="ticket_id"), "T-1", limit=5, timeout_ms=TIMEOUT_MS
        )
        conn.execute(text("INSERT INTO written VALUES (1)"))
    assert missing.problem == UNREADABLE, "what the database said stays out of the model's input"
    assert any("no_such_view" in r.getMessage() for r in caplog.records), "it goes to the log"
    assert bad_by.problem is not None
    assert good.rows == (("T-1", "first"),)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT COUNT(*) FROM written")).scalar_one() == 1


def test_the_key_is_a_bound_parameter_and_names_are_quoted(engine: Engine) -> None:
    with engine.begin() as conn:
        conn.execute(text('CREATE TABLE "odd name" ("the key" TEXT, v TEXT)'))
        conn.execute(text("""INSERT INTO "odd name" VALUES ('a''; DROP TABLE x; --', 'ok')"""))
    with engine.connect() as conn, conn.begin():
        rows = read_view(
            conn,
            ViewRef(view="odd name", by="the key"),
            "a'; DROP TABLE x; --",
            limit=5,
            timeout_ms=TIMEOUT_MS,
        )
    assert rows.rows == (("a'; DROP TABLE x; --", "ok"),)


def test_the_total_counts_rows_past_the_limit(engine: Engine) -> None:
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE many (n INTEGER)"))
        for n in range(12):
            conn.execute(text("INSERT INTO many VALUES (:n)"), {"n": n})
    with engine.connect() as conn:
        rows = read_view(conn, ViewRef(view="many"), None, limit=5, timeout_ms=TIMEOUT_MS)
    assert (len(rows.rows), rows.total) == (5, 12)


def _ticket_context() -> ContextSpec:
    return ContextSpec(
        id="ticket",
        feature="support",
        path="features/support/ticket.context.md",
        dir=("support",),
        when=frozenset({"chat"}),
        instructions="Help with the ticket.",
        entity="ticket",
        data=(ViewRef(view="card", by="ticket_id"), ViewRef(view="slow")),
    )


def test_a_turns_views_are_kept_for_its_journal_with_a_warning_for_each_late_one(
    engine: Engine,
) -> None:
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE card (ticket_id TEXT, note TEXT)"))
        conn.execute(text("INSERT INTO card VALUES ('T-1', 'first'), ('T-2', 'second')"))
        conn.execute(text("CREATE TABLE slow (n INTEGER)"))
        conn.execute(text("CREATE TABLE mine (n INTEGER)"))
        conn.execute(text("INSERT INTO mine VALUES (1), (2), (3)"))
    link = Link(context="ticket", entity="T-2", kind="chat", feature="support")
    with engine.connect() as conn, conn.begin():
        views = TurnViews(
            connection=conn, contexts={"ticket": _ticket_context()}, rows=2, timeout_ms=TIMEOUT_MS
        )
        card, slow = views.of(link)
        [mine] = views.own(("mine",))
    assert card.rows == (("T-2", "second"),)
    assert slow.total == 0
    assert mine.rows == ((1,), (2,))
    assert mine.total == 3
    assert views.read == {("ticket", "T-2"): (card, slow)}, "the role's own views are not a link's"
    assert views.late == []
    late = ViewRows(view="slow", problem=too_slow(TIMEOUT_MS))
    assert late_warnings([late], TIMEOUT_MS)[0].startswith("view 'slow' took longer")
