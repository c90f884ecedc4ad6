"""What the journal keeps of one prepared turn: its decisions, and what replays them.

A journal row holds the request, what linking decided (links, refusals, pins, the run's
reach), what fitting decided (attached with sizes, stubbed with knobs), the catalog, the
assembly's section sizes and fit, and for a later re-fit under other knobs the stored state
the turn linked against and the view rows each block was made of (`keel.store.journal_*`).
Instructions are kept as their length and a fingerprint, not their text; each section's
text is kept as it was sent (history's as a count of the chat's messages it showed).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from functools import lru_cache

from keel.assemble.values import Assembly
from keel.brain.knobs import TurnSettings
from keel.brain.snapshot import Brain
from keel.brain.specs import ReachEntry
from keel.budget.fit import Fitted
from keel.budget.rows import ViewRows
from keel.code.values import RenderAnswer
from keel.link.values import Link, LinkResult, Stored, TurnRequest
from keel.store.journal_values import (
    Candidate,
    CodeAnswer,
    Decision,
    JournalReplay,
    SectionSize,
    TurnJournal,
)

ViewsRead = Mapping[tuple[str, str | None], tuple[ViewRows, ...]]


@lru_cache(maxsize=4096)
def digest(text: str) -> str:
    """A short fingerprint of a text: enough to tell whether it changed since.

    Cached: a context's instructions are the same string object turn after turn, so the
    look-up costs a hash the string already holds.
    """
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def journal_of(
    brain: Brain,
    request: TurnRequest,
    stored: Stored,
    result: LinkResult,
    fitted: Fitted,
    read: ViewsRead,
    *,
    settings: TurnSettings,
    reach: tuple[ReachEntry, ...] = (),
    catalog: tuple[tuple[str, str], ...] = (),
    renders: tuple[ViewRows, ...] = (),
    session: str | None = None,
    assembly: Assembly | None = None,
    code: tuple[CodeAnswer, ...] = (),
    rendered: Mapping[tuple[str, str | None], RenderAnswer] | None = None,
    widget_lines: tuple[tuple[str, int], ...] = (),
) -> TurnJournal:
    """What the journal keeps of one prepared turn (its id is given when it is written):
    `reach` is the run's as linking resolved it, `catalog` the turn's, `widget_lines` the
    widgets it replied to and how many lines each carried."""
    sections = rendered or {}
    candidates = []
    for link in result.links:
        context = brain.contexts[link.context]
        failure = sections[link.pair].failure if link.pair in sections else None
        candidates.append(
            Candidate(
                link=link,
                chars=settings.chars[context.id],
                instructions_chars=len(context.instructions),
                instructions_sha=digest(context.instructions),
                views=read.get(link.pair),
                sections=_sections_of(sections.get(link.pair)),
                sections_missing=failure is not None,
                sections_failure=str(failure) if failure is not None else None,
            )
        )
    return TurnJournal(
        id=None,
        request=request,
        turn=stored.turn,
        role=result.role,
        decisions=decisions_of(result.links, fitted),
        refused=result.refused,
        pins=dict(result.pins),
        reach=reach,
        knobs=settings.knobs,
        catalog=tuple(ident for ident, _ in catalog),
        log=result.log,
        code=code,
        session=session,
        sections=_sections(assembly) if assembly is not None else (),
        fit=assembly.fit if assembly is not None else None,
        counter=assembly.counter if assembly is not None else None,
        widget_lines=widget_lines,
        replay=JournalReplay(stored=stored, candidates=tuple(candidates), renders=renders),
    )


def _sections_of(answer: RenderAnswer | None) -> tuple[tuple[str, str], ...]:
    """A render's sections as (key, text), as its block placed them."""
    return () if answer is None else tuple((s.key, s.text) for s in answer.sections)


def decisions_of(links: Sequence[Link], fitted: Fitted) -> tuple[Decision, ...]:
    """What fitting made of each link, in the links' order."""
    decided = {a.link.pair: Decision(link=a.link, chars=a.block.chars) for a in fitted.attached}
    decided.update({s.link.pair: Decision(link=s.link, knob=s.knob) for s in fitted.stubs})
    return tuple(decided[link.pair] for link in links)


def _sections(assembly: Assembly) -> tuple[SectionSize, ...]:
    """Each section's size, place and text; history keeps only how many messages it showed
    (they are in the chat's log already, and are the largest part of a long chat's input)."""
    return tuple(
        SectionSize(
            id=s.id,
            budget=s.budget_tokens,
            used=s.used_tokens,
            clipped=s.clipped,
            place=s.place,
            warnings=s.warnings,
            shown=len(s.messages) if s.place == "history" else None,
            text=None if s.place == "history" else s.text,
        )
        for s in assembly.sections
    )
