"""The brain's SQL files as statements: splitting them, what each creates, and running them.

`run_files` runs files inside the caller's transaction, so whoever opened it decides what
else commits with them (the record of applied files, Keel's migrations). A failure names
the file and line and leaves the rollback to the caller.

`created_by` reads the object a `CREATE ...` statement makes; it is how `keel state apply`
knows which views a changed file defines and whether an older database already holds a
file's tables. It reads the statement's head only — enough for the forms brains write
(`CREATE [OR REPLACE] [TEMP] [UNIQUE] TABLE|VIEW|INDEX|TRIGGER [IF NOT EXISTS] name`).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from keel.brain.specs import SqlFile
from keel.errors import StateRefused
from keel.store.sql import reason

Kind = Literal["table", "view", "index", "trigger"]

# A dump (`sqlite3 .dump`) wraps itself in BEGIN/COMMIT; inside Keel's own transaction those
# would either fail or end it early, so they are skipped.
_TX_CONTROL = re.compile(
    r"^(BEGIN(\s+(DEFERRED|IMMEDIATE|EXCLUSIVE))?|COMMIT|END)(\s+TRANSACTION)?\s*;?$",
    re.IGNORECASE,
)
_LEADING_COMMENTS = re.compile(r"^(\s*(--[^\n]*(\n|$)|/\*.*?\*/))*\s*", re.DOTALL)

# An identifier as SQLite and PostgreSQL write one: bare, "quoted", `quoted` or [quoted].
_IDENT = r'(?:"(?:[^"]|"")+"|`[^`]+`|\[[^\]]+\]|[A-Za-z_][A-Za-z0-9_$]*)'
_CREATE = re.compile(
    r"CREATE\s+(?:OR\s+REPLACE\s+)?(?P<temp>(?:TEMP|TEMPORARY)\s+)?"
    r"(?:UNIQUE\s+|UNLOGGED\s+|VIRTUAL\s+)?(?P<materialized>MATERIALIZED\s+)?"
    r"(?P<kind>TABLE|VIEW|INDEX|TRIGGER)\s+(?P<if_not_exists>IF\s+NOT\s+EXISTS\s+)?"
    rf"(?P<name>{_IDENT}(?:\s*\.\s*{_IDENT})?)",
    re.IGNORECASE,
)
_DROP_VIEW = re.compile(r"DROP\s+VIEW\b", re.IGNORECASE)
_KINDS: dict[str, Kind] = {"table": "table", "view": "view", "index": "index", "trigger": "trigger"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Created:
    """The object one `CREATE` statement makes.

    `name` is as the database keeps it (a bare name folded to lower case, a quoted one as
    quoted); `written` is the name as the file spells it, to use it in SQL again.
    """

    kind: Kind
    name: str
    schema: str | None
    written: str
    line: int
    temporary: bool = False
    materialized: bool = False
    if_not_exists: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Statement:
    """One statement of a file, with the line it starts on."""

    line: int
    text: str

    @property
    def creates(self) -> Created | None:
        """What this statement creates, if it is a `CREATE` of a table, view, index or trigger."""
        return created_by(self.text, self.line)

    @property
    def drops_a_view(self) -> bool:
        return _DROP_VIEW.match(_body(self.text)) is not None

    @property
    def head(self) -> str:
        """The statement's first words, to name it in a message."""
        words = _body(self.text).split()
        return " ".join(words[:4]) + (" ..." if len(words) > 4 else "")


def statements(text: str) -> Iterator[tuple[int, str]]:
    """Each complete SQL statement of a script, with the line it starts on.

    SQLite says when a statement is complete (a `;` inside a string or a trigger body is
    not the end); transaction control and comment-only tails are left out.
    """
    start = 0
    for index, char in enumerate(text):
        if char != ";":
            continue
        chunk = text[start : index + 1]
        if not sqlite3.complete_statement(chunk):
            continue
        yield from _statement(text, start, chunk)
        start = index + 1
    yield from _statement(text, start, text[start:])


