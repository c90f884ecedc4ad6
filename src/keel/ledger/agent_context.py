"""`agent_context`: per role over a window, what each context cost the role's turns.

For each context the role's turns carried or were offered: on how many turns it attached,
how often a budget stubbed it and by which knob, its mean and largest rendered size, the
links that brought it, and for a context in the role's catalog how many turns offered it
and on how many it rode an ask link (opened, or held after an open). Everything comes from
the spend ledger and the turn journal of the window; nothing is read here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from keel.store.journal_values import TurnJournal
from keel.store.ledger import LedgerEntry

TurnKey = tuple[str, str, str | None, int]


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextUse:
    """One context's use by one role over the window."""

    context: str
    feature: str | None
    attached: int = 0  # turns it attached to
    stubbed: int = 0  # times a budget stubbed it
    stubbed_by: Mapping[str, int] = field(default_factory=dict)
    mean_chars: int = 0  # over its attached blocks
    max_chars: int = 0
    links: Mapping[str, int] = field(default_factory=dict)  # link kind -> times, either way
    # For a context in the role's catalog: turns that offered it, turns it rode an ask link.
    offered: int | None = None
    opened: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "context": self.context,
            "feature": self.feature,
            "attached": self.attached,
            "stubbed": self.stubbed,
            "stubbed_by": dict(self.stubbed_by),
            "mean_chars": self.mean_chars,
            "max_chars": self.max_chars,
            "links": dict(self.links),
            "offered": self.offered,
            "opened": self.opened,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentContext:
    """The `agent_context` report of one role: its turns in the window, and each context."""

    role: str
    since: datetime
    until: datetime
    turns: int
    contexts: tuple[ContextUse, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "since": self.since.isoformat(),
            "until": self.until.isoformat(),
            "turns": self.turns,
            "contexts": [c.to_json() for c in self.contexts],
        }


def _turn(entry: LedgerEntry) -> TurnKey:
    return (entry.bot, entry.chat, entry.thread, entry.turn)


def agent_context(
    role: str,
    entries: Sequence[LedgerEntry],
    turns: Sequence[TurnJournal],
    *,
    since: datetime,
    until: datetime,
) -> AgentContext:
    """The report from the role's ledger entries and journaled turns of the window.

    Entries and turns of other roles, or outside [since, until], are left out here too.
    """
    mine = [e for e in entries if e.role == role and since <= e.at <= until]
    journaled = [t for t in turns if t.role == role and since <= t.request.now <= until]
    offered = Counter(ident for t in journaled for ident in set(t.catalog))
    by_context: dict[str, list[LedgerEntry]] = {}
    for entry in mine:
        by_context.setdefault(entry.context, []).append(entry)
    uses = [_use(ident, by_context.get(ident, []), offered) for ident in {*by_context, *offered}]
    uses.sort(key=lambda u: (-u.attached, -u.stubbed, u.context))
    counted = {_turn(e) for e in mine} | {
        (t.conversation.bot, t.conversation.chat, t.conversation.thread, t.turn) for t in journaled
    }
    return AgentContext(
        role=role, since=since, until=until, turns=len(counted), contexts=tuple(uses)
    )


def _use(ident: str, entries: list[LedgerEntry], offered: Counter[str]) -> ContextUse:
    attached = [e for e in entries if not e.stubbed]
    sizes = [e.chars for e in attached]
    in_catalog = ident in offered
    return ContextUse(
        context=ident,
        feature=entries[0].feature if entries else None,
        attached=len({_turn(e) for e in attached}),
        stubbed=len(entries) - len(attached),
        stubbed_by=dict(Counter(e.knob for e in entries if e.knob is not None).most_common()),
        mean_chars=round(sum(sizes) / len(sizes)) if sizes else 0,
        max_chars=max(sizes, default=0),
        links=dict(Counter(e.link for e in entries).most_common()),
        offered=offered[ident] if in_catalog else None,
        opened=len({_turn(e) for e in entries if e.link == "ask"}) if in_catalog else None,
    )
