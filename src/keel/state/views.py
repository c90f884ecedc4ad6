"""Reading a context's views: whole, or filtered `by` the entity key, capped at `state.rows`.

View and column names come from brain files and are always quoted as identifiers; the
entity key comes from the turn and is always a bound parameter, never text in the SQL.

In a room pinned to a tenant (MANIFEST `tenancy:`), every view that has the tenant's
column shows only the tenant's rows, whatever brought the view — a context of another
feature, a role's own state, a run: its columns are looked up first, in the same read, so
a view's definition can never be out of date here.

A view that cannot be read shows the model one plain line; what the database said goes to
the `keel.state` log, never into the model's input.

Every read has a deadline, MANIFEST `state.readTimeoutMs`, that covers all its queries
(the columns, the rows, the count): a view that never ends — a recursive query without a
stop, whose first rows come at once but whose count never does — or one that is merely
very slow is stopped by the database and shows the model a stub of its own, and the turn
goes on, its transaction as it was. How, on each database, in the fewest statements:

- SQLite: a progress handler on the connection, installed for the read and removed after.
  A SELECT that fails or is interrupted undoes nothing else on SQLite (the transaction
  and what it wrote stay), so a read needs no savepoint.
- PostgreSQL: any failed statement aborts the whole transaction, so a read runs in a
  savepoint that is always rolled back; `statement_timeout` is set locally (SET LOCAL)
  before each query, to what is left of the deadline. SET LOCAL outlives a savepoint that
  is released and is undone only when it is rolled back — another reason the read never
  keeps its savepoint. The savepoint and the first timeout go in one round trip.

The statements are sent as the driver takes them (`exec_driver_sql`): names quoted, the
key and the limit bound; SQLAlchemy has nothing to compile.
"""

from __future__ import annotations

import math
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from keel.brain.files import MANIFEST_PATH
from keel.brain.specs import ContextSpec, ViewRef
from keel.budget.rows import ViewRows
from keel.link.values import Link, Tenant
from keel.log import logger, shown

LOG = logger("state")
UNREADABLE = "could not be read (the log says why)"
# SQLite's virtual machine steps between two looks at the clock: a few microseconds' work.
_STEPS = 1000
# PostgreSQL's SQLSTATE for a statement cancelled (here: by statement_timeout).
_CANCELLED = "57014"
_SAVEPOINT = "keel_view_read"


def too_slow(timeout_ms: int) -> str:
    """What the model sees for a view whose read passed its deadline."""
    return f"took longer than state.readTimeoutMs ({timeout_ms} ms) — not read this turn"


def late_warnings(views: Iterable[ViewRows], timeout_ms: int) -> tuple[str, ...]:
    """A warning for the turn for each view that passed its deadline: which, and the fix."""
    return tuple(
        f"view '{rows.view}' took longer than state.readTimeoutMs ({timeout_ms} ms) and shows "
        "as a stub — make it end sooner (a recursive query needs a stop, a filter an index), "
        f"or raise state.readTimeoutMs in {MANIFEST_PATH}"
        for rows in views
        if rows.problem == too_slow(timeout_ms)
    )


@dataclass(slots=True, kw_only=True)
class TurnViews:
    """The state views one turn reads, in its transaction: each linked context's (`of`, by
    the link's key), the role's own (`own`), every read filtered to the room's `tenant`
    and bounded by `timeout_ms`. It keeps what it read, for the turn's journal (`read`),
    and a warning for each view that ran out of time (`late`)."""

    connection: Connection
    contexts: Mapping[str, ContextSpec]
    rows: int  # `state.rows`: at most this many rows of each view
    timeout_ms: int
    tenant: Tenant | None = None
    read: dict[tuple[str, str | None], tuple[ViewRows, ...]] = field(default_factory=dict)
    late: list[str] = field(default_factory=list)

    def of(self, link: Link) -> tuple[ViewRows, ...]:
        """A linked context's views as they are now."""
        views = self._each((ref, link.entity) for ref in self.contexts[link.context].data)
        self.read[link.pair] = views
        return views

    def own(self, views: Iterable[str]) -> tuple[ViewRows, ...]:
        """Views a role reads as its own state, whole (no key)."""
        return self._each((ViewRef(view=view), None) for view in views)

    def _each(self, refs: Iterable[tuple[ViewRef, str | None]]) -> tuple[ViewRows, ...]:
        limit, timeout_ms, tenant = self.rows, self.timeout_ms, self.tenant
        views = tuple(
            read_view(self.connection, ref, key, limit=limit, timeout_ms=timeout_ms, tenant=tenant)
            for ref, key in refs
        )
        self.late.extend(late_warnings(views, timeout_ms))
        return views


