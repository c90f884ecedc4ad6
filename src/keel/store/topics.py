"""Forum topics opened by runs: Keel's thread id at once, the surface's once it is opened.

A run cannot wait for a chat surface, and does not talk to one: `record_topic` writes the
topic in the transaction of the step that opens it, under a Keel thread id the run uses at
once (to bind it, to post in it). The surface's adapter opens every `pending` topic of its
bot (`pending_topics`, `take_topic`) before it delivers anything, and records the
surface's own thread id (`topic_opened`) — or, for a refusal that cannot change, why not
(`topic_attempt_failed`, `final`). A message to the topic goes to the surface's thread
(`topic`), and a message coming in from it is the Keel thread's (`thread_of`).

Where no surface serves the chat (the CLI, a chat id that is not Telegram's), the topic
stays `pending`: a thread id, and nothing more.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import ColumnElement, Connection, Row, select

from keel.errors import StoreError
from keel.store import schema
from keel.store.leases import Leased
from keel.store.sql import utc

TopicState = Literal["pending", "opened", "failed"]
TOPIC_STATES: tuple[TopicState, ...] = ("pending", "opened", "failed")

_TOPICS = schema.topics
_OPENING = Leased(
    state=_TOPICS.c.state,
    lease=_TOPICS.c.lease,
    attempts=_TOPICS.c.attempts,
    reason=_TOPICS.c.reason,
    what="a topic's opening",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Topic:
    """A forum topic a run opened: where, its title, and how far its opening got."""

    bot: str
    chat: str
    thread: str
    title: str
    at: datetime
    state: TopicState = "pending"
    reason: str | None = None
    attempts: int = 0
    surface_thread_id: str | None = None


def record_topic(conn: Connection, topic: Topic) -> Topic:
    """Record a new topic to open; the one recorded before under the same thread, when
    there is one (a step replayed after a crash records nothing new)."""
    found = topic_of(conn, topic.bot, topic.chat, topic.thread)
    if found is not None:
        if found.title != topic.title:
            raise StoreError(
                f"the thread {topic.thread!r} of {topic.chat} is the topic {found.title!r} "
                f"already, not {topic.title!r} — give each topic its own thread id"
            )
        return found
    conn.execute(
        _TOPICS.insert().values(
            bot=topic.bot,
            chat=topic.chat,
            thread=topic.thread,
            title=topic.title,
            at=utc(topic.at, "the time a topic was opened"),
            state="pending",
            attempts=0,
        )
    )
    return topic


def topic_of(conn: Connection, bot: str, chat: str, thread: str) -> Topic | None:
    """The topic recorded under Keel's `thread` in `chat`, or None."""
    row = conn.execute(
        select(_TOPICS).where(
            _TOPICS.c.bot == bot, _TOPICS.c.chat == chat, _TOPICS.c.thread == thread
        )
    ).first()
    return None if row is None else _topic(row)


def thread_of(conn: Connection, bot: str, chat: str, surface_thread_id: str) -> str | None:
    """Keel's thread id of the topic the surface calls `surface_thread_id`, or None."""
    found = conn.execute(
        select(_TOPICS.c.thread)
        .where(
            _TOPICS.c.bot == bot,
            _TOPICS.c.chat == chat,
            _TOPICS.c.surface_thread_id == surface_thread_id,
        )
        .limit(1)
    ).scalar_one_or_none()
    return None if found is None else str(found)


def pending_topics(
    conn: Connection, bot: str, chat_prefix: str, now: datetime, limit: int = 100
) -> tuple[Topic, ...]:
    """The bot's topics still to open in chats starting with `chat_prefix`, oldest first,
    but those another process is opening until its lease ends."""
    escaped = chat_prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    rows = conn.execute(
        select(_TOPICS)
        .where(
            _TOPICS.c.state == "pending",
            _TOPICS.c.bot == bot,
            _TOPICS.c.chat.like(f"{escaped}%", escape="\\"),
            _OPENING.free(now),
        )
        .order_by(_TOPICS.c.at, _TOPICS.c.thread)
        .limit(limit)
    )
    return tuple(_topic(row) for row in rows)


def take_topic(conn: Connection, topic: Topic, now: datetime, until: datetime) -> bool:
    """Take a pending topic to open until `until`; False when another process has it."""
    return _OPENING.take(conn, _key(topic), now, until)


def topic_opened(conn: Connection, topic: Topic, surface_thread_id: str) -> bool:
    """Record the surface's thread id of an opened topic; False if it was not pending."""
    return _OPENING.done(conn, _key(topic), state="opened", surface_thread_id=surface_thread_id)


def topic_attempt_failed(
    conn: Connection, topic: Topic, reason: str, *, final: bool, until: datetime | None = None
) -> None:
    """Count a failed attempt to open a topic, held `until` the next; `final` fails it."""
    _OPENING.attempt_failed(conn, _key(topic), reason, final=final, until=until)


def _key(topic: Topic) -> ColumnElement[bool]:
    return (
        (_TOPICS.c.bot == topic.bot)
        & (_TOPICS.c.chat == topic.chat)
        & (_TOPICS.c.thread == topic.thread)
    )


def _state(value: str, where: str) -> TopicState:
    for state in TOPIC_STATES:
        if value == state:
            return state
    raise StoreError(
        f"{where} has the state {value!r} — it must be one of {', '.join(TOPIC_STATES)}; "
        "correct the row"
    )


def _topic(row: Row[Any]) -> Topic:
    return Topic(
        bot=row.bot,
        chat=row.chat,
        thread=row.thread,
        title=row.title,
        at=row.at,
        state=_state(row.state, f"the topic {row.thread!r} of {row.chat}"),
        reason=row.reason,
        attempts=int(row.attempts),
        surface_thread_id=row.surface_thread_id,
    )
