"""The turn inspector's view of a recorded turn, built from its journal and the ledger.

For the page: each section as a bar of its budget (used ÷ budget, marked when over or
clipped), the whole window as one bar (used, free, reserved for output), the contexts it
attached with their links, the stubs with the knob that kept each out and that knob's
value on the turn, the refusals with their reasons, the explain table, and the rendered
input grouped by where each part is sent. Pure: the journal, its history and its
explanation come in; nothing is read here.
"""

from __future__ import annotations

from dataclasses import dataclass

from keel.assemble.values import Message
from keel.ledger import Explanation, WindowUse
from keel.store.journal_values import Decision, SectionSize, TurnJournal

PLACES = (
    ("system", "System prompt (stable, cached)"),
    ("state", "System prompt (this turn)"),
    ("tool", "Tools"),
    ("history", "History"),
    ("tail", "User message (this turn)"),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Bar:
    """One section's share of its budget, for a bar 0–100 % wide."""

    section: SectionSize
    share: float | None  # used / budget; None without a budget
    width: float  # percent of the bar filled, 0..100

    @property
    def over(self) -> bool:
        return self.share is not None and self.share > 1

    @property
    def label(self) -> str:
        if self.share is None:
            return f"{self.section.used:,} tokens, no budget"
        return f"{self.section.used:,} of {self.section.budget:,} tokens ({self.share:.0%})"


@dataclass(frozen=True, slots=True, kw_only=True)
class StubRow:
    """A context a budget kept out: the knob, its value on the turn, and the stub's text."""

    decision: Decision
    value: int | None
    text: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Part:
    """One piece of the rendered input: a section's text, or a history message."""

    title: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Inspection:
    journal: TurnJournal
    bars: tuple[Bar, ...]
    window: WindowUse | None
    stubs: tuple[StubRow, ...]
    explanation: Explanation
    rendered: tuple[tuple[str, tuple[Part, ...]], ...]

    @property
    def window_widths(self) -> tuple[float, float, float]:
        """Used, free and reserved as percents of the window."""
        use = self.window
        if use is None or use.window <= 0:
            return (0.0, 0.0, 0.0)
        used = min(100.0, use.used / use.window * 100)
        reserved = min(100.0 - used, use.reserved / use.window * 100)
        return (used, 100.0 - used - reserved, reserved)


def bar(section: SectionSize) -> Bar:
    if not section.budget:
        return Bar(section=section, share=None, width=0.0)
    share = section.used / section.budget
    return Bar(section=section, share=share, width=min(100.0, share * 100))


def window_of(journal: TurnJournal) -> WindowUse | None:
    fit = journal.fit
    if fit is None:
        return None
    return WindowUse(
        window=fit.window,
        used=fit.estimate,
        reserved=fit.output_reserve,
        allocation=fit.input_allocation,
        ok=fit.ok,
        counter=journal.counter,
    )


def knob_value(journal: TurnJournal, decision: Decision) -> int | None:
    """The value the stubbing knob had on this turn."""
    if decision.knob == "contexts.maxActive":
        return journal.knobs.max_active
    if decision.knob == "contexts.turnChars":
        return journal.knobs.turn_chars
    if decision.knob == "chars" and journal.replay is not None:
        pair = decision.link.pair
        found = [c.chars for c in journal.replay.candidates if c.link.pair == pair]
        return found[0] if found else None
    return None


def section_id(decision: Decision) -> str:
    link = decision.link
    return f"context.{link.context}" + (f"@{link.entity}" if link.entity is not None else "")


def inspect_turn(
    journal: TurnJournal, history: tuple[Message, ...], explanation: Explanation
) -> Inspection:
    """The inspector's view of one recorded turn (its journal read with the replay part)."""
    texts = {s.id: s.text for s in journal.sections}
    stubs = tuple(
        StubRow(decision=d, value=knob_value(journal, d), text=texts.get(section_id(d)))
        for d in journal.stubbed
    )
    rendered = []
    for place, title in PLACES:
        if place == "history":
            parts = tuple(Part(title=m.role, text=m.text) for m in history)
        else:
            parts = tuple(
                Part(title=s.id, text=s.text)
                for s in journal.sections
                if s.place == place and s.text
            )
        if parts:
            rendered.append((title, parts))
    return Inspection(
        journal=journal,
        bars=tuple(bar(s) for s in journal.sections),
        window=window_of(journal),
        stubs=stubs,
        explanation=explanation,
        rendered=tuple(rendered),
    )
