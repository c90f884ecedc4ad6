"""One turn of an agent, end to end: prepare, assemble, ask the model, run its tool calls.

Before the first request the turn must fit (checked inside its preparation, which records
nothing when it does not). Before every later request it is checked again with the turn's
transcript, since tool results grow it. Each tool call is checked against the registry
when it executes — its name, the role's capability, its arguments against the schema —
and anything refused comes back to the model as an error result with the reason: once the
preparation is committed, a bad call costs only itself, never the turn.

Two hooks let a durable run take the same loop:

- `TurnSteps` decides how each piece of work runs: the preparation, each model request,
  each tool call and the recording of the answer. `DirectSteps` (the default) runs each at
  once; a run (`keel.runs`) runs each as a journaled step, so a replay after a crash reads
  what a finished piece produced instead of doing it again. The preparation is handed as
  a value (`keel.turn.prepare.Preparation`), which every step prepares through the one
  turn pipeline; other work with an effect on Keel's tables is handed the `Store` to
  write through, so a run can add its own record to the same transaction.
- `Approve` is asked before each call: None lets it run; a `Verdict` says a person
  approved it (the call runs, and its result says so) or not (it does not run). Outside a
  run nobody can wait for a person, so `refuse_unapproved` denies every call the brain's
  `approvals:` policy holds for one.

The loop itself is one generator (`_flow`) that yields each model request it needs and is
sent the model's step back; `run_turn` answers it by calling the model, `arun_turn` by
awaiting an async client. So the async turn is the same loop, not a copy: its model request
is awaited on the event loop (no thread per request), while the loop's other work —
preparation, tool calls, recording, all SQLite or PostgreSQL I/O through the sync store —
runs in a worker thread (`asyncio.to_thread`), so a bot's event loop never blocks on it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from keel.assemble.fit import check_request
from keel.assemble.values import Assembly, ModelStep, ToolCall, ToolResult, Transcript
from keel.brain.knobs import approval_required
from keel.brain.snapshot import Brain
from keel.brain.specs import RoleSpec
from keel.code.runner import CodeRunner
from keel.errors import KeelError
from keel.link.values import TurnRequest
from keel.runtime.models import AsyncModelClient, ModelClient
from keel.store.run_values import UsageRow
from keel.store.store import Store
from keel.tokens import TokenCounter
from keel.tools.registry import Registry
from keel.turn.prepare import Preparation, assembled, prepare
from keel.turn.prepared import PreparedTurn, Session

DEFAULT_MAX_STEPS = 8
# Said with each refusal rather than as a standing rule: it costs a turn only when needed.
REFUSAL_ADVICE = "Tell the person plainly; do not try another way around it."


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnOutcome:
    """What a turn did: what it carried, its input, its transcript and its answer."""

    prepared: PreparedTurn
    assembly: Assembly
    transcript: Transcript
    reply: str
    requests: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """A person's decision on a call that needed one, as the call's result reports it."""

    approved: bool
    said: str  # "approved by ana (card c-1)", "denied: nobody answered within 2 days"


Approve = Callable[[RoleSpec, ToolCall], Verdict | None]


class TurnSteps(Protocol):
    """How each piece of a turn's work runs; see the module docstring."""

    def prepare(self, preparation: Preparation) -> tuple[PreparedTurn, Assembly]:
        """Prepare, assemble and record the turn through the turn pipeline."""
        ...

    def request(
        self, prepared: PreparedTurn, number: int, run: Callable[[], ModelStep]
    ) -> ModelStep:
        """Ask the model (request `number`, from 1)."""
        ...

    def tool(
        self, prepared: PreparedTurn, call: ToolCall, run: Callable[[Store], ToolResult]
    ) -> ToolResult:
        """Run one tool call."""
        ...

    def answer(self, prepared: PreparedTurn, text: str, run: Callable[[Store], None]) -> None:
        """Record the model's final text (`run` logs it in the conversation's history)."""
        ...


