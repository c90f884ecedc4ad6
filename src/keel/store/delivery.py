"""Delivery on a chat surface: the outbox, the surface's ids, and the updates handled.

Every message Keel sends is first a row of the history log (`keel_messages`), written in
the transaction that decided it; since migration 0009 an assistant's row starts
`pending`. A surface adapter reads its bot's pending rows oldest first (`outbox`), sends
each, and marks it `delivered` with the surface's id for it — so a process that dies
between the two delivers the message on its next start, once. An attempt that failed
for a passing reason is counted (`attempt_failed`); one that cannot succeed is `failed`
with the reason.

`claim_update` records a surface update's id in the transaction of the turn it becomes:
a second claim of the same id — the update delivered again, or taken by a second
process at once — answers False, and the caller rolls its turn back.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Connection, and_, select, update

from keel.errors import StoreError
from keel.store import schema
from keel.store.leases import Leased
from keel.store.sql import dialect_insert, unkey, utc

DeliveryState = Literal["pending", "delivered", "failed"]
AttachmentKind = Literal["document", "voice"]
ATTACHMENT_KINDS: tuple[AttachmentKind, ...] = ("document", "voice")
DELIVERY_STATES: tuple[DeliveryState, ...] = ("pending", "delivered", "failed")

_MESSAGES = schema.messages
_ORIGINS = schema.origins
_UPDATES = schema.updates
_OUTBOX = Leased(
    state=_MESSAGES.c.delivery,
    lease=_MESSAGES.c.delivery_lease,
    attempts=_MESSAGES.c.attempts,
    reason=_MESSAGES.c.delivery_reason,
    what="a delivery",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Delivery:
    """Where a sent message is on its way to the surface."""

    state: DeliveryState
    attempts: int = 0
    reason: str | None = None
    surface_message_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"state": self.state, "attempts": self.attempts, "reason": self.reason}


@dataclass(frozen=True, slots=True, kw_only=True)
class Attachment:
    """A file a message sends: its kind, and its path inside the brain's files/ folder."""

    kind: AttachmentKind
    path: str

    def placeholder(self) -> str:
        """The history's text for the file when it goes without a caption."""
        return f"[{self.kind} {self.path}]"


@dataclass(frozen=True, slots=True, kw_only=True)
class Outgoing:
    """One message waiting in the outbox: its row, where it goes, and how."""

    row: int
    bot: str
    chat: str
    thread: str | None
    message_id: str | None
    text: str
    attempts: int
    reply_to: str | None = None
    connection: str | None = None
    attachment: Attachment | None = None
    # Set on a message delivered before and edited since: the surface edits that message.
    surface_message_id: str | None = None
    # The context whose lines the message shows (a widget): Keel's words, not Markdown.
    widget: str | None = None


def delivery_state(value: str | None, where: str) -> DeliveryState | None:
    """A stored delivery state, or None for a message never queued."""
    if value is None:
        return None
    for state in DELIVERY_STATES:
        if value == state:
            return state
    raise StoreError(
        f"{where} has the delivery state {value!r} — it must be one of "
        f"{', '.join(DELIVERY_STATES)}; correct the row"
    )


