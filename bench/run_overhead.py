"""What a durable run adds to its turn, set beside what DBOS itself costs per step.

    uv run python bench/run_overhead.py [--runs 60] [--warmup 10] [--steps 10]
                                        [--heartbeat invoice-chase] [--git]
                                        [--tmpdir DIR] [--db URL] [--json]

A copy of the reference brain (examples/brain) on its own SQLite file; one heartbeat run
with `--model none`: the workflow decides its plan, prepares and records the turn, and
finishes — three durable steps, no model call. `start` and `finish` are journaled in
Keel's tables only; `prepare` is a DBOS step as well (keel.runs.workflows says why).
Series, interleaved round by round so drift hits them alike, each on a fresh chat so no
history grows:

- `prepare`: the same turn prepared without the runs engine (`Engine.prepare` with the
  run's reference, reach, bot and role) — the baseline;
- `run`: the run's workflow called in this thread under its own id, as a worker runs it;
  what a run adds to its turn is the median of each round's `run - prepare`;
- `run+wait`: the run started and followed as `keel run` does (`service.start`, then
  `service.wait`, woken when DBOS has recorded the run's end);
- `dbos 0`, `dbos 1`, `dbos N`: a DBOS workflow with no step, with as many trivial steps
  as the run has DBOS steps, and with `--steps` of them, on the same system database: DBOS's own
  cost per workflow and per step (`(dbos N - dbos 0) / N`);
- `plan`: the run's first step's work alone (`plan_run`: its pin, reach, chat, role and
  model), without DBOS or Keel's rows;
- `pin`: what the run's plan pays for its pin (`Runtime.pin`: the last pin again while
  the brain and git's HEAD and index are unchanged — keel.runs.pinning);
- `pin cold`: deciding the pin from scratch (`brain_commit`: a commit in a git work tree,
  else a hash of the brain's files), on this brain: what the first run after an edit pays.

`--git` makes the copy a git repository with one commit, so runs are pinned to a commit
(a brain is usually kept in git); without it the pin is the content hash. `--db` runs on
PostgreSQL instead (a fresh schema of that database, and DBOS's schema beside it, both
dropped afterwards). Every number is a median. The target: what Keel adds above its turn
and a one-step DBOS workflow (`keel_above_dbos_ms`: the median of each round's `run -
prepare - dbos 1`) is at most 1.5 ms on SQLite. `keel_above_dbos_cpu_ms` is the same in
the thread's CPU time, which a machine busy with other work leaves nearly alone.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dbos import DBOS, SetWorkflowID
from sqlalchemy import create_engine, event
from sqlalchemy.engine import make_url

from keel.link.reach import find_run, run_reach
from keel.link.values import Conversation, RunRef, TurnRequest
from keel.runs.app import Runtime, system_database
from keel.runs.commits import brain_commit
from keel.runs.plan import plan_run
from keel.runs.records import run_record
from keel.runs.service import launch, order_for, start, wait
from keel.runs.workflows import register
from keel.runtime.engine import Engine
from keel.store.hot import traced

REFERENCE = Path(__file__).resolve().parent.parent / "examples" / "brain"
TARGET_MS = 1.5  # Keel above its turn and a one-step DBOS workflow, at the median
DBOS_STEPS = 1  # prepare: the DBOS steps of a run with `--model none`
SERIES = (
    "prepare",
    "run",
    "run+wait",
    "dbos 0",
    "dbos 1",
    "dbos N",
    "plan",
    "pin",
    "pin cold",
)


@DBOS.workflow(name="bench.trivial")
def trivial(steps: int) -> int:
    """A workflow of `steps` steps that do nothing: what DBOS costs on its own."""
    for _ in range(steps):
        DBOS.run_step({"name": "bench.step"}, nothing)
    return steps


def nothing() -> None:
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=60, help="timed rounds")
    parser.add_argument("--warmup", type=int, default=10, help="untimed rounds first")
    parser.add_argument("--steps", type=int, default=10, help="steps of the `dbos N` workflow")
    parser.add_argument("--heartbeat", default="invoice-chase", help="the heartbeat to run")
    parser.add_argument("--git", action="store_true", help="pin runs to a git commit")
    parser.add_argument(
        "--tmpdir",
        type=Path,
        default=None,
        help="where the brain and its databases go; a tmpfs such as /dev/shm takes the "
        "disk's fsync out of every step's commit",
    )
    parser.add_argument("--db", default=None, help="a PostgreSQL URL to run on instead")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.runs < 2:
        parser.error("--steps must be 1 or more and --runs 2 or more")
    if args.warmup < 0:
        parser.error("--warmup must be 0 or more")
    # DBOS says little at WARNING, but a run that fails logs its traceback: keep the table.
    logging.getLogger("keel").addHandler(logging.NullHandler())
    with tempfile.TemporaryDirectory(prefix="keel-bench-runs-", dir=args.tmpdir) as tmp:
        root = copy_brain(Path(tmp), git=args.git)
        with database(root, args.db) as url:
            report = measure(root, url, args)
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


def copy_brain(tmp: Path, *, git: bool) -> Path:
    root = tmp / "brain"
    shutil.copytree(REFERENCE, root, ignore=shutil.ignore_patterns(".*", "__pycache__"))
    if git:
        env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost"}
        env |= {"GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@localhost"}
        for words in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "the brain"]):
            subprocess.run(["git", *words], cwd=root, env=env, check=True, capture_output=True)
    return root


@contextmanager
def database(root: Path, db: str | None) -> Iterator[str]:
    """The brain's own SQLite file, or a fresh schema of a PostgreSQL database."""
    if db is None:
        yield f"sqlite:///{(root / '.keel' / 'keel.db').as_posix()}"
        return
    url = make_url(db)
    if url.get_backend_name() != "postgresql":
        raise SystemExit(f"--db takes a PostgreSQL URL, not {url.get_backend_name()}")
    if url.drivername == "postgresql":
        url = url.set(drivername="postgresql+psycopg")
    schema = f"keel_bench_{secrets.token_hex(6)}"
    ours = url.update_query_dict({"options": f"-csearch_path={schema}"})
    text = ours.render_as_string(hide_password=False)
    admin = create_engine(url)
    try:
        with admin.begin() as conn:
            conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
        yield text
    finally:
        with admin.begin() as conn:
            for name in (schema, system_database(text).schema):
                conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
        admin.dispose()