def parsed(file: SqlFile) -> tuple[Statement, ...]:
    """The file's statements as values."""
    return tuple(Statement(line=line, text=text) for line, text in statements(file.text))


def created_by(statement: str, line: int = 1) -> Created | None:
    """The table, view, index or trigger a `CREATE` statement makes; None for anything else."""
    found = _CREATE.match(_body(statement))
    if found is None:
        return None
    parts = _split_name(found["name"])
    return Created(
        kind=_KINDS[found["kind"].lower()],
        name=parts[-1],
        schema=parts[0] if len(parts) == 2 else None,
        written=found["name"],
        line=line,
        temporary=found["temp"] is not None,
        materialized=found["materialized"] is not None,
        if_not_exists=found["if_not_exists"] is not None,
    )


def views_defined(files: Iterable[SqlFile]) -> Mapping[str, str]:
    """Each view the files create, by name, with the path of the (last) file creating it."""
    views: dict[str, str] = {}
    for file in files:
        for statement in parsed(file):
            made = statement.creates
            if made is not None and made.kind == "view":
                views[made.name] = file.path
    return views


def run_files(conn: Connection, files: Iterable[SqlFile], *, undone: str) -> None:
    """Run the files in order on `conn`, inside its open transaction.

    A statement the database refuses raises a `StoreError` naming its file and line;
    `undone` says what the caller's rollback will undo, for the message.
    """
    for file in files:
        if conn.dialect.name == "sqlite":
            _run_statements(conn, file, undone)
        else:
            _run_script(conn, file, undone)


def _run_statements(conn: Connection, file: SqlFile, undone: str) -> None:
    # The sqlite3 driver runs one statement per call (executescript() would commit first).
    for line, statement in statements(file.text):
        try:
            conn.exec_driver_sql(statement)
        except SQLAlchemyError as exc:
            raise StateRefused(
                refused(file, line, reason(exc), undone), path=file.path, line=line
            ) from None


def _run_script(conn: Connection, file: SqlFile, undone: str) -> None:
    # psycopg 3 runs a whole multi-statement text when no parameters are passed, which also
    # keeps PostgreSQL's own syntax ($$-quoted bodies) out of Keel's statement splitting.
    try:
        conn.exec_driver_sql(file.text)
    except DBAPIError as exc:
        line = _error_line(exc, file.text)
        raise StateRefused(
            refused(file, line, reason(exc), undone), path=file.path, line=line
        ) from None


def refused(file: SqlFile, line: int | None, said: str, undone: str) -> str:
    """The message for a statement the database refused (`said`: the database's words)."""
    where = f"{file.path}:{line}" if line is not None else file.path
    return (
        f"{where}: the database refused this SQL: {said} — fix the statement and apply "
        f"again ({undone}: the transaction was rolled back)"
    )


def _statement(text: str, start: int, chunk: str) -> Iterator[tuple[int, str]]:
    lead = _LEADING_COMMENTS.match(chunk)
    skip = lead.end() if lead else 0
    body = chunk[skip:].strip()
    if not body or _TX_CONTROL.match(body):
        return
    yield text.count("\n", 0, start + skip) + 1, chunk


def _body(statement: str) -> str:
    lead = _LEADING_COMMENTS.match(statement)
    return statement[lead.end() if lead else 0 :].strip()


def _split_name(written: str) -> list[str]:
    parts = re.findall(_IDENT, written)
    return [_unquote(part) for part in parts]


def _unquote(part: str) -> str:
    if part[0] == '"':
        return part[1:-1].replace('""', '"')
    if part[0] in "`[":
        return part[1:-1]
    # Unquoted names are folded: PostgreSQL keeps them in lower case, SQLite ignores case.
    return part.lower()


def _error_line(exc: DBAPIError, text: str) -> int | None:
    """The line of a PostgreSQL error, from the position the server reports, if any."""
    diag = getattr(exc.orig, "diag", None)
    position = getattr(diag, "statement_position", None)
    if position is None or not str(position).isdigit():
        return None
    return text.count("\n", 0, int(position) - 1) + 1
