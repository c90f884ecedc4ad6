"""The run's workflow (`keel.runs.workflows`): a heartbeat's tick, a scenario without a
pipeline, and how a run ends when its work fails — a Keel error, a provider's error, DBOS's
own — or when the database refuses to record its start.

The database refuses with a trigger (`tests.databases.refusing`), so each refusal takes
the real path. Executions called here directly, outside DBOS, run their steps in this
thread, as a worker's would.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from dbos import SetWorkflowID
from dbos._error import DBOSException

from keel.link.values import RunRef
from keel.runs import workflows
from keel.runs.service import order_for, start, wait
from keel.runs.values import RunOrder
from keel.runs.workflows import execute, heartbeat_workflow, register
from tests.databases import REFUSAL, refusing
from tests.runs.brains import RUNS_BRAIN
from tests.runs.conftest import Runs, runs_of

FILES = {
    **RUNS_BRAIN,
    "features/news/brief.scenario.md": (
        "---\ndescription: The desk's brief.\nagent: news\nbot: nova\nchat: tg:chat:brief\n"
        "---\nBrief the desk in one line.\n"
    ),
}
runs = runs_of(FILES, "workflows")

DAILY = RunRef(kind="heartbeat", id="daily")
STARTED_UNRECORDED = "its start could not be recorded: "


def steps(record: dict[str, Any]) -> list[tuple[str, str]]:
    return [(s["name"], s["status"]) for s in record["steps"]]


def a_tick() -> datetime:
    """A tick time no other test of the module uses."""
    return datetime(2026, 1, 5, 8, 0, tzinfo=UTC) + timedelta(seconds=secrets.randbelow(10**8))


def test_a_scenario_without_a_pipeline_runs_one_agent_turn(runs: Runs) -> None:
    model = runs.script("brief", [{"text": "All quiet on the desk."}])
    record = runs.json("run", "scenario:brief", "--model", model)
    assert record["status"] == "done"
    assert steps(record) == [
        ("start", "done"), ("prepare", "done"), ("request", "done"), ("send", "done"),
        ("finish", "done"),
    ]  # fmt: skip
    assert [m["text"] for m in record["messages"]] == ["All quiet on the desk."]


def test_a_heartbeats_tick_is_a_run_named_by_its_workflow(runs: Runs) -> None:
    at = a_tick()
    workflow_id = f"sched-hb:daily-{secrets.token_hex(4)}"
    with SetWorkflowID(workflow_id):  # in this thread, as the schedule runs it
        register().heartbeat(at, {"heartbeat": "daily", "model": "none"})
    record = runs.json("runs", "show", workflow_id)
    assert (record["status"], record["kind"], record["entity_id"]) == ("done", "heartbeat", "daily")
    assert steps(record) == [("start", "done"), ("prepare", "done"), ("finish", "done")]
    assert record["model"] == "none"
    # Outside a workflow the tick is named after its heartbeat and its time.
    later = a_tick()
    heartbeat_workflow(later, {"heartbeat": "daily", "model": "none"})
    assert runs.json("runs", "show", f"tick:daily:{later.isoformat()}")["status"] == "done"


def test_a_tick_whose_start_the_database_refuses_is_recorded_failed_all_the_same(
    runs: Runs,
) -> None:
    at = a_tick()
    run_id = f"tick:daily:{at.isoformat()}"
    # Nobody asked for a tick, so it has no row to mark failed: the failure writes one.
    when = f"NEW.status IN ('running', 'done') AND NEW.id = '{run_id}'"
    with refusing(runs.engine.store.engine, "keel_runs", ("INSERT", "UPDATE"), when):
        heartbeat_workflow(at, {"heartbeat": "daily", "model": "none"})
    record = runs.json("runs", "show", run_id)
    assert record["status"] == "failed"
    assert record["error"].startswith(STARTED_UNRECORDED)
    assert REFUSAL in record["error"]
    assert steps(record) == [("start", "failed")]


def test_a_pipeline_whose_start_the_database_refuses_fails_before_its_first_step(
    runs: Runs,
) -> None:
    order = order_for(runs.engine.brain, RunRef(kind="scenario", id="announce"), model="none")
    when = f"NEW.status = 'running' AND NEW.id = '{order.id}'"
    with refusing(runs.engine.store.engine, "keel_runs", ("INSERT", "UPDATE"), when):
        start(order)
        assert wait(runs.runtime, order.id, timeout_s=60) == "failed"
    record = runs.json("runs", "show", order.id)
    assert record["error"].startswith(STARTED_UNRECORDED)
    assert REFUSAL in record["error"]
    assert steps(record)[0] == ("start", "failed")
    assert (record["messages"], record["cards"]) == ([], [])  # the pipeline never ran


def test_a_run_that_cannot_start_and_cannot_record_why_is_still_recorded_failed(
    runs: Runs,
) -> None:
    # A heartbeat the brain no longer has: the run cannot start, and the database refuses
    # the row that says so; the second write, saying only that, is recorded.
    order = RunOrder(
        id=f"gone-{secrets.token_hex(4)}",
        kind="heartbeat",
        entity_id="gone",
        at=datetime.now(UTC).isoformat(),
        model="none",
    )
    when = f"NEW.run_id = '{order.id}' AND NEW.detail NOT LIKE '%could not be recorded%'"
    with refusing(runs.engine.store.engine, "keel_run_steps", ("INSERT",), when):
        outcome = execute(order)
    assert (outcome["id"], outcome["status"]) == (order.id, "failed")
    assert outcome["error"].startswith(STARTED_UNRECORDED)
    record = runs.json("runs", "show", order.id)
    assert (record["status"], record["error"]) == ("failed", outcome["error"])
    assert steps(record) == [("start", "failed")]


def test_a_model_whose_key_is_gone_fails_the_run_and_says_which(
    runs: Runs, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Checked when the run was asked for; gone by the time its first request is sent.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    order = order_for(runs.engine.brain, DAILY, model="openai:gpt-4o-mini")
    start(order)
    assert wait(runs.runtime, order.id, timeout_s=60) == "failed"
    record = runs.json("runs", "show", order.id)
    assert "OPENAI_API_KEY" in record["error"]
    assert record["refused"] is False
    assert steps(record) == [("start", "done"), ("prepare", "done"), ("finish", "failed")]
    assert record["messages"] == []


def test_a_providers_error_fails_the_run_naming_its_type(runs: Runs) -> None:
    call = {"name": "send_message", "arguments": {"text": "Rivers are high."}}
    model = runs.script("short", [{"tool_calls": [call]}])  # no step for the second request
    order = order_for(runs.engine.brain, DAILY, model=model)
    start(order)
    assert wait(runs.runtime, order.id, timeout_s=60) == "failed"
    record = runs.json("runs", "show", order.id)
    assert record["error"].startswith("BadRequestError: ")
    assert "request 2 asked for a model step, but only 1 was scripted" in record["error"]
    assert [m["text"] for m in record["messages"]] == ["Rivers are high."]


def test_dbos_own_errors_are_left_to_dbos(runs: Runs, monkeypatch: pytest.MonkeyPatch) -> None:
    def cancelled(*_args: object, **_kwargs: object) -> None:
        raise DBOSException("the workflow was cancelled")

    monkeypatch.setattr(workflows, "agent_turn", cancelled)
    order = order_for(runs.engine.brain, DAILY, model=runs.script("never", [{"text": "x"}]))
    with pytest.raises(DBOSException, match="cancelled"):
        execute(order)
    # Not recorded failed: DBOS recovers or cancels the workflow, and its run with it.
    with runs.engine.store.transaction() as tx:
        assert tx.run(order.id) is None
        assert tx.steps(order.id) == ()
