"""Approval cards in Telegram: Approve / Deny buttons under the card, a press deciding it.

A card is delivered like any message, with two inline buttons. A press (a callback query)
finds the card by the message it was pressed on — the Telegram id the card was delivered
as — and decides it through `keel.runtime.cards.decide`, the step `keel approve` records
its decision with, signed by the person who pressed (`tg:user:<id>`). The run waiting on
the card is woken by the next `keel worker` that looks (`keel.runs.approvals`). A press
on a card decided already says who decided it and changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiogram.types import InlineKeyboardButton, InlineKeyboardMarkup

from keel.brain.snapshot import Brain
from keel.errors import Refused, UsageError
from keel.runtime.cards import decide
from keel.store.store import Store

APPROVE = "keel:approve"
DENY = "keel:deny"


def buttons() -> InlineKeyboardMarkup:
    """The Approve / Deny buttons under a pending card."""
    return InlineKeyboardMarkup(
        inline_keyboard=[
            [
                InlineKeyboardButton(text="Approve", callback_data=APPROVE),
                InlineKeyboardButton(text="Deny", callback_data=DENY),
            ]
        ]
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Pressed:
    """What a press did: the short answer the presser sees, and the card's line once decided."""

    answer: str
    decided: str | None = None


def press(
    store: Store,
    *,
    bot: str,
    chat: str,
    surface_message_id: str,
    data: str,
    by: str,
    brain: Brain | None = None,
) -> Pressed:
    """Decide the card delivered in `chat` as `surface_message_id`, as button `data` says,
    as person `by`: under `brain`'s `people:`, one who may not decide it is refused."""
    verdicts = {APPROVE: True, DENY: False}
    if data not in verdicts:
        return Pressed(answer="This button is not one of Keel's.")
    with store.transaction() as tx:
        keel_id = tx.by_surface_id(bot, chat, surface_message_id)
        card = None if keel_id is None else tx.card_for_message(bot, chat, keel_id)
    if card is None:
        return Pressed(answer="This message is no approval card Keel knows.")
    if card.status != "pending":
        return Pressed(answer=f"This card was {card.status} already{_who(card.decided_by)}.")
    try:
        decided = decide(
            store,
            card.id,
            approve=verdicts[data],
            by=by,
            note="pressed in Telegram",
            brain=brain,
            person=by,
        )
    except (Refused, UsageError) as exc:  # not theirs to decide, or decided a moment ago
        return Pressed(answer=str(exc))
    when = decided.decided_at.strftime("%Y-%m-%d %H:%M UTC") if decided.decided_at else "now"
    line = f"{decided.status.capitalize()} by {by} at {when}."
    return Pressed(answer=line, decided=line)


def _who(by: str | None) -> str:
    return f" by {by}" if by else ""