def read_view(
    connection: Connection,
    ref: ViewRef,
    entity: str | None,
    *,
    limit: int,
    timeout_ms: int,
    tenant: Tenant | None = None,
) -> ViewRows:
    """Up to `limit` rows of a view (filtered by the key for a `by` view, and to the room's
    tenant), and how many it holds in all — read within `timeout_ms`.

    A view that fails (a missing table, a bad column) or runs out of time leaves the
    caller's transaction usable and as it was (see the module for how, on each database).
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
        return _rows_off(ref)
    return _within(connection, ref, timeout_ms, lambda d: _read(d, ref, entity, limit, tenant))


def timed_read(
    connection: Connection,
    ref: ViewRef,
    *,
    limit: int,
    timeout_ms: int,
    clock: Callable[[], float],
) -> tuple[ViewRows, float]:
    """A view read as a turn reads it, within `timeout_ms`, and how long it took in seconds
    by `clock` — for doctor, which has no turn and so no key.

    A `by` view is read with a key it holds (the first one it gives), so the database
    takes the path a real key takes; finding that key counts in the time and the deadline.
    """
    if limit <= 0:
        return _rows_off(ref), 0.0

    def read(deadline: _Deadline) -> ViewRows:
        key: Any = None
        if ref.by is not None:
            column, source = deadline.quote(ref.by), deadline.quote(ref.view)
            _, first = deadline.execute(
                f"SELECT {column} FROM {source} WHERE {column} IS NOT NULL LIMIT 1"
            )
            if not first:
                return ViewRows(view=ref.view, by=ref.by)  # no key: what a turn reads is empty
            key = first[0][0]
        return _read(deadline, ref, key, limit, None)

    start = clock()
    rows = _within(connection, ref, timeout_ms, read)
    return rows, clock() - start


def _rows_off(ref: ViewRef) -> ViewRows:
    return ViewRows(view=ref.view, by=ref.by, problem="rows are switched off (state.rows is 0)")


def _within(
    connection: Connection, ref: ViewRef, timeout_ms: int, read: Callable[[_Deadline], ViewRows]
) -> ViewRows:
    """`read` run within the deadline, leaving the transaction as it was; a stub when the
    database stops it at the deadline or cannot run it."""
    deadline = _Deadline(connection, timeout_ms)
    try:
        with deadline:
            return read(deadline)
    except SQLAlchemyError as exc:
        if deadline.stopped(exc):
            LOG.warning(
                "view %s took longer than state.readTimeoutMs (%d ms): its read was stopped",
                shown(ref.view),
                timeout_ms,
            )
            return ViewRows(view=ref.view, by=ref.by, problem=too_slow(timeout_ms))
        orig = getattr(exc, "orig", None)
        LOG.warning("view %s could not be read: %s", shown(ref.view), shown(str(orig or exc)))
        return ViewRows(view=ref.view, by=ref.by, problem=UNREADABLE)


class _Deadline:
    """One read's deadline, set on its connection while the read runs (see the module)."""

    def __init__(self, connection: Connection, timeout_ms: int) -> None:
        self.connection = connection
        self._postgres = connection.dialect.name == "postgresql"
        # psycopg takes %s; sqlite3 takes ?.
        self.mark = "%s" if self._postgres else "?"
        self._quote = connection.dialect.identifier_preparer.quote
        self._timeout_ms = timeout_ms
        self._end = time.monotonic() + timeout_ms / 1000
        self._passed = False
        self._timed = False  # whether the next query's timeout is set already

    def __enter__(self) -> _Deadline:
        if self._postgres:
            # An integer Keel computed: no text from the brain is in this statement.
            self.connection.exec_driver_sql(
                f"SAVEPOINT {_SAVEPOINT}; SET LOCAL statement_timeout = {self._timeout_ms}"
            )
            self._timed = True
        else:
            self._driver().set_progress_handler(self._check, _STEPS)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._postgres:
            self.connection.exec_driver_sql(f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}")
        else:
            self._driver().set_progress_handler(None, 0)

    def quote(self, name: str) -> str:
        """A name as an identifier in this read's SQL (a % doubled for psycopg)."""
        quoted = self._quote(name)
        return quoted.replace("%", "%%") if self._postgres else quoted

    def execute(
        self, sql: str, params: tuple[Any, ...] = ()
    ) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
        """Run one of the read's queries (`self.mark` for each parameter) with what is left
        of the deadline; return its columns and rows."""
        if self._postgres:
            if not self._timed:
                left = max(1, math.ceil((self._end - time.monotonic()) * 1000))
                self.connection.exec_driver_sql(f"SET LOCAL statement_timeout = {left}")
            self._timed = False
            result = self.connection.exec_driver_sql(sql, params)
            return tuple(result.keys()), [tuple(row) for row in result.fetchall()]
        # On SQLite the driver's own cursor: SQLAlchemy's execution costs more than a
        # turn's small reads; its error is raised as SQLAlchemy's. (keel.store.hot has a
        # helper for this; a turn's view reads stay in this module, one stage of the walk.)
        cursor = self._driver().cursor()
        try:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
            return tuple(d[0] for d in cursor.description), rows
        except sqlite3.Error as exc:
            raise DBAPIError.instance(sql, params, exc, sqlite3.Error) from exc
        finally:
            cursor.close()

    def stopped(self, exc: SQLAlchemyError) -> bool:
        """Whether `exc` is the database stopping the read at its deadline."""
        return self._passed or getattr(getattr(exc, "orig", None), "sqlstate", None) == _CANCELLED

    def _check(self) -> int:
        # SQLite calls this every _STEPS steps of a query; non-zero interrupts the query.
        if time.monotonic() < self._end:
            return 0
        self._passed = True
        return 1

    def _driver(self) -> Any:
        return self.connection.connection.dbapi_connection


