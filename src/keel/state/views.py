"""Reading a context's views: whole, or filtered `by` the entity key, capped at `state.rows`.

View and column names come from brain files and are always quoted as identifiers; the
entity key comes from the turn and is always a bound parameter, never text in the SQL.

In a room pinned to a tenant (MANIFEST `tenancy:`), every view that has the tenant's
column shows only the tenant's rows, whatever brought the view — a context of another
feature, a role's own state, a run: its columns are looked up first, in the same
savepoint, so a view's definition can never be out of date here.

A view that cannot be read shows the model one plain line; what the database said goes to
the `keel.state` log, never into the model's input.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, text
from sqlalchemy.exc import SQLAlchemyError

from keel.brain.specs import ViewRef
from keel.budget.rows import ViewRows
from keel.link.values import Tenant
from keel.log import logger, shown

LOG = logger("state")
UNREADABLE = "could not be read (the log says why)"


def read_view(
    connection: Connection,
    ref: ViewRef,
    entity: str | None,
    *,
    limit: int,
    tenant: Tenant | None = None,
) -> ViewRows:
    """Up to `limit` rows of a view (filtered by the key for a `by` view, and to the room's
    tenant), and how many it holds in all.

    The queries run in a savepoint, so a view that fails (a missing table, a bad column)
    is undone alone and leaves the caller's transaction usable.
    """
    if ref.by is not None and entity is None:
        return ViewRows(
            view=ref.view,
            by=ref.by,
            problem=f"no entity key on this link: the view shows one entity's rows ({ref.by})",
        )
    if tenant is not None and tenant.withheld is not None:
        return ViewRows(view=ref.view, by=ref.by, problem=tenant.withheld)
    if limit <= 0:
        return ViewRows(view=ref.view, by=ref.by, problem="rows are switched off (state.rows is 0)")
    try:
        with connection.begin_nested():
            return _read(connection, ref, entity, limit, tenant)
    except SQLAlchemyError as exc:
        orig = getattr(exc, "orig", None)
        LOG.warning("view %s could not be read: %s", shown(ref.view), shown(str(orig or exc)))
        return ViewRows(view=ref.view, by=ref.by, problem=UNREADABLE)


def _read(
    connection: Connection, ref: ViewRef, entity: str | None, limit: int, tenant: Tenant | None
) -> ViewRows:
    quote = connection.dialect.identifier_preparer.quote
    source = quote(ref.view)
    conditions: list[str] = []
    params: dict[str, Any] = {}
    if ref.by is not None:
        conditions.append(f"{quote(ref.by)} = :key")
        params["key"] = entity
    if (
        tenant is not None
        and tenant.column is not None
        and tenant.column in _columns(connection, source)
    ):
        if tenant.key is None:
            conditions.append("1 = 0")  # pinned to no tenant: no tenant's rows belong here
        else:
            conditions.append(f"{quote(tenant.column)} = :tenant")
            params["tenant"] = tenant.key
    where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
    result = connection.execute(
        text(f"SELECT * FROM {source}{where} LIMIT :limit"), {**params, "limit": limit}
    )
    columns = tuple(result.keys())
    rows = tuple(tuple(row) for row in result.fetchall())
    total = len(rows)
    if total == limit:
        counted = connection.execute(text(f"SELECT COUNT(*) FROM {source}{where}"), params)
        total = int(counted.scalar_one())
    return ViewRows(view=ref.view, by=ref.by, columns=columns, rows=rows, total=total)


def _columns(connection: Connection, source: str) -> tuple[str, ...]:
    """The view's columns, from the database as it is now (one query that reads no row)."""
    return tuple(connection.execute(text(f"SELECT * FROM {source} WHERE 1 = 0")).keys())
