"""`what-if`: the recorded turns of a window re-fitted under changed knobs.

Each journaled turn's candidate links are fitted again, in the order they had, with the
view rows the turn read (its journal keeps them), under a brain whose knobs were changed
(`keel.ledger.knob_set`): the same `fit_turn` and `render_block` a turn uses, so with
unchanged knobs every attach and stub decision comes out as recorded. Per context it
counts attached and stubbed before and after; per turn it shows both decisions and the fit.

What it cannot take from the journal, it says:

- a link a turn stubbed before rendering (past `maxActive`) read no views; when the new
  knobs let it render, `views_now` reads them as they are now (noted on the turn);
- more rows than the turn read (`state.rows` raised) are not known (noted);
- a context whose instructions changed since is sized as recorded (decisions stay exact;
  a re-assembled fit counts a stand-in of the same length, noted).

The fit: a turn whose decisions, section budgets, model limits and rows are all unchanged
keeps its recorded fit. Any other is assembled again (`fit_after`, see `replay_fit`) from
the brain as it is now, the journaled renders and request, and the conversation's history
as stored — so its "after" is exact for the turn's role texts as they are now.
Nothing is written.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from keel.assemble.values import Fit, Message
from keel.brain.knobs import SectionBudgets, context_chars, model_limits, turn_knobs
from keel.brain.snapshot import Brain
from keel.brain.specs import RoleSpec
from keel.budget.blocks import room_advice
from keel.budget.fit import Fitted, fit_turn, opened_by_name
from keel.budget.render import Block, render_block
from keel.budget.rows import ViewRows
from keel.ledger.chat_context import decision_json
from keel.link.catalog import catalog
from keel.link.values import Link
from keel.store.journal_values import Candidate, Decision, TurnJournal
from keel.tokens import TokenCounter
from keel.turn.assembly import ToolsFor, assemble_turn
from keel.turn.journal import decisions_of, digest
from keel.turn.prepared import PreparedTurn

History = tuple[tuple[Message, ...], int]
ViewsNow = Callable[[TurnJournal, Link], tuple[ViewRows, ...]]
FitAfter = Callable[[TurnJournal, Fitted], Fit]
# What `keel.state.views.read_view` answers for a view when state.rows is 0.
ROWS_OFF = "rows are switched off (state.rows is 0)"


@dataclass(frozen=True, slots=True, kw_only=True)
class Refit:
    """One turn fitted again: the result, and what the journal could not tell."""

    fitted: Fitted
    decisions: tuple[Decision, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnShift:
    """One recorded turn, before and after the change."""

    journal: TurnJournal
    after: tuple[Decision, ...]
    fit_after: Fit | None
    fit_replayed: bool
    notes: tuple[str, ...] = ()

    @property
    def changed(self) -> tuple[str, ...]:
        """`context[@entity]` of each link whose decision changed."""
        before = {d.link.pair: d for d in self.journal.decisions}
        return tuple(
            d.link.context + (f"@{d.link.entity}" if d.link.entity is not None else "")
            for d in self.after
            if before.get(d.link.pair) != d
        )

    def to_json(self) -> dict[str, Any]:
        journal = self.journal
        conversation = journal.conversation
        fit = journal.fit
        return {
            "id": journal.id,
            "turn": journal.turn,
            "bot": conversation.bot,
            "chat": conversation.chat,
            "thread": conversation.thread,
            "role": journal.role,
            "at": journal.request.now.isoformat(),
            "changed": list(self.changed),
            "before": [decision_json(d) for d in journal.decisions],
            "after": [decision_json(d) for d in self.after],
            "fit": {
                "before": fit.to_json() if fit is not None else None,
                "after": self.fit_after.to_json() if self.fit_after is not None else None,
                "replayed": self.fit_replayed,
            },
            "notes": list(self.notes),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextShift:
    """One context over the window: how often it attached and was stubbed, before and after."""

    context: str
    attached: tuple[int, int]
    stubbed: tuple[int, int]
    stubbed_by: tuple[dict[str, int], dict[str, int]] = field(default_factory=lambda: ({}, {}))

    def to_json(self) -> dict[str, Any]:
        return {
            "context": self.context,
            "attached": {"before": self.attached[0], "after": self.attached[1]},
            "stubbed": {"before": self.stubbed[0], "after": self.stubbed[1]},
            "stubbed_by": {"before": self.stubbed_by[0], "after": self.stubbed_by[1]},
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class WhatIf:
    """The window's turns re-fitted under the changed knobs."""

    overrides: tuple[str, ...]
    since: datetime
    turns: tuple[TurnShift, ...]
    contexts: tuple[ContextShift, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "set": list(self.overrides),
            "since": self.since.isoformat(),
            "turns": len(self.turns),
            "contexts": [c.to_json() for c in self.contexts],
            "per_turn": [t.to_json() for t in self.turns],
        }