def measure(root: Path, url: str, args: argparse.Namespace) -> dict[str, Any]:
    engine = Engine(root, url, watch=False)
    if not url.startswith("sqlite"):
        engine.apply_state()
    runtime = launch(engine, kind="bench")
    try:
        return timed(engine, runtime, args)
    finally:
        runtime.close()
        engine.close()


def timed(engine: Engine, runtime: Runtime, args: argparse.Namespace) -> dict[str, Any]:
    brain = engine.brain
    ref = RunRef(kind="heartbeat", id=args.heartbeat)
    entity = find_run(brain, ref)
    reach = run_reach(brain, entity)
    chats = iter(range(10**9))

    def place() -> Conversation:
        # A chat of its own per turn: every turn is a first turn, with no history to grow.
        return Conversation(bot=entity.bot or "cli", chat=f"bench:{next(chats)}")

    def prepare() -> Any:
        request = TurnRequest(conversation=place(), now=datetime.now(UTC), run=ref, reach=reach)
        return engine.prepare(request)

    def run_here() -> str:
        order = order_for(brain, ref, conversation=place(), model="none")
        with SetWorkflowID(order.id):
            outcome = register().run(order.to_json())
        if outcome["status"] != "done":
            raise SystemExit(f"a run of {ref.key} did not finish: {outcome['error']}")
        return order.id

    def run_and_wait() -> None:
        order = order_for(brain, ref, conversation=place(), model="none")
        start(order)
        if wait(runtime, order.id, timeout_s=60) != "done":
            raise SystemExit(f"a run of {ref.key} started with start() did not finish")

    def workflow(steps: int) -> Callable[[], None]:
        def go() -> None:
            with SetWorkflowID(f"bench-{steps}-{secrets.token_hex(6)}"):
                trivial(steps)

        return go

    series: dict[str, Callable[[], Any]] = {
        "prepare": prepare,
        "run": run_here,
        "run+wait": run_and_wait,
        "dbos 0": workflow(0),
        "dbos 1": workflow(DBOS_STEPS),
        "dbos N": workflow(args.steps),
        "plan": lambda: plan_run(runtime, order_for(brain, ref, model="none")),
        "pin": runtime.pin,
        "pin cold": lambda: brain_commit(engine.source.root),
    }
    for _ in range(args.warmup):
        for action in series.values():
            action()
    same_turn(engine, prepare(), run_here())
    statements = {name: counted(engine, series[name]) for name in ("prepare", "run")}
    times: dict[str, list[float]] = {name: [] for name in series}
    cpu: dict[str, list[float]] = {name: [] for name in series}
    gc.collect()
    gc.freeze()
    try:
        for _ in range(args.runs):
            for name, action in series.items():
                started, used = time.perf_counter(), time.thread_time()
                action()
                cpu[name].append(time.thread_time() - used)
                times[name].append(time.perf_counter() - started)
    finally:
        gc.unfreeze()
    found = report(engine, runtime, args, times, ref, reach_text=[e.context for e in reach])
    found["keel_above_dbos_cpu_ms"] = paired(cpu, "run", "prepare", "dbos 1")
    # What a loaded machine cannot blur: the statements Keel's database runs for the run
    # beyond those of its turn (transaction control included).
    found["statements"] = statements
    found["keel_statements_above_turn"] = statements["run"] - statements["prepare"]
    found["cpu_ms"] = {name: statistics.median(values) * 1e3 for name, values in cpu.items()}
    return found


