"""The statements every turn runs, compiled once per dialect and run on the driver's cursor.

SQLAlchemy's execution of one statement (its cache key, parameters, execution context and
result metadata) costs several times what SQLite takes to run a turn's small statements,
and a turn runs about ten. These few skip it: each is compiled once per dialect, and runs
on the driver's own cursor, inside the connection's open transaction, with each type's
bind and result processors applied — so values go in and come out as SQLAlchemy would
pass them. A driver error is raised as SQLAlchemy's, so the store's `failing_as` still
says what failed.

SQLAlchemy's cursor events do not see these statements: `traced` counts statements at the
driver (SQLite's trace callback), which sees every one.
"""

from __future__ import annotations

import threading
from collections import namedtuple
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Dialect, Engine, event
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.base import Executable
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.selectable import ReturnsRows

from keel.errors import StoreError

_Processor = Callable[[Any], Any] | None
_REQUIRED = object()  # a parameter the caller must give: the statement has no value for it


@dataclass(frozen=True, slots=True)
class _Form:
    """A statement as one dialect runs it: its SQL, and how its parameters go in."""

    sql: str
    positional: bool
    # (name, its bind processor, the value it has when the caller gives none, or _REQUIRED)
    binds: tuple[tuple[str, _Processor, Any], ...]
    results: tuple[_Processor, ...]

    def values(self, params: Mapping[str, Any]) -> Any:
        given = []
        for name, process, fixed in self.binds:
            value = params.get(name, fixed)
            if value is _REQUIRED:
                raise StoreError(
                    f"no value for the parameter {name!r} of `{self.sql}` — pass it by that name"
                )
            given.append(value if process is None else process(value))
        if self.positional:
            return given
        return {name: value for (name, _, _), value in zip(self.binds, given, strict=True)}

    def rows(self, found: list[Any]) -> list[tuple[Any, ...]]:
        if not any(self.results):
            return found
        processors = self.results
        return [
            tuple(v if p is None else p(v) for p, v in zip(processors, row, strict=True))
            for row in found
        ]


class Hot:
    """One statement of a turn's hot path (see the module docstring)."""

    __slots__ = ("_columns", "_forms", "_named", "_statement")

    def __init__(self, statement: Executable, *, columns: Sequence[str] | None = None) -> None:
        """`columns`: an INSERT's columns, all given on every run (the others take their
        server defaults)."""
        self._statement = statement
        self._columns = None if columns is None else list(columns)
        self._forms: dict[str, _Form] = {}
        self._named: Any = None  # the named tuple type of `named`, made on first use

    def rows(self, conn: Connection, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        """Run the statement and return every row it gives."""
        form = self._form(conn.dialect)
        values = form.values(params)
        with _cursor(conn, form.sql, values) as cursor:
            cursor.execute(form.sql, values)
            return form.rows(cursor.fetchall())

    def named(self, conn: Connection, params: Mapping[str, Any]) -> list[Any]:
        """`rows`, each a named tuple with the statement's column names as fields."""
        if self._named is None:
            names = self._statement.exported_columns.keys()  # type: ignore[attr-defined]
            self._named = namedtuple("Row", names)  # type: ignore[misc]
        return [self._named._make(row) for row in self.rows(conn, params)]

    def run(self, conn: Connection, params: Mapping[str, Any]) -> int:
        """Run the statement once, for what it writes; return how many rows it touched."""
        return self.many(conn, (params,))

    def many(self, conn: Connection, params: Sequence[Mapping[str, Any]]) -> int:
        """Run the statement once per parameter set, in one driver call; return how many
        rows it touched."""
        form = self._form(conn.dialect)
        values = [form.values(p) for p in params]
        with _cursor(conn, form.sql, values) as cursor:
            if len(values) == 1:
                cursor.execute(form.sql, values[0])
            else:
                cursor.executemany(form.sql, values)
            return int(cursor.rowcount)

    def _form(self, dialect: Dialect) -> _Form:
        form = self._forms.get(dialect.name)
        if form is None:
            form = _compile(self._statement, dialect, self._columns)
            self._forms[dialect.name] = form
        return form


def _compile(statement: Executable, dialect: Dialect, columns: list[str] | None) -> _Form:
    if not isinstance(statement, ReturnsRows):
        raise StoreError(f"{type(statement).__name__} cannot run as a hot statement")
    compiled = statement.compile(dialect=dialect, column_keys=columns)
    if not isinstance(compiled, SQLCompiler):
        raise StoreError(f"{type(statement).__name__} did not compile to SQL for {dialect.name}")
    binds = []
    for name in (compiled.positiontup or ()) if dialect.positional else list(compiled.binds):
        bind = compiled.binds[name]
        if bind.expanding:
            raise StoreError(f"a hot statement cannot take a list for {name!r} — run it as usual")
        fixed = _REQUIRED if bind.required else bind.effective_value
        process = bind.type.dialect_impl(dialect).bind_processor(dialect)
        binds.append((name, process, fixed))
    results = tuple(
        column.type.dialect_impl(dialect).result_processor(dialect, None)
        for column in statement.exported_columns
    )
    return _Form(
        sql=compiled.string, positional=dialect.positional, binds=tuple(binds), results=results
    )


def on_driver(
    conn: Connection, sql: str, params: Sequence[Any] = ()
) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
    """Plain SQL (in the driver's parameter style) on the driver's cursor, as a hot
    statement runs: its columns (none for a statement that reads nothing) and rows."""
    with _cursor(conn, sql, params) as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
        return tuple(d[0] for d in cursor.description or ()), rows


@contextmanager
def _cursor(conn: Connection, sql: str, values: Any) -> Iterator[Any]:
    """The driver's cursor on `conn`, closed after; a driver error raised as SQLAlchemy's."""
    dialect = conn.dialect
    cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
    try:
        yield cursor
    except dialect.loaded_dbapi.Error as exc:
        error = DBAPIError.instance(sql, values, exc, dialect.loaded_dbapi.Error, dialect=dialect)
        raise error from exc
    finally:
        cursor.close()


@contextmanager
def traced(engine: Engine, *, this_thread: bool = False) -> Iterator[list[str]]:
    """Every statement SQLite runs on the engine's connections while the block runs, as
    the driver sees them (this module's included; a trigger's own lines left out) — only
    those run in this thread, with `this_thread` (a process's workers share the engine)."""
    if engine.dialect.name != "sqlite":
        raise StoreError(f"statements can be traced on SQLite only, not {engine.dialect.name}")
    sent: list[str] = []
    here = threading.get_ident() if this_thread else None

    def trace(sql: str) -> None:
        if not sql.startswith("--") and here in (None, threading.get_ident()):
            sent.append(" ".join(sql.split()))

    def checkout(dbapi_connection: Any, *_: Any) -> None:
        dbapi_connection.set_trace_callback(trace)

    def checkin(dbapi_connection: Any, *_: Any) -> None:
        dbapi_connection.set_trace_callback(None)

    event.listen(engine, "checkout", checkout)
    event.listen(engine, "checkin", checkin)
    try:
        yield sent
    finally:
        event.remove(engine, "checkout", checkout)
        event.remove(engine, "checkin", checkin)
