"""One turn of an agent, end to end: prepare, assemble, ask the model, run its tool calls.

Before the first request the turn must fit (checked inside its preparation, which records
nothing when it does not). Before every later request it is checked again with the turn's
transcript, since tool results grow it. Each tool call is checked against the registry
when it executes — its name, the role's capability, its arguments against the schema —
and anything refused comes back to the model as an error result with the reason: once the
preparation is committed, a bad call costs only itself, never the turn.
"""

from __future__ import annotations

from dataclasses import dataclass

from keel.assemble.fit import check_request
from keel.assemble.values import Assembly, ModelStep, ToolCall, ToolResult, Transcript
from keel.brain.snapshot import Brain
from keel.brain.specs import RoleSpec
from keel.code.runner import CodeRunner
from keel.errors import KeelError
from keel.link.values import TurnRequest
from keel.runtime.models import ModelClient
from keel.store.store import Store
from keel.tokens import TokenCounter
from keel.tools.registry import Registry
from keel.turn.assembly import prepare_and_assemble
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
) -> TurnOutcome:
    """Run one turn with the model; raises `FitOverflow` before a request that cannot fit."""
    prepared, assembly = prepare_and_assemble(
        brain, store, request, counter, tools.for_role, session=session, code=code
    )
    role = brain.roles[prepared.role]
    transcript = Transcript()
    step = ModelStep()
    requests = 0
    while requests < max_steps:
        if requests:
            check_request(assembly, transcript, counter)
        step = model.complete(assembly, transcript)
        requests += 1
        transcript = transcript.then(step)
        if not step.calls:
            break
        results = (tool_result(brain, store, request, role, tools, c, code) for c in step.calls)
        transcript = transcript.then(*results)
    if step.text:
        with store.transaction() as tx:
            tx.record_message(
                request.conversation,
                turn=prepared.turn,
                at=request.now,
                speaker="assistant",
                text=step.text,
            )
    return TurnOutcome(
        prepared=prepared,
        assembly=assembly,
        transcript=transcript,
        reply=step.text,
        requests=requests,
    )
