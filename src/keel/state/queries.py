"""Brain code's `ctx.query`, run by Keel: read only, bounded in time, and pinned to the
room's tenant exactly as a view is.

A render's statement arrives from its worker (`keel.code.query_relay`); the worker holds no
connection and no connection string. Keel runs it on the turn's own connection, from the
thread that holds the turn's transaction (the one waiting for the render's answers). So
the statement sees what the turn's views see — the same snapshot, and what the turn has
written before — and never waits on the turn's own lock, as a second connection would on
SQLite, whose one writer the turn already is. It runs in a savepoint that is always rolled
back: nothing it does, and nothing Keel sets up for it, outlives it — except on SQLite in a
room with no tenant, where nothing is set up and the authorizer lets it only read.

**Read only.** SQLite (`keel.state.query_sqlite`): an authorizer allows only reading —
SELECT, reading columns, functions, recursive CTEs; a write, a schema change, PRAGMA,
ATTACH, a transaction or savepoint statement is refused before it runs. PostgreSQL
(`keel.state.query_postgres`): the savepoint is made read only (`SET LOCAL
transaction_read_only`, which a later statement cannot turn off inside a subtransaction),
and the statement is sent as a subquery with a bound LIMIT — one query expression, over
the extended protocol, so no second statement and no COMMIT can ride along.

**Pinned.** In a room with a tenant (MANIFEST `tenancy:`), every table and view that has
the tenant's column is shadowed, inside the savepoint, by a temporary view of the same name
keeping only the tenant's rows — none when the room is pinned to no tenant. Both databases
look up an unqualified name among temporary objects first. The key sits in a temporary
table: a bound value, never text in the SQL. What a shadow cannot cover is refused, with a
message saying what to write instead: a tenant relation named with its schema (`main.x`,
`public.x`), and a view that reads one but has not the column itself (SQLite knows exactly,
from its authorizer; PostgreSQL as far as the statement's text and its catalog tell).

**Bounded.** The statement may run until the call's deadline: SQLite's progress handler,
PostgreSQL's `statement_timeout`, stop it there.

**Rows** are dicts of JSON values, at most `MAX_ROWS` of them: numbers, text, booleans and
None as they are; a decimal as an int when whole, else a float; dates, times and
timestamps as ISO 8601 text; a duration as its seconds; bytes as hex text; arrays and JSON
as lists and dicts; anything else (a UUID, an address) as its text.
"""

from __future__ import annotations

import math
import time
from datetime import date, datetime, timedelta
from datetime import time as clock_time
from decimal import Decimal
from typing import Any

from sqlalchemy import Connection

from keel.errors import Refused
from keel.link.values import Tenant
from keel.state import query_postgres, query_sqlite
from keel.state.query_values import MAX_ROWS, Params, Pin


class Queries:
    """`ctx.query` for one turn's renders: the turn's connection, its room's tenant."""

    __slots__ = ("_connection", "_tenant")

    def __init__(self, connection: Connection, tenant: Tenant | None) -> None:
        self._connection = connection
        self._tenant = tenant

    def __call__(self, sql: str, params: Params, deadline: float) -> list[dict[str, Any]]:
        return run_query(self._connection, sql, params, tenant=self._tenant, deadline=deadline)


def run_query(
    connection: Connection,
    sql: str,
    params: Params,
    *,
    tenant: Tenant | None,
    deadline: float,
) -> list[dict[str, Any]]:
    """Run one statement of brain code; its rows. Raises `Refused` for a statement Keel
    will not run, `StoreError` for one the database rejects."""
    pin = None
    if tenant is not None:
        if tenant.withheld is not None or tenant.column is None:
            # Whose rows this room may see is unknown (MANIFEST.yaml did not load).
            raise Refused(f"ctx.query is refused in this room: {tenant.withheld}")
        pin = Pin(column=tenant.column, key=tenant.key)
    if time.monotonic() >= deadline:
        raise Refused("ctx.query came after the call's time was up")
    dialect = connection.dialect.name
    if dialect not in ("sqlite", "postgresql"):
        raise Refused(f"ctx.query cannot read a {dialect} database")
    raw = connection.connection.driver_connection
    if dialect == "sqlite" and pin is None:
        # Nothing to undo: the authorizer lets the statement only read, nothing is set up
        # for it, and a failed read leaves a SQLite transaction as it was.
        columns, rows = query_sqlite.read(raw, sql, params, pin, deadline, connection.info)
    else:
        read = query_sqlite.read if dialect == "sqlite" else query_postgres.read
        savepoint = connection.begin_nested()
        try:
            columns, rows = read(raw, sql, params, pin, deadline, connection.info)
        finally:
            savepoint.rollback()
    if len(rows) > MAX_ROWS:
        raise Refused(
            f"ctx.query returned more than {MAX_ROWS} rows — select what the render needs "
            "(a WHERE, a LIMIT)"
        )
    return [dict(zip(columns, (plain(v) for v in row), strict=True)) for row in rows]


def plain(value: Any) -> Any:
    """A value read from the database as JSON (see the module's docstring)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            return str(value)
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, datetime | date | clock_time):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    return str(value)
