"""Runs, their steps and the executors that run them (`keel_runs`, `keel_run_steps`,
`keel_executors`).

A run's row is written when it is asked for (`add_run`: once, as pending, before its
workflow starts), again when its workflow starts (and again, the same, on a replay: an
upsert keyed by the workflow id), and its status moves as the workflow does. A step's row
is keyed by (run, seq); `record_step` refuses to overwrite a finished one, which is what
makes a step that wrote its row in its effect's transaction run once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import Connection, Insert, Row, Update, bindparam, delete, select, update

from keel.brain.specs import ENTITY_KINDS, EntityKind, ReachEntry
from keel.errors import StoreError
from keel.store import schema
from keel.store.hot import Hot
from keel.store.run_values import (
    RUN_STATUSES,
    STEP_STATUSES,
    ExecutorRow,
    RunRow,
    RunStatus,
    StepRow,
    StepStatus,
)
from keel.store.sql import dialect_insert, key, unkey, upsert, utc

_RUNS = schema.runs
_STEPS = schema.run_steps
_EXECUTORS = schema.executors

# The statements every step of every run executes, built once: building a statement costs
# more than running it on SQLite, and a run's overhead is a handful of them.
_ONE_STEP = _STEPS.c.run_id == bindparam("r"), _STEPS.c.seq == bindparam("s")
_STEP = Hot(select(_STEPS).where(*_ONE_STEP))  # each step of a run looks for its row
_SET_STATUS = update(_RUNS).where(_RUNS.c.id == bindparam("r"))
_RUN_KEPT = ("created_at", "id")


@cache
def _updating(stmt: Update, columns: tuple[str, ...]) -> Update:
    """`stmt` setting `columns`, each from the parameter `v_<column>`."""
    return stmt.values(**{c: bindparam(f"v_{c}") for c in columns})


@cache
def _upsert_run(dialect: str) -> Hot:
    updated = [c.name for c in _RUNS.columns if c.name not in _RUN_KEPT]
    stmt = upsert(dialect, _RUNS, keys=("id",), update=updated)
    return Hot(stmt, columns=[c.name for c in _RUNS.columns])


def dumps(value: Any) -> str:
    """JSON text as the run tables store it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def reach_json(reach: Sequence[ReachEntry]) -> list[dict[str, str | None]]:
    return [{"context": r.context, "entity": r.entity} for r in reach]


def reach_of(data: Any) -> tuple[ReachEntry, ...]:
    """A reach from its JSON form (a list of `{context, entity}`)."""
    return tuple(ReachEntry(context=e["context"], entity=e.get("entity")) for e in data or ())


@cache
def _record_steps(dialect: str, count: int) -> Hot:
    """`count` steps' rows, each written over one not done, in one statement; RETURNING
    says which were written (psycopg's rowcount of an upsert is not to be trusted)."""
    rows = [
        {c.name: bindparam(f"r{i}_{c.name}", type_=c.type) for c in _STEPS.columns}
        for i in range(count)
    ]
    stmt = dialect_insert(dialect, _STEPS).values(rows)
    kept = ("run_id", "seq")
    changed = {c.name: stmt.excluded[c.name] for c in _STEPS.columns if c.name not in kept}
    return Hot(
        stmt.on_conflict_do_update(
            index_elements=list(kept), set_=changed, where=_STEPS.c.status != "done"
        ).returning(_STEPS.c.seq)
    )


@cache
def _add_run(dialect: str) -> Insert:
    stmt = dialect_insert(dialect, _RUNS)
    # RETURNING says whether the row was written: psycopg's rowcount here is -1.
    return stmt.on_conflict_do_nothing(index_elements=["id"]).returning(_RUNS.c.id)


def record_run(conn: Connection, run: RunRow) -> None:
    """Write a run's row, replacing the one with its id (a replay writes the same row)."""
    _upsert_run(conn.dialect.name).run(conn, _run_values(run))


