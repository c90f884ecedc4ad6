"""A run's agent turn: Keel's agent loop, with each piece of its work a durable step.

`RunSteps` is the loop's `TurnSteps` for a run (see `keel.runtime.loop`):

- `prepare` — the turn pipeline (`keel.turn.prepare`: links, views, brain code, assembly,
  fit) runs in a transaction that also writes the step's row, with what it assembled: a
  replay never calls brain code or reads views again, it reads the assembled input back;
- `request` — each model request; the provider's usage is recorded with the step;
- `tool` — each tool call, its message id (for `send_message`) named after the step; a
  tool's effect commits with a row saying so, so a call whose answer was lost in a crash is
  not made again;
- `answer` — the model's final text is sent to the run's chat with the run's origin,
  unless the agent already sent what it had to say (`send_message`, `file_send`,
  `voice_send`). A send the origin
  rules refuse fails the run with the reason. When the agent opened a forum topic in the
  run's chat (`topic_open`), the answer goes into that topic: its thread id is the step's
  own (`topic_thread`), the same on every replay.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from keel.assemble.values import Assembly, ModelStep, ToolCall, ToolResult
from keel.brain.specs import ReachEntry
from keel.errors import KeelError, Refused
from keel.link.values import Conversation, TurnRequest
from keel.runs.approvals import approvals, held_send
from keel.runs.codec import (
    assembly_json,
    assembly_of,
    result_json,
    result_of,
    step_json,
    step_of,
)
from keel.runs.context import RunContext, RunModel
from keel.runs.journal import (
    Done,
    Marking,
    Starting,
    StepTaken,
    durable,
    finished,
    nothing,
    now,
    once,
    record_steps,
    recorded,
    step_row,
    write_step,
)
from keel.runs.notice import outcome_notice
from keel.runs.values import RunPlan
from keel.runtime.loop import TurnOutcome, preparation, run_turn
from keel.store import Tx
from keel.store.run_values import StepRow, StepStatus, UsageRow
from keel.store.store import Store
from keel.tools.file_send import FILE_SEND, VOICE_SEND
from keel.tools.send import origin_of, record_send
from keel.tools.send_message import SEND_MESSAGE, message_id_for
from keel.tools.topic_open import TOPIC_OPEN, topic_thread
from keel.turn.prepare import Preparation, assembled, consult, prepare_in
from keel.turn.prepared import PreparedTurn, prepared_json

# The tools whose call is the agent speaking: its closing text is then not sent as well.
_SENDS = (SEND_MESSAGE.name, FILE_SEND.name, VOICE_SEND.name)

LOST = (
    "this call ran before the run was interrupted, and its answer was lost — check what it "
    "did before calling it again"
)


class RunFailed(KeelError):
    """A run that cannot go on; its record says why (`refused`: Keel refused what it did)."""

    def __init__(self, message: str, *, refused: bool = False) -> None:
        super().__init__(message)
        self.refused = refused


def agent_turn(
    context: RunContext, request: TurnRequest, *, send_answer: bool = True
) -> TurnOutcome:
    """Run one agent turn of the run, each piece a durable step."""
    engine = context.engine
    brain = engine.brain
    steps = RunSteps(context, send_answer=send_answer, reach=request.reach)
    return run_turn(
        brain,
        context.store,
        request,
        RunModel(context),
        engine.counter,
        engine.tools,
        code=engine.code_for(brain),
        steps=steps,
        approve=approvals(context, engine.tools, request),
    )


def prepare_only(context: RunContext, request: TurnRequest) -> None:
    """Prepare and record the run's turn, and ask no model (`--model none`)."""
    engine = context.engine
    brain = engine.brain
    steps = RunSteps(context)
    steps.prepare(
        preparation(brain, request, engine.counter, engine.tools, code=engine.code_for(brain)),
        finishing=True,
    )


