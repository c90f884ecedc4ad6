"""A run's steps, each run once: DBOS journals its result, Keel's tables its effect.

A step is a DBOS step (`DBOS.run_step`): when the workflow replays after a crash, a step
that finished returns what it returned then, and its body does not run. DBOS notes that
a step finished in its own transaction, after the body: a process that dies between the
body's last write and that note would run the body again. So a step whose body writes to
Keel's tables also writes its own row (`keel_run_steps`, keyed by run and step number)
in the same transaction as its effect, and looks for that row before doing anything: the
effect and the row commit together or not at all, and a body that already committed is
never repeated. Steps are numbered in the order the workflow takes them, which a replay
follows exactly.

`once` is the plain form (compute without a transaction, then write effect and row in
one); `Marking` is for work that opens its own transaction (a turn's preparation, a tool
call): a store whose next transaction also writes the step's row before it commits.

`Starting` holds step `start`'s rows (the run's and the step's) for the run's next
transaction: a fresh execution's plan reads the brain only, so nothing is lost when a crash
comes before that transaction commits — the replay finds no row and plans again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, TypeVar

from keel.store import Tx
from keel.store import runs as _runs
from keel.store.run_values import RunRow, RunStatus, StepRow, StepStatus
from keel.store.sql import failing_as
from keel.store.store import Store

T = TypeVar("T")
Json = Any  # JSON-native: dict, list, str, int, float, bool or None


def now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class Done:
    """What a step's write leaves: its result, and what the run's record shows of it."""

    output: Json
    detail: str = ""
    turn_id: int | None = None
    status: StepStatus = "done"


def durable(name: str, body: Callable[[], Json]) -> Json:
    """Run `body` as the workflow's next DBOS step, named `keel.<name>`."""
    from dbos import DBOS

    return DBOS.run_step({"name": f"keel.{name}"}, body)


def recorded(store: Store, run_id: str, seq: int) -> StepRow | None:
    """The step's row, when an execution of the run wrote it."""
    with store.transaction() as tx:
        return tx.step(run_id, seq)


def looked(store: Store, run_id: str, seq: int) -> StepRow | None:
    """The step's row, read without the write lock (a look before anything is written)."""
    with store.reading() as tx:
        return tx.step(run_id, seq)


def nothing() -> None:
    """The `compute` of a step whose work is all in its write."""


class StepTaken(Exception):
    """Another execution of the run finished this step first: what this one did is rolled
    back, and the step's row holds the result that stands."""


def once(
    store: Store,
    run_id: str,
    seq: int,
    name: str,
    compute: Callable[[], T],
    write: Callable[[Tx, T], Done],
    *,
    fresh: bool = False,
) -> Json:
    """Run a step's body once: `compute` outside any transaction (it may call brain code
    or a model), then `write` its effect and the step's row in one transaction.

    A step whose row says it is done returns the result kept there instead. A step that
    computes `nothing` skips the look before it: the write's own transaction looks; so
    does one of a `fresh` execution (it found no row of its run when it started, so only
    a twin execution could have written one since, and the write's look catches that).
    """
    if compute is not nothing and not fresh:
        found = recorded(store, run_id, seq)
        if found is not None and found.status == "done":
            return found.output
    output, _ = first(store, run_id, seq, name, compute, write)
    return output


def first(
    store: Store,
    run_id: str,
    seq: int,
    name: str,
    compute: Callable[[], T],
    write: Callable[[Tx, T], Done],
) -> tuple[Json, bool]:
    """`compute`, then `write` its effect and the step's row in one transaction, unless
    the step's row says it is done; the step's result, and whether this call wrote it.

    No look comes before `compute`: call it when computing again is harmless (it runs no
    brain code and asks no model), or after a look of your own. The step's row is written
    last and looks for itself: when an execution recorded it done first, the effect is
    rolled back and that execution's result returned.
    """
    started = now()
    computed = compute()
    try:
        with store.transaction() as tx:
            done = write(tx, computed)
            if not tx.record_step(step_row(run_id, seq, name, done, started)):
                raise StepTaken(f"step {seq} of run {run_id} is done already")
    except StepTaken:
        found = recorded(store, run_id, seq)
        if found is None:  # recorded done, then gone: only a person deleting rows does that
            raise
        return found.output, False
    return done.output, True


class Marking(Store):
    """A store whose transactions also write one step's row, just before they commit.

    `mark(tx)` returns the row to write (None: write none); it runs only when the block
    ends without an error, so the row commits with the block's effect or not at all. When
    the step's row is recorded done already (a twin execution got there first), the block
    is rolled back and `StepTaken` raised.
    """

    __slots__ = ("_mark",)

    def __init__(self, store: Store, mark: Callable[[Tx], StepRow | None]) -> None:
        super().__init__(store.engine)
        self._mark = mark

    @contextmanager
    def transaction(self) -> Iterator[Tx]:
        with super().transaction() as tx:
            yield tx
            row = self._mark(tx)
            if row is not None and not tx.record_step(row):
                raise StepTaken(f"step {row.seq} of run {row.run_id} is done already")


def finished(
    tx: Tx,
    *,
    run_id: str,
    executor: str,
    error: str | None = None,
    refused: bool = False,
    result: Json = None,
    starting: Starting | None = None,
) -> Done:
    """The `finish` step's effect: the run is done (or failed and why); what its row keeps.
    With `starting`, the run's row is written here, as it ends, instead of updated."""
    status: RunStatus = "failed" if error is not None else "done"
    if starting is not None:
        tx.record_run(starting.ended(status, error))
    else:
        tx.set_run_status(run_id, status, now(), error=error, executor=executor)
    output = {"status": status, "error": error, "refused": refused, "result": result}
    # The step's row says what happened: a run that failed ends on a failed `finish`.
    return Done(output=output, detail=error or "", status="failed" if error is not None else "done")


def step_row(run_id: str, seq: int, name: str, done: Done, started: datetime) -> StepRow:
    """The row a step leaves: what its write returned, from `started` to now."""
    return StepRow(
        run_id=run_id,
        seq=seq,
        name=name,
        status=done.status,
        started_at=started,
        finished_at=now(),
        turn_id=done.turn_id,
        detail=done.detail,
        output=done.output,
    )


def write_step(store: Store, row: StepRow) -> None:
    """Write a step's row in a transaction of its own."""
    with store.transaction() as tx:
        tx.record_step(row)


def record_steps(tx: Tx, rows: Sequence[StepRow]) -> None:
    """Write steps' rows in `tx`, in one statement; `StepTaken` when any is recorded done
    already (an execution got there first: the caller's transaction is rolled back)."""
    run_id = rows[0].run_id
    with failing_as(f"record steps {', '.join(str(r.seq) for r in rows)} of run {run_id!r}"):
        written = _runs.record_steps(tx.connection, rows)
    if not written:
        raise StepTaken(f"a step of run {run_id} ({rows[-1].name}) is done already")


@dataclass(frozen=True, slots=True, kw_only=True)
class Starting:
    """Step `start`'s rows, held for the run's next transaction (see the module
    docstring): the run's row, as running, and the step's."""

    run: RunRow
    step: StepRow

    def ended(self, status: RunStatus, error: str | None = None) -> RunRow:
        """The run's row as it stands once its work ended in the same transaction."""
        return replace(self.run, status=status, error=error, updated_at=now())
