"""The brain's database, read only, for `render(entity, ctx)`: `ctx.query(sql, params)`.

It is the same database the context's views come from. Keel works out how to reach it
(`source_for`, in Keel's process) and hands the worker a plain description; the worker
opens its own connections, so brain code never holds Keel's:

- SQLite: the file opened through a `file:...?mode=ro` URI — any write is refused by
  SQLite itself ("attempt to write a readonly database");
- PostgreSQL: psycopg with the session read only, so every transaction is READ ONLY, and
  each call's statements bounded by what is left of its timeout.

Parameters are named, `:name` with a dict, on both (`?` with a sequence works on SQLite).
Rows come back as a list of dicts. Each call gets its own connection (SQLite) or borrows
one (PostgreSQL); whatever it opened is closed or rolled back when the call ends.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlite3

# The bind-parameter pattern SQLAlchemy's text() uses: `:name`, not `::cast` nor `\:`.
_NAMED = re.compile(r"(?<![:\w\\]):(\w+)(?!:)")
_IDLE_CONNECTIONS = 4


def source_for(url: str | None) -> dict[str, Any]:
    """How a worker reaches the database at `url` (in Keel's process; uses SQLAlchemy)."""
    if url is None:
        return {"kind": "none", "why": "this runner was given no database"}
    from sqlalchemy.engine import make_url  # here: a worker must not import SQLAlchemy

    parsed = make_url(url)
    backend = parsed.get_backend_name()
    database = parsed.database or ""
    if backend == "sqlite":
        if database in ("", ":memory:") or parsed.query.get("mode") == "memory":
            return {
                "kind": "none",
                "why": "the database is an in-memory SQLite one, which only Keel's own process "
                "can see — use a SQLite file or PostgreSQL",
            }
        if database.startswith("file:"):
            return {"kind": "sqlite", "uri": database}
        return {"kind": "sqlite", "path": database}
    if backend == "postgresql":
        params: dict[str, Any] = {
            "host": parsed.host,
            "port": parsed.port,
            "user": parsed.username,
            "password": parsed.password,
            "dbname": parsed.database,
        }
        for key, value in parsed.query.items():
            params[key] = value[-1] if isinstance(value, tuple) else value
        return {"kind": "postgresql", "params": {k: v for k, v in params.items() if v is not None}}
    return {"kind": "none", "why": f"brain code cannot read a {backend} database"}


class ReadOnly:
    """The worker's side: opens read-only connections for calls (thread-safe)."""

    def __init__(self, source: Mapping[str, Any]) -> None:
        self._source = dict(source)
        self._lock = threading.Lock()
        self._idle: list[Any] = []

    @property
    def kind(self) -> str:
        return str(self._source["kind"])

    def warm(self) -> None:
        """Import the driver now, at start-up, rather than inside a call's timeout."""
        if self.kind == "postgresql":
            import psycopg  # noqa: F401 - a cold import costs half a second; pay it now

    def for_call(self, deadline: float) -> CallDatabase:
        return CallDatabase(self, deadline)

    def close(self) -> None:
        """Close the connections kept for later calls (a worker simply ends instead)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def _sqlite(self, deadline: float) -> sqlite3.Connection:
        # Imported on first use: a worker whose code never queries starts without them.
        import sqlite3
        from urllib.parse import quote

        uri = self._source.get("uri")
        if uri is None:
            uri = f"file:{quote(str(self._source['path']))}?mode=ro"
        elif "mode=" not in uri:
            uri += ("&" if "?" in uri else "?") + "mode=ro"
        wait = max(0.0, deadline - time.monotonic())
        conn = sqlite3.connect(uri, uri=True, timeout=wait, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        return conn

    def _borrow(self) -> Any:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        import psycopg  # here: only brains on PostgreSQL need it
        from psycopg.rows import dict_row

        conn = psycopg.connect(**self._source["params"], row_factory=dict_row)
        conn.read_only = True
        return conn

    def _give_back(self, conn: Any) -> None:
        try:
            conn.rollback()
        except Exception:  # noqa: BLE001 - a broken connection is simply not kept
            conn.close()
            return
        with self._lock:
            if len(self._idle) < _IDLE_CONNECTIONS:
                self._idle.append(conn)
                return
        conn.close()


class CallDatabase:
    """`ctx.query` for one call: opens on first use, released when the call ends."""

    def __init__(self, owner: ReadOnly, deadline: float) -> None:
        self._owner = owner
        self._deadline = deadline
        self._conn: Any = None

    def query(
        self, sql: str, params: Mapping[str, Any] | Sequence[Any] | None = None
    ) -> list[dict[str, Any]]:
        """Run one read-only statement; its rows as dicts (column name → value)."""
        kind = self._owner.kind
        if kind == "none":
            raise RuntimeError(f"ctx.query cannot read the database: {self._owner._source['why']}")
        if kind == "sqlite":
            if self._conn is None:
                self._conn = self._owner._sqlite(self._deadline)
            rows = self._conn.execute(sql, params if params is not None else ()).fetchall()
            return [dict(row) for row in rows]
        return self._postgres(sql, params)

    def _postgres(
        self, sql: str, params: Mapping[str, Any] | Sequence[Any] | None
    ) -> list[dict[str, Any]]:
        if self._conn is None:
            self._conn = self._owner._borrow()
        left_ms = max(1, int((self._deadline - time.monotonic()) * 1000))
        self._conn.execute(f"SET LOCAL statement_timeout = {left_ms}")
        if isinstance(params, Mapping):
            sql = _NAMED.sub(r"%(\1)s", sql.replace("%", "%%"))
        cursor = self._conn.execute(sql, params)
        if cursor.description is None:
            return []
        return [dict(row) for row in cursor.fetchall()]

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if self._owner.kind == "sqlite":
            conn.close()
        else:
            self._owner._give_back(conn)
