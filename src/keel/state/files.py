"""The brain's `state/*.sql` files against one database: what is applied, and applying the rest.

A database records each state file it applied, by path and sha256 (`keel_state_files`).
`apply_state` runs the files not recorded yet, in name order, and records each — all in one
transaction, so it can run any number of times and a failure leaves nothing. A recorded
file whose text changed is never run again (its tables and rows are already there): it is
reported as `changed` with the way forward. A file that only defines views can have them
dropped and created again from its new text (`rebuild_views=True`); anything else belongs
in a new file. `state_status` tells the same without changing anything.

The transaction migrates Keel's own tables first (the record is one of them). On
PostgreSQL that takes the advisory lock the migrations hold to the end of the transaction,
so processes that apply together queue and the later ones find the files recorded; on
SQLite the store's transactions take the write lock when they begin.

A database filled by an older Keel (which applied every file at once and kept no record)
is recognised by an empty record while tables or views the files create already exist.
Then a file whose tables and views all exist is recorded without running ("adopted"), and
so is a file that creates none (its rows came with the rest); a file none of whose tables
and views exist is newer and runs; a file with some but not all is refused, naming both.
A table or view created `IF NOT EXISTS` is left out of this reckoning: it may have been
there before the file ran.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Literal

from sqlalchemy import Connection, Engine, inspect
from sqlalchemy.exc import SQLAlchemyError

from keel.brain.specs import SqlFile
from keel.errors import StoreError
from keel.state.scripts import Created, Statement, parsed, run_files
from keel.store import migrations
from keel.store.sql import failing_as, reason
from keel.store.state_files import AppliedFile, record, recorded
from keel.store.store import Store

Status = Literal["applied", "changed", "new", "missing"]
_Action = Literal["keep", "run", "adopt", "refuse", "changed"]

_UNDONE = "nothing was applied"


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class StateFile:
    """One state file against one database.

    `applied`: recorded with the hash it has now; `changed`: recorded with another hash;
    `new`: not recorded; `missing`: recorded, but no longer among the brain's files.
    `advice` says what to do about a file that is not `applied`.
    """

    path: str
    status: Status
    sha256: str | None = None
    applied_sha256: str | None = None
    applied_at: datetime | None = None
    advice: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StateReport:
    """What `apply_state` did, and every file's status afterwards, by path."""

    files: tuple[StateFile, ...]
    ran: tuple[str, ...] = ()
    adopted: tuple[str, ...] = ()
    rebuilt: tuple[str, ...] = ()

    @property
    def applied(self) -> tuple[str, ...]:
        """The files the database now holds as they are on disk."""
        return tuple(f.path for f in self.files if f.status == "applied")

    @property
    def changed(self) -> tuple[StateFile, ...]:
        """Files changed since they were applied, and left as they were."""
        return tuple(f for f in self.files if f.status == "changed")

    @property
    def missing(self) -> tuple[StateFile, ...]:
        return tuple(f for f in self.files if f.status == "missing")


def file_sha256(file: SqlFile) -> str:
    """The file's hash; line endings do not count, so a checkout's CRLF is no change."""
    text = file.text.replace("\r\n", "\n")
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def state_status(engine: Engine, files: Iterable[SqlFile]) -> tuple[StateFile, ...]:
    """Every file's status against the database, changing nothing (not even migrating)."""
    what = f"read the state files applied to {_where(engine)}"
    with failing_as(what), engine.connect() as conn:
        steps, missing = _plan(conn, _ordered(files))
    return _statuses(steps, missing, done={})


def apply_state(
    engine: Engine,
    files: Iterable[SqlFile],
    *,
    rebuild_views: bool = False,
    clock: Callable[[], datetime] = _now,
) -> StateReport:
    """Apply the files the database has not recorded, in name order, in one transaction.

    With `rebuild_views`, a changed file that only defines views has them re-created; one
    that does more refuses the whole apply. Raises `StoreError` (nothing applied) when a
    file fails or cannot be applied as it is.
    """
    where = _where(engine)
    store = Store(engine, clock=clock)
    now = clock()
    done: dict[str, _Action] = {}
    with store.transaction() as tx, failing_as(f"apply the state files to {where} ({_UNDONE})"):
        conn = tx.connection
        migrations.apply(conn, migrations.MIGRATIONS, now)
        steps, missing = _plan(conn, _ordered(files))
        _refuse_what_cannot_apply(steps, rebuild_views=rebuild_views)
        for step in steps:
            if step.action == "run":
                run_files(conn, [step.file], undone=_UNDONE)
            elif step.action == "changed" and rebuild_views:
                _rebuild(conn, step)
            elif step.action != "adopt":
                continue
            record(conn, step.file.path, step.sha256, now)
            done[step.file.path] = step.action
    return StateReport(
        files=_statuses(steps, missing, done=done, at=now),
        ran=tuple(p for p, a in done.items() if a == "run"),
        adopted=tuple(p for p, a in done.items() if a == "adopt"),
        rebuilt=tuple(p for p, a in done.items() if a == "changed"),
    )