class RunSteps:
    """The loop's `TurnSteps` for a run; see the module docstring."""

    __slots__ = ("_context", "_reach", "_send_answer", "_sent", "_topic")

    def __init__(
        self,
        context: RunContext,
        *,
        send_answer: bool = True,
        reach: tuple[ReachEntry, ...] | None = None,
    ) -> None:
        self._context = context
        self._send_answer = send_answer
        self._reach = reach  # the turn's reach, when it is not the run's (a pipeline step)
        self._sent = 0  # messages the agent sent itself this turn
        self._topic: Conversation | None = None  # the topic it opened in the run's chat

    def prepare(
        self, preparation: Preparation, *, finishing: bool = False
    ) -> tuple[PreparedTurn, Assembly]:
        """Step `prepare`; `finishing`: nothing follows it, so its transaction also writes
        the run's `finish` step (one commit fewer for a run that asks no model)."""
        context = self._context
        seq = context.next_seq()
        store = context.store

        seen: dict[str, Any] = {}

        def body() -> None:
            found = None if context.fresh else recorded(store, context.run_id, seq)
            if found is not None and found.status == "done":
                seen["output"] = found.output
                return None
            started = now()
            starting = context.starting
            consulted = consult(preparation, store)
            try:
                # The turn and its step's row commit together, or neither does.
                with store.transaction() as tx:
                    prepared, assembly = assembled(prepare_in(tx, consulted))
                    turn = prepared_json(prepared, assembly, preparation.request.conversation)
                    output = {"turn": turn, "assembly": assembly_json(assembly)}
                    row = StepRow(
                        run_id=context.run_id,
                        seq=seq,
                        name="prepare",
                        status="done",
                        started_at=started,
                        finished_at=now(),
                        turn_id=prepared.id,
                        detail=f"turn {prepared.turn} as {prepared.role}",
                        output=output,
                    )
                    # The run's start, when it waits for this transaction, and its finish,
                    # when nothing follows: every row in one statement.
                    rows = [row] if starting is None else [starting.step, row]
                    if starting is not None and not finishing:
                        tx.record_run(starting.run)
                    if finishing:
                        rows.append(_finish_in(tx, context, seq + 1, starting))
                    record_steps(tx, rows)
                    seen["output"] = output
                    if finishing:  # nobody reads it back: no need to decode the row's
                        seen["assembly"] = assembly
                context.starting = None
                context.finished = finishing
            except StepTaken:
                # The twin's turn stands; read it below (and its plan, when it started first).
                if starting is not None:
                    context.starting = None
                    taken(context, starting)
            return None

        # DBOS journals that the step finished, not what it made: the assembly is in the
        # step's row already, and encoding it twice cost more than the rest of the step.
        durable("prepare", body)
        data = seen.get("output")
        if data is None:  # a replay: the step ran in an earlier execution
            done = recorded(store, context.run_id, seq)
            if done is None or done.status != "done":
                raise RunFailed(f"step {seq} (prepare) of run {context.run_id} left no row")
            data = done.output
        turn = data["turn"]
        prepared = PreparedTurn(
            turn=turn["turn"],
            role=turn["role"],
            attached=(),
            stubs=(),
            refused=(),
            catalog=(),
            pins={},
            log=tuple(turn["warnings"]),
            id=turn["id"],
        )
        # A turn the run goes on with reads its assembly as a replay would: from the row.
        made = seen.get("assembly")
        return prepared, made if made is not None else assembly_of(data["assembly"])

    def request(
        self, prepared: PreparedTurn, number: int, run: Callable[[], ModelStep]
    ) -> ModelStep:
        context = self._context
        seq = context.next_seq()
        context.requests += 1

        def write(tx: Tx, step: ModelStep) -> Done:
            if step.usage is not None:
                tx.record_usage(
                    UsageRow(
                        run_id=context.run_id,
                        step=f"{seq}",
                        turn_id=prepared.id,
                        model=context.model_spec,
                        usage=step.usage,
                        at=now(),
                    )
                )
            calls = ", ".join(c.name for c in step.calls)
            detail = f"request {number}" + (f": calls {calls}" if calls else "")
            return Done(output=step_json(step), detail=detail, turn_id=prepared.id)

        data = durable(
            "request",
            lambda: once(
                context.store, context.run_id, seq, "request", run, write, fresh=context.fresh
            ),
        )
        return step_of(data)

    def tool(
        self, prepared: PreparedTurn, call: ToolCall, run: Callable[[Store], ToolResult]
    ) -> ToolResult:
        context = self._context
        seq = context.next_seq()
        store = context.store

        def body() -> Any:
            found = None if context.fresh else recorded(store, context.run_id, seq)
            if found is not None and found.status in ("done", "failed"):
                return found.output
            if found is not None:  # its effect committed; its answer did not
                return result_json(ToolResult(call_id=call.id, name=call.name, content=LOST))
            started = now()

            def row(status: StepStatus, output: Any = None, detail: str = call.name) -> StepRow:
                return StepRow(
                    run_id=context.run_id,
                    seq=seq,
                    name="tool",
                    status=status,
                    started_at=started,
                    finished_at=None if status == "running" else now(),
                    turn_id=prepared.id,
                    detail=detail,
                    output=output,
                )

            try:
                with message_id_for(context.message_id(seq)):
                    result = run(Marking(store, lambda _tx: row("running")))
            except StepTaken:  # a twin execution made the call: its answer stands
                taken = recorded(store, context.run_id, seq)
                return taken.output if taken is not None else None
            output = result_json(result)
            if result.is_error:  # refused: a failed step, even after a person approved it
                write_step(store, row("failed", output, _refused_detail(call, result)))
            else:
                write_step(store, row("done", output))
            return output

        result = result_of(durable("tool", body))
        if call.name in _SENDS and not result.is_error:
            self._sent += 1
        if call.name == TOPIC_OPEN.name and not result.is_error:
            here = context.planned.conversation
            if call.arguments.get("chat") in (None, "", here.chat):
                thread = topic_thread(context.message_id(seq))
                self._topic = Conversation(bot=here.bot, chat=here.chat, thread=thread)
        return result

    def answer(
        self,
        prepared: PreparedTurn,
        text: str,
        run: Callable[[Store], None],  # noqa: ARG002 - a run's answer is sent, not logged
    ) -> None:
        if not self._send_answer or self._sent:
            return
        context = self._context
        where = self._topic or context.planned.conversation
        try:
            verdict = held_send(context, text, tool="answer", conversation=where, reach=self._reach)
        except Refused as exc:
            raise RunFailed(str(exc), refused=True) from exc
        if verdict is not None and not verdict.approved:
            unsent(context, text, verdict.said, turn_id=prepared.id)
            return
        send(context, text, conversation=where, turn_id=prepared.id, reach=self._reach)