def what_if(
    before: Brain,
    after: Brain,
    journals: Sequence[TurnJournal],
    *,
    overrides: Sequence[str] = (),
    since: datetime,
    views_now: ViewsNow | None = None,
    fit_after: FitAfter | None = None,
) -> WhatIf:
    """Every journaled turn (with its replay part) re-fitted under `after`'s knobs.

    `before` is the brain the knobs were changed from: a turn whose role's section
    budgets, model limits or rows differ between the two is assembled again.
    """
    shifts = [_shift(before, after, j, views_now, fit_after) for j in journals]
    return WhatIf(
        overrides=tuple(overrides),
        since=since,
        turns=tuple(shifts),
        contexts=_contexts(shifts),
    )


def _shift(
    before: Brain,
    after: Brain,
    journal: TurnJournal,
    views_now: ViewsNow | None,
    fit_after: FitAfter | None,
) -> TurnShift:
    if journal.role not in after.roles:
        note = f"role '{journal.role}' is no longer in the brain: the turn is not replayed"
        return TurnShift(
            journal=journal,
            after=journal.decisions,
            fit_after=journal.fit,
            fit_replayed=False,
            notes=(note,),
        )
    redone = refit(after, journal, views_now=views_now)
    notes = list(redone.notes)
    if redone.decisions == journal.decisions and not _assembly_changed(before, after, journal):
        return TurnShift(
            journal=journal,
            after=redone.decisions,
            fit_after=journal.fit,
            fit_replayed=False,
            notes=tuple(notes),
        )
    if journal.session is not None:
        notes.append("a CLI session's turn: the fit is replayed with whole blocks")
    fit = fit_after(journal, redone.fitted) if fit_after is not None else None
    return TurnShift(
        journal=journal,
        after=redone.decisions,
        fit_after=fit,
        fit_replayed=fit is not None,
        notes=tuple(notes),
    )


def _assembly_changed(before: Brain, after: Brain, journal: TurnJournal) -> bool:
    """Whether the role's section budgets, model limits or rows differ between the brains."""
    old, new = before.roles.get(journal.role), after.roles[journal.role]
    if old is None:
        return True
    return (
        SectionBudgets.of(old, before.manifest) != SectionBudgets.of(new, after.manifest)
        or model_limits(old, before.manifest) != model_limits(new, after.manifest)
        or turn_knobs(old, before.manifest).rows != turn_knobs(new, after.manifest).rows
    )


def _contexts(shifts: Sequence[TurnShift]) -> tuple[ContextShift, ...]:
    counts: dict[str, list[Counter[str]]] = {}
    for shift in shifts:
        for side, decisions in enumerate((shift.journal.decisions, shift.after)):
            for d in decisions:
                tally = counts.setdefault(d.link.context, [Counter(), Counter()])[side]
                tally["attached" if d.attached else "stubbed"] += 1
                if d.knob is not None:
                    tally[d.knob] += 1
    found = []
    for ident, (was, now) in sorted(counts.items()):
        knobs = [
            {k: n for k, n in side.items() if k not in ("attached", "stubbed")}
            for side in (was, now)
        ]
        found.append(
            ContextShift(
                context=ident,
                attached=(was["attached"], now["attached"]),
                stubbed=(was["stubbed"], now["stubbed"]),
                stubbed_by=(knobs[0], knobs[1]),
            )
        )
    return tuple(found)


# ---------------------------------------------------------------------------------------
# Re-fitting one turn


