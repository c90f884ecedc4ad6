"""`explain`: why each context of the brain did or did not reach one turn.

A pure function of the brain, the turn's journal (a recorded turn's, or a dry run's) and
what the stores held when it was linked (journaled with it). One row per context — per
(context, entity) where the turn carried or refused several — with its status:

- `attached` (its link, entity and size) or `stubbed` (the knob that kept it out), with
  why its code's `render` failed when it did (its sections are missing);
- `refused`: a link was asked for and a gate said no (the reason linking gave: the role
  does not admit it, the room is pinned to another key, a malformed entry), one row per
  link refused — an open and an attach of the same pair are two refusals, each its link;
- `not linked`: nothing linked it, and why — its feature is switched off or its file did
  not load, brain code answered no or failed, a link this turn had would need a `when`
  word the context lacks, or the links its `when` allows had no source this turn (no run,
  a reach without it, no binding here, not a reply or the replied messages do not reach
  it, not opened), with the role's admission where it matters, and another bot's binding
  that holds the room for it (the note the turn logged).

The sources (the run's reach, the room's bindings, the replied messages' reach) are the
journaled ones, read the way linking reads them (`keel.link.bindings`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from keel.brain.snapshot import Brain
from keel.brain.specs import ContextSpec, RoleSpec
from keel.link.bindings import another_bots_pin, bound_where, effective_bindings, links_bot
from keel.link.values import Binding, Kept, LinkKind, Stored
from keel.store.journal_values import Decision, TurnJournal

Status = Literal["attached", "stubbed", "refused", "not linked"]
_ORDER: dict[Status, int] = {"attached": 0, "stubbed": 1, "refused": 2, "not linked": 3}


@dataclass(frozen=True, slots=True, kw_only=True)
class ExplainRow:
    """One context (and entity) of the brain, and what became of it in the turn."""

    context: str
    feature: str | None
    status: Status
    entity: str | None = None
    link: LinkKind | None = None
    chars: int | None = None
    knob: str | None = None
    reason: str | None = None
    # Set when the link rides only because an earlier turn made it.
    kept: Kept | None = None

    @property
    def shown_link(self) -> str | None:
        """The link as a person reads it: `kept` for a kept one."""
        return "kept" if self.kept is not None else self.link

    def to_json(self) -> dict[str, Any]:
        return {
            "context": self.context,
            "feature": self.feature,
            "status": self.status,
            "entity": self.entity,
            "link": self.shown_link,
            "kept": None
            if self.kept is None or self.link is None
            else self.kept.to_json(self.link),
            "chars": self.chars,
            "knob": self.knob,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Explanation:
    """Every context of the brain for one turn, sorted by context."""

    id: int | None
    turn: int
    role: str
    dry_run: bool
    rows: tuple[ExplainRow, ...]
    # The widgets the turn replied to: (context, how many numbered lines it carried).
    replied_lines: tuple[tuple[str, int], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "turn": self.turn,
            "role": self.role,
            "dry_run": self.dry_run,
            "replied_lines": [{"context": c, "lines": n} for c, n in self.replied_lines],
            "contexts": [r.to_json() for r in self.rows],
        }


def explain(brain: Brain, journal: TurnJournal) -> Explanation:
    """One row per context of the brain (and any the turn named that it no longer has)."""
    failed = _render_failures(journal)
    rows = [_decided(d, failed.get(d.link.pair)) for d in journal.decisions]
    rows += [
        ExplainRow(
            context=r.context,
            feature=_feature(brain, r.context),
            status="refused",
            entity=r.entity,
            link=r.kind,
            reason=r.reason,
        )
        for r in journal.refused
    ]
    named = {r.context for r in rows}
    every = {*brain.contexts, *brain.failed_contexts}
    every |= {ident for ident in brain.switched_off if ":" not in ident}
    rows += [
        ExplainRow(
            context=ident,
            feature=_feature(brain, ident),
            status="not linked",
            reason=why_not_linked(brain, journal, ident),
        )
        for ident in sorted(every - named)
    ]
    rows.sort(key=lambda r: (r.context, _ORDER[r.status], r.entity or ""))
    return Explanation(
        id=journal.id,
        turn=journal.turn,
        role=journal.role,
        dry_run=journal.id is None,
        rows=tuple(rows),
        replied_lines=journal.widget_lines,
    )


def _decided(decision: Decision, render_failure: str | None) -> ExplainRow:
    link = decision.link
    return ExplainRow(
        context=link.context,
        feature=link.feature,
        status="attached" if decision.attached else "stubbed",
        entity=link.entity,
        link=link.kind,
        kept=link.kept,
        chars=decision.chars if decision.attached else None,
        knob=decision.knob,
        reason=None if render_failure is None else f"its render failed: {render_failure}",
    )


def _render_failures(journal: TurnJournal) -> dict[tuple[str, str | None], str]:
    """Why each linked context's render failed, by (context, entity), where one did."""
    replay = journal.replay
    if replay is None:
        return {}
    return {
        c.link.pair: c.sections_failure or "its code sections are missing"
        for c in replay.candidates
        if c.sections_missing
    }