class DirectSteps:
    """Each piece of work at once, through the turn's own store; usage is recorded by turn."""

    __slots__ = ("_store",)

    def __init__(self, store: Store) -> None:
        self._store = store

    def prepare(self, preparation: Preparation) -> tuple[PreparedTurn, Assembly]:
        return assembled(prepare(self._store, preparation))

    def request(
        self, prepared: PreparedTurn, number: int, run: Callable[[], ModelStep]
    ) -> ModelStep:
        step = run()
        if step.usage is not None and prepared.id is not None:
            row = UsageRow(
                run_id=None,
                step=f"turn-{prepared.id}.request-{number}",
                turn_id=prepared.id,
                usage=step.usage,
                at=datetime.now(UTC),
            )
            with self._store.transaction() as tx:
                tx.record_usage(row)
        return step

    def tool(
        self,
        prepared: PreparedTurn,  # noqa: ARG002 - the protocol's signature
        call: ToolCall,  # noqa: ARG002
        run: Callable[[Store], ToolResult],
    ) -> ToolResult:
        return run(self._store)

    def answer(
        self,
        prepared: PreparedTurn,  # noqa: ARG002 - the protocol's signature
        text: str,  # noqa: ARG002
        run: Callable[[Store], None],
    ) -> None:
        run(self._store)


def refuse_unapproved(brain: Brain, tools: Registry) -> Approve:
    """The approval hook outside a run: a call the policy holds for a person is denied."""

    def approve(role: RoleSpec, call: ToolCall) -> Verdict | None:
        tool = tools.get(call.name)
        if tool is None or not approval_required(brain, role, tool.capability, tool.risk):
            return None
        return Verdict(
            approved=False,
            said=(
                f"{call.name} needs a person's approval (risk {tool.risk}), and only a run can "
                "wait for one — this turn is not a run"
            ),
        )

    return approve


def tool_result(
    brain: Brain,
    store: Store,
    request: TurnRequest,
    role: RoleSpec,
    tools: Registry,
    call: ToolCall,
    code: CodeRunner | None = None,
) -> ToolResult:
    """Run one tool call; whatever Keel refuses comes back as the call's error result."""
    try:
        content = tools.execute(brain, store, request, role, call, code=code)
    except KeelError as exc:  # Keel's own errors are reasons the model can read and act on
        content = f"refused: {exc}. {REFUSAL_ADVICE}"
        return ToolResult(call_id=call.id, name=call.name, content=content, is_error=True)
    return ToolResult(call_id=call.id, name=call.name, content=content)