def refit(brain: Brain, journal: TurnJournal, *, views_now: ViewsNow | None = None) -> Refit:
    """The turn's candidates fitted again under `brain`'s knobs, from the journaled rows."""
    replay = journal.replay
    if replay is None:
        raise ValueError(f"turn {journal.id} was read without its replay part")
    role = brain.roles[journal.role]
    knobs = turn_knobs(role, brain.manifest)
    by_pair = {c.link.pair: c for c in replay.candidates}
    notes: list[str] = []

    def render(link: Link) -> Block | None:
        candidate = by_pair[link.pair]
        views = candidate.views
        if views is None:
            views = views_now(journal, link) if views_now is not None else ()
            notes.append(f"{_name(link)}: the turn did not read its views; read as they are now")
        shown, short = cut_rows(views, knobs.rows)
        if short:
            notes.append(f"{_name(link)}: rows beyond the {journal.knobs.rows} read are not known")
        context = brain.contexts.get(link.context)
        instructions = "x" * candidate.instructions_chars
        if context is not None and digest(context.instructions) == candidate.instructions_sha:
            instructions = context.instructions
        elif context is not None:
            notes.append(f"{_name(link)}: its instructions changed since; sized as recorded")
        return render_block(
            context=link.context,
            entity=link.entity,
            instructions=instructions,
            views=shown,
            chars=_chars(brain, role, candidate),
            sections=candidate.sections,
            sections_missing=candidate.sections_missing,
            # The same stub as the turn's, under the knobs as they are now.
            more_room=(
                room_advice(context, role, brain.manifest)
                if context is not None and candidate.sections
                else None
            ),
            opened=opened_by_name(link),
        )

    links = [c.link for c in replay.candidates]
    fitted = fit_turn(links, render, knobs, can_open=role.can("context:read"))
    return Refit(fitted=fitted, decisions=decisions_of(links, fitted), notes=tuple(notes))


def _name(link: Link) -> str:
    return link.context + (f"@{link.entity}" if link.entity is not None else "")


def _chars(brain: Brain, role: RoleSpec, candidate: Candidate) -> int:
    """The context's chars under `brain`, or the recorded one for a context it lacks now."""
    context = brain.contexts.get(candidate.link.context)
    if context is None:
        return candidate.chars
    return context_chars(context, role, brain.manifest)


def cut_rows(views: Sequence[ViewRows], rows: int) -> tuple[tuple[ViewRows, ...], bool]:
    """Views as `read_view` would give them with limit `rows`, from rows read with a limit
    at least as high; and whether some view would have needed rows that were not read."""
    shown: list[ViewRows] = []
    short = False
    for view in views:
        if rows <= 0:
            shown.append(view if view.problem is not None else _switched_off(view))
        elif view.problem == ROWS_OFF:
            shown.append(view)
            short = True
        elif view.problem is None and len(view.rows) > rows:
            shown.append(replace(view, rows=view.rows[:rows]))
        else:
            unread = view.problem is None and view.total > len(view.rows)
            short = short or (unread and rows > len(view.rows))
            shown.append(view)
    return tuple(shown), short


def _switched_off(view: ViewRows) -> ViewRows:
    return ViewRows(view=view.view, by=view.by, problem=ROWS_OFF)


def replay_fit(
    brain: Brain,
    journal: TurnJournal,
    fitted: Fitted,
    history: History,
    counter: TokenCounter,
    tools: ToolsFor,
) -> Fit:
    """The turn assembled again with `fitted`'s contexts under `brain`: its fit verdict.

    `history` is the conversation's messages before the turn as the store holds them (and
    how many older ones were not read), as the turn's preparation reads them.
    """
    role = brain.roles[journal.role]
    replay = journal.replay
    renders, _ = cut_rows(
        replay.renders if replay is not None else (), turn_knobs(role, brain.manifest).rows
    )
    prepared = PreparedTurn(
        turn=journal.turn,
        role=journal.role,
        attached=fitted.attached,
        stubs=fitted.stubs,
        refused=journal.refused,
        catalog=catalog(brain, role),
        pins=dict(journal.pins),
        log=journal.log,
        renders=renders,
        history=history[0],
        history_older=history[1],
    )
    return assemble_turn(brain, journal.request, prepared, counter, tools).fit
