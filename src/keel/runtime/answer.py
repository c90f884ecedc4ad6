"""A turn in one call: the request built from what a chat bot knows, and the answer it gets.

`Engine.turn(bot=..., chat=..., text=..., model=...)` is `Engine.run` for a bot's message
handler: it builds the `TurnRequest` (now, in the room the bot and chat name) and reads the
`TurnOutcome` back as an `Answer` — the text to post, the messages the agent sent with
`send_message`, the tool calls Keel refused (each with its reason), and the whole outcome
for whoever wants what the turn carried and its model input.

A call the brain's `approvals:` policy holds for a person is among the refused ones: only a
run (`keel.runs`) can wait for a person, and it does so with an approval card.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from keel.assemble.values import ModelStep, ToolCall, ToolResult
from keel.link.values import Conversation, TurnRequest
from keel.runtime.loop import TurnOutcome
from keel.tools.send_message import SEND_MESSAGE


@dataclass(frozen=True, slots=True, kw_only=True)
class Sent:
    """A message the agent sent during the turn (`send_message`), as Keel recorded it."""

    message_id: str
    chat: str
    thread: str | None
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    """What one turn gave back: `.text` to post, `.sends`, `.refused`, and the outcome."""

    text: str
    turn_id: int | None
    role: str
    sends: tuple[Sent, ...]
    refused: tuple[ToolResult, ...]
    outcome: TurnOutcome


def turn_request(
    *,
    bot: str,
    chat: str,
    text: str,
    sender: str | None = None,
    thread: str | None = None,
    reply_to: str | None = None,
    role: str | None = None,
    now: datetime | None = None,
) -> TurnRequest:
    """The request for one incoming message (`reply_to`: the id of the message it answers)."""
    return TurnRequest(
        conversation=Conversation(bot=bot, chat=chat, thread=thread),
        now=now or datetime.now(UTC),
        role=role,
        input=text,
        reply_to=(reply_to,) if reply_to else (),
        sender=sender,
    )


def answer_of(outcome: TurnOutcome, conversation: Conversation) -> Answer:
    """The outcome read as an answer: the final text, the sends, the refused calls."""
    calls = {
        call.id: call
        for item in outcome.transcript.items
        if isinstance(item, ModelStep)
        for call in item.calls
    }
    results = [item for item in outcome.transcript.items if isinstance(item, ToolResult)]
    sends = tuple(
        _sent(calls[r.call_id], r, conversation)
        for r in results
        if r.name == SEND_MESSAGE.name and not r.is_error and r.call_id in calls
    )
    return Answer(
        text=outcome.reply,
        turn_id=outcome.prepared.id,
        role=outcome.prepared.role,
        sends=sends,
        refused=tuple(r for r in results if r.is_error),
        outcome=outcome,
    )


def _sent(call: ToolCall, result: ToolResult, here: Conversation) -> Sent:
    # The tool answers "sent {id} to {where}" and sends where `send_message` says it does.
    args = call.arguments
    chat = str(args.get("chat") or here.chat)
    thread = args.get("thread") if "thread" in args or chat != here.chat else here.thread
    return Sent(
        message_id=result.content.split()[1],
        chat=chat,
        thread=None if thread is None else str(thread),
        text=str(args.get("text", "")),
    )
