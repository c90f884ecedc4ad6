"""`keel.store.runs`: the runs listing's filters, and rows a person changed by hand to what
no run can be — a kind, a run status, a step status — read as errors that name the row."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import update

from keel.errors import StoreError
from keel.store import Store
from keel.store import schema as keel_schema
from keel.store.run_values import RunRow, StepRow

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def run(ident: str, kind: str = "heartbeat", *, minutes: int = 0, status: str = "done") -> RunRow:
    at = T0 + timedelta(minutes=minutes)
    return RunRow(
        id=ident,
        kind=kind,  # type: ignore[arg-type]  # a run's kind, as the caller says
        entity_id="daily",
        status=status,  # type: ignore[arg-type]
        created_at=at,
        updated_at=at,
    )


def recorded(store: Store, *rows: RunRow) -> None:
    with store.transaction() as tx:
        for row in rows:
            tx.record_run(row)


def test_runs_are_listed_newest_first_by_status_and_by_kind(store: Store) -> None:
    recorded(
        store,
        run("a", minutes=0),
        run("b", "hook", minutes=1),
        run("c", "scenario", minutes=2, status="failed"),
        run("d", "hook", minutes=3, status="failed"),
    )
    with store.transaction() as tx:
        assert [r.id for r in tx.runs()] == ["d", "c", "b", "a"]
        assert [r.id for r in tx.runs(kind="hook")] == ["d", "b"]
        assert [r.id for r in tx.runs(status="failed")] == ["d", "c"]
        assert [r.id for r in tx.runs(status="failed", kind="scenario")] == ["c"]
        assert [r.id for r in tx.runs(limit=1)] == ["d"]
        assert tx.runs(limit=0) == ()


def test_a_negative_limit_is_refused(store: Store) -> None:
    said = "a limit of -1 runs is negative — pass 0 or more"
    with pytest.raises(StoreError, match=said), store.transaction() as tx:
        tx.runs(limit=-1)


def test_a_filter_by_a_status_no_run_has_is_refused(store: Store) -> None:
    said = "the filter: the run status 'lost' is not one of"
    with pytest.raises(StoreError, match=said), store.transaction() as tx:
        tx.runs(status="lost")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("column", "value", "said"),
    [
        pytest.param(
            "kind",
            "cron",
            "run 'a' in keel_runs has the kind 'cron' — it must be one of heartbeat, hook, "
            "scenario; correct or delete the row",
            id="kind",
        ),
        pytest.param(
            "status",
            "lost",
            "a: the run status 'lost' is not one of pending, running, waiting, done, failed",
            id="status",
        ),
    ],
)
def test_a_run_row_changed_by_hand_to_what_no_run_is_is_an_error_naming_it(
    store: Store, column: str, value: str, said: str
) -> None:
    recorded(store, run("a"))
    with store.engine.begin() as conn:
        conn.execute(update(keel_schema.runs).values({column: value}))
    with pytest.raises(StoreError, match=said), store.transaction() as tx:
        tx.run("a")
    with pytest.raises(StoreError, match=said), store.transaction() as tx:
        tx.runs()


def test_a_step_row_changed_by_hand_to_a_status_no_step_has_is_an_error(store: Store) -> None:
    step = StepRow(run_id="a", seq=1, name="start", status="done", started_at=T0, finished_at=T0)
    with store.transaction() as tx:
        assert tx.record_step(step)
    with store.engine.begin() as conn:
        conn.execute(update(keel_schema.run_steps).values(status="skipped"))
    said = "a step of run 'a' has the status 'skipped' — it must be one of running, waiting"
    with pytest.raises(StoreError, match=said), store.transaction() as tx:
        tx.step("a", 1)
