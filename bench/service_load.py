"""The service under load: `POST /v1/turns` from concurrent clients, against `engine.prepare`.

    uv run python bench/service_load.py [--clients 8] [--turns 2400] [--rounds 6]
                                        [--warmup 60] [--databases sqlite,postgres] [--json]

What it reads: the reference brain (examples/brain, copied to a temporary directory), the
turns of `prompt_workloads.reference_workload()` (its 55 turns as `POST /v1/turns` bodies,
cycled), and for PostgreSQL the server named by KEEL_BENCH_POSTGRES (default
postgresql+psycopg://postgres@127.0.0.1:5432/test), in schemas it creates and drops.

Per database (a new SQLite file, or a new PostgreSQL schema):

1. the baseline: one `Engine` in this process preparing the same turns one after another,
   `engine.prepare(request)` as a library caller would — turns per second;
2. the service: one `keel serve` subprocess on a database of its own (`--no-seed`, model
   none), driven by `--clients` threads, each with one keep-alive HTTP connection held for
   the whole run, posting the turns as fast as answers come — turns per second over each
   round, latency p50 and p99 per request, and errors (any answer but 200).

The two sides run in interleaved rounds (a block of turns in process, then the same block
through the service), so a machine busy with something else slows both alike; each rate
is the median of its rounds, the latencies are over every timed request. The ratio is
service ÷ baseline; the target is at least 70 % with 8 clients and no error. The first
`--warmup` turns of each side are not timed. The client threads run in this
process, so on a small machine they compete with the server for the CPU: the ratio is a
floor for a server with the machine to itself.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
from sqlalchemy import create_engine
from sqlalchemy.engine import make_url

from keel.runtime.engine import Engine
from keel.web.bodies import TurnBody
from prompt_workloads import REFERENCE, Turn, reference_workload

TARGET = 0.70
POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
LAUNCH = "import keel.cli.serve_cmd; from keel.cli import main; main()"


def bodies() -> list[dict[str, Any]]:
    """The reference workload's turns as `POST /v1/turns` bodies."""
    found = []
    for step in reference_workload().steps:
        if not isinstance(step, Turn):
            continue
        body: dict[str, Any] = {"bot": step.bot, "chat": step.chat, "input": step.input}
        if step.thread:
            body["thread"] = step.thread
        if step.dm:
            body["dm"] = True
        if step.role:
            body["role"] = step.role
        if step.reply_to:
            body["reply_to"] = list(step.reply_to)
        if step.run:
            body["run"] = step.run
        if step.entity:
            body["entity"] = step.entity
        for name in ("reach", "attach", "open"):
            entries = getattr(step, name)
            if entries is not None and (entries or name == "reach"):
                body[name] = [{"context": c, "entity": e} for c, e in entries]
        found.append(body)
    return found


