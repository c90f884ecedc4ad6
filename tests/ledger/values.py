"""Small journaled turns and ledger entries, for the reports' pure tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from keel.brain.knobs import TurnKnobs
from keel.link.values import Conversation, TurnRequest
from keel.store.journal_values import Decision, TurnJournal
from keel.store.ledger import LedgerEntry

T0 = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
KNOBS = TurnKnobs(max_active=3, turn_chars=12000, rows=20, code_timeout_ms=2000)


def summary(
    turn: int,
    *,
    role: str = "support",
    chat: str = "tg:chat:1",
    bot: str = "desk",
    catalog: tuple[str, ...] = (),
    decisions: tuple[Decision, ...] = (),
    minutes: int | None = None,
) -> TurnJournal:
    """A journaled turn as listing reads it (no replay part)."""
    at = T0 + timedelta(minutes=turn if minutes is None else minutes)
    return TurnJournal(
        id=turn,
        request=TurnRequest(conversation=Conversation(bot=bot, chat=chat), now=at),
        turn=turn,
        role=role,
        decisions=decisions,
        pins={},
        knobs=KNOBS,
        catalog=catalog,
    )


def entry(
    turn: int,
    context: str,
    *,
    role: str = "support",
    link: str = "chat",
    chars: int = 0,
    knob: str | None = None,
    chat: str = "tg:chat:1",
    entity: str | None = None,
    minutes: int | None = None,
) -> LedgerEntry:
    return LedgerEntry(
        bot="desk",
        chat=chat,
        thread=None,
        turn=turn,
        role=role,
        at=T0 + timedelta(minutes=turn if minutes is None else minutes),
        context=context,
        feature="support",
        entity=entity,
        link=link,  # type: ignore[arg-type]
        chars=chars,
        knob=knob,
    )
