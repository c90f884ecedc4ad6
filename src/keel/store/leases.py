"""Work a chat surface does for a row, once, whichever process gets there: a lease, a
count of attempts, and why the last one failed.

The outbox (a message to deliver, `keel.store.delivery`) and a forum topic to open
(`keel.store.topics`) are the same kind of row: `pending` until done, taken by one process
for a while (`take`; a process that dies holding it lets it go when the lease ends), then
`done` once, or held for the next attempt with the reason (`attempt_failed`), or failed
for good (`final`). Each table names its own columns; the rules are these.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Column, ColumnElement, Connection, or_, update

from keel.store.sql import utc


@dataclass(frozen=True, slots=True, kw_only=True)
class Leased:
    """A table's columns for pending work: its state, lease, attempts and reason."""

    state: Column[Any]
    lease: Column[Any]
    attempts: Column[Any]
    reason: Column[Any]
    what: str  # the work, for errors: "a delivery", "a topic's opening"

    def free(self, now: datetime) -> ColumnElement[bool]:
        """Rows no process holds at `now`."""
        return or_(self.lease.is_(None), self.lease < utc(now, f"the time {self.what} is read"))

    def take(
        self, conn: Connection, row: ColumnElement[bool], now: datetime, until: datetime
    ) -> bool:
        """Take the pending `row` until `until`; False when another process holds it (or it
        is no longer pending)."""
        return self._pending(conn, row, {self.lease.name: self._until(until)}, self.free(now))

    def done(self, conn: Connection, row: ColumnElement[bool], **values: Any) -> bool:
        """Record the pending `row` done with `values`; False if it was not pending
        (another process did it first)."""
        values |= {
            self.attempts.name: self.attempts + 1,
            self.reason.name: None,
            self.lease.name: None,
        }
        return self._pending(conn, row, values)

    def attempt_failed(
        self,
        conn: Connection,
        row: ColumnElement[bool],
        reason: str,
        *,
        final: bool,
        until: datetime | None = None,
    ) -> None:
        """Count a failed attempt, holding the row `until` the next one; `final` marks it
        failed, with the reason."""
        values: dict[str, Any] = {
            self.attempts.name: self.attempts + 1,
            self.reason.name: reason,
            self.lease.name: None if until is None else self._until(until),
        }
        if final:
            values[self.state.name] = "failed"
        self._pending(conn, row, values)

    def _pending(
        self, conn: Connection, row: ColumnElement[bool], values: dict[str, Any], *more: Any
    ) -> bool:
        table = self.state.table
        found = conn.execute(
            update(table).where(row, self.state == "pending", *more).values(**values)
        )
        return found.rowcount > 0

    def _until(self, until: datetime) -> datetime:
        return utc(until, f"the end of {self.what}'s lease")