def outbox(
    conn: Connection, bot: str, chat_prefix: str, now: datetime, limit: int = 100
) -> tuple[Outgoing, ...]:
    """The bot's pending messages in chats whose id starts with `chat_prefix`, oldest
    first, but those another process is sending (`take`) until its lease ends."""
    escaped = chat_prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    origin = and_(
        _ORIGINS.c.bot == _MESSAGES.c.bot,
        _ORIGINS.c.chat == _MESSAGES.c.chat,
        _ORIGINS.c.message_id == _MESSAGES.c.message_id,
    )
    rows = conn.execute(
        select(_MESSAGES, _ORIGINS.c.widget)
        .select_from(_MESSAGES.outerjoin(_ORIGINS, origin))
        .where(
            _MESSAGES.c.delivery == "pending",
            _MESSAGES.c.bot == bot,
            _MESSAGES.c.chat.like(f"{escaped}%", escape="\\"),
            _OUTBOX.free(now),
        )
        .order_by(_MESSAGES.c.id)
        .limit(limit)
    )
    return tuple(
        Outgoing(
            row=int(row.id),
            bot=row.bot,
            chat=row.chat,
            thread=unkey(row.thread),
            message_id=row.message_id,
            text=row.text,
            attempts=int(row.attempts),
            reply_to=row.surface_reply_to,
            connection=row.surface_connection,
            attachment=_attachment(row.attachment, row.attachment_path),
            surface_message_id=row.surface_message_id,
            widget=row.widget,
        )
        for row in rows
    )


def _attachment(kind: str | None, path: str | None) -> Attachment | None:
    if kind is None or path is None:
        return None
    for known in ATTACHMENT_KINDS:
        if kind == known:
            return Attachment(kind=known, path=path)
    raise StoreError(
        f"a message row sends a file of the kind {kind!r} — it must be one of "
        f"{', '.join(ATTACHMENT_KINDS)}; correct the row"
    )


def take(conn: Connection, row: int, now: datetime, until: datetime) -> bool:
    """Take a pending message to send until `until`; False when another process holds it
    (or it is no longer pending). A process that dies holding it lets it go at `until`."""
    return _OUTBOX.take(conn, _MESSAGES.c.id == row, now, until)


def mark_delivered(conn: Connection, row: int, surface_message_id: str) -> bool:
    """Mark a pending message delivered as `surface_message_id`; False if it was not
    pending (another process delivered it first)."""
    return _OUTBOX.done(
        conn, _MESSAGES.c.id == row, delivery="delivered", surface_message_id=surface_message_id
    )


def attempt_failed(
    conn: Connection, row: int, reason: str, *, final: bool, until: datetime | None = None
) -> None:
    """Count a failed attempt, holding the message `until` the next one; `final` marks
    it failed with the reason."""
    _OUTBOX.attempt_failed(conn, _MESSAGES.c.id == row, reason, final=final, until=until)


def by_surface_id(conn: Connection, bot: str, chat: str, surface_message_id: str) -> str | None:
    """Keel's id of the message the bot delivered in `chat` as `surface_message_id`."""
    found = conn.execute(
        select(_MESSAGES.c.message_id)
        .where(
            _MESSAGES.c.bot == bot,
            _MESSAGES.c.chat == chat,
            _MESSAGES.c.surface_message_id == surface_message_id,
        )
        .limit(1)
    ).scalar_one_or_none()
    return None if found is None else str(found)


def claim_update(conn: Connection, bot: str, update_id: int, at: datetime) -> bool:
    """Record an update as handled by `bot`; False when it was handled already."""
    stmt = (
        dialect_insert(conn.dialect.name, _UPDATES)
        .on_conflict_do_nothing(index_elements=["bot", "update_id"])
        .returning(_UPDATES.c.update_id)
    )
    values = {"bot": bot, "update_id": update_id, "at": utc(at, "the time of an update")}
    # RETURNING, not the row count: psycopg reports no count for an upsert that skipped.
    return conn.execute(stmt, values).first() is not None


def note_update_turn(conn: Connection, bot: str, update_id: int, turn_id: int | None) -> None:
    """Name the turn an update became (its journal id)."""
    conn.execute(
        update(_UPDATES)
        .where(_UPDATES.c.bot == bot, _UPDATES.c.update_id == update_id)
        .values(turn_id=turn_id)
    )


def update_handled(conn: Connection, bot: str, update_id: int) -> bool:
    """Whether `bot` has handled the update already."""
    found = conn.execute(
        select(_UPDATES.c.update_id).where(_UPDATES.c.bot == bot, _UPDATES.c.update_id == update_id)
    ).first()
    return found is not None
