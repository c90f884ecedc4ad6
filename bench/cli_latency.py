"""How long the `keel` command takes, each case against `python -c pass` in the same run.

    uv run python bench/cli_latency.py [--runs 15] [--json] [--no-bytecode-cache]

Every case is a new process, timed from its start to its exit, as a shell or a coding
agent runs it. The cases run `--runs` times, interleaved, so a busy moment hits all of
them alike; each case's median divided by the median of `python -c pass` is its ratio,
which means the same on a fast machine and a slow one.

- `python -c pass`: the interpreter starting and stopping, the baseline;
- `keel --version` and `keel --help`: answered before any command is imported;
- `keel agent-hook`, warm: one `UserPromptSubmit` on a copy of the reference brain
  (examples/brain) as role `support`, with the brain's warm server running (started by the
  first, untimed call, as an agent's first prompt starts it) — what a coding agent pays on
  every prompt after its first. Each call is a new session, so each prints the role's
  catalog;
- `keel agent-hook`, cold: the same with no server (`KEEL_HOOK_SERVER=off`), the snapshot
  cache and the database written: what a prompt pays when no server answers (the first
  of a session, or after the server's idle timeout);
- `keel agent-hook`, cold, no cache: the same with the snapshot cache removed before each
  call, so the brain is parsed too;
- `keel doctor` on the same copy.

A real install keeps its modules' bytecode (pip compiles it at install, Python on first
import), so by default the processes get a bytecode cache of their own
(`PYTHONPYCACHEPREFIX` in a temporary folder, filled by one untimed run of each case): an
environment that keeps none (`PYTHONDONTWRITEBYTECODE`) then measures what an install
measures. `--no-bytecode-cache` measures the environment as it is.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from keel.brain.snapshot_cache import CACHE_FILE
from keel.cli.hook_client import SWITCH
from keel.cli.hook_wire import peer, socket_path

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "examples" / "brain"
BASELINE = "python -c pass"
# Each case's ratio to `python -c pass`, from the speed issue.
TARGETS = {
    "keel --version": 4.0,
    "keel --help": 4.0,
    "keel agent-hook (warm)": 8.0,
}
DOCTOR_TARGET_S = 1.0  # on a 2-core machine: a time, so only reported beside its ratio
WARM = "keel agent-hook (warm)"
NO_SERVER = {SWITCH: "off"}
SERVER_START_S = 300.0  # how long the warm server may take to listen, on a loaded machine


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    argv: list[str]
    stdin: str | None = None
    cold: bool = False  # remove the brain's snapshot cache before each call
    env: dict[str, str] = field(default_factory=dict)  # added to the environment


def keel() -> list[str]:
    """The installed `keel` script beside this interpreter, else `python -m keel`."""
    script = Path(sys.executable).with_name("keel")
    return [str(script)] if script.exists() else [sys.executable, "-m", "keel"]


def prompt(session: int) -> str:
    return json.dumps(
        {
            "session_id": f"bench-{session}",
            "transcript_path": "bench.jsonl",
            "cwd": ".",
            "hook_event_name": "UserPromptSubmit",
            "prompt": "Which film tonight, and why that one?",
        }
    )


def cases(brain: Path) -> list[Case]:
    hook = [*keel(), "agent-hook", str(brain), "--role", "support"]
    return [
        Case(BASELINE, [sys.executable, "-c", "pass"]),
        Case("keel --version", [*keel(), "--version"]),
        Case("keel --help", [*keel(), "--help"]),
        Case(WARM, hook, stdin=""),
        Case("keel agent-hook (cold)", hook, stdin="", env=NO_SERVER),
        Case("keel agent-hook (cold, no cache)", hook, stdin="", cold=True, env=NO_SERVER),
        Case("keel doctor", [*keel(), "doctor", str(brain)]),
    ]


class Runner:
    def __init__(self, brain: Path, env: dict[str, str]) -> None:
        self.brain = brain
        self.env = env
        self.sessions = 0

    def once(self, case: Case) -> float:
        """Seconds one run of `case` takes; a run that fails stops the benchmark."""
        stdin = None
        if case.stdin is not None:
            self.sessions += 1
            stdin = prompt(self.sessions)
        if case.cold:
            (self.brain / CACHE_FILE).unlink(missing_ok=True)
        start = time.perf_counter()
        env = {**self.env, **case.env}
        done = subprocess.run(
            case.argv, input=stdin, capture_output=True, text=True, env=env, check=False
        )
        elapsed = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(f"{case.name} exited {done.returncode}:\n{done.stderr}")
        if case.stdin is not None:
            said = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
            if "<context-catalog>" not in said:
                raise SystemExit(f"{case.name} did not answer with the catalog:\n{said}")
        return elapsed


def listening(brain: Path) -> int:
    """The process id of the brain's warm server, once it listens."""
    path = socket_path(str(brain.resolve()))
    if path is None:
        raise SystemExit(f"{brain}: too deep a path for the warm server's socket")
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        with socket.socket(socket.AF_UNIX) as sock:
            try:
                sock.connect(path)
            except OSError:
                time.sleep(0.1)
                continue
            pid, uid = peer(sock)
            if uid != os.getuid():
                raise SystemExit(f"{path}: a server of another user")
            return pid
    raise SystemExit(f"no warm server came to listen at {path}")