def _feature(brain: Brain, ident: str) -> str | None:
    context = brain.contexts.get(ident)
    if context is not None:
        return context.feature
    return brain.switched_off.get(ident)


def why_not_linked(brain: Brain, journal: TurnJournal, ident: str) -> str:
    """Why nothing linked this context to the turn."""
    if ident in brain.switched_off:
        return f"its feature '{brain.switched_off[ident]}' is switched off"
    if ident in brain.failed_contexts:
        return f"its file did not load: {brain.failed_contexts[ident]}"
    context = brain.contexts.get(ident)
    if context is None:
        return "it is no longer in the brain"
    said = _code_said(journal, ident)
    if said is not None:
        # Code that said no is the reason; another bot's pin of the room is worth knowing.
        return "; ".join([said, *_another_bots(brain, journal, ident)])
    role = brain.roles.get(journal.role)
    reasons = _missing_words(brain, journal, context) or _no_source(brain, journal, context, role)
    if role is not None and not role.admits(ident):
        # Most contexts of a brain are not the role's: say that first.
        reasons.insert(0, f"role '{role.id}' does not list it in `contexts:`")
    return "; ".join(reasons) or "nothing linked it this turn"


def _code_said(journal: TurnJournal, ident: str) -> str | None:
    """What the context's brain code answered, when it failed or answered no."""
    for answer in journal.code:
        if answer.context == ident and answer.failure is not None:
            return f"its brain code failed: {answer.failure}"
        if answer.context == ident and answer.answer == "no":
            return "its brain code answered no"
    return None


def _stored(journal: TurnJournal) -> Stored:
    replay = journal.replay
    return replay.stored if replay is not None else Stored(turn=journal.turn)


def _bound(brain: Brain, journal: TurnJournal, ident: str) -> Binding | None:
    bindings = effective_bindings(brain, journal.conversation, _stored(journal).bindings)
    return bindings.get(ident)


def _another_bots(brain: Brain, journal: TurnJournal, ident: str) -> list[str]:
    """That another bot's binding holds the room for this context, when one does: the
    note the turn logged for it (`keel turn` shows it), or for an unkeyed context, which
    no binding pins, whose binding it is."""
    binding = _bound(brain, journal, ident)
    if binding is None or links_bot(binding, journal.conversation):
        return []
    if ident in journal.pins:
        return [another_bots_pin(binding)]
    return [f"{bound_where(binding)} binds it for bot '{binding.bot}' only"]


def _replied_reach(journal: TurnJournal, ident: str) -> bool:
    replied = set(journal.request.reply_to)
    return any(
        origin.message_id in replied and any(e.context == ident for e in origin.reach)
        for origin in _stored(journal).origins
    )


def _missing_words(brain: Brain, journal: TurnJournal, context: ContextSpec) -> list[str]:
    """Links this turn had a source for, that the context's `when` does not take."""
    ident, when = context.id, context.when
    found = []
    if "run" not in when and any(e.context == ident for e in journal.reach):
        found.append("the run reaches it, but its when has no run")
    if "chat" not in when and _bound(brain, journal, ident) is not None:
        found.append("this chat binds it, but its when has no chat")
    if "reply" not in when and _replied_reach(journal, ident):
        found.append("a message this turn replies to reaches it, but its when has no reply")
    return found


def _no_source(
    brain: Brain, journal: TurnJournal, context: ContextSpec, role: RoleSpec | None
) -> list[str]:
    """For each link its `when` allows, why this turn had none."""
    request, when, ident = journal.request, context.when, context.id
    found = []
    if "run" in when:
        found.append("not a run" if request.run is None else "the run's reach does not hold it")
    if "chat" in when:
        if _bound(brain, journal, ident) is None:
            found.append("no binding in this chat")
        found += _another_bots(brain, journal, ident)
    if "reply" in when:
        found.append(
            "not a reply" if not request.reply_to else "the messages it replies to do not reach it"
        )
    if "ask" in when:
        if role is not None and not role.can("context:read"):
            found.append(f"role '{role.id}' cannot call context_open")
        elif role is not None and role.admits(ident):
            found.append("offered in the catalog, not opened")
        else:
            found.append("not opened")
    ended = [k.until_turn for k in _stored(journal).kept if k.context == ident]
    if ended:
        found.append(f"its kept link ended with turn {max(ended)}")
    return found
