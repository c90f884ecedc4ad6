"""The record of the brain's `state/*.sql` files a database has applied: path, sha256, when.

`keel.state.files` decides what runs; this module only reads and writes `keel_state_files`,
inside the caller's transaction. A database Keel has not migrated yet has no record: it
reads as empty, so looking never changes the database.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, select

from keel.store import schema
from keel.store.sql import upsert, utc

_TABLE = schema.state_files


@dataclass(frozen=True, slots=True, kw_only=True)
class AppliedFile:
    """One state file as the database recorded it when it was applied."""

    path: str
    sha256: str
    applied_at: datetime


def recorded(conn: Connection) -> tuple[AppliedFile, ...]:
    """Every recorded file, by path; empty when the record does not exist yet."""
    if not conn.dialect.has_table(conn, _TABLE.name):
        return ()
    rows = conn.execute(
        select(_TABLE.c.path, _TABLE.c.sha256, _TABLE.c.applied_at).order_by(_TABLE.c.path)
    )
    return tuple(
        AppliedFile(path=path, sha256=sha256, applied_at=applied_at)
        for path, sha256, applied_at in rows
    )


def record(conn: Connection, path: str, sha256: str, at: datetime) -> None:
    """Record `path` as applied with this hash, replacing what was recorded of it before."""
    stmt = upsert(conn.dialect.name, _TABLE, keys=("path",), update=("sha256", "applied_at"))
    conn.execute(stmt, {"path": path, "sha256": sha256, "applied_at": utc(at, "applied_at")})