def _read(
    deadline: _Deadline, ref: ViewRef, entity: object, limit: int, tenant: Tenant | None
) -> ViewRows:
    quote, mark = deadline.quote, deadline.mark
    source = quote(ref.view)
    conditions: list[str] = []
    params: list[Any] = []
    if ref.by is not None:
        conditions.append(f"{quote(ref.by)} = {mark}")
        params.append(entity)
    if (
        tenant is not None
        and tenant.column is not None
        and tenant.column in _columns(deadline, source)
    ):
        if tenant.key is None:
            conditions.append("1 = 0")  # pinned to no tenant: no tenant's rows belong here
        else:
            conditions.append(f"{quote(tenant.column)} = {mark}")
            params.append(tenant.key)
    where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
    columns, found = deadline.execute(
        f"SELECT * FROM {source}{where} LIMIT {mark}", (*params, limit)
    )
    rows = tuple(found)
    total = len(rows)
    if total == limit:
        _, count = deadline.execute(f"SELECT COUNT(*) FROM {source}{where}", tuple(params))
        total = int(count[0][0])
    return ViewRows(view=ref.view, by=ref.by, columns=columns, rows=rows, total=total)


def _columns(deadline: _Deadline, source: str) -> tuple[str, ...]:
    """The view's columns, from the database as it is now (one query that reads no row)."""
    return deadline.execute(f"SELECT * FROM {source} WHERE 1 = 0")[0]