def _refused_detail(call: ToolCall, result: ToolResult) -> str:
    """A refused call's step detail: why, and for a send, what was not sent."""
    detail = f"{call.name} {result.content}"
    text = call.arguments.get("text") if call.name == SEND_MESSAGE.name else None
    if isinstance(text, str):
        detail += f" — not sent: {text}"
    return detail


def unsent(context: RunContext, text: str, said: str, *, turn_id: int | None = None) -> None:
    """Record, as a durable step, a send its card did not let out: what, and why."""
    seq = context.next_seq()

    def write(_tx: Tx, _: None) -> Done:
        output = {"unsent": text, "said": said}
        return Done(output=output, detail=f"not sent ({said}): {text}", turn_id=turn_id)

    durable("unsent", lambda: once(context.store, context.run_id, seq, "unsent", nothing, write))


def send(
    context: RunContext,
    text: str,
    *,
    conversation: Conversation | None = None,
    about_entity: str | None = None,
    about_context: str | None = None,
    turn_id: int | None = None,
    reach: tuple[ReachEntry, ...] | None = None,
) -> dict[str, Any]:
    """Send a message with the run's origin, as a durable step; `RunFailed` when the origin
    rules refuse it. Returns the message as `keel messages --json` shows it."""
    plan = context.planned
    seq = context.next_seq()
    message_id = context.message_id(seq)
    where = conversation or plan.conversation

    def write(tx: Tx, _: None) -> Done:
        try:
            origin = origin_of(
                context.brain,
                conversation=where,
                message_id=message_id,
                sent_at=datetime.now(UTC),
                run=plan.ref,
                reach=plan.reach if reach is None else reach,
                about_entity=about_entity,
                about_context=about_context,
            )
            record_send(tx, context.brain, origin, text)
        except Refused as exc:
            return Done(output={"refused": str(exc)}, detail=f"refused: {exc}", status="failed")
        message = {
            "chat": where.chat,
            "bot": where.bot,
            "thread": where.thread,
            "message_id": message_id,
            "text": text,
            "at": origin.sent_at.isoformat(),
            "origin": {
                "feature": origin.feature,
                "run": origin.run,
                "reach": [{"context": r.context, "entity": r.entity} for r in origin.reach],
                "pending_card": False,
            },
        }
        return Done(output={"message": message}, detail=f"sent {message_id}", turn_id=turn_id)

    data = durable("send", lambda: once(context.store, context.run_id, seq, "send", nothing, write))
    if "refused" in data:
        raise RunFailed(data["refused"], refused=True)
    message: dict[str, Any] = data["message"]
    return message


def _finish_in(tx: Tx, context: RunContext, seq: int, starting: Starting | None) -> StepRow:
    """Step `finish` (number `seq`) in `tx`: the run is done; the step's row to write."""
    started = now()
    executor = context.runtime.executor
    outcome_notice(tx, context, seq, error=None)
    done = finished(tx, run_id=context.run_id, executor=executor, starting=starting)
    return step_row(context.run_id, seq, "finish", done, started)


def taken(context: RunContext, starting: Starting) -> None:
    """A twin execution recorded the run's start before this one: its plan stands."""
    seq = starting.step.seq
    found = recorded(context.store, context.run_id, seq)
    if found is None:  # recorded done, then gone: only a person deleting rows does that
        raise StepTaken(f"step {seq} of run {context.run_id} left no row")
    data = found.output
    if "plan" not in data:
        raise RunFailed(data["failed"], refused=data.get("refused", False))
    context.plan = RunPlan.from_json(data["plan"])
    context.fresh = False
