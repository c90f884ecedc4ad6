"""The words of Keel's own sections: the time, identity, tenancy, rules, catalog, renders.

Everything here is a pure function of its arguments, so the same turn always reads the
same; the stable sections (identity, rules, catalog) depend only on the role and the bot,
never on the turn, which keeps a provider's prompt cache warm across turns. Every word is
paid on every turn, so each says only what applies (docs/prompt.md says why each is there).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from keel.assemble.row_cuts import RenderInput
from keel.brain.snapshot import Brain
from keel.budget.render import attr, cell, unforgeable
from keel.budget.rows import ViewRows
from keel.link.values import TurnRequest

CONTEXT_RULE = (
    "Each <context> block below holds a feature's instructions and current data; follow it "
    "for that feature."
)


def rules_text(*, carries_contexts: bool) -> str:
    """Keel's rules for a role: empty for a role no context can reach.

    Stubs, cut rows, the room's pin and a refused tool call each explain themselves where
    they appear, so no standing rule is paid for them on every turn.
    """
    return CONTEXT_RULE if carries_contexts else ""


NO_MESSAGE = "(no new message in this turn)"


def current_text(brain: Brain, request: TurnRequest, lines: str = "") -> str:
    """The turn's request: its input, else the prompt of what it is a run of. `lines`
    (already safe to show) go before the input: the widgets a reply answers."""
    if request.input:
        # It rides in the same message as the context blocks: it must not close one.
        said = unforgeable(request.input)
        return f"{lines}\n\n{said}" if lines else said
    if request.run is not None:
        entity = brain.entity(request.run.kind, request.run.id)
        if entity is not None and entity.prompt:
            return entity.prompt
    return NO_MESSAGE


def time_text(now: datetime) -> str:
    return f"Now: {now.strftime('%Y-%m-%d %H:%M')} UTC ({now.strftime('%A')})."


def identity_text(bot: str) -> str:
    """Which bot speaks (a room may hold several); who it is, the persona says."""
    return f"You are {bot}."


def tenancy_text(pins: Mapping[str, str | None]) -> str:
    """Which entity this room is about, when a binding pins it; empty when none does.

    What happens to a request about another entity is said by its refusal, when it comes.
    """
    if not pins:
        return ""
    held = " and ".join(
        f"{context} {entity}" if entity is not None else f"no {context}"
        for context, entity in sorted(pins.items())
    )
    return f"This room is pinned to {held}."


def catalog_text(entries: tuple[tuple[str, str], ...]) -> str:
    if not entries:
        return ""
    lines = "\n".join(f"- {ident}: {description}" for ident, description in entries)
    return f"Contexts to open:\n{lines}"


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnTexts:
    """The words of Keel's own sections for one turn, and its request."""

    current: str
    time: str
    identity: str
    tenancy: str
    rules: str
    catalog: str
    renders: tuple[RenderInput, ...] = ()


def turn_texts(
    brain: Brain,
    request: TurnRequest,
    pins: Mapping[str, str | None],
    catalog: tuple[tuple[str, str], ...],
    *,
    carries_contexts: bool,
    renders: Sequence[ViewRows] = (),
    lines: str = "",
) -> TurnTexts:
    """Every text of Keel's own sections for a turn, and its request, in one call; and
    the role's own state views (`renders`) as their sections take them. `lines`: the
    widgets a reply answers, numbered as shown (`keel.runtime.widgets.lines_note`)."""
    return TurnTexts(
        current=current_text(brain, request, lines),
        time=time_text(request.now),
        identity=identity_text(request.conversation.bot),
        tenancy=tenancy_text(pins),
        rules=rules_text(carries_contexts=carries_contexts),
        catalog=catalog_text(catalog),
        renders=tuple(render_input(rows) for rows in renders),
    )


def render_input(rows: ViewRows) -> RenderInput:
    """A role's own state view as a render section: header, one line per row, footer."""
    header = f'<agent-state view="{attr(rows.view)}">'
    footer = "</agent-state>"
    if rows.problem is not None:
        return RenderInput(
            view=rows.view,
            header=f"{header}\n{unforgeable(rows.problem)}",
            rows=(),
            footer=footer,
            total=0,
        )
    if not rows.rows:
        return RenderInput(
            view=rows.view, header=f"{header}\n(no rows)", rows=(), footer=footer, total=0
        )
    return RenderInput(
        view=rows.view,
        header=f"{header}\n{' | '.join(cell(c) for c in rows.columns)}",
        rows=tuple(" | ".join(cell(v) for v in row) for row in rows.rows),
        footer=footer,
        total=rows.total,
    )
