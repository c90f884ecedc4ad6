"""The durable workflows: a run (`keel.run`) and a heartbeat's tick (`keel.heartbeat`).

A run's workflow takes its steps in one fixed order, which a replay follows exactly:

1. `start` — decide the plan (`keel.runs.plan`) and record the run as running; a run that
   cannot start is recorded as failed, with the reason — so is one whose start the
   database refuses to record (`unrecorded`): whoever asked for it was told of it;
2. the work — a heartbeat or hook: one agent turn (`keel.runs.agent`); a scenario: its
   pipeline (`keel.runs.pipelines`), or one agent turn when it has none;
3. `finish` — the run is done, or failed with the error.

Each step writes its own row in Keel's tables in the transaction of its effect
(`keel.runs.journal`), and a replay takes a finished step's result from that row. The
steps of the work are DBOS steps as well (journaled by DBOS too). `start` and `finish` are
Keel's alone, as DBOS's own transactions keep their checkpoint in the application's
database: each looks for its row in the transaction that writes it, which is all a DBOS
step would add, at the cost of two more commits per run. `start` looks for its row before
it plans (a replay keeps the plan its row holds, and a hook's gate is brain code that
must not run again), and writes its rows in the run's next transaction: for a turn, the
turn's own (`keel.runs.journal.Starting`), so a run's start costs no commit of its own.

A tick's workflow id is DBOS's (`sched-hb:<id>-<time>`): a second worker enqueuing the same
tick finds the id taken, so each tick runs once however many workers run the schedule.

`register` hands both to DBOS, once per process, before DBOS launches (the runs facade,
`keel.runs.service.launch`, calls it): by name, so the journal matches whatever module
layout a later Keel has. Importing this module registers nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from dbos import DBOS
from dbos._error import DBOSException

from keel.errors import KeelError, Refused, StoreError
from keel.log import logger
from keel.runs.agent import RunFailed, agent_turn, taken
from keel.runs.app import current
from keel.runs.context import RunContext
from keel.runs.journal import (
    Done,
    Starting,
    StepTaken,
    finished,
    first,
    looked,
    nothing,
    now,
    once,
    record_steps,
    step_row,
)
from keel.runs.notice import outcome_notice
from keel.runs.orders import first_taken
from keel.runs.plan import plan_run
from keel.runs.values import RunOrder, RunPlan
from keel.store import Tx
from keel.store.run_values import RunRow

LOG = logger("runs")
RUN = "keel.run"
HEARTBEAT = "keel.heartbeat"


@dataclass(frozen=True, slots=True, kw_only=True)
class Workflows:
    """The workflows as DBOS registered them: what to start, what to schedule."""

    run: Callable[[dict[str, Any]], dict[str, Any]]
    heartbeat: Callable[[datetime, Any], None]


_registering = threading.Lock()
_registered: Workflows | None = None


def register() -> Workflows:
    """Register the workflows with DBOS (once per process: DBOS's registry outlives
    `DBOS.destroy`); what it registered."""
    global _registered
    with _registering:
        if _registered is None:
            _registered = Workflows(
                run=DBOS.workflow(name=RUN)(run_workflow),
                heartbeat=DBOS.workflow(name=HEARTBEAT)(heartbeat_workflow),
            )
        return _registered


def run_workflow(order: dict[str, Any]) -> dict[str, Any]:
    """Run one run to its end (or until it waits for a person)."""
    return execute(RunOrder.from_json(order))


def heartbeat_workflow(scheduled_at: datetime, context: Any) -> None:
    """One tick of a heartbeat's schedule: a run of it, with the tick's workflow id."""
    order = RunOrder(
        id=DBOS.workflow_id or f"tick:{context['heartbeat']}:{scheduled_at.isoformat()}",
        kind="heartbeat",
        entity_id=context["heartbeat"],
        at=scheduled_at.astimezone(UTC).isoformat(),
        model=context.get("model"),
    )
    execute(order)


def execute(order: RunOrder) -> dict[str, Any]:
    """The workflow's body; see the module docstring."""
    runtime = current()
    with runtime.working(order.id):
        return _execute(RunContext(runtime=runtime, order=order))


