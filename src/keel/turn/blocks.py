"""Linked contexts' views as they are now, read outside a turn's pipeline.

The `context_open` tool and the what-if replay read a link's views here, the way a turn
does: in the caller's transaction (`keel.state.views.TurnViews`), each within its read
timeout. `fit_links` renders and fits links without a turn (the pin property tests and
bench/turn_prep.py time that stage alone).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection

from keel.brain.knobs import turn_settings
from keel.brain.snapshot import Brain
from keel.brain.specs import RoleSpec
from keel.budget.blocks import fit_blocks
from keel.budget.fit import Fitted
from keel.budget.rows import ViewRows
from keel.link.values import Link, Tenant
from keel.state.views import TurnViews


def read_link_views(
    brain: Brain, link: Link, reader: Connection, rows: int, tenant: Tenant | None = None
) -> tuple[ViewRows, ...]:
    """A linked context's views as they are now, filtered by the link's key where `by`,
    and to the room's tenant where a view has the tenant's column; each read within
    `state.readTimeoutMs`."""
    return _views(brain, reader, rows, tenant).of(link)


def fit_links(
    brain: Brain,
    role: RoleSpec,
    links: Sequence[Link],
    reader: Connection,
    tenant: Tenant | None = None,
) -> Fitted:
    """Render the links that may attach and fit them into the turn's budgets."""
    settings = turn_settings(brain, role)
    views = _views(brain, reader, settings.knobs.rows, tenant)
    return fit_blocks(brain, settings, links, views.of)


def _views(brain: Brain, reader: Connection, rows: int, tenant: Tenant | None) -> TurnViews:
    timeout_ms = brain.manifest.state_read_timeout_ms
    return TurnViews(
        connection=reader, contexts=brain.contexts, rows=rows, timeout_ms=timeout_ms, tenant=tenant
    )
