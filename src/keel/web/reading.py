"""What the service reads through an `Engine` that the Engine does not offer itself.

Each function takes the engine and reads its store in one short transaction: a recorded
turn or None (the service's 404, where `Engine.journal` raises), the history a recorded
turn showed, the stubbed findings of one role, the ledger rows of one turn, and the chats
the journal and the bindings know.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from keel.assemble.values import Message
from keel.doctor.findings import Finding
from keel.ledger import context_stubbed
from keel.runtime.engine import Engine
from keel.store.journal_values import TurnJournal
from keel.store.ledger import LedgerEntry

# Turns read to list the chats on the dashboard: the newest this many.
CHAT_SCAN = 2000
# A turn's shown history is read with room for the empty messages a model never sees.
HISTORY_SLACK = 20


def recorded(engine: Engine, ident: int) -> TurnJournal | None:
    """A recorded turn's journal (with its replay part), or None when no turn has the id."""
    with engine.store.transaction() as tx:
        return tx.journal(ident)


def shown_history(engine: Engine, journal: TurnJournal) -> tuple[Message, ...]:
    """The messages the turn's history section showed, as the chat's log holds them now."""
    shown = next((s.shown for s in journal.sections if s.place == "history"), None)
    if not shown:
        return ()
    with engine.store.transaction() as tx:
        earlier = tx.history(
            journal.conversation, before_turn=journal.turn, limit=shown + HISTORY_SLACK
        )
    sendable = [m for m in earlier if m.text.strip()]
    return tuple(sendable[-shown:])


def turn_ledger(engine: Engine, journal: TurnJournal) -> tuple[LedgerEntry, ...]:
    """The ledger rows of one recorded turn: each context it carried or stubbed."""
    conversation = journal.conversation
    with engine.store.transaction() as tx:
        entries = tx.ledger(role=journal.role, since=journal.request.now)
    return tuple(
        e
        for e in entries
        if e.conversation == conversation and e.turn == journal.turn and e.at == journal.request.now
    )


def role_findings(engine: Engine, role: str, since: datetime) -> tuple[Finding, ...]:
    """The context-stubbed findings of one role's turns since `since`."""
    with engine.store.transaction() as tx:
        entries = tx.ledger(role=role, since=since)
    return context_stubbed(engine.brain, entries, since=since)


@dataclass(frozen=True, slots=True, kw_only=True)
class Chat:
    """A chat the service has seen: its turns, the bots and roles in it, its latest turn."""

    chat: str
    turns: int
    bots: tuple[str, ...]
    roles: tuple[str, ...]
    latest: datetime | None
    bindings: int


def chats(engine: Engine) -> tuple[Chat, ...]:
    """Every chat of the newest turns or with a binding, the most recent first."""
    turns = engine.turns(limit=CHAT_SCAN)
    bound: dict[str, int] = {}
    for binding in engine.bindings():
        bound[binding.chat] = bound.get(binding.chat, 0) + 1
    seen: dict[str, list[TurnJournal]] = {}
    for journal in turns:
        seen.setdefault(journal.conversation.chat, []).append(journal)
    found = [
        Chat(
            chat=chat,
            turns=len(journals),
            bots=tuple(sorted({j.conversation.bot for j in journals})),
            roles=tuple(sorted({j.role for j in journals})),
            latest=max(j.request.now for j in journals),
            bindings=bound.get(chat, 0),
        )
        for chat, journals in seen.items()
    ]
    found += [
        Chat(chat=chat, turns=0, bots=(), roles=(), latest=None, bindings=count)
        for chat, count in bound.items()
        if chat not in seen
    ]
    return tuple(sorted(found, key=lambda c: (c.latest is None, -_stamp(c.latest), c.chat)))


def _stamp(moment: datetime | None) -> float:
    return moment.timestamp() if moment is not None else 0.0
