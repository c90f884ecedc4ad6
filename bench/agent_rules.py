"""What Keel's prompt hook delivers from real rule trees, against what each tool would load.

    uv run python bench/agent_rules.py [--runs 7] [--cold] [--json]

The corpus is `tests/fixtures/agent_rules/`: the rule files of public repositories, each
with the files of two or more agent tools (Cursor, Claude Code, AGENTS.md, GitHub
Copilot; their sources and licences in SOURCES.md there). For each repository the bench
copies it to a temporary folder, writes a new brain as `keel init` does, imports the copy
with `--role coder` as `keel import` does, and asks the prompt hook each of the
repository's prompts (`tests.importers.corpus.PROMPTS`: one per file a glob or folder rule
covers, and one that names no file), each in a new session — the first prompt of a
session, which carries everything. What the hook sent is compared with what each tool
would load for the file the prompt names (`tests.importers.corpus.tool_rules`, a small
model of each tool's own loading rule), rule file by rule file:

- **rules sent**: the rules any tool would load that a context sent whole stands for
  (itself, or a parallel rule merged into it), over the rules the tools would load —
  target 100 %; **stubbed**: those only a stub line stands for; **missing**: those nothing
  sent stands for;
- **twice**: a rule two sent contexts stand for, or a context sent twice — target none;
- **always stubbed**: always-on contexts sent as a stub — target none;
- **chars**: the hook's added context (its catalog block apart) over what the tools would
  add, each tool's set counted as that tool adds it (`÷ tools`, target ≤ 100 %: a rule kept
  for two tools is sent once), and over the distinct rule files counted once (`÷ union`);
- **unaccounted**: rule files of the repository that the import's report (`seen`, what
  `keel import --json` lists) does not name — target none.

Then the hook's latency: `keel agent-hook BRAIN --role coder` as a new process on the
largest repository's brain, one prompt of its set per call, each call a new session, with
the brain's warm server running (started by a first, untimed call, as an agent's first
prompt starts it), interleaved with `python -c pass` over `--runs` rounds; what carries
from one machine to another is the hook's median over the baseline's. `--cold` adds the
same hook with no server (`KEEL_HOOK_SERVER=off`): what a prompt pays when none answers.
The processes get a bytecode cache of their own, as an installed Keel has.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.importers.corpus import (  # noqa: E402
    PROMPTS,
    ROLE,
    RepoResult,
    measure_repo,
    repos,
)

from keel.cli.hook_client import SWITCH  # noqa: E402
from keel.cli.hook_wire import peer, socket_path  # noqa: E402

BASELINE = "python -c pass"
WARM = "keel agent-hook (warm)"
COLD = "keel agent-hook (cold)"
LATENCY_REPO = "trigger.dev"  # the most rule files, and the most rules per prompt
SERVER_START_S = 300.0  # how long the warm server may take to listen, on a loaded machine


def keel() -> list[str]:
    """The installed `keel` script beside this interpreter, else `python -m keel`."""
    script = Path(sys.executable).with_name("keel")
    return [str(script)] if script.exists() else [sys.executable, "-m", "keel"]


def summary(result: RepoResult) -> dict[str, Any]:
    """One repository's figures, summed over its prompts."""
    prompts = result.prompts
    expected = sum(len(p.expected_rules) for p in prompts)
    covered = sum(len(p.covered) for p in prompts)
    keel_chars = sum(p.keel_chars for p in prompts)
    tools_chars = sum(p.tools_chars for p in prompts)
    union_chars = sum(p.union_chars for p in prompts)
    return {
        "repo": result.repo,
        "prompts": len(prompts),
        "rule_files": result.rule_files,
        "seen": result.seen,
        "unaccounted": result.unaccounted,
        "rules_expected": expected,
        "rules_sent": covered,
        "rules_sent_ratio": round(covered / expected, 4) if expected else 1.0,
        "rules_stubbed": sum(len(p.stubbed_rules) for p in prompts),
        "rules_missing": sum(len(p.missing) for p in prompts),
        "twice": sum(len(p.twice) for p in prompts),
        "always_stubbed": sum(len(p.always_stubbed) for p in prompts),
        "extra": sum(len(p.extra) for p in prompts),
        "keel_chars": keel_chars,
        "catalog_chars": sum(p.catalog_chars for p in prompts),
        "tools_chars": tools_chars,
        "union_chars": union_chars,
        "chars_ratio_tools": round(keel_chars / tools_chars, 4) if tools_chars else None,
        "chars_ratio_union": round(keel_chars / union_chars, 4) if union_chars else None,
    }


def overall(rows: list[dict[str, Any]]) -> dict[str, Any]:
    keys = (
        "prompts",
        "rule_files",
        "rules_expected",
        "rules_sent",
        "rules_stubbed",
        "rules_missing",
        "twice",
        "always_stubbed",
        "extra",
        "keel_chars",
        "catalog_chars",
        "tools_chars",
        "union_chars",
    )
    total: dict[str, Any] = {key: sum(row[key] for row in rows) for key in keys}
    total["repo"] = "all"
    total["unaccounted"] = [f"{row['repo']}/{f}" for row in rows for f in row["unaccounted"]]
    total["rules_sent_ratio"] = round(total["rules_sent"] / total["rules_expected"], 4)
    total["chars_ratio_tools"] = round(total["keel_chars"] / total["tools_chars"], 4)
    total["chars_ratio_union"] = round(total["keel_chars"] / total["union_chars"], 4)
    return total


# --- the hook's latency ----------------------------------------------------------------


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


