"""Rendering linked contexts into blocks, their views read now, and fitting the turn.

This is where a link meets the database: each linked context's views are read (in the
caller's transaction) and rendered within its `chars` by `keel.budget`. The turn's
preparation and the `context_open` tool both render links here, the same way.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection

from keel.brain.knobs import context_chars, turn_knobs
from keel.brain.snapshot import Brain
from keel.brain.specs import RoleSpec
from keel.budget.fit import Fitted, fit_turn
from keel.budget.render import Block, render_block
from keel.link.values import Link
from keel.state.views import read_view


def render_link(
    brain: Brain, role: RoleSpec, link: Link, reader: Connection, rows: int
) -> Block | None:
    """One linked context's block, its views read now, within its chars (None: too big)."""
    context = brain.contexts[link.context]
    views = [read_view(reader, ref, link.entity, limit=rows) for ref in context.data]
    return render_block(
        context=context.id,
        entity=link.entity,
        instructions=context.instructions,
        views=views,
        chars=context_chars(context, role, brain.manifest),
    )


def fit_links(brain: Brain, role: RoleSpec, links: Sequence[Link], reader: Connection) -> Fitted:
    """Render the links that may attach and fit them into the turn's budgets."""
    knobs = turn_knobs(role, brain.manifest)
    return fit_turn(
        links,
        lambda link: render_link(brain, role, link, reader, knobs.rows),
        knobs,
        can_open=role.can("context:read"),
    )
