"""What a turn reads at its top and writes at its end, each as one value.

A turn meets the store twice: once to count itself and read what bears on it
(`Tx.read_turn`), once to write what it decided (`Tx.record_turn`). Between the two it
only reads state views, through the same transaction's connection (`TurnState.views`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection

from keel.assemble.values import Message
from keel.link.values import Conversation, KeptLink, Stored
from keel.payload.sessions import SessionState
from keel.store.journal_values import TurnJournal
from keel.store.ledger import LedgerEntry

# Earlier messages read per turn; older ones only count in history's notice.
HISTORY_READ = 200


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnState:
    """A turn's stored state, read in one call: its number, the origins of the messages it
    replies to, the bindings and kept links of its room, its history (the newest
    `HISTORY_READ` messages, and how many older ones were not read), what a CLI session
    was last sent, and the connection its state views are read through."""

    stored: Stored
    history: tuple[Message, ...]
    older: int
    sent: SessionState | None
    views: Connection


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnRecords:
    """Everything one turn writes: its input (`said`, None for a run's own instructions),
    a CLI session's new state, the links to keep, its ledger entries and its journal."""

    conversation: Conversation
    turn: int
    at: datetime
    said: str | None
    session: tuple[str, SessionState] | None
    keep: tuple[KeptLink, ...]
    ledger: tuple[LedgerEntry, ...]
    journal: TurnJournal
