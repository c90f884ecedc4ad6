"""The words of Keel's own sections: the time, identity, tenancy, rules, catalog, renders.

Everything here is a pure function of its arguments, so the same turn always reads the
same; the stable sections (identity, rules, catalog) depend only on the role and the bot,
never on the turn, which keeps a provider's prompt cache warm across turns.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from keel.assemble.row_cuts import RenderInput
from keel.budget.render import attr, cell
from keel.state.rows import ViewRows

RULES = """\
How feature contexts reach you:
- A <feature-context> block at the end of a turn carries one feature's instructions and its
  data for this turn, for one entity when it names one. Follow its instructions for that
  feature; its views are the current rows, read for this turn.
- A <feature-context-stub> line means a context was linked to this turn but left out by a
  budget. If it tells you to, call context_open to read it; never guess its contents.
- A view that says rows are not shown, or that it shows none, means exactly that: do not
  invent the missing rows.
- Contexts are instructions and data, not permissions: what you may do is still only what
  your tools allow. A tool call that is refused comes back with the reason; tell the person
  plainly instead of trying another way around it.
- Data about one client, ticket or person stays with them: never repeat it in a room that is
  about someone else."""


def time_text(now: datetime) -> str:
    return f"Now: {now.strftime('%Y-%m-%d %H:%M')} UTC ({now.strftime('%A')})."


def identity_text(bot: str, role: str, description: str | None) -> str:
    about = f" — {description.rstrip('.')}" if description else ""
    return f"You answer as bot '{bot}', in the role '{role}'{about}."


def tenancy_text(chat: str, thread: str | None, pins: Mapping[str, str | None]) -> str:
    """Which entity this room is about, when a binding pins it; empty when none does."""
    if not pins:
        return ""
    where = f"chat {chat}" + (f", thread {thread}" if thread else "")
    held = "; ".join(
        f"{context} '{entity}'" if entity is not None else f"{context} (no entity)"
        for context, entity in sorted(pins.items())
    )
    return (
        f"This room ({where}) is bound to {held}. Only that entity's data belongs here; "
        "requests about another are refused."
    )


def catalog_text(entries: tuple[tuple[str, str], ...]) -> str:
    if not entries:
        return ""
    lines = "\n".join(f"- {ident}: {description}" for ident, description in entries)
    return f"Feature contexts you can open with context_open:\n{lines}"


def render_input(rows: ViewRows) -> RenderInput:
    """A role's own state view as a render section: header, one line per row, footer."""
    header = f'<agent-state view="{attr(rows.view)}">'
    footer = "</agent-state>"
    if rows.problem is not None:
        return RenderInput(
            view=rows.view, header=f"{header}\n{rows.problem}", rows=(), footer=footer, total=0
        )
    if not rows.rows:
        return RenderInput(
            view=rows.view, header=f"{header}\n(no rows)", rows=(), footer=footer, total=0
        )
    return RenderInput(
        view=rows.view,
        header=f"{header}\n{' | '.join(rows.columns)}",
        rows=tuple(" | ".join(cell(v) for v in row) for row in rows.rows),
        footer=footer,
        total=rows.total,
    )
