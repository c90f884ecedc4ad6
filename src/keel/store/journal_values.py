"""What the turn journal holds for one prepared turn (its JSON form is `journal_json`).

A `TurnJournal` is the record of one turn's preparation: the request as it came, the role,
every candidate link in the order fitting saw it, what was refused, what fitting decided
(attached with its size, or stubbed by which knob), the catalog offered, the sections'
sizes and the fit verdict. Its `replay` part holds what a later re-fit of the same turn
needs without reading views again: what the stores held when it was linked, and per
candidate the view rows as they were read and the size of its instructions (a block's
size depends on the instructions' length only, so their text is not kept — only a hash,
to tell whether the brain's text is still the same). The replay part also keeps what each
section said (history aside: its messages are in the chat's own log), so a recorded turn's
model input can be shown again as it was sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, get_args

from keel.assemble.values import Fit
from keel.brain.knobs import TurnKnobs
from keel.brain.specs import ReachEntry
from keel.budget.fit import Knob
from keel.budget.rows import ViewRows
from keel.link.values import Conversation, Link, Refusal, Stored, TurnRequest

JOURNAL_VERSION = 1
KNOBS: tuple[Knob, ...] = get_args(Knob)
CodeVerdict = Literal["yes", "no"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    """One linked (context, entity) as fitting saw it, and what its block was made of."""

    link: Link
    chars: int  # the context's `chars`, as the tiers resolved it for this turn
    instructions_chars: int
    instructions_sha: str
    # The views as read; None when the turn never read them (stubbed before rendering).
    views: tuple[ViewRows, ...] | None = None
    # What its code rendered after the views, (key, text); and whether that code failed,
    # and why (the failure as the turn's warnings said it, with its file and line).
    sections: tuple[tuple[str, str], ...] = ()
    sections_missing: bool = False
    sections_failure: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """What fitting made of one candidate: attached (its size) or stubbed (by a knob)."""

    link: Link
    chars: int = 0
    knob: Knob | None = None

    @property
    def attached(self) -> bool:
        return self.knob is None


@dataclass(frozen=True, slots=True, kw_only=True)
class SectionSize:
    """One section of the turn's model input: its budget and what it used, in tokens.

    `place` and `warnings` are kept with the summary; `text` (what the section said) lives
    in the replay part and is None when the journal was read without it, for history (its
    messages are the chat's own, `shown` of them, newest first) and for rows written before
    texts were journaled.
    """

    id: str
    budget: int | None
    used: int
    clipped: bool = False
    place: str | None = None
    warnings: tuple[str, ...] = ()
    shown: int | None = None  # history only: how many of the chat's messages it showed
    text: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CodeAnswer:
    """What a context's brain code answered this turn: yes, no, or that it failed (why)."""

    context: str
    entity: str | None = None
    answer: CodeVerdict | None = None
    failure: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class JournalReplay:
    """What re-fitting the turn needs: the stores' state, the candidates' rows, the renders."""

    stored: Stored
    candidates: tuple[Candidate, ...]
    renders: tuple[ViewRows, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnJournal:
    """One prepared turn, as recorded; `id` is None until it is written (or in a dry run)."""

    id: int | None
    request: TurnRequest
    turn: int
    role: str
    decisions: tuple[Decision, ...]
    refused: tuple[Refusal, ...] = ()
    pins: Mapping[str, str | None]
    reach: tuple[ReachEntry, ...] = ()
    knobs: TurnKnobs
    catalog: tuple[str, ...] = ()
    log: tuple[str, ...] = ()
    # Brain code's answers per context; empty until turns call brain code.
    code: tuple[CodeAnswer, ...] = ()
    session: str | None = None
    sections: tuple[SectionSize, ...] = ()
    fit: Fit | None = None
    counter: str | None = None
    # The widgets the turn replied to, each (context, how many numbered lines it carried).
    widget_lines: tuple[tuple[str, int], ...] = ()
    # None when only the summary was read (listing turns, reports).
    replay: JournalReplay | None = None

    @property
    def conversation(self) -> Conversation:
        return self.request.conversation

    @property
    def attached(self) -> tuple[Decision, ...]:
        return tuple(d for d in self.decisions if d.attached)

    @property
    def stubbed(self) -> tuple[Decision, ...]:
        return tuple(d for d in self.decisions if not d.attached)