def measure(runs: int, bytecode_cache: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="keel-cli-bench-") as tmp:
        brain = Path(tmp) / "brain"
        shutil.copytree(REFERENCE, brain, ignore=shutil.ignore_patterns(".keel"))
        env = dict(os.environ)
        if bytecode_cache:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        runner = Runner(brain, env)
        todo = cases(brain)
        for case in todo:  # untimed: bytecode, the database, the snapshot cache, the server
            runner.once(case)
        server = listening(brain)
        try:
            runner.once(todo[[c.name for c in todo].index(WARM)])  # the server's first answer
            times: dict[str, list[float]] = {case.name: [] for case in todo}
            for _ in range(runs):
                for case in todo:
                    times[case.name].append(runner.once(case))
            if listening(brain) != server:
                raise SystemExit("the warm server stopped during the runs")
        finally:
            os.kill(server, signal.SIGTERM)
    medians = {name: statistics.median(values) * 1000 for name, values in times.items()}
    base = medians[BASELINE]
    ratios = {name: round(ms / base, 2) for name, ms in medians.items()}
    return {
        "runs": runs,
        "bytecode_cache": bytecode_cache,
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "median_ms": {name: round(ms, 1) for name, ms in medians.items()},
        "ratio": ratios,
        "targets": {
            name: {"ratio": target, "met": ratios[name] <= target}
            for name, target in TARGETS.items()
        },
        "doctor_target_s": {
            "seconds": DOCTOR_TARGET_S,
            "met": medians["keel doctor"] / 1000 <= DOCTOR_TARGET_S,
        },
    }


def render(report: dict[str, Any]) -> str:
    lines = [
        f"{report['runs']} runs, {report['cpus']} CPUs, load average "
        f"{' '.join(str(x) for x in report['load_average'])}, bytecode cache "
        f"{'on' if report['bytecode_cache'] else 'off'}",
        f"{'case':33} {'median ms':>10} {'÷ pass':>8}  target",
    ]
    for name, ms in report["median_ms"].items():
        target = report["targets"].get(name)
        verdict = ""
        if target is not None:
            verdict = f"≤ {target['ratio']:g}x: {'MET' if target['met'] else 'MISSED'}"
        elif name == "keel doctor":
            doctor = report["doctor_target_s"]
            verdict = f"≤ {doctor['seconds']:g} s: {'MET' if doctor['met'] else 'MISSED'}"
        lines.append(f"{name:33} {ms:10.1f} {report['ratio'][name]:7.1f}x  {verdict}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs of each case")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--no-bytecode-cache",
        dest="bytecode_cache",
        action="store_false",
        help="keep the environment's bytecode setting (PYTHONDONTWRITEBYTECODE compiles "
        "every module on every start)",
    )
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be 1 or more")
    report = measure(args.runs, args.bytecode_cache)
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