def _execute(context: RunContext) -> dict[str, Any]:
    order = context.order
    started = start(context)
    if isinstance(started, Failure):
        return outcome(context, started)
    context.plan = started
    failure: Failure | None = None
    result: Any = None
    try:
        result = work(context)
    except RunFailed as exc:
        failure = Failure(error=str(exc), refused=exc.refused)
    except KeelError as exc:
        failure = Failure(error=str(exc), refused=isinstance(exc, Refused))
    except DBOSException:
        raise  # DBOS's own (a lost ownership, a cancellation): its to handle
    except Exception as exc:  # a provider's error, or a bug: the run fails and says which
        LOG.exception("run %s failed", order.id)
        failure = Failure(error=f"{type(exc).__name__}: {exc}")
    finish(context, failure, result)
    return outcome(context, failure)


@dataclass(frozen=True, slots=True, kw_only=True)
class Failure:
    """Why a run failed; `refused` when Keel refused what it did (a send, a binding)."""

    error: str
    refused: bool = False


def start(context: RunContext) -> RunPlan | Failure:
    """Step `start`: the plan, and the run's row; why not, when the run cannot start.

    It looks for its row first: a replay takes the plan that stands (a hook's plan runs its
    gate, which must not run again; any other plan would read a brain edited since). The
    first execution of a run whose id this process made has nothing to find and does not
    look; a twin that started meanwhile elsewhere is caught when the rows are written. A
    fresh plan's rows are written by the run's next transaction (`context.starting`),
    which for a turn is the transaction of the turn itself: one commit fewer per run.
    """
    order = context.order
    seq = context.next_seq()
    runtime = context.runtime
    store = runtime.engine.store
    # An id this process made is new: no execution has a row to find yet.
    found = None if first_taken(order.id) else looked(store, order.id, seq)
    if found is not None and found.status == "done":
        return _planned(found.output)  # a replay: the run started before
    context.fresh = found is None
    started = now()
    try:
        decided: RunPlan | Failure = plan_run(runtime, order)
    except KeelError as exc:
        decided = Failure(error=str(exc), refused=isinstance(exc, Refused))
    if isinstance(decided, RunPlan):
        done = Done(
            output={"plan": decided.to_json()}, detail=f"{decided.ref.key} as {decided.role}"
        )
        context.starting = Starting(
            run=_run_row(context, decided), step=step_row(order.id, seq, "start", done, started)
        )
        return decided
    failure = decided

    def write(tx: Tx, _: None) -> Done:
        tx.record_run(_run_row(context, failure))
        output = {"failed": failure.error, "refused": failure.refused}
        return Done(output=output, detail=f"cannot start: {failure.error}", status="failed")

    # A run that cannot start says so at once, in a transaction of its own.
    try:
        data, _ = first(store, order.id, seq, "start", nothing, write)
    except StoreError as exc:
        data = unrecorded(context, seq, exc)
    return _planned(data)


def _run_row(context: RunContext, decided: RunPlan | Failure) -> RunRow:
    """The run's row as step `start` writes it: running with its plan, or failed."""
    order = context.order
    plan = decided if isinstance(decided, RunPlan) else None
    conversation = plan.conversation if plan is not None else None
    return RunRow(
        id=order.id,
        kind=order.kind,
        entity_id=order.entity_id,
        status="running" if plan is not None else "failed",
        created_at=datetime.fromisoformat(order.at),
        updated_at=now(),
        entity=plan.entity if plan is not None else order.entity,
        role=plan.role if plan is not None else None,
        reach=plan.reach if plan is not None else (),
        bot=conversation.bot if conversation is not None else order.bot,
        chat=conversation.chat if conversation is not None else order.chat,
        thread=conversation.thread if conversation is not None else order.thread,
        pin=_pin_label(plan),
        model=plan.model if plan is not None else order.model,
        executor=context.runtime.executor,
        error=decided.error if isinstance(decided, Failure) else None,
        order=order.to_json(),
    )


def record_start(context: RunContext) -> Failure | None:
    """Write step `start`'s rows, when they wait for the run's next transaction, in one of
    their own: for work that does not begin with a turn (a pipeline), or a run that failed
    before its turn's transaction committed. Why the run cannot go on, when the database
    refused them (the run is then recorded failed, `unrecorded`)."""
    starting = context.starting
    if starting is None:
        return None
    context.starting = None
    store = context.store
    try:
        with store.transaction() as tx:
            tx.record_run(starting.run)
            record_steps(tx, (starting.step,))
    except StepTaken:
        taken(context, starting)  # a twin execution started the run first
    except StoreError as exc:
        data = unrecorded(context, starting.step.seq, exc)
        return Failure(error=data["failed"])
    return None