# -- what each file needs --------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class _Step:
    file: SqlFile
    sha256: str
    action: _Action
    applied: AppliedFile | None = None
    views_only: bool = False
    # For a changed file that does more than define views: its first other statement.
    does: str | None = None
    advice: str | None = None


def _plan(conn: Connection, files: tuple[SqlFile, ...]) -> tuple[list[_Step], list[AppliedFile]]:
    record_ = {a.path: a for a in recorded(conn)}
    paths = {f.path for f in files}
    missing = [a for path, a in record_.items() if path not in paths]
    fresh = [f for f in files if f.path not in record_]
    older = _OlderKeel(conn, fresh) if fresh and not record_ else None
    steps: list[_Step] = []
    for file in files:
        digest = file_sha256(file)
        applied = record_.get(file.path)
        if applied is None:
            steps.append(_new(file, digest, older))
        elif applied.sha256 == digest:
            steps.append(_Step(file=file, sha256=digest, action="keep", applied=applied))
        else:
            steps.append(_changed(file, digest, applied, paths))
    return steps, missing


def _new(file: SqlFile, digest: str, older: _OlderKeel | None) -> _Step:
    step = _Step(file=file, sha256=digest, action="run", advice="not applied yet: applying runs it")
    if older is None or not older.filled:
        return step
    made = older.made[file.path]
    there = [m for m in made if older.has(m)]
    if len(there) == len(made):
        why = (
            "its tables and views are already in the database"
            if made
            else "it creates no table or view, so its rows came with the others"
        )
        return replace(
            step,
            action="adopt",
            advice=f"not recorded, but {why} (an older Keel applied the files and kept no "
            "record): applying records it without running it",
        )
    if not there:
        return step
    lacking = [m for m in made if m not in there]
    return replace(
        step,
        action="refuse",
        advice=f"{file.path} creates {_names(made)}, and the database has {_names(there)} "
        f"but not {_names(lacking)}, so it is neither applied nor new — drop what is there, "
        "or create what is missing by hand, then apply again",
    )


def _changed(file: SqlFile, digest: str, applied: AppliedFile, paths: set[str]) -> _Step:
    statements = parsed(file)
    other = next((s for s in statements if not _defines_views(s)), None)
    views_only = other is None and any(s.creates is not None for s in statements)
    since = f"changed since it was applied ({applied.applied_at:%Y-%m-%d %H:%M} UTC)"
    step = _Step(file=file, sha256=digest, action="changed", applied=applied)
    if views_only:
        return replace(
            step,
            views_only=True,
            advice=f"{since}; it only defines views, so `keel state apply --rebuild-views` "
            "re-creates them from the file as it is now",
        )
    does = f"line {other.line}: {other.head}" if other is not None else "it defines no view"
    return replace(
        step,
        does=does,
        advice=f"{since}, and it does more than define views ({does}), so it is not run "
        "again — restore it as it was applied, and put the change in a new file such as "
        f"{_new_name(file.path, paths)} (a view changes there by DROP VIEW, then CREATE VIEW)",
    )


def _defines_views(statement: Statement) -> bool:
    made = statement.creates
    if made is None:
        return statement.drops_a_view
    return made.kind == "view" and not made.temporary and not made.materialized


def _refuse_what_cannot_apply(steps: Sequence[_Step], *, rebuild_views: bool) -> None:
    for step in steps:
        if step.action == "refuse":
            raise StoreError(f"{step.advice} ({_UNDONE})")
        if rebuild_views and step.action == "changed" and not step.views_only:
            raise StoreError(
                f"{step.file.path} changed since it was applied and does more than define "
                f"views ({step.does}): --rebuild-views re-creates views only, never tables or "
                "rows — restore the file as it was applied and put the change in a new file "
                f"such as {_new_name(step.file.path, {s.file.path for s in steps})} ({_UNDONE})"
            )