def cycled(items: Sequence[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    return [items[i % len(items)] for i in range(count)]


@contextmanager
def database(kind: str, root: Path, name: str) -> Iterator[str]:
    """A new database URL: a SQLite file under `root`, or a PostgreSQL schema (dropped)."""
    if kind == "sqlite":
        yield f"sqlite:///{(root / f'{name}.db').as_posix()}"
        return
    url = make_url(os.environ.get("KEEL_BENCH_POSTGRES") or POSTGRES)
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
    schema = f"keel_bench_{secrets.token_hex(6)}"
    admin = create_engine(url)
    with admin.begin() as conn:
        conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
    try:
        scoped = url.update_query_dict({"options": f"-csearch_path={schema}"})
        yield scoped.render_as_string(hide_password=False)
    finally:
        with admin.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA "{schema}" CASCADE')
        admin.dispose()


def ready(brain: Path, url: str) -> None:
    """Keel's tables migrated and the brain's state applied, before anything is timed."""
    with Engine(brain, url, watch=False) as engine:
        engine.store.migrate()
        if not url.startswith("sqlite"):
            engine.apply_state()


class InProcess:
    """`engine.prepare` in this process, one turn after another: the baseline."""

    def __init__(self, brain: Path, url: str) -> None:
        self.engine = Engine(brain, url)

    def rate(self, turns: Sequence[dict[str, Any]]) -> float:
        """Turns per second over `turns`."""
        requests = [TurnBody.model_validate(b).request(datetime.now(UTC)) for b in turns]
        start = time.perf_counter()
        for request in requests:
            self.engine.prepare(request)
        return len(requests) / (time.perf_counter() - start)

    def close(self) -> None:
        self.engine.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def server(brain: Path, url: str) -> Iterator[str]:
    """`keel serve` in a subprocess; its base URL once `/healthz` answers."""
    port = free_port()
    command = [sys.executable, "-c", LAUNCH, "serve", str(brain), "--db", url]
    command += ["--port", str(port), "--no-seed", "--model", "none"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx2.get(base + "/healthz", timeout=2).raise_for_status()
                break
            except httpx2.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    error = process.stderr.read().decode() if process.stderr else ""
                    raise RuntimeError(f"keel serve did not start: {error}") from None
                time.sleep(0.1)
        yield base
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


@dataclass(frozen=True, slots=True, kw_only=True)
class Load:
    rate: float
    latencies: tuple[float, ...]
    errors: int


class Clients:
    """`count` client threads, each with one keep-alive HTTP connection for the whole run
    (a load balancer's or an agent runtime's pool), posting the turns of each round as
    fast as answers come."""

    def __init__(self, base: str, count: int) -> None:
        self._base = base
        self._work: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._latencies: list[float] = []
        self._errors = 0
        self._closing = False
        self._start = threading.Barrier(count + 1)
        self._done = threading.Barrier(count + 1)
        self._threads = [threading.Thread(target=self._serve, daemon=True) for _ in range(count)]
        for thread in self._threads:
            thread.start()

    def drive(self, turns: Sequence[dict[str, Any]]) -> Load:
        """Post every turn of `turns`; the rate is over the whole block."""
        self._work = list(reversed(turns))
        self._latencies, self._errors = [], 0
        self._start.wait()
        began = time.perf_counter()
        self._done.wait()
        wall = time.perf_counter() - began
        latencies = tuple(self._latencies)
        return Load(rate=len(latencies) / wall, latencies=latencies, errors=self._errors)

    def close(self) -> None:
        self._closing = True
        self._start.wait()
        for thread in self._threads:
            thread.join()

    def _serve(self) -> None:
        with httpx2.Client(base_url=self._base, timeout=60) as client:
            while True:
                self._start.wait()
                if self._closing:
                    return
                self._post_all(client)
                self._done.wait()

    def _post_all(self, client: httpx2.Client) -> None:
        while True:
            with self._lock:
                if not self._work:
                    return
                body = self._work.pop()
            began = time.perf_counter()
            try:
                failed = client.post("/v1/turns", json=body).status_code != 200
            except httpx2.HTTPError:
                failed = True
            spent = time.perf_counter() - began
            with self._lock:
                self._latencies.append(spent)
                self._errors += failed


def measure(kind: str, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Both sides on their own database of `kind`, in interleaved rounds."""
    brain = root / f"brain-{kind}"
    shutil.copytree(REFERENCE, brain, ignore=shutil.ignore_patterns(".keel"))
    per_round = args.turns // args.rounds
    workload = bodies()
    baseline: list[float] = []
    service: list[Load] = []
    with database(kind, root, "inprocess") as mine, database(kind, root, "service") as theirs:
        ready(brain, mine)
        ready(brain, theirs)
        local = InProcess(brain, mine)
        try:
            with server(brain, theirs) as base:
                clients = Clients(base, args.clients)
                warm = cycled(workload, args.warmup)
                local.rate(warm)
                clients.drive(warm)
                for index in range(args.rounds):
                    block = cycled(workload[index % len(workload) :] + workload, per_round)
                    baseline.append(local.rate(block))
                    service.append(clients.drive(block))
                clients.close()
        finally:
            local.close()
    ordered = sorted(t for load in service for t in load.latencies)
    rate = statistics.median(load.rate for load in service)
    base_rate = statistics.median(baseline)
    errors = sum(load.errors for load in service)
    ratio = rate / base_rate
    return {
        "database": kind,
        "clients": args.clients,
        "rounds": args.rounds,
        "in_process_turns_per_s": round(base_rate, 1),
        "service_turns_per_s": round(rate, 1),
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 2),
        "errors": errors,
        "turns": len(ordered),
        "ratio": round(ratio, 3),
        "target": f">= {TARGET:.0%} of in-process, 0 errors",
        "met": ratio >= TARGET and errors == 0,
    }


def render(results: Sequence[dict[str, Any]]) -> str:
    lines = [
        "POST /v1/turns against engine.prepare, one server process, "
        f"{results[0]['clients']} clients",
        "",
        "| database | in-process turns/s | service turns/s | p50 ms | p99 ms | errors "
        "| ratio | target |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines.extend(
        f"| {r['database']} | {r['in_process_turns_per_s']} | {r['service_turns_per_s']} | "
        f"{r['p50_ms']} | {r['p99_ms']} | {r['errors']} | {r['ratio']:.0%} | "
        f"{'MET' if r['met'] else 'MISSED'} |"
        for r in results
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--turns", type=int, default=2400, help="timed turns per side")
    parser.add_argument("--rounds", type=int, default=6, help="interleaved rounds")
    parser.add_argument("--warmup", type=int, default=60)
    parser.add_argument("--databases", default="sqlite,postgres")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="keel-load-") as tmp:
        kinds = [kind.strip() for kind in args.databases.split(",")]
        results = [measure(kind, Path(tmp), args) for kind in kinds]
    print(json.dumps(results, indent=2) if args.json else render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