def add_run(conn: Connection, run: RunRow) -> bool:
    """Write a run's row unless one has its id already; whether it wrote it."""
    return conn.execute(_add_run(conn.dialect.name), _run_values(run)).first() is not None


def _run_values(run: RunRow) -> dict[str, Any]:
    return {
        "id": run.id,
        "kind": run.kind,
        "entity_id": run.entity_id,
        "entity": key(run.entity, f"the entity of run {run.id!r}"),
        "status": _run_status(run.status, run.id),
        "role": run.role or "",
        "reach": dumps(reach_json(run.reach)),
        "bot": run.bot or "",
        "chat": run.chat or "",
        "thread": key(run.thread, f"the thread of run {run.id!r}"),
        "pin": run.pin or "",
        "model": run.model or "",
        "executor": run.executor or "",
        "error": run.error,
        "order": dumps(dict(run.order)),
        "created_at": utc(run.created_at, f"the start of run {run.id!r}"),
        "updated_at": utc(run.updated_at, f"the update of run {run.id!r}"),
    }


def set_run_status(
    conn: Connection,
    run_id: str,
    status: RunStatus,
    at: datetime,
    *,
    error: str | None = None,
    executor: str | None = None,
) -> bool:
    """Move a run to `status` (with its error, when it failed); False for an unknown run."""
    values: dict[str, Any] = {
        "status": _run_status(status, run_id),
        "updated_at": utc(at, f"the update of run {run_id!r}"),
        "error": error,
    }
    if executor is not None:
        values["executor"] = executor
    stmt = _updating(_SET_STATUS, tuple(values))
    result = conn.execute(stmt, {"r": run_id, **{f"v_{k}": v for k, v in values.items()}})
    return result.rowcount > 0


def run(conn: Connection, run_id: str) -> RunRow | None:
    """One run, or None."""
    row = conn.execute(select(_RUNS).where(_RUNS.c.id == run_id)).one_or_none()
    return None if row is None else _run(row)


def runs(
    conn: Connection,
    *,
    status: RunStatus | None = None,
    kind: EntityKind | None = None,
    limit: int = 50,
) -> tuple[RunRow, ...]:
    """The newest runs (with this status, of this kind), newest first."""
    if limit < 0:
        raise StoreError(f"a limit of {limit} runs is negative — pass 0 or more")
    query = select(_RUNS)
    if status is not None:
        query = query.where(_RUNS.c.status == _run_status(status, "the filter"))
    if kind is not None:
        query = query.where(_RUNS.c.kind == kind)
    query = query.order_by(_RUNS.c.created_at.desc(), _RUNS.c.id.desc()).limit(limit)
    return tuple(_run(row) for row in conn.execute(query))


def _run(row: Row[Any]) -> RunRow:
    kind = row.kind
    if kind not in ENTITY_KINDS:
        raise StoreError(
            f"run {row.id!r} in {_RUNS.name} has the kind {kind!r} — it must be one of "
            f"{', '.join(ENTITY_KINDS)}; correct or delete the row"
        )
    return RunRow(
        id=row.id,
        kind=kind,
        entity_id=row.entity_id,
        status=_run_status(row.status, row.id),
        created_at=row.created_at,
        updated_at=row.updated_at,
        entity=unkey(row.entity),
        role=row.role or None,
        reach=reach_of(json.loads(row.reach)),
        bot=row.bot or None,
        chat=row.chat or None,
        thread=unkey(row.thread),
        pin=row.pin or None,
        model=row.model or None,
        executor=row.executor or None,
        error=row.error,
        order=json.loads(row.order),
    )


def _run_status(value: str, where: str) -> RunStatus:
    for status in RUN_STATUSES:
        if value == status:
            return status
    raise StoreError(f"{where}: the run status {value!r} is not one of {', '.join(RUN_STATUSES)}")


# Steps


def record_step(conn: Connection, step: StepRow) -> bool:
    """Write a step's row; False (and nothing written) when it is already recorded done.

    A step that is only running or waiting is replaced: it is the same step, carried on.
    """
    return record_steps(conn, (step,))


