"""`ctx.query` on SQLite: an authorizer that lets a statement only read, and temporary views
that keep a pinned room to its tenant's rows (see `keel.state.queries`).

Called inside a savepoint of the turn's transaction, which the caller rolls back: the
temporary table holding the key and the shadowing views go with it. The authorizer sees
every table and column the statement reads, with the schema it is in and the innermost
view that reads it, so what the shadows cannot cover is known exactly: a tenant relation
read from `main` outside any view (`main.x`), or through a view that is not shadowed
itself (one without the tenant's column).
"""

from __future__ import annotations

import secrets
import sqlite3
import time
from typing import Any

from keel.errors import Refused, StoreError
from keel.state.query_values import MAX_ROWS, Params, Pin, Rows, named, quoted

# Where the connection's info keeps the relations with the tenant's column.
_CACHE = "keel.tenant_relations"
# How many virtual machine steps between two looks at the clock.
_STEPS = 10_000
_READS = (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE)
_WRITES = {
    sqlite3.SQLITE_INSERT: "insert into",
    sqlite3.SQLITE_UPDATE: "update",
    sqlite3.SQLITE_DELETE: "delete from",
    sqlite3.SQLITE_PRAGMA: "run the pragma",
    sqlite3.SQLITE_ATTACH: "attach",
    sqlite3.SQLITE_TRANSACTION: "begin or end a transaction",
    sqlite3.SQLITE_SAVEPOINT: "use a savepoint",
}
_TENANT_RELATIONS = """
SELECT m.name FROM main.sqlite_master AS m
WHERE m.type IN ('table', 'view') AND EXISTS (
    SELECT 1 FROM pragma_table_info(m.name, 'main') AS p WHERE lower(p.name) = lower(?)
)
"""


def read(
    raw: Any,
    sql: str,
    params: Params,
    pin: Pin | None,
    deadline: float,
    info: dict[str, Any],
) -> Rows:
    """Run the statement on the sqlite3 connection `raw`, read only and pinned; `info`
    lives as long as the connection, and keeps which relations have the tenant's column
    until the schema changes."""
    connection: sqlite3.Connection = raw
    try:
        pinned = frozenset() if pin is None else _shadow(connection, pin, sql, info)
    except sqlite3.Error as exc:
        raise StoreError(f"ctx.query cannot be kept to this room's tenant: {exc}") from None
    gate = _Gate(pinned, pin.column if pin is not None else "")
    cursor = connection.cursor()
    # Setting an authorizer expires every statement the connection has prepared: one the
    # sqlite3 module cached outside a pinned room is prepared again, with the shadows.
    connection.set_authorizer(gate)
    connection.set_progress_handler(lambda: int(time.monotonic() >= deadline), _STEPS)
    try:
        cursor.execute(sql, () if params is None else params)
        columns = tuple(d[0] for d in cursor.description or ())
        rows = cursor.fetchmany(MAX_ROWS + 1) if cursor.description else []
    except sqlite3.Error as exc:
        if gate.refusal is not None:
            raise Refused(gate.refusal) from None
        if time.monotonic() >= deadline:
            raise StoreError("ctx.query ran past the call's time and was stopped") from None
        raise StoreError(f"the database refused the statement: {exc}") from None
    finally:
        cursor.close()
        connection.set_authorizer(None)
        connection.set_progress_handler(None, 0)
    return columns, rows


def _shadow(
    connection: sqlite3.Connection, pin: Pin, sql: str, info: dict[str, Any]
) -> frozenset[str]:
    """Shadow the relations of `main` with the tenant's column that the statement names;
    the names of all of them (lower case), for the authorizer.

    Only a name in the statement's text can find a shadow, so only those get one; a read
    of any other goes through a view, and the authorizer judges that.
    """
    names = _tenant_relations(connection, pin.column, info)
    mentioned = named(sql)
    if pin.key is None:
        keep = "0"  # pinned to no tenant: no tenant's rows belong here
    else:
        holder = quoted(f"keel_pin_{secrets.token_hex(8)}")
        connection.execute(f"CREATE TEMP TABLE {holder} AS SELECT ? AS key", (pin.key,))
        keep = f"{quoted(pin.column)} = (SELECT key FROM temp.{holder})"
    for name in (n for n in names if n.casefold() in mentioned):
        connection.execute(
            f"CREATE TEMP VIEW {quoted(name)} AS SELECT * FROM main.{quoted(name)} WHERE {keep}"
        )
    return frozenset(name.lower() for name in names)


def _tenant_relations(
    connection: sqlite3.Connection, column: str, info: dict[str, Any]
) -> list[str]:
    """The relations of `main` with the column, read again only when the schema changed."""
    (version,) = connection.execute("PRAGMA main.schema_version").fetchone()
    known = info.get(_CACHE)
    if known is not None and known[:2] == (version, column):
        names: list[str] = known[2]
        return names
    try:
        names = [row[0] for row in connection.execute(_TENANT_RELATIONS, (column,))]
    except sqlite3.Error:
        names = _one_by_one(connection, column)  # a broken view fails the query
    info[_CACHE] = (version, column, names)
    return names


def _one_by_one(connection: sqlite3.Connection, column: str) -> list[str]:
    """The relations with the column, asked one at a time (a view that cannot be read
    has no columns to ask about, and cannot be read by the statement either)."""
    found = []
    master = "SELECT name FROM main.sqlite_master WHERE type IN ('table', 'view')"
    for (name,) in connection.execute(master).fetchall():
        try:
            info = connection.execute(f"PRAGMA main.table_info({quoted(name)})").fetchall()
        except sqlite3.Error:
            continue
        if any(str(row[1]).lower() == column.lower() for row in info):
            found.append(name)
    return found


class _Gate:
    """The authorizer: reading only, and no tenant relation but through its shadow."""

    def __init__(self, pinned: frozenset[str], column: str) -> None:
        self.pinned = pinned
        self.column = column
        self.refusal: str | None = None

    def __call__(
        self, action: int, arg1: str | None, _arg2: str | None, db: str | None, inner: str | None
    ) -> int:
        if action == sqlite3.SQLITE_READ:
            return self._read(arg1 or "", db, inner)
        if action in _READS:
            return sqlite3.SQLITE_OK
        verb = _WRITES.get(action, "change the database")
        what = f" {arg1}" if arg1 and action in _WRITES else ""
        return self._refuse(f"ctx.query only reads: this statement would {verb}{what}")

    def _read(self, table: str, db: str | None, inner: str | None) -> int:
        if table.lower() not in self.pinned or db == "temp":
            return sqlite3.SQLITE_OK
        if inner is not None and inner.lower() in self.pinned:
            return sqlite3.SQLITE_OK  # read by a shadow, or by a view that is shadowed itself
        if inner is None:
            return self._refuse(
                f"ctx.query reads {db or 'main'}.{table} by its schema's name, which Keel "
                f"cannot keep to this room's tenant ({self.column}) — write {table} alone: "
                "Keel shows it with this tenant's rows only"
            )
        return self._refuse(
            f"ctx.query reads {table} through the view {inner}, which has no {self.column} "
            f"column, so Keel cannot keep it to this room's tenant — read {table} itself, "
            f"or add {self.column} to {inner}"
        )

    def _refuse(self, reason: str) -> int:
        if self.refusal is None:
            self.refusal = reason
        return sqlite3.SQLITE_DENY
