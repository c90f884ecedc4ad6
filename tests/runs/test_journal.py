"""A run's steps, each once: the row a step writes with its effect, a twin execution's
effect rolled back, the look a fresh execution skips, and where the journals are kept."""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from dbos import DBOS

from keel.link.values import RunRef
from keel.runs.journal import Done, Marking, StepTaken, now, once, recorded, write_step
from keel.runs.service import order_for, start
from keel.store import Tx
from keel.store.run_values import StepRow
from tests.runs.conftest import Runs


def row(run_id: str, seq: int, output: Any = None) -> StepRow:
    return StepRow(
        run_id=run_id,
        seq=seq,
        name="test",
        status="done",
        started_at=now(),
        finished_at=now(),
        output=output,
    )


def test_a_step_a_twin_finished_first_rolls_back_what_this_one_did(runs: Runs) -> None:
    store, run_id = runs.engine.store, f"twin-{secrets.token_hex(4)}"
    write_step(store, row(run_id, 1, {"by": "the twin"}))
    marking = Marking(store, lambda _tx: row(run_id, 1, {"by": "this one"}))
    with pytest.raises(StepTaken), marking.transaction() as tx:
        tx.record_step(row(run_id, 2, "an effect of this one's"))
    assert recorded(store, run_id, 2) is None
    taken = recorded(store, run_id, 1)
    assert taken is not None
    assert taken.output == {"by": "the twin"}


def test_a_fresh_execution_skips_the_look_but_its_write_still_finds_the_twins_row(
    runs: Runs,
) -> None:
    store, run_id = runs.engine.store, f"fresh-{secrets.token_hex(4)}"
    computed: list[int] = []

    def compute() -> int:
        computed.append(1)
        return len(computed)

    def write(tx: Tx, value: int) -> Done:
        tx.record_step(row(run_id, 9, "an effect that must not stay"))
        return Done(output={"value": value})

    assert once(store, run_id, 1, "test", compute, write) == {"value": 1}
    # Not fresh: the row is found before anything is computed.
    assert once(store, run_id, 1, "test", compute, write) == {"value": 1}
    assert computed == [1]
    # Fresh: computed again, but the write's own look finds the row and writes nothing.
    write_step(store, row(run_id, 2, {"value": "the twin's"}))
    assert once(store, run_id, 2, "test", compute, write, fresh=True) == {"value": "the twin's"}
    assert computed == [1, 1]


def test_a_started_run_wakes_its_waiter_once_dbos_has_recorded_its_end(runs: Runs) -> None:
    runtime = runs.runtime
    order = order_for(runs.engine.brain, RunRef(kind="heartbeat", id="daily"), model="none")
    seen = runtime.changes
    start(order)
    runtime.wait_change(seen, 60)
    assert runtime.changes != seen
    status = DBOS.get_workflow_status(order.id)
    assert status is not None
    assert status.status == "SUCCESS"


def test_sqlite_journals_are_in_write_ahead_mode(runs: Runs) -> None:
    if not runs.db.startswith("sqlite"):
        assert runs.runtime.journal is None  # DBOS makes its PostgreSQL engine itself
        return
    journal = runs.runtime.journal
    assert journal is not None
    for engine in (journal, runs.engine.store.engine):
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL
