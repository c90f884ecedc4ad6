"""`keel worker` processes: a heartbeat fires on its schedule and its run is recorded done;
two workers on one PostgreSQL database run each tick once, and when one is killed with
SIGKILL in the middle of a run, the other finishes that run with nothing done twice.

The clock brain's one heartbeat is due every minute; the hidden `--seconds */2` makes it
every two seconds, so a test sees its ticks within seconds.
"""

from __future__ import annotations

import json
import signal
import subprocess
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest

from keel.runs import service as runs_service
from keel.runs import worker
from keel.runs.schedules import Schedule
from keel.runtime.engine import Engine
from keel.store.run_values import RunRow
from tests.runs.brains import ROLE
from tests.runs.conftest import drop_dbos_schema, script, write_files
from tests.runs.processes import finish, keel, kill, until

T = TypeVar("T")

CHAT = "tg:chat:clock"
SECONDS = "*/2"
TICK_S = 2
STEPS = ["start", "prepare", "request", "send", "finish"]
# Long enough to kill a worker while its model request is under way, short beside a tick.
SLEEP_S = 2.0  # wide enough a window to catch a request under way on a busy machine

CLOCK_BRAIN: dict[str, str] = {
    "constitution/MANIFEST.yaml": "contexts:\n  codeTimeoutMs: 5000\n",
    "features/clock/ticker.agent.md": ROLE.format(
        description="Keeps time.", extra="", persona="You say what time it is."
    ),
    "features/clock/hour.context.md": (
        "---\ndescription: The hour.\nwhen: [run]\n---\nSay the hour in one line.\n"
    ),
    "features/clock/tick.heartbeat.md": (
        '---\ndescription: A tick.\nschedule: "* * * * *"\nagent: ticker\n'
        f"bot: nova\nchat: {CHAT}\n---\nSay the time.\n"
    ),
}


class Workers:
    """`keel worker` child processes of one test: started, stopped, never left behind."""

    def __init__(self, brain: Path, db: str) -> None:
        self.brain = brain
        self.db = db
        self.started: list[subprocess.Popen[str]] = []

    def start(self, model: str) -> subprocess.Popen[str]:
        process = keel("worker", str(self.brain), "--seconds", SECONDS, "--model", model,
                       "--db", self.db, "--json")  # fmt: skip
        self.started.append(process)
        return process

    def stop(self, process: subprocess.Popen[str]) -> dict[str, Any]:
        """Stop a worker as a person would (SIGTERM); the report it prints."""
        process.send_signal(signal.SIGTERM)
        status, out, err = finish(process, timeout=30)
        assert status == 0, err
        report: dict[str, Any] = json.loads(out)
        return report

    def close(self) -> None:
        for process in self.started:
            if process.poll() is None:
                kill(process)


@pytest.fixture
def clock(tmp_path: Path) -> Path:
    return write_files(tmp_path / "brain", CLOCK_BRAIN)


def _workers(brain: Path, db: str) -> Iterator[tuple[Workers, Engine]]:
    engine = Engine(brain, db, watch=False)
    if not db.startswith("sqlite"):
        engine.apply_state()
    workers = Workers(brain, db)
    try:
        yield workers, engine
    finally:
        workers.close()
        engine.close()
        if not db.startswith("sqlite"):
            drop_dbos_schema(db)


@pytest.fixture
def on_any_db(clock: Path, database_url: str) -> Iterator[tuple[Workers, Engine]]:
    """Workers of the clock brain, and an engine to read what they did, on each database."""
    yield from _workers(clock, database_url)


@pytest.fixture
def on_postgres(clock: Path, postgres_url_in_schema: str) -> Iterator[tuple[Workers, Engine]]:
    yield from _workers(clock, postgres_url_in_schema)


def all_runs(engine: Engine) -> list[RunRow]:
    with engine.store.transaction() as tx:
        return list(tx.runs(limit=1000))


def step_names(engine: Engine, run_id: str, *, done_only: bool = False) -> list[str]:
    with engine.store.transaction() as tx:
        steps = tx.steps(run_id)
    return [s.name for s in steps if s.status == "done" or not done_only]


def sent(engine: Engine, run_id: str) -> list[str]:
    with engine.store.transaction() as tx:
        return [m.text for m in tx.sent_messages(run_id=run_id)]


def found(look: Callable[[], T | None], *, timeout: float, what: str) -> T:
    """Poll `look` until it finds something; that thing."""
    seen: list[T] = []

    def hit() -> bool:
        value = look()
        if value is not None:
            seen.append(value)
        return bool(seen)

    until(hit, timeout=timeout, what=what)
    return seen[0]


def assert_is_a_tick(run: RunRow) -> None:
    """A run DBOS's schedule started: the tick's time is its start and in its id."""
    assert (run.kind, run.entity_id) == ("heartbeat", "tick")
    assert run.created_at.microsecond == 0
    assert run.created_at.second % TICK_S == 0
    assert run.id == f"sched-hb:tick-{run.created_at.astimezone(UTC).isoformat()}"


def test_a_worker_fires_a_heartbeat_on_its_schedule_and_records_the_run_done(
    on_any_db: tuple[Workers, Engine], tmp_path: Path
) -> None:
    workers, engine = on_any_db
    model = script(tmp_path, "tick", [{"text": "Tick."}])
    started = datetime.now(UTC).replace(microsecond=0)
    process = workers.start(model)
    done = found(
        lambda: next((r for r in all_runs(engine) if r.status == "done"), None),
        timeout=30,
        what="a tick's run to be done",
    )
    report = workers.stop(process)

    assert report["schedules"] == [{"name": "hb:tick", "cron": f"{SECONDS} * * * * *"}]
    assert done.id in [r["id"] for r in report["finished"]]
    assert report["executor"] == done.executor
    assert_is_a_tick(done)
    assert done.created_at >= started
    assert (done.role, done.chat, done.error) == ("ticker", CHAT, None)
    assert step_names(engine, done.id) == STEPS
    assert sent(engine, done.id) == ["Tick."]


@pytest.mark.postgres
def test_two_workers_run_each_tick_once_and_finish_the_run_of_one_killed(
    on_postgres: tuple[Workers, Engine], tmp_path: Path
) -> None:
    workers, engine = on_postgres
    model = script(tmp_path, "slow", [{"sleep_s": SLEEP_S, "text": "Tick."}])
    first, second = workers.start(model), workers.start(model)

    def under_way_on_first() -> RunRow | None:
        # A run of the first worker, prepared, its model request under way.
        for run in all_runs(engine):
            if (
                run.status == "running"
                and f"-{first.pid}-" in (run.executor or "")
                and step_names(engine, run.id, done_only=True) == ["start", "prepare"]
            ):
                return run
        return None

    victim = found(under_way_on_first, timeout=90, what="a run of the first worker")
    kill(first)
    killed_at = datetime.now(UTC)
    assert step_names(engine, victim.id, done_only=True) == ["start", "prepare"]

    def settled() -> bool:
        runs = all_runs(engine)
        later = [r for r in runs if r.created_at > killed_at and r.status == "done"]
        return any(r.id == victim.id and r.status == "done" for r in runs) and len(later) >= 2

    until(settled, timeout=90, what="the killed run and two later ticks to be done")
    report = workers.stop(second)

    # The killed run: taken over and finished by the second worker, nothing done twice.
    assert victim.id in report["recovered"]
    with engine.store.transaction() as tx:
        after = tx.run(victim.id)
        usage = tx.usage(run_id=victim.id)
    assert after is not None
    assert (after.status, after.executor, after.error) == ("done", report["executor"], None)
    assert step_names(engine, victim.id) == STEPS
    assert sent(engine, victim.id) == ["Tick."]
    assert len(usage) == 1, "the request the killed worker never finished is recorded once"

    # Every tick ran once: one run per scheduled time, each done at most once, one message.
    runs = all_runs(engine)
    assert len(runs) >= 3
    for run in runs:
        assert_is_a_tick(run)
    per_tick = Counter(r.created_at for r in runs)
    assert max(per_tick.values()) == 1, per_tick
    for run in (r for r in runs if r.status == "done"):
        assert step_names(engine, run.id) == STEPS, run.id
        assert sent(engine, run.id) == ["Tick."], run.id
    with engine.store.transaction() as tx:
        in_chat = [m.message_id for m in tx.sent_messages(CHAT, limit=1000)]
    assert len(in_chat) == len(set(in_chat))
    assert len(in_chat) >= len([r for r in runs if r.status == "done"])


def test_a_worker_names_its_schedules_and_its_journal() -> None:
    assert worker.schedules_line([]) == "no schedules"
    report = worker.WorkerReport(
        executor="w-1",
        journal={"url": "postgresql://db/test", "schema": "dbos_x"},
        schedules=[
            Schedule(name="nightly", heartbeat="chase", cron="0 0 3 * * *"),
            Schedule(name="hourly", heartbeat="ping", cron="0 0 * * * *"),
        ],
    )
    assert worker.started_line(report) == (
        "worker w-1 · journal postgresql://db/test (schema dbos_x) · 2 schedules: nightly, hourly"
    )


def test_a_stop_signal_sets_the_event_from_a_thread_of_its_own() -> None:
    stop = threading.Event()
    runs_service.stop_on_signal(stop)(signal.SIGTERM, None)
    assert stop.wait(5)
