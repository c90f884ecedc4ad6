"""One turn of an agent, end to end: prepare, assemble, ask the model, run its tool calls.

Before the first request the turn must fit (checked inside its preparation, which records
nothing when it does not). Before every later request it is checked again with the turn's
transcript, since tool results grow it. A tool call is authorized again when it executes:
a role that may not call a tool gets the refusal as the tool's result, never its effect.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from keel.assemble.fit import check_request
from keel.assemble.tokens import TokenCounter
from keel.assemble.tools import authorize
from keel.assemble.values import Assembly, ModelStep, ToolCall, ToolResult, Transcript
from keel.brain.snapshot import Brain
from keel.brain.specs import ReachEntry, RoleSpec
from keel.errors import Refused
from keel.link.values import TurnRequest
from keel.runtime.assembly import prepare_and_assemble
from keel.runtime.models import ModelClient
from keel.runtime.prepare import PreparedTurn, Session
from keel.store import Store
from keel.tools.binding import bind_context, unbind_context
from keel.tools.context_open import open_context

DEFAULT_MAX_STEPS = 8


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnOutcome:
    """What a turn did: what it carried, its input, its transcript and its answer."""

    prepared: PreparedTurn
    assembly: Assembly
    transcript: Transcript
    reply: str
    requests: int


def _text(arguments: Mapping[str, Any], key: str) -> str | None:
    value = arguments.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise Refused(f"'{key}' must be a non-empty string")
    return value


def _execute(
    brain: Brain, store: Store, request: TurnRequest, role: RoleSpec, call: ToolCall
) -> str:
    """Run one tool call; `Refused` carries the reason back to the model."""
    authorize(role, call.name)
    args = call.arguments
    conversation = request.conversation
    with store.transaction() as tx:
        if call.name == "context_open":
            entry = ReachEntry(context=_text(args, "name") or "", entity=_text(args, "entity"))
            return open_context(brain, tx, request, entry)
        context = _text(args, "context") or ""
        chat = _text(args, "chat") or conversation.chat
        thread = _text(args, "thread")
        bot = _text(args, "bot")
        where = chat + (f" thread {thread}" if thread else "")
        if call.name == "context_bind":
            bind_context(
                brain,
                tx,
                role,
                context=context,
                entity=_text(args, "entity"),
                chat=chat,
                thread=thread,
                bot=bot,
            )
            return f"bound {context} in {where}"
        unbind_context(brain, tx, role, context=context, chat=chat, thread=thread, bot=bot)
        return f"unbound {context} in {where}"


def _results(
    brain: Brain, store: Store, request: TurnRequest, role: RoleSpec, step: ModelStep
) -> list[ToolResult]:
    results = []
    for call in step.calls:
        try:
            content, error = _execute(brain, store, request, role, call), False
        except Refused as exc:
            content, error = f"refused: {exc}", True
        results.append(ToolResult(call_id=call.id, name=call.name, content=content, is_error=error))
    return results


def run_turn(
    brain: Brain,
    store: Store,
    request: TurnRequest,
    model: ModelClient,
    counter: TokenCounter,
    *,
    session: Session | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
) -> TurnOutcome:
    """Run one turn with the model; raises `FitOverflow` before a request that cannot fit."""
    prepared, assembly = prepare_and_assemble(brain, store, request, counter, session=session)
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
        transcript = transcript.then(*_results(brain, store, request, role, step))
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
