"""`send_message(text, chat?, thread?, about?)`: the agent sends a message from its turn.

The message is recorded with its origin (`keel.tools.send`): in a run, the run's feature
and reach, keyed by `about: {entity}` when the key was decided inside the turn, so that a
reply brings the right contexts back; the send refusal applies (a run cannot send unkeyed
what could only come back keyed). It goes to the turn's chat unless `chat` names another
(`thread` then defaults to the whole chat).

The message's id is fresh, unless the caller has named it with `message_id_for`: a run
names each send after its step, so a send replayed after a crash finds its message already
recorded and records nothing new.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from keel.brain.snapshot import Brain
from keel.brain.specs import RiskClass
from keel.errors import Refused
from keel.link.values import Conversation, Origin, TurnRequest
from keel.tools.context_open import STRING
from keel.tools.registry import Tool, ToolContext
from keel.tools.send import check_pin, origin_of, record_send, send_preview

SEND_CAPABILITY = "message:send"
RISK: RiskClass = "moderate"
# The message id a preview checks with: the real one is named when the send runs.
PREVIEW_ID = "preview"

_NEXT_ID: ContextVar[str | None] = ContextVar("keel_send_message_id", default=None)


@contextmanager
def message_id_for(message_id: str) -> Iterator[None]:
    """Within the block, a `send_message` call records its message under `message_id`."""
    token = _NEXT_ID.set(message_id)
    try:
        yield
    finally:
        _NEXT_ID.reset(token)


def next_message_id() -> str | None:
    """The id `message_id_for` named for the call running now, or None."""
    return _NEXT_ID.get()


def where_to(request: TurnRequest, args: Mapping[str, Any]) -> Conversation:
    """Where a send goes: the turn's chat and thread, or the `chat` (and `thread`) named."""
    here = request.conversation
    chat = args.get("chat") or here.chat
    thread = args.get("thread") if "thread" in args or chat != here.chat else here.thread
    return Conversation(bot=here.bot, chat=chat, thread=thread)


def message_origin(
    brain: Brain, request: TurnRequest, args: Mapping[str, Any], message_id: str
) -> Origin:
    """The origin the call's message records; `Refused` when the send must not go out."""
    text: str = args["text"]
    if not text.strip():
        raise Refused("send_message needs some text to send")
    about: Mapping[str, Any] = args.get("about") or {}
    return origin_of(
        brain,
        conversation=where_to(request, args),
        message_id=message_id,
        sent_at=datetime.now(UTC),
        run=request.run,
        entity=request.entity,
        reach=request.reach,
        about_entity=about.get("entity"),
        about_context=about.get("context"),
    )


def _send(ctx: ToolContext, args: Mapping[str, Any]) -> str:
    conversation = where_to(ctx.request, args)
    message_id = _NEXT_ID.get() or uuid.uuid4().hex
    where = conversation.chat + (f" thread {conversation.thread}" if conversation.thread else "")
    if ctx.tx.has_message(conversation, message_id):
        return f"sent {message_id} to {where}"
    record_send(
        ctx.tx, ctx.brain, message_origin(ctx.brain, ctx.request, args, message_id), args["text"]
    )
    return f"sent {message_id} to {where}"


def _preview(ctx: ToolContext, args: Mapping[str, Any]) -> str:
    """The message as it will be sent, checked by the origin rules and the room's pin as
    the send will be."""
    check_pin(ctx.tx, ctx.brain, message_origin(ctx.brain, ctx.request, args, PREVIEW_ID))
    about: Mapping[str, Any] = args.get("about") or {}
    return send_preview(
        where_to(ctx.request, args),
        args["text"],
        about_entity=about.get("entity"),
        about_context=about.get("context"),
        risk=RISK,
    )


SEND_MESSAGE = Tool(
    name="send_message",
    description=(
        "Send a message to this chat, or to `chat`. In a run, `about` says what a reply to "
        "it is about: {entity: '<key>'} or {context: '<id>'}."
    ),
    parameters={
        "type": "object",
        "properties": {
            "text": STRING,
            "chat": STRING,
            "thread": STRING,
            "about": {
                "type": "object",
                "properties": {"entity": STRING, "context": STRING},
                "additionalProperties": False,
            },
        },
        "required": ["text"],
    },
    capability=SEND_CAPABILITY,
    risk=RISK,
    run=_send,
    preview=_preview,
)