def _planned(data: dict[str, Any]) -> RunPlan | Failure:
    """What step `start` left: the plan, or why the run could not start."""
    if "plan" not in data:
        return Failure(error=data["failed"], refused=data.get("refused", False))
    return RunPlan.from_json(data["plan"])


def unrecorded(context: RunContext, seq: int, exc: StoreError) -> dict[str, Any]:
    """Step `start` when the database refused the run's start (its row, its step): the run
    fails and says why, in a write of its status alone — a run left pending would wait
    for a start that never comes. When even that is refused, the error goes up to DBOS."""
    order = context.order
    error = f"its start could not be recorded: {exc}"
    LOG.error("run %s: %s", order.id, error)

    def write(tx: Tx, _: None) -> Done:
        at = now()
        executor = context.runtime.executor
        if not tx.set_run_status(order.id, "failed", at, error=error, executor=executor):
            # A schedule's tick is asked for by no one: it has no row until its start.
            tx.record_run(
                RunRow(
                    id=order.id,
                    kind=order.kind,
                    entity_id=order.entity_id,
                    status="failed",
                    created_at=datetime.fromisoformat(order.at),
                    updated_at=at,
                    executor=executor,
                    error=error,
                    order=order.to_json(),
                )
            )
        output = {"failed": error, "refused": False}
        return Done(output=output, detail=f"cannot start: {error}", status="failed")

    result: dict[str, Any] = once(context.store, order.id, seq, "start", nothing, write)
    return result


def work(context: RunContext) -> Any:
    """The run's work: its pipeline (what it returned), or one agent turn (None)."""
    plan = context.planned
    if plan.ref.kind == "scenario":
        from keel.runs.pipelines import has_pipeline, run_scenario

        if has_pipeline(context):
            # A pipeline's steps write in transactions of their own: the start goes first.
            failure = record_start(context)
            if failure is not None:
                raise RunFailed(failure.error)
            plan = context.planned  # a twin's, when it started first
            if has_pipeline(context):
                return run_scenario(context)
    from keel.link.values import TurnRequest

    request = TurnRequest(
        conversation=plan.conversation,
        now=datetime.now(UTC),
        run=plan.ref,
        reach=plan.reach,
        input=context.order.input or _event_input(context),
    )
    if plan.model == "none":
        from keel.runs.agent import prepare_only

        prepare_only(context, request)
        return None
    agent_turn(context, request)
    return None


def finish(context: RunContext, failure: Failure | None, result: Any = None) -> None:
    """Step `finish`: the run is done (with what its pipeline returned), or failed and
    why."""
    seq = context.next_seq()
    order = context.order
    error = failure.error if failure is not None else None
    refused = failure is not None and failure.refused

    if context.finished:
        return  # the work's last transaction finished the run (a run that asks no model)
    if record_start(context) is not None:
        return  # its start could not be recorded: the run is recorded failed, and why

    def write(tx: Tx, _: None) -> Done:
        ended = tx.step(order.id, seq)
        if ended is not None and ended.status == "failed":
            # A failed finish is as final as a done one (the row guards only against done).
            raise StepTaken(f"step {seq} of run {order.id} is finished already")
        outcome_notice(tx, context, seq, error=error, result=result)
        return finished(
            tx,
            run_id=order.id,
            executor=context.runtime.executor,
            error=error,
            refused=refused,
            result=result,
        )

    # Not a DBOS step: the write checks for its own row in its transaction, so a replay
    # that reaches it again finds the run finished and writes nothing (see the docstring).
    once(context.store, order.id, seq, "finish", nothing, write)


def outcome(context: RunContext, failure: Failure | None) -> dict[str, Any]:
    return {
        "id": context.order.id,
        "status": "failed" if failure is not None else "done",
        "error": None if failure is None else failure.error,
        "refused": failure is not None and failure.refused,
    }


def _pin_label(plan: RunPlan | None) -> str | None:
    if plan is None or plan.pin is None:
        return None
    from keel.runs.commits import Pin

    return Pin.from_json(plan.pin).label


def _event_input(context: RunContext) -> str:
    """A hook's turn reads its event: the prompt is the hook's, the payload follows."""
    order = context.order
    if order.event is None:
        return ""
    import json

    entity = context.brain.entity(order.kind, order.entity_id)
    prompt = entity.prompt if entity is not None else ""
    payload = json.dumps(dict(order.payload), ensure_ascii=False, indent=2)
    return f"{prompt}\n\nEvent {order.event}:\n{payload}".strip()