def _rebuild(conn: Connection, step: _Step) -> None:
    views = [s.creates for s in parsed(step.file) if s.creates is not None]
    # Dropped last to first, so a view of the file built on an earlier one goes first.
    for view in reversed(views):
        try:
            conn.exec_driver_sql(f"DROP VIEW IF EXISTS {view.written}")
        except SQLAlchemyError as exc:
            raise StoreError(
                f"{step.file.path}:{view.line}: cannot drop view '{view.name}' to create it "
                f"again: {reason(exc)} — a view other views are built on must be re-created "
                f"with them: move those into this file, or drop them by hand first ({_UNDONE})"
            ) from None
    run_files(conn, [step.file], undone=_UNDONE)


class _OlderKeel:
    """Whether the database holds what the files create although nothing is recorded."""

    def __init__(self, conn: Connection, files: Sequence[SqlFile]) -> None:
        inspector = inspect(conn)
        self._inspector = inspector
        self._fold = conn.dialect.name == "sqlite"  # SQLite's names ignore case
        names = (*inspector.get_table_names(), *inspector.get_view_names())
        self._names = {self._key(name) for name in names}
        self.made = {f.path: _telling(f) for f in files}
        self.filled = any(self.has(m) for made in self.made.values() for m in made)

    def has(self, made: Created) -> bool:
        if made.schema is None:
            return self._key(made.name) in self._names
        return bool(self._inspector.has_table(made.name, schema=made.schema))

    def _key(self, name: str) -> str:
        return name.lower() if self._fold else name


def _telling(file: SqlFile) -> list[Created]:
    """The tables and views whose presence says whether the file ran.

    One created `IF NOT EXISTS` says nothing (the file may expect it there already), nor
    does a temporary one (gone with the session that made it).
    """
    made = (s.creates for s in parsed(file))
    return [
        m
        for m in made
        if m is not None and m.kind in ("table", "view") and not m.temporary and not m.if_not_exists
    ]


# -- reporting -------------------------------------------------------------------------


def _statuses(
    steps: Sequence[_Step],
    missing: Sequence[AppliedFile],
    *,
    done: dict[str, _Action],
    at: datetime | None = None,
) -> tuple[StateFile, ...]:
    files = [_status(step, done.get(step.file.path), at) for step in steps]
    files.extend(
        StateFile(
            path=a.path,
            status="missing",
            applied_sha256=a.sha256,
            applied_at=a.applied_at,
            advice=f"recorded as applied ({a.applied_at:%Y-%m-%d %H:%M} UTC), but no longer "
            "among the brain's state files — what it made is still in the database: restore "
            "the file, or drop what it made by hand",
        )
        for a in missing
    )
    return tuple(sorted(files, key=lambda f: f.path))


def _status(step: _Step, done: _Action | None, at: datetime | None) -> StateFile:
    base = StateFile(path=step.file.path, status="applied", sha256=step.sha256)
    if done is not None and at is not None:
        return replace(base, applied_sha256=step.sha256, applied_at=at)
    applied = step.applied
    if step.action == "keep" and applied is not None:
        return replace(base, applied_sha256=applied.sha256, applied_at=applied.applied_at)
    if step.action == "changed" and applied is not None:
        return replace(
            base,
            status="changed",
            applied_sha256=applied.sha256,
            applied_at=applied.applied_at,
            advice=step.advice,
        )
    return replace(base, status="new", advice=step.advice)


def _ordered(files: Iterable[SqlFile]) -> tuple[SqlFile, ...]:
    return tuple(sorted(files, key=lambda f: f.path))


def _names(made: Sequence[Created]) -> str:
    return ", ".join(f"'{m.name}'" for m in made)


def _new_name(path: str, taken: set[str]) -> str:
    """A free name that sorts right after `path`: `state/10_x.sql` → `state/10_x_2.sql`."""
    stem, _, ext = path.rpartition(".")
    number = 2
    while f"{stem}_{number}.{ext}" in taken:
        number += 1
    return f"{stem}_{number}.{ext}"


def _where(engine: Engine) -> str:
    return engine.url.render_as_string(hide_password=True)
