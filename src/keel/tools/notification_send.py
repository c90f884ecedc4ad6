"""`notification_send(chat, text, thread?, about?)`: a post to another chat the role speaks in.

`send_message` posts where the turn is (or wherever it is told); a notification goes to a
chat that access.yaml gives this role for the turn's bot — a group rule naming the chat,
or the bot's DM rule for a direct message (`tg:user:`) — and nowhere else: the default
rule, which covers any chat, does not count. Otherwise it is recorded as `send_message`
records a message (the run's origin, `about`, the room's pin), and it does not count as
the agent's answer: a run's closing text still goes to its own chat.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from keel.errors import Refused
from keel.link.values import Conversation
from keel.tools.context_open import STRING
from keel.tools.registry import Tool, ToolContext
from keel.tools.send import check_pin, record_send, send_preview
from keel.tools.send_message import PREVIEW_ID, RISK, message_origin, next_message_id

NOTIFY_CAPABILITY = "message:notify"
# Chats that are a person's own (a direct message): the bot's DM rule covers them.
DM_PREFIXES = ("tg:user:", "tg:business:")


def check_speaks(ctx: ToolContext, chat: str) -> None:
    """`Refused` unless access.yaml gives the turn's role `chat` for the turn's bot."""
    bot = ctx.request.conversation.bot
    access = ctx.brain.access
    if (refusal := access.room_refusal(chat)) is not None:
        raise Refused(refusal)
    rule = access.rule_for(bot, chat, dm=chat.startswith(DM_PREFIXES))
    if rule is None or rule.scope == "default" or rule.role != ctx.role.id:
        said = "no rule" if rule is None else f"the {rule.scope} rule"
        raise Refused(
            f"role '{ctx.role.id}' does not speak in {chat} for bot {bot} (access.yaml has "
            f"{said} for it) — notify a chat whose group rule names this role, or use "
            "send_message"
        )


def _args(args: Mapping[str, Any]) -> dict[str, Any]:
    # The chat is always named: `thread` is then that chat's (none unless given).
    return {**args, "thread": args.get("thread")}


def _run(ctx: ToolContext, args: Mapping[str, Any]) -> str:
    check_speaks(ctx, args["chat"])
    message_id = next_message_id() or uuid.uuid4().hex
    origin = message_origin(ctx.brain, ctx.request, _args(args), message_id)
    where = origin.chat + (f" thread {origin.thread}" if origin.thread else "")
    if not ctx.tx.origins(origin.bot, origin.chat, [message_id]):
        record_send(ctx.tx, ctx.brain, origin, args["text"])
    return f"notified {where} ({message_id})"


def _preview(ctx: ToolContext, args: Mapping[str, Any]) -> str:
    check_speaks(ctx, args["chat"])
    origin = message_origin(ctx.brain, ctx.request, _args(args), PREVIEW_ID)
    check_pin(ctx.tx, ctx.brain, origin)
    about: Mapping[str, Any] = args.get("about") or {}
    return send_preview(
        Conversation(bot=origin.bot, chat=origin.chat, thread=origin.thread),
        args["text"],
        about_entity=about.get("entity"),
        about_context=about.get("context"),
        risk=RISK,
    )


NOTIFICATION_SEND = Tool(
    name="notification_send",
    description=(
        "Post `text` to another chat this role speaks in (`chat`, and `thread`); `about` as "
        "for send_message."
    ),
    parameters={
        "type": "object",
        "properties": {
            "chat": STRING,
            "text": STRING,
            "thread": STRING,
            "about": {
                "type": "object",
                "properties": {"entity": STRING, "context": STRING},
                "additionalProperties": False,
            },
        },
        "required": ["chat", "text"],
    },
    capability=NOTIFY_CAPABILITY,
    risk=RISK,
    run=_run,
    preview=_preview,
)
