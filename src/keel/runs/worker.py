"""`keel worker`: the process that runs a brain's schedules and finishes what others left.

A worker launches DBOS with an executor id of its own and takes work from the tick queue
(`keel.runs.schedules`). Then, until it is stopped:

- its heartbeats are DBOS schedules, applied at start and again whenever the brain's
  files change (a heartbeat added, removed, rescheduled);
- every `BEAT_S` it looks for processes that died with runs unfinished — a worker, a
  `keel run` or `keel fire` killed half way — and takes their runs over, and records
  failed a run recorded pending whose workflow never started (`keel.runs.executors`);
- with `until_idle`, it stops once no run is left to do: nothing queued, and nothing
  running here or on a dead process. A run waiting for a person's approval is not work
  left: it waits in the journal, and whoever decides its card finishes it.

Its `model` answers the heartbeats it runs. A run it takes over keeps the model recorded
at that run's start: a worker finishes the runs of every process that died, and one flag
should not change what answers all of them (`keel approve --model` changes it for one run).

It says what it is when it starts (its executor id, its journal, its schedules) and what
it did when it stops. The runs it finished are the ones it ended itself, not those other
processes ended meanwhile: a run it takes over goes back to DBOS's queue, and any live
process may take it from there and finish it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from keel.brain.problems import plural
from keel.errors import StoreError
from keel.log import logger
from keel.runs.app import APP_VERSION, BEAT_S, Runtime, describe
from keel.runs.approvals import wake_decided
from keel.runs.executors import recover_dead, settle_unstarted
from keel.runs.schedules import QUEUE, QUEUE_POLL_S, Schedule, apply
from keel.runtime.model_specs import ModelChoice
from keel.store import Tx
from keel.store.run_values import RunRow

LOG = logger("runs")

# How often the worker's loop looks at the world.
LOOP_S = 0.2


@dataclass(slots=True, kw_only=True)
class WorkerReport:
    """What a worker did: its id and journal, its schedules, the runs it took over and
    the runs it finished."""

    executor: str
    # Where its journal is: {"url", "schema", "version"} (keel.runs.app.describe).
    journal: dict[str, Any] = field(default_factory=dict)
    schedules: list[Schedule] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)
    finished: list[RunRow] = field(default_factory=list)
    # Workflows still working here when it stopped: mid-step after `Runtime.leave`'s wait
    # (a run waiting for a card leaves).
    left_running: int = 0


def serve(
    runtime: Runtime,
    *,
    model: ModelChoice | None = None,
    until_idle: bool = False,
    seconds: str = "0",
    stop: threading.Event | None = None,
    say: Callable[[str], None] | None = None,
) -> WorkerReport:
    """Run the worker on `runtime` — launched as a worker, taking work from `QUEUE`
    (`keel.runs.service.work` launches it) — until `stop` is set (or, with `until_idle`,
    until nothing is left); `runtime` is closed when it stops."""
    from dbos import DBOS

    stop = stop or threading.Event()
    engine = runtime.engine
    described = describe(runtime)
    journal = {
        "url": described["journal"],
        "schema": described["schema"],
        "version": described["version"],
    }
    report = WorkerReport(executor=runtime.executor, journal=journal)
    started = runtime.started_at
    try:
        DBOS.register_queue(QUEUE, polling_interval_sec=QUEUE_POLL_S)
        spec = model.spec if model is not None else None
        brain = engine.brain
        report.schedules = apply(brain, model=spec, seconds=seconds)
        if say is not None:
            say(started_line(report))
        last_look = 0.0
        while not stop.is_set():
            now = datetime.now(UTC).timestamp()
            if now - last_look >= BEAT_S or not last_look:
                last_look = now
                taken = look_around(runtime)
                report.recovered += taken
                for run_id in taken:
                    if say is not None:
                        say(f"took over run {run_id}")
            if engine.brain is not brain:
                brain = engine.brain
                report.schedules = apply(brain, model=spec, seconds=seconds)
                if say is not None:
                    say(f"the brain changed: {schedules_line(report.schedules)}")
            if until_idle and idle(runtime):
                break
            stop.wait(LOOP_S)
    finally:
        report.left_running = runtime.leave()
        with engine.store.transaction() as tx:
            report.finished = finished_by(tx, runtime.executor, started, report.recovered)
        runtime.close()
    return report


def finished_by(tx: Tx, executor: str, since: datetime, also: Iterable[str] = ()) -> list[RunRow]:
    """The runs `executor` ended (done or failed) since `since`, newest first: among the
    newest runs, and the runs `also` names (those it took over may be older)."""
    found = {r.id: r for r in tx.runs(limit=1000)}
    for run_id in also:
        row = found.get(run_id) or tx.run(run_id)
        if row is not None:
            found[run_id] = row
    ended = [
        r
        for r in found.values()
        if r.executor == executor and r.updated_at >= since and r.status in ("done", "failed")
    ]
    return sorted(ended, key=lambda r: (r.created_at, r.id), reverse=True)


def started_line(report: WorkerReport) -> str:
    """The line a worker says when it starts: who it is, where its journal is, what it runs."""
    journal = report.journal
    where = str(journal.get("url", ""))
    if journal.get("schema"):
        where += f" (schema {journal['schema']})"
    return f"worker {report.executor} · journal {where} · {schedules_line(report.schedules)}"


def schedules_line(schedules: list[Schedule]) -> str:
    """The schedules a worker runs, by name (their crons are in the brain's files and in
    the worker's `--json`; with their spaces they would wrap into each other)."""
    if not schedules:
        return "no schedules"
    return f"{plural(len(schedules), 'schedule')}: {', '.join(s.name for s in schedules)}"


def look_around(runtime: Runtime) -> list[str]:
    """One beat of a worker's watch: take over the runs of dead processes (their ids),
    record failed the runs recorded pending that nothing will start, and wake the runs
    whose card a person decided where nothing could wake them (a reply to the card in a
    chat turn). A database out of reach for a moment costs this beat only."""
    try:
        taken = recover_dead(runtime)
        settle_unstarted(runtime)
        wake_decided(runtime.engine.store)
    except StoreError:
        LOG.warning(
            "worker %s could not look at the runs this beat", runtime.executor, exc_info=True
        )
        return []
    return taken


def idle(runtime: Runtime) -> bool:
    """Whether nothing is left to do (see the module docstring)."""
    from dbos import DBOS

    open_ = DBOS.list_workflows(
        status=["PENDING", "ENQUEUED"],
        app_version=APP_VERSION,
        load_input=False,
        load_output=False,
    )
    if any(w.status == "ENQUEUED" for w in open_):
        return False
    mine = [w.workflow_id for w in open_ if w.executor_id == runtime.executor]
    return runtime.all_parked(mine)
