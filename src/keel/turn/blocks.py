"""Rendering linked contexts into blocks from their views, and fitting a turn's links.

This is where a link meets the database: each linked context's views are read (in the
caller's transaction) and rendered within its `chars` by `keel.budget`. The turn's
preparation and the `context_open` tool render links here, the same way; the preparation
also keeps the rows each block was made of, for its journal (a later re-fit of the turn
under other knobs renders them again without reading views).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy import Connection

from keel.brain.constitution import Manifest
from keel.brain.files import MANIFEST_PATH
from keel.brain.knobs import TurnSettings, context_chars, turn_settings
from keel.brain.snapshot import Brain
from keel.brain.specs import ContextSpec, RoleSpec
from keel.budget.fit import Fitted, fit_turn
from keel.budget.render import Block, render_block
from keel.budget.rows import ViewRows
from keel.code.values import RenderAnswer
from keel.link.values import Link, Tenant
from keel.state.views import read_view

Pair = tuple[str, str | None]
ViewsRead = Mapping[Pair, tuple[ViewRows, ...]]


def read_link_views(
    brain: Brain, link: Link, reader: Connection, rows: int, tenant: Tenant | None = None
) -> tuple[ViewRows, ...]:
    """A linked context's views as they are now, filtered by the link's key where `by`,
    and to the room's tenant where a view has the tenant's column; each read within
    `state.readTimeoutMs`."""
    context = brain.contexts[link.context]
    timeout_ms = brain.manifest.state_read_timeout_ms
    return tuple(
        read_view(reader, ref, link.entity, limit=rows, timeout_ms=timeout_ms, tenant=tenant)
        for ref in context.data
    )


def render_views(
    brain: Brain,
    settings: TurnSettings,
    link: Link,
    views: Sequence[ViewRows],
    code: RenderAnswer | None = None,
    *,
    opened: bool = False,
) -> Block | None:
    """One linked context's block from its views as read and what its code rendered, within
    its chars (None: too big; `opened`: instructions past its chars are kept, views stubbed)."""
    context = brain.contexts[link.context]
    sections = sections_of(code)
    return render_block(
        context=context.id,
        entity=link.entity,
        instructions=context.instructions,
        views=views,
        chars=settings.chars[context.id],
        sections=sections,
        sections_missing=code is not None and code.failure is not None,
        more_room=room_advice(context, settings.role, brain.manifest) if sections else None,
        opened=opened,
    )


def room_advice(context: ContextSpec, role: RoleSpec, manifest: Manifest) -> str:
    """Which setting gives the context more room: the tier that set its `chars` (the
    tiers `context_chars` resolves), or for the default, the context's own file."""
    chars = context_chars(context, role, manifest)
    if context.chars is not None:
        return f"raise chars: {chars} of {context.path}"
    if role.contexts_budget.chars is not None:
        return f"raise contexts_budget.chars: {chars} of {role.path}"
    if manifest.contexts.chars is not None:
        return f"raise contexts.chars: {chars} of {manifest.path or MANIFEST_PATH}"
    return f"set chars: in {context.path} (it is {chars} by default)"


def sections_of(code: RenderAnswer | None) -> tuple[tuple[str, str], ...]:
    """A render's sections as (key, text)."""
    return () if code is None else tuple((s.key, s.text) for s in code.sections)


def render_link(
    brain: Brain,
    role: RoleSpec,
    link: Link,
    reader: Connection,
    rows: int,
    tenant: Tenant | None = None,
) -> Block | None:
    """One linked context's block, its views read now, within its chars (None: too big)."""
    views = read_link_views(brain, link, reader, rows, tenant)
    return render_views(brain, turn_settings(brain, role), link, views)


def fit_read(
    brain: Brain,
    settings: TurnSettings,
    links: Sequence[Link],
    reader: Connection,
    tenant: Tenant | None = None,
    code: Mapping[Pair, RenderAnswer] | None = None,
) -> tuple[Fitted, ViewsRead]:
    """Render the links that may attach (with their code's sections) and fit them; and the
    views each render read.

    A link stubbed before its turn came (past `maxActive`) reads no views, and has none.
    """
    knobs = settings.knobs
    read: dict[Pair, tuple[ViewRows, ...]] = {}
    rendered = code or {}

    def render(link: Link) -> Block | None:
        read[link.pair] = read_link_views(brain, link, reader, knobs.rows, tenant)
        return render_views(brain, settings, link, read[link.pair], rendered.get(link.pair))

    fitted = fit_turn(links, render, knobs, can_open=settings.role.can("context:read"))
    return fitted, read


def fit_links(
    brain: Brain,
    role: RoleSpec,
    links: Sequence[Link],
    reader: Connection,
    tenant: Tenant | None = None,
) -> Fitted:
    """Render the links that may attach and fit them into the turn's budgets."""
    return fit_read(brain, turn_settings(brain, role), links, reader, tenant)[0]
