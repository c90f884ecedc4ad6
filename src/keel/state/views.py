"""Reading a context's views: whole, or filtered `by` the entity key, capped at `state.rows`.

View and column names come from brain files and are always quoted as identifiers; the
entity key comes from the turn and is always a bound parameter, never text in the SQL.
"""

from __future__ import annotations

from sqlalchemy import Connection, text
from sqlalchemy.exc import SQLAlchemyError

from keel.brain.specs import ViewRef
from keel.budget.rows import ViewRows


def read_view(connection: Connection, ref: ViewRef, entity: str | None, *, limit: int) -> ViewRows:
    """Up to `limit` rows of a view (filtered by the key for a `by` view), and the total.

    The queries run in a savepoint, so a view that fails (a missing table, a bad column)
    is undone alone and leaves the caller's transaction usable.
    """
    if ref.by is not None and entity is None:
        return ViewRows(
            view=ref.view,
            by=ref.by,
            problem=f"no entity key on this link: the view shows one entity's rows ({ref.by})",
        )
    if limit <= 0:
        return ViewRows(view=ref.view, by=ref.by, problem="rows are switched off (state.rows is 0)")
    preparer = connection.dialect.identifier_preparer
    source = preparer.quote(ref.view)
    where, params = "", {}
    if ref.by is not None:
        where, params = f" WHERE {preparer.quote(ref.by)} = :key", {"key": entity}
    try:
        with connection.begin_nested():
            result = connection.execute(
                text(f"SELECT * FROM {source}{where} LIMIT :limit"), {**params, "limit": limit}
            )
            columns = tuple(result.keys())
            rows = tuple(tuple(row) for row in result.fetchall())
            total = len(rows)
            if total == limit:
                counted = connection.execute(text(f"SELECT COUNT(*) FROM {source}{where}"), params)
                total = int(counted.scalar_one())
    except SQLAlchemyError as exc:
        orig = getattr(exc, "orig", None)
        reason = str(orig if orig else exc).splitlines()[0]
        return ViewRows(view=ref.view, by=ref.by, problem=f"could not be read: {reason}")
    return ViewRows(view=ref.view, by=ref.by, columns=columns, rows=rows, total=total)