def preparation(
    brain: Brain,
    request: TurnRequest,
    counter: TokenCounter,
    tools: Registry,
    *,
    session: Session | None = None,
    code: CodeRunner | None = None,
) -> Preparation:
    """The turn's preparation: what the pipeline prepares, assembles and checks to fit."""
    return Preparation(
        brain=brain,
        request=request,
        counter=counter,
        tools=tools.tools_for,
        session=session,
        code=code,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Ask:
    """A model request the loop needs: request `number` (from 1) of the turn."""

    prepared: PreparedTurn
    number: int
    assembly: Assembly
    transcript: Transcript


Flow = Generator[Ask, ModelStep, TurnOutcome]


def run_turn(
    brain: Brain,
    store: Store,
    request: TurnRequest,
    model: ModelClient,
    counter: TokenCounter,
    tools: Registry,
    *,
    session: Session | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
    code: CodeRunner | None = None,
    steps: TurnSteps | None = None,
    approve: Approve | None = None,
) -> TurnOutcome:
    """Run one turn with the model; raises `FitOverflow` before a request that cannot fit."""
    steps = steps if steps is not None else DirectSteps(store)
    approve = approve if approve is not None else refuse_unapproved(brain, tools)
    flow = _flow(brain, request, counter, tools, steps, approve, session, max_steps, code)
    asked = _advance(flow, None)
    while isinstance(asked, Ask):
        step = steps.request(asked.prepared, asked.number, _asking(model, asked))
        asked = _advance(flow, step)
    return asked


async def arun_turn(
    brain: Brain,
    store: Store,
    request: TurnRequest,
    model: AsyncModelClient | ModelClient,
    counter: TokenCounter,
    tools: Registry,
    *,
    session: Session | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
    code: CodeRunner | None = None,
) -> TurnOutcome:
    """`run_turn` for asyncio: an async client's request is awaited; the rest (and a sync
    client's request) runs in a worker thread. Always the direct steps, never a run's."""
    steps = DirectSteps(store)
    approve = refuse_unapproved(brain, tools)
    flow = _flow(brain, request, counter, tools, steps, approve, session, max_steps, code)
    asked = await asyncio.to_thread(_advance, flow, None)
    while isinstance(asked, Ask):
        if isinstance(model, AsyncModelClient):
            run = _answered(await model.acomplete(asked.assembly, asked.transcript))
        else:
            run = _asking(model, asked)
        step = await asyncio.to_thread(steps.request, asked.prepared, asked.number, run)
        asked = await asyncio.to_thread(_advance, flow, step)
    return asked


def _advance(flow: Flow, step: ModelStep | None) -> Ask | TurnOutcome:
    """The loop's next request, or its outcome once it is done. (A `StopIteration` cannot
    cross `asyncio.to_thread`, so the outcome is returned, not raised.)"""
    try:
        return next(flow) if step is None else flow.send(step)
    except StopIteration as done:
        outcome: TurnOutcome = done.value
        return outcome


def _flow(
    brain: Brain,
    request: TurnRequest,
    counter: TokenCounter,
    tools: Registry,
    steps: TurnSteps,
    approve: Approve,
    session: Session | None,
    max_steps: int,
    code: CodeRunner | None,
) -> Flow:
    """The loop: yields each model request, is sent its step, returns the outcome."""
    prepared, assembly = steps.prepare(
        preparation(brain, request, counter, tools, session=session, code=code)
    )
    role = brain.roles[prepared.role]
    transcript = Transcript()
    step = ModelStep()
    requests = 0
    while requests < max_steps:
        if requests:
            check_request(assembly, transcript, counter)
        requests += 1
        step = yield Ask(
            prepared=prepared, number=requests, assembly=assembly, transcript=transcript
        )
        transcript = transcript.then(step)
        if not step.calls:
            break
        results = []
        for call in step.calls:
            verdict = approve(role, call)
            if verdict is not None and not verdict.approved:
                results.append(_denied(call, verdict))
                continue

            def run(given: Store, call: ToolCall = call) -> ToolResult:
                return tool_result(brain, given, request, role, tools, call, code)

            result = steps.tool(prepared, call, run)
            results.append(_approved(result, verdict) if verdict is not None else result)
        transcript = transcript.then(*results)
    if step.text:
        text = step.text

        def record(given: Store) -> None:
            with given.transaction() as tx:
                tx.record_message(
                    request.conversation,
                    turn=prepared.turn,
                    at=request.now,
                    speaker="assistant",
                    text=text,
                )

        steps.answer(prepared, text, record)
    return TurnOutcome(
        prepared=prepared,
        assembly=assembly,
        transcript=transcript,
        reply=step.text,
        requests=requests,
    )


def _asking(model: ModelClient, ask: Ask) -> Callable[[], ModelStep]:
    return lambda: model.complete(ask.assembly, ask.transcript)


def _answered(step: ModelStep) -> Callable[[], ModelStep]:
    return lambda: step


def _denied(call: ToolCall, verdict: Verdict) -> ToolResult:
    content = f"refused: {verdict.said}. {REFUSAL_ADVICE}"
    return ToolResult(call_id=call.id, name=call.name, content=content, is_error=True)


def _approved(result: ToolResult, verdict: Verdict) -> ToolResult:
    return ToolResult(
        call_id=result.call_id,
        name=result.name,
        content=f"({verdict.said}) {result.content}",
        is_error=result.is_error,
    )