def record_steps(conn: Connection, steps: Sequence[StepRow]) -> bool:
    """Write several steps' rows in one statement; False when any of them is recorded done
    already (the others are written: the caller rolls the transaction back)."""
    values = {
        f"r{i}_{name}": value
        for i, step in enumerate(steps)
        for name, value in _step_values(step).items()
    }
    written = _record_steps(conn.dialect.name, len(steps)).rows(conn, values)
    return len(written) == len(steps)


def _step_values(step: StepRow) -> dict[str, Any]:
    return {
        "run_id": step.run_id,
        "seq": step.seq,
        "name": step.name,
        "status": _step_status(step.status, step.run_id),
        "started_at": utc(step.started_at, f"the start of step {step.seq} of {step.run_id!r}"),
        "finished_at": None
        if step.finished_at is None
        else utc(step.finished_at, f"the end of step {step.seq} of {step.run_id!r}"),
        "turn_id": step.turn_id,
        "detail": step.detail,
        "output": None if step.output is None else dumps(step.output),
    }


def step(conn: Connection, run_id: str, seq: int) -> StepRow | None:
    """One step of a run, or None."""
    found = _STEP.named(conn, {"r": run_id, "s": seq})
    return _step(found[0]) if found else None


def steps(conn: Connection, run_id: str) -> tuple[StepRow, ...]:
    """A run's steps, in order."""
    rows = conn.execute(select(_STEPS).where(_STEPS.c.run_id == run_id).order_by(_STEPS.c.seq))
    return tuple(_step(row) for row in rows)


def _step(row: Any) -> StepRow:
    """A step from its row (SQLAlchemy's, or a hot statement's named one)."""
    return StepRow(
        run_id=row.run_id,
        seq=int(row.seq),
        name=row.name,
        status=_step_status(row.status, row.run_id),
        started_at=row.started_at,
        finished_at=row.finished_at,
        turn_id=None if row.turn_id is None else int(row.turn_id),
        detail=row.detail,
        output=None if row.output is None else json.loads(row.output),
    )


def _step_status(value: str, run_id: str) -> StepStatus:
    for status in STEP_STATUSES:
        if value == status:
            return status
    raise StoreError(
        f"a step of run {run_id!r} has the status {value!r} — it must be one of "
        f"{', '.join(STEP_STATUSES)}"
    )


# Executors


def register_executor(conn: Connection, executor: ExecutorRow) -> None:
    """Record a live executor (or refresh one recorded before)."""
    values = {
        "id": executor.id,
        "host": executor.host,
        "pid": executor.pid,
        "started_at": utc(executor.started_at, f"the start of executor {executor.id!r}"),
        "seen_at": utc(executor.seen_at, f"the last sign of executor {executor.id!r}"),
    }
    stmt = upsert(conn.dialect.name, _EXECUTORS, keys=("id",), update=("host", "pid", "seen_at"))
    conn.execute(stmt, values)


def touch_executor(conn: Connection, executor_id: str, at: datetime) -> bool:
    """Note that the executor is alive at `at`; False when it is not recorded (any more)."""
    result = conn.execute(
        update(_EXECUTORS)
        .where(_EXECUTORS.c.id == executor_id)
        .values(seen_at=utc(at, f"the last sign of executor {executor_id!r}"))
    )
    return result.rowcount > 0


def remove_executors(conn: Connection, executor_ids: Sequence[str]) -> int:
    """Forget executors (one that stopped, or died); return how many were recorded."""
    if not executor_ids:
        return 0
    result = conn.execute(delete(_EXECUTORS).where(_EXECUTORS.c.id.in_(list(executor_ids))))
    return int(result.rowcount)


def executors(conn: Connection) -> Mapping[str, ExecutorRow]:
    """Every recorded executor, by id."""
    return {
        row.id: ExecutorRow(
            id=row.id,
            host=row.host,
            pid=int(row.pid),
            started_at=row.started_at,
            seen_at=row.seen_at,
        )
        for row in conn.execute(select(_EXECUTORS))
    }
