"""`keel worker`: the process that runs a brain's schedules and finishes what others left.

A worker launches DBOS with an executor id of its own and takes work from the tick queue
(`keel.runs.schedules`). Then, until it is stopped:

- its heartbeats are DBOS schedules, applied at start and again whenever the brain's
  files change (a heartbeat added, removed, rescheduled);
- every `BEAT_S` it looks for processes that died with runs unfinished — a worker, a
  `keel run` or `keel fire` killed half way — and takes their runs over
  (`keel.runs.executors`);
- with `until_idle`, it stops once no run is left to do: nothing queued, and nothing
  running here or on a dead process. A run waiting for a person's approval is not work
  left: it waits in the journal, and whoever decides its card finishes it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from keel.runs.app import APP_VERSION, BEAT_S, Runtime, launch
from keel.runs.executors import recover_dead
from keel.runs.schedules import QUEUE, QUEUE_POLL_S, Schedule, apply
from keel.runtime.engine import Engine
from keel.runtime.model_specs import ModelChoice
from keel.store.run_values import RunRow

# How often the worker's loop looks at the world.
LOOP_S = 0.2


@dataclass(slots=True, kw_only=True)
class WorkerReport:
    """What a worker did: its id, its schedules, the runs it took over and saw finish."""

    executor: str
    schedules: list[Schedule] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)
    finished: list[RunRow] = field(default_factory=list)
    # Workflows still running here when it stopped (a run waiting for a card).
    left_running: int = 0


def serve(
    engine: Engine,
    *,
    model: ModelChoice | None = None,
    until_idle: bool = False,
    seconds: str = "0",
    stop: threading.Event | None = None,
    say: Callable[[str], None] | None = None,
) -> WorkerReport:
    """Run the worker until `stop` is set (or, with `until_idle`, until nothing is left)."""
    from dbos import DBOS

    stop = stop or threading.Event()
    runtime = launch(engine, kind="worker", model=model, queues=[QUEUE])
    report = WorkerReport(executor=runtime.executor)
    started = runtime.started_at
    try:
        DBOS.register_queue(QUEUE, polling_interval_sec=QUEUE_POLL_S)
        spec = model.spec if model is not None else None
        brain = engine.brain
        report.schedules = apply(brain, model=spec, seconds=seconds)
        last_look = 0.0
        while not stop.is_set():
            now = datetime.now(UTC).timestamp()
            if now - last_look >= BEAT_S or not last_look:
                last_look = now
                taken = recover_dead(runtime)
                report.recovered += taken
                for run_id in taken:
                    if say is not None:
                        say(f"took over run {run_id}")
            if engine.brain is not brain:
                brain = engine.brain
                report.schedules = apply(brain, model=spec, seconds=seconds)
            if until_idle and idle(runtime):
                break
            stop.wait(LOOP_S)
    finally:
        report.left_running = runtime.busy
        with engine.store.transaction() as tx:
            report.finished = [
                r
                for r in tx.runs(limit=1000)
                if r.updated_at >= started and r.status in ("done", "failed")
            ]
        runtime.close()
    return report


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