def counted(engine: Engine, action: Callable[[], Any]) -> int:
    """How many statements `action` runs on Keel's database (BEGIN and COMMIT included).
    On PostgreSQL, those SQLAlchemy sends: the store's hot statements (`keel.store.hot`)
    go to the driver unseen, alike in the run and in its turn."""
    db = engine.store.engine
    if db.dialect.name == "sqlite":
        with traced(db, this_thread=True) as sent:
            action()
        return len(sent)
    seen = [0]

    def count(*_: Any) -> None:
        seen[0] += 1

    event.listen(db, "before_cursor_execute", count)
    event.listen(db, "commit", count)
    try:
        action()
    finally:
        event.remove(db, "before_cursor_execute", count)
        event.remove(db, "commit", count)
    return seen[0]


def paired(times: dict[str, list[float]], a: str, *less: str) -> float:
    """The median of each round's `a` less the others, in ms: drift between rounds
    cancels."""
    left = [x - sum(times[b][i] for b in less) for i, x in enumerate(times[a])]
    return statistics.median(left) * 1e3


def same_turn(engine: Engine, baseline: Any, run_id: str) -> None:
    """The run's turn must carry what the baseline's does, or the two time different turns."""
    prepared, _ = baseline
    with engine.store.transaction() as tx:
        record = run_record(tx, run_id)
    if record is None or len(record["turns"]) != 1:
        raise SystemExit(f"run {run_id} recorded no turn")
    ran = [(a["context"], a["entity"], a["link"]) for a in record["turns"][0]["attached"]]
    want = [(a.link.context, a.link.entity, a.link.kind) for a in prepared.attached]
    if ran != want or record["role"] != prepared.role:
        said = f"the run's turn ({record['role']}: {ran}) is not the baseline's"
        raise SystemExit(f"{said} ({prepared.role}: {want})")


def report(
    engine: Engine,
    runtime: Runtime,
    args: argparse.Namespace,
    times: dict[str, list[float]],
    ref: RunRef,
    *,
    reach_text: list[str],
) -> dict[str, Any]:
    med = {name: statistics.median(values) * 1e3 for name, values in times.items()}
    added = paired(times, "run", "prepare")
    per_step = (med["dbos N"] - med["dbos 0"]) / args.steps
    pin = brain_commit(engine.source.root)
    return {
        "heartbeat": ref.key,
        "reach": reach_text,
        "database": "sqlite" if engine.url.startswith("sqlite") else "postgresql",
        "journal": f"schema {runtime.target.schema}"
        if runtime.target.schema
        else "dbos.sqlite beside keel.db",
        "pin_kind": pin.kind,
        "runs": args.runs,
        "warmup": args.warmup,
        "steps": args.steps,
        "median_ms": med,
        "p90_ms": {n: statistics.quantiles(v, n=10)[-1] * 1e3 for n, v in times.items()},
        "added_ms": added,
        "keel_above_dbos_ms": paired(times, "run", "prepare", "dbos 1"),
        "wait_added_ms": paired(times, "run+wait", "prepare"),
        "dbos_workflow_ms": med["dbos 0"],
        "dbos_step_ms": per_step,
        "target_ms": TARGET_MS,
        "met": paired(times, "run", "prepare", "dbos 1") <= TARGET_MS,
    }


def render(report: dict[str, Any]) -> str:
    med, p90 = report["median_ms"], report["p90_ms"]
    verdict = "MET" if report["met"] else "MISSED"
    lines = [
        f"{report['heartbeat']} with --model none, reach {', '.join(report['reach'])}",
        f"{report['database']}, journal in {report['journal']}, pinned by {report['pin_kind']}",
        f"{report['runs']} rounds after {report['warmup']} warm-up rounds, in ms",
        "",
        f"{'series':<10}{'median':>8}{'p90':>9}",
    ]
    lines += [f"{name:<10}{med[name]:>8.2f}{p90[name]:>9.2f}" for name in SERIES]
    lines += [
        "",
        f"a run adds {report['added_ms']:.2f} ms to its turn (median of run - prepare)",
        f"DBOS alone: {report['dbos_workflow_ms']:.2f} ms a workflow, "
        f"{report['dbos_step_ms']:.2f} ms a step ({report['steps']} steps)",
        f"  a workflow of the run's {DBOS_STEPS} DBOS step: {med['dbos 1']:.2f} ms",
        f"Keel above that workflow: {report['keel_above_dbos_ms']:.2f} ms, target ≤ "
        f"{report['target_ms']:g} ms: {verdict}",
        f"  in CPU time {report.get('keel_above_dbos_cpu_ms', float('nan')):.2f} ms",
        f"  its plan alone {med['plan']:.2f}, the pin {med['pin']:.2f}, {med['pin cold']:.2f} cold",
        f"as keel run waits for it: {report['wait_added_ms']:.2f} ms over the turn",
        f"statements on Keel's database: the turn {report['statements']['prepare']}, the run "
        f"{report['statements']['run']} ({report['keel_statements_above_turn']} above the turn)",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
