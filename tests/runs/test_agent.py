"""A run's agent turn as durable steps (`keel.runs.agent`): an execution that finds the
run's steps recorded reads them back and does nothing again — a replay, a twin execution
that started the run first, a tool call whose effect committed but whose answer was lost —
and the final answer a run may not send fails it, refused, before any card is asked.

Executions called here directly, outside DBOS, run their steps in this thread, as a
second worker's would.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Any

import pytest

from keel.assemble.values import ToolCall, ToolResult
from keel.link.values import RunRef
from keel.runs import orders, workflows
from keel.runs.agent import LOST, RunSteps
from keel.runs.codec import result_json
from keel.runs.context import RunContext
from keel.runs.journal import now, recorded, write_step
from keel.runs.service import order_for, start, wait
from keel.runs.values import RunOrder
from keel.runs.workflows import execute
from keel.store.run_values import StepRow, StepStatus
from keel.store.store import Store
from keel.turn.prepared import PreparedTurn
from tests.runs.brains import RUNS_BRAIN
from tests.runs.conftest import Runs, runs_of

FILES = {
    **RUNS_BRAIN,
    # A role that asks before it sends, beside a reply context keyed by film.
    "features/film/careful.heartbeat.md": (
        '---\ndescription: A careful film post.\nschedule: "0 20 * * *"\nagent: guarded\n'
        "bot: nova\nchat: tg:user:1\n---\nPost tonight's film.\n"
    ),
}
runs = runs_of(FILES, "agent")

DAILY = RunRef(kind="heartbeat", id="daily")
POST = {"name": "send_message", "arguments": {"text": "Rivers are high."}}


def code_calls(runs: Runs) -> int:
    log = runs.brain / "code-calls.log"
    return len(log.read_text(encoding="utf-8").splitlines()) if log.exists() else 0


def show(runs: Runs, run_id: str) -> dict[str, Any]:
    record: dict[str, Any] = runs.json("runs", "show", run_id)
    return record


def a_finished_run(runs: Runs) -> RunOrder:
    """A run of `daily` that posted with `send_message` and ended, as a worker ran it."""
    model = runs.script(f"post-{secrets.token_hex(4)}", [{"tool_calls": [POST]}, {"text": ""}])
    order = order_for(runs.engine.brain, DAILY, model=model)
    start(order)
    assert wait(runs.runtime, order.id, timeout_s=60) == "done"
    return order


def test_executing_a_finished_run_again_reads_each_step_back_and_does_nothing_again(
    runs: Runs,
) -> None:
    order = a_finished_run(runs)
    before, calls = show(runs, order.id), code_calls(runs)
    assert [s["name"] for s in before["steps"]] == [
        "start", "prepare", "request", "tool", "request", "finish",
    ]  # fmt: skip
    outcome = execute(order)
    assert (outcome["status"], outcome["error"]) == ("done", None)
    after = show(runs, order.id)
    assert after["steps"] == before["steps"]
    assert after["messages"] == before["messages"]
    assert [m["text"] for m in after["messages"]] == ["Rivers are high."]
    assert after["usage"] == before["usage"]
    assert code_calls(runs) == calls  # its turn was read back, not prepared again


def test_an_execution_that_looked_before_its_twin_started_goes_on_with_the_twins_run(
    runs: Runs, monkeypatch: pytest.MonkeyPatch
) -> None:
    order = a_finished_run(runs)
    before = show(runs, order.id)
    # This execution looked for the run's start before its twin recorded it, so it plans
    # afresh; its turn's commit finds the twin's rows, and it goes on with those.
    monkeypatch.setattr(workflows, "looked", lambda *_args: None)
    outcome = execute(order)
    assert outcome["status"] == "done"
    after = show(runs, order.id)
    assert after["steps"] == before["steps"]
    assert after["messages"] == before["messages"]
    assert len(after["messages"]) == 1


def test_a_run_this_process_made_skips_the_look_once_and_still_meets_a_twins_rows(
    runs: Runs, monkeypatch: pytest.MonkeyPatch
) -> None:
    order = a_finished_run(runs)  # finished by a worker, as a twin elsewhere would
    assert not orders.first_taken(order.id)  # its first execution took the id
    before = show(runs, order.id)
    # Made here again (a twin elsewhere ran it meanwhile): this execution does not look.
    monkeypatch.setattr(orders, "_minted", {order.id})
    looks: list[str] = []
    monkeypatch.setattr(workflows, "looked", lambda *_args: looks.append("look"))
    outcome = execute(order)
    assert (outcome["status"], looks) == ("done", [])
    assert show(runs, order.id)["steps"] == before["steps"]
    execute(order)  # the id is taken now: a second execution looks
    assert looks == ["look"]


def test_a_final_answer_the_origin_rules_refuse_fails_the_run_before_any_card(
    runs: Runs,
) -> None:
    model = runs.script("careful", [{"text": "Tonight: Heat"}])
    record = runs.json("run", "heartbeat:careful", "--model", model, exit_code=3)
    assert (record["status"], record["refused"]) == ("failed", True)
    assert "the message would lose its origin" in record["error"]
    assert (record["cards"], record["messages"]) == ([], [])


def test_a_refused_call_whose_text_is_not_text_says_only_why(runs: Runs) -> None:
    odd = {"name": "send_message", "arguments": {"text": 42}}
    model = runs.script("odd-text", [{"tool_calls": [odd]}, {"text": ""}])
    record = runs.json("run", "heartbeat:daily", "--model", model)
    [tool] = [s for s in record["steps"] if s["name"] == "tool"]
    assert tool["status"] == "failed"
    assert tool["detail"].startswith("send_message ")
    assert "not sent" not in tool["detail"]
    assert record["messages"] == []


# -- one tool step, against the rows an earlier or a twin execution left ------------------

CALL = ToolCall(id="call_1_0", name="send_message", arguments={"text": "Rivers are high."})
PREPARED = PreparedTurn(turn=1, role="news", attached=(), stubs=(), refused=(), catalog=(), pins={})


def a_context(runs: Runs, *, fresh: bool) -> RunContext:
    order = RunOrder(
        id=f"steps-{secrets.token_hex(4)}",
        kind="heartbeat",
        entity_id="daily",
        at=datetime.now(UTC).isoformat(),
    )
    return RunContext(runtime=runs.runtime, order=order, fresh=fresh)


def tool_row(run_id: str, status: StepStatus, output: Any = None) -> StepRow:
    finished = None if status == "running" else now()
    return StepRow(
        run_id=run_id, seq=1, name="tool", status=status, started_at=now(), finished_at=finished,
        output=output,
    )  # fmt: skip


def never(_store: Store) -> ToolResult:
    raise AssertionError("the call was made again")


def test_a_call_whose_effect_committed_but_whose_answer_was_lost_is_not_made_again(
    runs: Runs,
) -> None:
    context = a_context(runs, fresh=False)
    write_step(runs.engine.store, tool_row(context.run_id, "running"))
    result = RunSteps(context).tool(PREPARED, CALL, never)
    assert result == ToolResult(call_id=CALL.id, name=CALL.name, content=LOST)


def test_a_call_an_earlier_execution_answered_is_answered_from_its_row(runs: Runs) -> None:
    context = a_context(runs, fresh=False)
    answer = ToolResult(call_id=CALL.id, name=CALL.name, content="sent m-1")
    write_step(runs.engine.store, tool_row(context.run_id, "done", result_json(answer)))
    assert RunSteps(context).tool(PREPARED, CALL, never) == answer


def test_a_call_a_twin_answered_first_rolls_back_this_ones_effect(runs: Runs) -> None:
    context = a_context(runs, fresh=True)  # it skips the look, and meets the twin's row
    store = runs.engine.store
    answer = ToolResult(call_id=CALL.id, name=CALL.name, content="the twin's answer")
    write_step(store, tool_row(context.run_id, "done", result_json(answer)))
    effect = f"effect-{secrets.token_hex(4)}"

    def call(marking: Store) -> ToolResult:
        with marking.transaction() as tx:
            tx.record_step(tool_row(effect, "done", "what this execution did"))
        raise AssertionError("the twin's row did not stop the commit")

    assert RunSteps(context).tool(PREPARED, CALL, call) == answer
    assert recorded(store, effect, 1) is None  # rolled back with the step