class Hook:
    """Runs `keel agent-hook` on one brain, a new session per call."""

    def __init__(self, brain: Path, env: dict[str, str]) -> None:
        self.argv = [*keel(), "agent-hook", str(brain), "--role", ROLE]
        self.env = env
        self.calls = 0

    def once(self, extra_env: dict[str, str] | None = None) -> float:
        prompts = PROMPTS[LATENCY_REPO]
        prompt = prompts[self.calls % len(prompts)].text
        self.calls += 1
        stdin = json.dumps(
            {
                "session_id": f"bench-{self.calls}",
                "transcript_path": "bench.jsonl",
                "cwd": ".",
                "hook_event_name": "UserPromptSubmit",
                "prompt": prompt,
            }
        )
        env = {**self.env, **(extra_env or {})}
        start = time.perf_counter()
        done = subprocess.run(
            self.argv, input=stdin, capture_output=True, text=True, env=env, check=False
        )
        elapsed = time.perf_counter() - start
        if done.returncode != 0 or not done.stdout.strip():
            raise SystemExit(f"keel agent-hook exited {done.returncode}:\n{done.stderr}")
        json.loads(done.stdout)  # the agent reads one JSON object
        return elapsed


def baseline(env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
    return time.perf_counter() - start


def latency(brain: Path, tmp: Path, runs: int, cold: bool) -> dict[str, Any]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    env.pop(SWITCH, None)
    hook = Hook(brain, env)
    off = {SWITCH: "off"}
    baseline(env)
    hook.once(off)  # untimed: bytecode, the snapshot cache
    hook.once()  # untimed: starts the warm server
    server = listening(brain)
    times: dict[str, list[float]] = {BASELINE: [], WARM: []}
    if cold:
        times[COLD] = []
    try:
        hook.once()  # the server's first answer
        for _ in range(runs):
            times[BASELINE].append(baseline(env))
            times[WARM].append(hook.once())
            if cold:
                times[COLD].append(hook.once(off))
        if listening(brain) != server:
            raise SystemExit("the warm server stopped during the runs")
    finally:
        os.kill(server, signal.SIGTERM)
    medians = {name: statistics.median(values) * 1000 for name, values in times.items()}
    base = medians[BASELINE]
    return {
        "repo": LATENCY_REPO,
        "runs": runs,
        "median_ms": {name: round(ms, 1) for name, ms in medians.items()},
        "added_ms": {name: round(ms - base, 1) for name, ms in medians.items() if name != BASELINE},
        "ratio": {name: round(ms / base, 2) for name, ms in medians.items()},
    }


def measure(runs: int, cold: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="keel-rules-") as name:
        tmp = Path(name)
        results = [measure_repo(repo, tmp) for repo in repos()]
        rows = [summary(r) for r in results]
        timing = latency(tmp / f"{LATENCY_REPO}-brain", tmp, runs, cold) if runs else None
    return {
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "repos": rows,
        "overall": overall(rows),
        "latency": timing,
        "prompts": {r.repo: [p.to_json() for p in r.prompts] for r in results},
    }


def _pct(ratio: float | None) -> str:
    return "—" if ratio is None else f"{ratio * 100:.0f}%"


def render(report: dict[str, Any]) -> str:
    head = (
        f"{'repo':12} {'asks':>4} {'rules sent':>11} {'stub':>4} {'miss':>4} {'twice':>5} "
        f"{'always':>6} {'÷ tools':>7} {'÷ union':>7} {'unacct':>6}"
    )
    lines = [
        f"{report['cpus']} CPUs, load average {' '.join(str(x) for x in report['load_average'])}",
        "asks: prompts; rules sent: the tools' rules sent whole; stub, miss: rules sent",
        "as a stub line, not at all; twice: rules two contexts carry; always: always-on",
        "rules sent as stubs; ÷ tools, ÷ union: the hook's characters (catalog apart)",
        "over the tools' (each tool's set; each rule file once); unacct: rule files the",
        "import's report leaves out",
        head,
        "-" * len(head),
    ]
    for row in [*report["repos"], report["overall"]]:
        sent = f"{row['rules_sent']}/{row['rules_expected']} {_pct(row['rules_sent_ratio'])}"
        lines.append(
            f"{row['repo']:12} {row['prompts']:4} {sent:>11} {row['rules_stubbed']:4} "
            f"{row['rules_missing']:4} {row['twice']:5} {row['always_stubbed']:6} "
            f"{_pct(row['chars_ratio_tools']):>7} {_pct(row['chars_ratio_union']):>7} "
            f"{len(row['unaccounted']):6}"
        )
    for repo, prompts in report["prompts"].items():
        for p in prompts:
            stubs = p["stubbed_rules"] + p["missing"]
            if stubs or p["twice"]:
                lines.append(f"  {repo} {p['file'] or '(no file)'}:")
                lines.extend(f"    not sent whole: {rule}" for rule in stubs)
                lines.extend(f"    twice: {rule}" for rule in p["twice"])
    timing = report["latency"]
    if timing is not None:
        lines.append(
            f"hook latency on {timing['repo']}, median of {timing['runs']} runs "
            f"(python -c pass: {timing['median_ms'][BASELINE]:.0f} ms):"
        )
        for name, ms in timing["added_ms"].items():
            lines.append(
                f"  {name:24} {timing['median_ms'][name]:7.0f} ms, +{ms:.0f} ms, "
                f"{timing['ratio'][name]:.1f}x"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--runs", type=int, default=7, help="timed rounds of the hook's latency (0: none)"
    )
    parser.add_argument(
        "--cold", action="store_true", help="also time the hook with no warm server"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    report = measure(args.runs, args.cold)
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
