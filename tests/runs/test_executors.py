"""A run recorded pending that nothing will start is recorded failed with the reason, not
left pending for ever; one a live process is still starting is left alone.

On SQLite and PostgreSQL, with this process's runtime launched (`runs`). The rows are
written as `keel.runs.service.start` writes them; the processes named in them are
made up, so they count as dead (no executor row).
"""

from __future__ import annotations

from datetime import UTC, datetime

from dbos import DBOS

from keel.link.values import RunRef
from keel.runs.executors import settle_unstarted
from keel.runs.service import order_for, pending, start, wait
from keel.runs.values import RunOrder
from tests.runs.conftest import Runs

DAILY = RunRef(kind="heartbeat", id="daily")


def recorded(runs: Runs, executor: str, run_id: str) -> RunOrder:
    """A run of `daily` recorded pending by `executor`, its workflow never started."""
    order = order_for(runs.engine.brain, DAILY, model="none", run_id=run_id)
    with runs.engine.store.transaction() as tx:
        assert tx.add_run(pending(order, datetime.now(UTC), executor))
    return order


def test_a_pending_run_whose_process_died_before_its_workflow_started_is_failed(
    runs: Runs,
) -> None:
    gone = recorded(runs, "worker-gone-4242", "heartbeat-daily-orphan")
    starting = recorded(runs, runs.runtime.executor, "heartbeat-daily-starting")
    assert settle_unstarted(runs.runtime) == [gone.id]
    with runs.engine.store.transaction() as tx:
        failed, left = tx.run(gone.id), tx.run(starting.id)
    assert failed is not None
    assert failed.status == "failed"
    assert failed.error == (
        "its process (worker-gone-4242) ended before its workflow started — start it again"
    )
    assert left is not None
    assert left.status == "pending"  # this process is alive: it is between its two writes
    assert settle_unstarted(runs.runtime) == []  # settled once


def test_a_pending_run_whose_workflow_ended_without_its_start_is_failed(runs: Runs) -> None:
    order = order_for(runs.engine.brain, DAILY, model="none", run_id="heartbeat-daily-ended")
    start(order)
    assert wait(runs.runtime, order.id) == "done"
    # Keel's row says done as the run's last step commits; DBOS records the workflow's end
    # just after. Settling looks at DBOS's record, so wait for it.
    DBOS.retrieve_workflow(order.id).get_result()
    with runs.engine.store.transaction() as tx:  # as if its start had never been written
        tx.set_run_status(order.id, "pending", datetime.now(UTC))
    assert settle_unstarted(runs.runtime) == [order.id]
    with runs.engine.store.transaction() as tx:
        row = tx.run(order.id)
    assert row is not None
    assert (row.status, row.error) == (
        "failed",
        "its workflow ended (SUCCESS) without recording its start — start it again",
    )


def test_a_started_run_is_recorded_before_its_workflow_runs(runs: Runs) -> None:
    order = order_for(runs.engine.brain, DAILY, model="none", run_id="heartbeat-daily-asked")
    with runs.engine.store.transaction() as tx:
        assert tx.run(order.id) is None
    start(order)
    with runs.engine.store.transaction() as tx:
        row = tx.run(order.id)
        again = tx.add_run(pending(order, datetime.now(UTC), "someone-else"))
    assert row is not None  # recorded by the time `start` returns, whatever its status
    assert row.order == order.to_json()
    assert again is False  # a row with its id stands: starting it again changes nothing
    assert wait(runs.runtime, order.id) == "done"
