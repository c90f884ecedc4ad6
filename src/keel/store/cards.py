"""Approval cards (`keel_cards`), provider usage (`keel_usage`), and what a chat was sent.

A card is decided once: `decide_card` moves a pending card to its verdict and answers
False for one already decided, so two people (or a person and a timeout) cannot both win.
Usage is keyed by (run, step): a request recorded again — a replayed step — changes
nothing. `sent_messages` joins the history log with the origins, for `keel messages`.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, and_, select, update

from keel.assemble.values import Usage
from keel.errors import StoreError
from keel.link.values import Conversation
from keel.store import schema
from keel.store.delivery import Delivery, delivery_state
from keel.store.run_values import (
    CARD_STATUSES,
    CardRefusal,
    CardRow,
    CardStatus,
    SentMessage,
    UsageRow,
)
from keel.store.runs import dumps, reach_of
from keel.store.sql import conversation_key, dialect_insert, key, unkey, utc

_CARDS = schema.cards
_USAGE = schema.usage
_MESSAGES = schema.messages
_ORIGINS = schema.origins
_REACH = schema.origin_reach
_JOURNAL = schema.turn_journal


def record_card(conn: Connection, card: CardRow) -> None:
    """Write a new card."""
    conn.execute(
        _CARDS.insert(),
        {
            "id": card.id,
            "run_id": card.run_id,
            "tool": card.tool,
            "arguments": dumps(dict(card.arguments)),
            "risk": card.risk,
            "capability": card.capability,
            "summary": card.summary,
            "bot": card.bot,
            "chat": card.chat,
            "thread": key(card.thread, f"the thread of card {card.id!r}"),
            "message_id": card.message_id,
            "status": _card_status(card.status, card.id),
            "asked_at": utc(card.asked_at, f"the time card {card.id!r} was asked"),
            "timeout_at": utc(card.timeout_at, f"the timeout of card {card.id!r}"),
            "decided_at": None,
            "decided_by": card.decided_by,
            "note": card.note,
        },
    )


def decide_card(
    conn: Connection,
    card_id: str,
    status: CardStatus,
    at: datetime,
    *,
    by: str | None = None,
    note: str | None = None,
) -> bool:
    """Move a pending card to its verdict; False when it is unknown or decided already."""
    if status == "pending":
        raise StoreError(f"card {card_id!r}: a decision is approved, denied or timed-out")
    result = conn.execute(
        update(_CARDS)
        .where(_CARDS.c.id == card_id, _CARDS.c.status == "pending")
        .values(
            status=_card_status(status, card_id),
            decided_at=utc(at, f"the decision on card {card_id!r}"),
            decided_by=by,
            note=note,
        )
    )
    return result.rowcount > 0


def card(conn: Connection, card_id: str) -> CardRow | None:
    """One card, or None."""
    row = conn.execute(select(_CARDS).where(_CARDS.c.id == card_id)).one_or_none()
    return None if row is None else _card(row)


def card_for_message(conn: Connection, bot: str, chat: str, message_id: str) -> CardRow | None:
    """The card a message asked (the message a reply quotes), or None."""
    row = conn.execute(
        select(_CARDS).where(
            _CARDS.c.bot == bot, _CARDS.c.chat == chat, _CARDS.c.message_id == message_id
        )
    ).one_or_none()
    return None if row is None else _card(row)


def cards(
    conn: Connection, *, run_id: str | None = None, status: CardStatus | None = None
) -> tuple[CardRow, ...]:
    """Cards of a run (or of all runs), with this status if named, oldest first."""
    query = select(_CARDS)
    if run_id is not None:
        query = query.where(_CARDS.c.run_id == run_id)
    if status is not None:
        query = query.where(_CARDS.c.status == _card_status(status, "the filter"))
    rows = conn.execute(query.order_by(_CARDS.c.asked_at, _CARDS.c.id))
    return tuple(_card(row) for row in rows)


def _card(row: Row[Any]) -> CardRow:
    return CardRow(
        id=row.id,
        run_id=row.run_id,
        tool=row.tool,
        arguments=json.loads(row.arguments),
        risk=row.risk,
        capability=row.capability,
        summary=row.summary,
        bot=row.bot,
        chat=row.chat,
        thread=unkey(row.thread),
        message_id=row.message_id,
        status=_card_status(row.status, row.id),
        asked_at=row.asked_at,
        timeout_at=row.timeout_at,
        decided_at=row.decided_at,
        decided_by=row.decided_by,
        note=row.note,
        refused=_refusals(row.refused, row.id),
    )


def _refusals(value: str | None, card_id: str) -> tuple[CardRefusal, ...]:
    if value is None:
        return ()
    try:
        return tuple(
            CardRefusal(by=r["by"], at=datetime.fromisoformat(r["at"]), reason=r["reason"])
            for r in json.loads(value)
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreError(
            f"card {card_id}: its refused decisions cannot be read ({exc}) — set the column to NULL"
        ) from exc


def refuse_decision(conn: Connection, card_id: str, refusal: CardRefusal) -> bool:
    """Record a decision refused for who made it; the card stays as it was. False when the
    card is unknown or no longer pending."""
    found = card(conn, card_id)
    if found is None or found.status != "pending":
        return False
    entries = [
        {"by": r.by, "at": r.at.isoformat(), "reason": r.reason} for r in (*found.refused, refusal)
    ]
    conn.execute(
        update(_CARDS)
        .where(_CARDS.c.id == card_id, _CARDS.c.status == "pending")
        .values(refused=dumps(entries))
    )
    return True


def _card_status(value: str, where: str) -> CardStatus:
    for status in CARD_STATUSES:
        if value == status:
            return status
    raise StoreError(f"card {where}: the status {value!r} is not one of {', '.join(CARD_STATUSES)}")


# Usage


def record_usage(conn: Connection, row: UsageRow) -> bool:
    """Store what one request cost; False when that request was recorded already."""
    values = {
        "run_id": row.run_id or "",
        "step": row.step,
        "turn_id": row.turn_id,
        "model": row.model,
        "input_tokens": row.usage.input_tokens,
        "cached_tokens": row.usage.cached_tokens,
        "output_tokens": row.usage.output_tokens,
        "at": utc(row.at, f"the time of request {row.step!r}"),
    }
    stmt = dialect_insert(conn.dialect.name, _USAGE).on_conflict_do_nothing(
        index_elements=["run_id", "step"]
    )
    return conn.execute(stmt, values).rowcount > 0


def usage(conn: Connection, *, run_id: str | None = None) -> tuple[UsageRow, ...]:
    """Recorded usage (of one run, when named), oldest first."""
    query = select(_USAGE)
    if run_id is not None:
        query = query.where(_USAGE.c.run_id == run_id)
    return tuple(
        UsageRow(
            run_id=row.run_id or None,
            step=row.step,
            turn_id=None if row.turn_id is None else int(row.turn_id),
            model=row.model,
            usage=Usage(
                input_tokens=int(row.input_tokens),
                cached_tokens=int(row.cached_tokens),
                output_tokens=int(row.output_tokens),
            ),
            at=row.at,
        )
        for row in conn.execute(query.order_by(_USAGE.c.at, _USAGE.c.id))
    )


# What a chat was sent


def has_message(conn: Connection, conversation: Conversation, message_id: str) -> bool:
    """Whether the history holds a message with this id in the conversation."""
    where = conversation_key(conversation)
    found = conn.execute(
        select(_MESSAGES.c.id)
        .where(
            *(_MESSAGES.c[name] == value for name, value in where.items()),
            _MESSAGES.c.message_id == message_id,
        )
        .limit(1)
    ).first()
    return found is not None


def sent_messages(
    conn: Connection, chat: str | None = None, *, run_id: str | None = None, limit: int = 50
) -> tuple[SentMessage, ...]:
    """The newest messages the bot sent, oldest first, each with the origin recorded for it
    (none for a message sent outside a run): in `chat`, or by the run `run_id` (whose
    messages' ids are `<run id>:<step>`). An answer recorded with no message id (an
    `engine.turn` answer, which no surface sent) is listed in its chat too."""
    if limit < 0:
        raise StoreError(f"a limit of {limit} messages is negative — pass 0 or more")
    joined = _MESSAGES.outerjoin(
        _ORIGINS,
        and_(
            _ORIGINS.c.bot == _MESSAGES.c.bot,
            _ORIGINS.c.chat == _MESSAGES.c.chat,
            _ORIGINS.c.message_id == _MESSAGES.c.message_id,
        ),
    )
    query = (
        select(
            _MESSAGES.c.bot,
            _MESSAGES.c.chat,
            _MESSAGES.c.thread,
            _MESSAGES.c.message_id,
            _MESSAGES.c.text,
            _MESSAGES.c.at,
            _ORIGINS.c.id.label("origin_id"),
            _ORIGINS.c.feature,
            _ORIGINS.c.run,
            _ORIGINS.c.pending_card,
            _ORIGINS.c.widget,
            _MESSAGES.c.edited_at,
            _MESSAGES.c.delivery,
            _MESSAGES.c.delivery_reason,
            _MESSAGES.c.attempts,
            _MESSAGES.c.surface_message_id,
        )
        .select_from(joined)
        .where(_MESSAGES.c.speaker == "assistant")
        .order_by(_MESSAGES.c.at.desc(), _MESSAGES.c.id.desc())
        .limit(limit)
    )
    if chat is not None:
        query = query.where(_MESSAGES.c.chat == chat)
    if run_id is not None:
        escaped = run_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        query = query.where(_MESSAGES.c.message_id.like(f"{escaped}:%", escape="\\"))
    rows = list(reversed(conn.execute(query).all()))
    reaches = _reaches(conn, [r.origin_id for r in rows if r.origin_id is not None])
    return tuple(
        SentMessage(
            bot=r.bot,
            chat=r.chat,
            thread=unkey(r.thread),
            message_id=r.message_id,
            text=r.text,
            at=r.at,
            feature=r.feature,
            run=r.run,
            reach=reaches.get(r.origin_id, ()),
            pending_card=bool(r.pending_card),
            widget=r.widget,
            edited_at=r.edited_at,
            delivery=_delivery(r),
        )
        for r in rows
    )


def _delivery(row: Row[Any]) -> Delivery | None:
    state = delivery_state(row.delivery, f"message {row.message_id!r} in {row.chat}")
    if state is None:
        return None
    return Delivery(
        state=state,
        attempts=int(row.attempts),
        reason=row.delivery_reason,
        surface_message_id=row.surface_message_id,
    )


def _reaches(conn: Connection, origin_ids: list[int]) -> dict[int, Any]:
    if not origin_ids:
        return {}
    found: dict[int, list[dict[str, str | None]]] = {}
    rows = conn.execute(
        select(_REACH)
        .where(_REACH.c.origin_id.in_(origin_ids))
        .order_by(_REACH.c.origin_id, _REACH.c.position)
    )
    for row in rows:
        found.setdefault(row.origin_id, []).append(
            {"context": row.context, "entity": unkey(row.entity)}
        )
    return {origin: reach_of(entries) for origin, entries in found.items()}


def journal_id(conn: Connection, conversation: Conversation, turn: int) -> int | None:
    """The journal id of a conversation's turn (the turn's stable id), or None."""
    where = conversation_key(conversation)
    found = conn.execute(
        select(_JOURNAL.c.id).where(
            *(_JOURNAL.c[name] == value for name, value in where.items()),
            _JOURNAL.c.turn == turn,
        )
    ).scalar_one_or_none()
    return None if found is None else int(found)
