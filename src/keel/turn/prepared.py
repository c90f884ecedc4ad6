"""What a prepared turn is: the contexts it carries, what it left out, and why.

A `PreparedTurn` is the result of preparation (see `keel.turn.prepare`), before any model
call. Its `to_json()` is the shape `keel turn --json` prints and the service answers. Its
`id` is the turn's stable id in the turn journal (None for a dry run, which records
nothing), and `journal` what was recorded, for `explain` and the reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from keel.assemble.values import Assembly, Message
from keel.budget.fit import Attached, Stub
from keel.budget.rows import ViewRows
from keel.link.values import Conversation, Refusal
from keel.store.journal_values import TurnJournal


@dataclass(frozen=True, slots=True, kw_only=True)
class Session:
    """A CLI agent's session: it keeps what it was sent, until it compacts its context."""

    id: str
    compacted: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class PreparedTurn:
    """What one turn carries: attached blocks, stubs, refusals, the catalog."""

    turn: int
    role: str
    attached: tuple[Attached, ...]
    stubs: tuple[Stub, ...]
    refused: tuple[Refusal, ...]
    catalog: tuple[tuple[str, str], ...]
    pins: dict[str, str | None]
    log: tuple[str, ...] = ()
    # The role's own state views (those no context claims), read for this turn.
    renders: tuple[ViewRows, ...] = ()
    # The conversation's earlier messages, oldest first, and how many older ones were not read.
    history: tuple[Message, ...] = ()
    history_older: int = 0
    # For a CLI agent's session: what this turn sends of its contexts (None: everything).
    session_text: str | None = None
    # The widgets the turn replies to, as (context, text as last shown).
    replied_lines: tuple[tuple[str, str], ...] = ()
    # The stubbed contexts that session holds as sent: they stand, so no stub line says
    # otherwise (the ledger still records them stubbed).
    session_held: frozenset[tuple[str, str | None]] = frozenset()
    # The bot's chat policy on the incoming message(s): engage or not; None when it has no
    # policy, or it left the decision to the chat rules.
    engage: bool | None = None
    # The turn's stable id in the journal; None for a dry run.
    id: int | None = None
    dry_run: bool = False
    journal: TurnJournal | None = None

    def to_json(self) -> dict[str, Any]:
        """The `keel turn --json` shape."""
        return {
            "id": self.id,
            "dry_run": self.dry_run,
            "turn": self.turn,
            "role": self.role,
            "attached": [
                {
                    "context": a.link.context,
                    "feature": a.link.feature,
                    "entity": a.link.entity,
                    "link": a.link.shown,
                    "kept": a.link.kept_json(),
                    "chars": a.block.chars,
                }
                for a in self.attached
            ],
            "stubbed": [
                {
                    "context": s.link.context,
                    "entity": s.link.entity,
                    "link": s.link.shown,
                    "kept": s.link.kept_json(),
                    "knob": s.knob,
                    "text": s.text,
                }
                for s in self.stubs
            ],
            "refused": [
                {"context": r.context, "entity": r.entity, "link": r.kind, "reason": r.reason}
                for r in self.refused
            ],
            "catalog": [{"context": c, "description": d} for c, d in self.catalog],
            "blocks": [
                {"context": a.link.context, "entity": a.link.entity, "text": a.block.text}
                for a in self.attached
            ],
            "warnings": list(self.log),
            "engage": self.engage,
        }


def prepared_json(
    prepared: PreparedTurn, assembly: Assembly, where: Conversation, sender: str | None = None
) -> dict[str, Any]:
    """A prepared turn as `keel turn --json`, POST /v1/turns and a run's step print it:
    where it was, who spoke (None for a run), what it carried, its sections and its fit."""
    return {
        **prepared.to_json(),
        "bot": where.bot,
        "chat": where.chat,
        "thread": where.thread,
        "sender": sender,
        "sections": [s.to_json() for s in assembly.sections],
        "fit": assembly.fit.to_json(),
        "counter": assembly.counter,
    }
