"""`topic_open(title, chat?, bind?)`: open a forum topic, and have its thread id at once.

A run does not talk to a chat surface: opening a topic is recorded like a message
(`keel.store.topics`), in the transaction of the call, under a Keel thread id the caller
gets back at once — to bind the topic (`context_bind(thread=...)`), to post there
(`send_message(thread=...)`). The surface's adapter opens it (Telegram's createForumTopic)
before it delivers anything addressed to that thread, and from then on a message in the
topic is a turn of that thread. Where no surface serves the chat (the CLI), the topic is
that thread id and nothing more.

`bind: {context, entity}` binds the new topic in the same call, as `context_bind` would
(and only for a role that may call it): a ticket's topic carries the ticket from its
first turn, and a model need not carry the new id from one call to the next.

The thread id is fresh (`topic-` and twelve hex digits), unless the caller named the
call's id with `message_id_for`: a run names each call after its step, so a call replayed
after a crash finds its topic recorded and opens no second one.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from keel.brain.limits import MAX_CHAT_ID_CHARS
from keel.brain.specs import RiskClass
from keel.errors import Refused
from keel.link.values import id_problem
from keel.store import Tx
from keel.store.topics import Topic
from keel.tools.binding import BIND_CAPABILITY, bind_context, check_bind
from keel.tools.context_open import STRING
from keel.tools.registry import Tool, ToolContext
from keel.tools.send_message import next_message_id

TOPIC_CAPABILITY = "chat:topic"
RISK: RiskClass = "moderate"
# Telegram's bound on a topic's name, in characters.
MAX_TITLE_CHARS = 128


def topic_thread(name: str | None = None) -> str:
    """The Keel thread id of a topic: derived from `name` (a run's step), else fresh."""
    if name is None:
        return f"topic-{uuid.uuid4().hex[:12]}"
    return f"topic-{hashlib.sha256(name.encode()).hexdigest()[:12]}"


def check_title(title: str) -> str:
    """The title as the topic takes it; `Refused` when it cannot be one."""
    cleaned = " ".join(title.split())
    if not cleaned:
        raise Refused("a topic needs a title (some text)")
    if len(cleaned) > MAX_TITLE_CHARS:
        raise Refused(
            f"a topic's title is at most {MAX_TITLE_CHARS} characters; this one has "
            f"{len(cleaned)} — shorten it"
        )
    return cleaned


def open_topic(
    tx: Tx, *, bot: str, chat: str, title: str, thread: str, at: datetime | None = None
) -> Topic:
    """Record a topic to open in `chat` under Keel's `thread`; the topic as recorded (the
    earlier one, when the same call is replayed)."""
    if (problem := id_problem(chat, "the chat id", MAX_CHAT_ID_CHARS)) is not None:
        raise Refused(problem)
    topic = Topic(
        bot=bot, chat=chat, thread=thread, title=check_title(title), at=at or datetime.now(UTC)
    )
    return tx.record_topic(topic)


def opened_text(topic: Topic) -> str:
    """What the caller reads back: the thread id, and how to use it."""
    return (
        f"opened topic {topic.thread} ({topic.title!r}) in {topic.chat} — use "
        f"thread: '{topic.thread}' to bind it or to post there"
    )


def _binding(ctx: ToolContext, args: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The `bind` the call asks for, if the role may bind at all."""
    bind: Mapping[str, Any] | None = args.get("bind")
    if bind is not None and not ctx.role.can(BIND_CAPABILITY):
        raise Refused(
            f"role '{ctx.role.id}' cannot bind the topic — add {BIND_CAPABILITY} to its "
            "`capabilities:`, or open the topic without bind"
        )
    return bind


def _run(ctx: ToolContext, args: Mapping[str, Any]) -> str:
    here = ctx.request.conversation
    chat = args.get("chat") or here.chat
    bind = _binding(ctx, args)
    topic = open_topic(
        ctx.tx, bot=here.bot, chat=chat, title=args["title"], thread=topic_thread(next_message_id())
    )
    if bind is None:
        return opened_text(topic)
    bound = bind_context(
        ctx.brain,
        ctx.tx,
        ctx.role,
        context=bind["context"],
        entity=bind.get("entity"),
        chat=chat,
        thread=topic.thread,
    )
    key = f" {bound.entity}" if bound.entity else ""
    return f"{opened_text(topic)}; bound {bound.context}{key} to it"


def _preview(ctx: ToolContext, args: Mapping[str, Any]) -> str:
    chat = args.get("chat") or ctx.request.conversation.chat
    if (problem := id_problem(chat, "the chat id", MAX_CHAT_ID_CHARS)) is not None:
        raise Refused(problem)
    title = check_title(args["title"])
    bind = _binding(ctx, args)
    said = f"Open a forum topic in {chat}, risk {RISK}"
    if bind is not None:
        check_bind(
            ctx.brain,
            ctx.role,
            context=bind["context"],
            entity=bind.get("entity"),
            chat=chat,
            thread="preview",
        )
        key = f" {bind['entity']}" if bind.get("entity") else ""
        said += f", bound to {bind['context']}{key}"
    return f"{said}:\n{title}"


TOPIC_OPEN = Tool(
    name="topic_open",
    description=(
        "Open a forum topic titled `title` in this chat (or `chat`); answers its thread id, "
        "to post there at once. `bind: {context, entity}` binds the topic in the same call."
    ),
    parameters={
        "type": "object",
        "properties": {
            "title": STRING,
            "chat": STRING,
            "bind": {
                "type": "object",
                "properties": {"context": STRING, "entity": STRING},
                "required": ["context"],
                "additionalProperties": False,
            },
        },
        "required": ["title"],
    },
    capability=TOPIC_CAPABILITY,
    risk=RISK,
    run=_run,
    preview=_preview,
)
