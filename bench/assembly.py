"""Assembling the standard workload: Keel against priomptipy and prompt-poet, and what each sends.

    uv run python bench/assembly.py [--runs 60] [--warmup 3] [--block 5] [--cpu N] [--json]
        [--no-peers] [--profile]

The workload is `shared/bench/workload.py` beside the repository (or under `$KEEL_SHARED`):
57 KB into an 8,000-token budget with a cut policy (older history first, oldest first,
newest 10 pinned; then view rows from the bottom, one level across every view at a time).
Each contender renders it from the same words, and is timed as the median of `--runs`
renders after `--warmup`, in rounds of `--block` renders of each (every block opening
with one untimed render), all on one CPU (`--cpu`), so a busy machine slows all alike:

1. Keel's `assemble` with the built-in `Estimator`;
2. Keel's `assemble` with exact o200k_base as `counter: o200k` gives it (`ToktokCounter`
   when the toktok extra is installed), and with `TiktokenCounter` on the shared rank
   file; tiktoken reading the workload once is shown beside, as its own floor;
3. priomptipy and 4. prompt-poet, each in a long-lived subprocess of its own environment
   (`bench/.peers/`, made on first use with `uv venv` + `uv pip install`) that renders
   when asked and times itself (bench/peers/);
5. a bare `"\\n".join` of the workload's 57 KB: the floor no assembler goes under.

For every contender, the chat messages it produced are measured with real o200k_base
(text + 4 per message + 3, and for Keel its tool definitions as Keel counts them), and
checked against the policy: what was cut, in which order, and whether a notice says so.
Ratios are peer / Keel, so both sides are measured on one machine in one run. When
Keel misses a target, `assemble` is profiled and the biggest costs are printed.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import importlib.util
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from keel.assemble.assembler import AssemblyInputs, assemble, tool_text
from keel.assemble.fit import payload_messages
from keel.assemble.row_cuts import RenderInput
from keel.assemble.values import Assembly, Message, ModelLimits, ToolSpec
from keel.brain.knobs import DEFAULT_BUDGETS, SectionBudgets
from keel.errors import UsageError
from keel.tokens import TokenCounter
from keel.tokens.estimate import Estimator
from keel.tokens.exact import TiktokenCounter, ToktokCounter

REPO = Path(__file__).resolve().parents[1]
PEERS = REPO / "bench" / ".peers"  # git-ignored: the peers' venv
PEER_PINS = ("priomptipy==0.19.1", "prompt-poet==0.0.52", "tiktoken==0.14.0")
# prompt-poet 0.0.52 pins tiktoken 0.7.0; every peer counts with the same tiktoken here.
PEER_OVERRIDES = ("tiktoken==0.14.0",)
PEER_SCRIPTS = {
    "priomptipy": REPO / "bench" / "peers" / "priomptipy_peer.py",
    "prompt-poet": REPO / "bench" / "peers" / "prompt_poet_peer.py",
}
TARGETS = {"estimate": 30.0, "o200k": 10.0}  # Keel at least this many times priomptipy's speed

Chat = list[tuple[str, str]]


def shared_dir() -> Path:
    return Path(os.environ.get("KEEL_SHARED") or REPO.parent / "shared")


def load_workload(shared: Path) -> ModuleType:
    path = shared / "bench" / "workload.py"
    spec = importlib.util.spec_from_file_location("workload", path)
    if spec is None or spec.loader is None or not path.is_file():
        raise SystemExit(f"the standard workload is missing: expected it at {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["workload"] = module  # its dataclass looks its module up while being built
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------------------------------
# Keel's side


def keel_inputs(w: Any, pinned: int) -> AssemblyInputs:
    """The workload as Keel's sections, in the workload's own words.

    Eight `skill.N` sections; the first carries the "# Skills" heading, so the system
    message reads exactly `system + "\\n\\n" + skills_text()`. Tools are `ToolSpec`s (no
    parameters), which Keel measures and sends apart from the chat messages.
    """
    skills = tuple(
        ("# Skills\n\n" if i == 0 else "") + f"## {name}\n{text}"
        for i, (name, text) in enumerate(w.skills)
    )
    return AssemblyInputs(
        current=w.user,
        prompt=w.system,
        skills=skills,
        tools=tuple(ToolSpec(name=name, description=text) for name, text in w.tools),
        renders=tuple(
            RenderInput(view=name, header=w.view_header(name), rows=rows) for name, rows in w.views
        ),
        history=tuple(Message(role=role, text=text) for role, text in w.history),
        pinned_history=pinned,
    )


def keel_render(w: Any, wl: ModuleType, counter: TokenCounter) -> Callable[[], Assembly]:
    """One turn's work: the inputs, `assemble`, and the chat messages it will send."""
    # Keel's default budgets, less history and render: only the allocation cuts.
    budgets = SectionBudgets(
        defaults={k: v for k, v in DEFAULT_BUDGETS.items() if k not in ("history", "render")}
    )
    limits = ModelLimits(
        name="bench", window=wl.BUDGET, output_reserve=0, input_allocation=wl.BUDGET
    )

    def once() -> Assembly:
        assembly = assemble(
            keel_inputs(w, wl.PINNED_RECENT), counter=counter, budgets=budgets, limits=limits
        )
        payload_messages(assembly)
        return assembly

    return once


def timed(action: Callable[[], Any]) -> float:
    """One call's time, with no garbage-collection pause inside it (the peers alike)."""
    gc.disable()
    try:
        start = time.perf_counter()
        action()
        return time.perf_counter() - start
    finally:
        gc.enable()


def per_call(calls: int, action: Callable[[], Any]) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        action()
    return (time.perf_counter() - start) / calls


def profile(action: Callable[[], Any], calls: int, top: int = 10) -> list[str]:
    """The functions `action` spends most of its own time in, per call."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        action()
    profiler.disable()
    stats = pstats.Stats(profiler)
    rows = sorted(stats.stats.items(), key=lambda item: -item[1][2])[:top]  # (cc, nc, tt, ct, ...)
    lines = []
    for (path, line, name), (_, ncalls, tottime, cumtime, _) in rows:
        where = f"{Path(path).name}:{line}" if line else path
        lines.append(
            f"{tottime / calls * 1e3:7.3f} ms own {cumtime / calls * 1e3:7.3f} ms cum "
            f"{ncalls / calls:6.0f} calls  {name} ({where})"
        )
    return lines


# ---------------------------------------------------------------------------------------
# The peers' side


def peer_python() -> Path:
    """The peers' interpreter, made on first use (or when the pins change)."""
    venv = PEERS / "venv"
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    marker = venv / "keel-peers.txt"
    wanted = "\n".join((*PEER_PINS, "override", *PEER_OVERRIDES))
    if python.exists() and marker.exists() and marker.read_text() == wanted:
        return python
    uv = shutil.which("uv")
    if uv is None:
        raise SystemExit("the peers' environment is made with uv, which is not on PATH")
    PEERS.mkdir(parents=True, exist_ok=True)
    overrides = PEERS / "overrides.txt"
    overrides.write_text("\n".join(PEER_OVERRIDES) + "\n")
    print(f"making the peers' environment in {venv} ...", file=sys.stderr)
    for command in (
        [uv, "venv", "--quiet", "--clear", "--python", sys.executable, str(venv)],
        [uv, "pip", "install", "--quiet", "--python", str(python), "--override", str(overrides),
         *PEER_PINS],
    ):  # fmt: skip
        subprocess.run(command, check=True, stdout=sys.stderr)
    marker.write_text(wanted)
    return python


class Peer:
    """A peer's runner, alive for the whole benchmark, rendering when asked (peers/common.py)."""

    def __init__(self, name: str, python: Path, shared: Path) -> None:
        self.name = name
        env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
        self.process = subprocess.Popen(
            [
                str(python),
                str(PEER_SCRIPTS[name]),
                *("--workload", str(shared / "bench" / "workload.py")),
                *("--rank-file", str(shared / "data" / "o200k_base.tiktoken")),
            ],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def ask(self, request: str) -> Any:
        stdin, stdout = self.process.stdin, self.process.stdout
        if stdin is None or stdout is None:
            raise SystemExit(f"{self.name}: its runner has no pipes")
        stdin.write(request + "\n")
        stdin.flush()
        line = stdout.readline()
        if not line:
            self.process.wait(timeout=10)
            error = self.process.stderr.read() if self.process.stderr else ""
            raise SystemExit(f"{self.name} failed:\n{error[-2000:]}")
        return json.loads(line)

    def times(self, renders: int) -> list[float]:
        return list(self.ask(f"run {renders}")["times"])

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=30)


# ---------------------------------------------------------------------------------------
# What was sent


def canonical(w: Any) -> list[str]:
    """The workload's texts in its canonical layout (110 messages): 57 KB."""
    texts = [w.system, w.skills_text(), w.tools_text()]
    texts += [w.view_header(name) + "\n" + "\n".join(rows) for name, rows in w.views]
    texts += [text for _, text in w.history]
    return [*texts, w.user]


def inspect(w: Any, wl: ModuleType, messages: Chat, extra: Sequence[str] = ()) -> dict[str, Any]:
    """What a contender kept and cut, measured on its messages, against the policy."""
    texts = [text for _, text in messages]
    whole = "\n".join([*texts, *extra])
    lines = {line for text in texts for line in text.split("\n")}
    known = {line for text in canonical(w) for line in text.split("\n")}
    n_history = len(w.history)
    kept_history = [i for i, (_, text) in enumerate(w.history) if text in lines]
    rows_kept = [[r for r, row in enumerate(rows) if row in lines] for _, rows in w.views]
    levels = [len(kept) for kept in rows_kept]
    n_rows = len(w.views[0][1])
    fixed = (
        w.system in whole
        and all(text in whole for _, text in (*w.skills, *w.tools))
        and all(w.view_header(name) in lines for name, _ in w.views)
        and w.user in lines
        and all(i in kept_history for i in range(n_history - wl.PINNED_RECENT, n_history))
    )
    history_cut = n_history - len(kept_history)
    views_cut = sum(level < n_rows for level in levels)
    # Every cut view must say so in its own notice: identical notices of different views
    # are counted once each, so they are collected per line of every message, not as a set.
    notices = [line for text in texts for line in text.split("\n") if line.strip()]
    notices = [line for line in notices if line not in known]
    policy = {
        "never_cut_kept": fixed,
        "history_oldest_first": kept_history == list(range(history_cut, n_history)),
        "rows_bottom_first": all(kept == list(range(len(kept))) for kept in rows_kept),
        "same_level_across_views": max(levels) == min(levels),
        "history_before_rows": views_cut == 0 or len(kept_history) == wl.PINNED_RECENT,
    }
    return {
        "messages": len(messages),
        "history_kept": len(kept_history),
        "history_cut": history_cut,
        "rows_shown_per_view": levels,
        "rows_cut": sum(n_rows - level for level in levels),
        "notices": notices,
        "cuts_visible": len(notices) >= int(history_cut > 0) + views_cut,
        "policy": policy,
        "policy_ok": all(policy.values()),
    }


def sent_tokens(o200k: TokenCounter, messages: Chat, tools: Sequence[str] = ()) -> int:
    return o200k.count_messages(messages) + sum(o200k.count(text) for text in tools)


def keel_result(
    assembly: Assembly, times: list[float], o200k: TokenCounter, w: Any, wl: ModuleType
) -> dict[str, Any]:
    messages = payload_messages(assembly)
    tools = [tool_text(t) for t in assembly.tools]
    return {
        "median_ms": statistics.median(times) * 1e3,
        "min_ms": min(times) * 1e3,
        "claimed_tokens": assembly.fit.estimate,
        "fit_ok": assembly.fit.ok,
        "sent_tokens": sent_tokens(o200k, messages, tools),
        "clipped": [s.id for s in assembly.sections if s.clipped],
        **inspect(w, wl, messages, tools),
    }


# ---------------------------------------------------------------------------------------


def pin(cpu: int | None) -> int | None:
    """Run on one CPU, the peers too (they inherit it): every contender meets the same core.

    Left to move, a short render pays for landing on a core another process just warmed
    or is busy on, and a whole run can come out slow for one contender and not another.
    """
    if not hasattr(os, "sched_setaffinity"):  # not Linux: left to the scheduler
        return None
    allowed = sorted(os.sched_getaffinity(0))
    chosen = allowed[0] if cpu is None else cpu
    if chosen not in allowed:
        raise SystemExit(f"--cpu {chosen}: this process may run on CPUs {allowed}")
    os.sched_setaffinity(0, {chosen})
    return chosen


def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    cpu = None if args.cpu == -1 else pin(args.cpu)
    shared = shared_dir()
    wl = load_workload(shared)
    w = wl.make()
    rank_file = shared / "data" / "o200k_base.tiktoken"
    o200k = TiktokenCounter.from_file(rank_file)
    # Exact o200k as `counter: o200k` gives it: toktok's compiled-in vocabulary when the
    # package is installed (Keel's `toktok` extra), else tiktoken on the rank file.
    default_exact: TokenCounter = o200k
    with contextlib.suppress(UsageError):
        default_exact = ToktokCounter.load("o200k_base")
    keel = {
        "keel (estimate)": keel_render(w, wl, Estimator()),
        "keel (o200k)": keel_render(w, wl, default_exact),
    }
    if default_exact is not o200k:
        keel["keel (o200k, tiktoken)"] = keel_render(w, wl, o200k)
    parts = canonical(w)
    join_s = statistics.median(per_call(2000, lambda: "\n".join(parts)) for _ in range(5))
    whole = "\n".join(parts)  # tiktoken reading the workload once: its own floor
    tiktoken_s = statistics.median(per_call(5, lambda: o200k.count(whole)) for _ in range(5))

    peers: dict[str, Peer] = {}
    if not args.no_peers:
        python = peer_python()
        peers = {name: Peer(name, python, shared) for name in PEER_SCRIPTS}
    try:
        for peer in peers.values():
            peer.times(args.warmup)
        for action in keel.values():
            for _ in range(args.warmup):
                action()
        # A short block of renders of every contender per round: rounds spread a busy
        # machine's load over all alike. Each block opens with one untimed render (the
        # peers' runners do the same), so every contender is timed warm, as a process
        # assembling turn after turn is, not just after another process had the CPU.
        times: dict[str, list[float]] = {label: [] for label in [*keel, *peers]}
        for _ in range(-(-args.runs // args.block)):
            for label, action in keel.items():
                action()
                times[label] += [timed(action) for _ in range(args.block)]
            for name, peer in peers.items():
                times[name] += peer.times(args.block)
        reports = {name: peer.ask("report") for name, peer in peers.items()}
    finally:
        for peer in peers.values():
            peer.close()

    results: dict[str, Any] = {
        label: keel_result(keel[label](), times[label], o200k, w, wl) for label in keel
    }
    for name, report in reports.items():
        messages = [(role, text) for role, text in report.pop("messages")]
        results[name] = {
            **report,
            "median_ms": statistics.median(times[name]) * 1e3,
            "min_ms": min(times[name]) * 1e3,
            "sent_tokens": sent_tokens(o200k, messages),
            **inspect(w, wl, messages),
        }
    results["string join (floor)"] = {"median_ms": join_s * 1e3, "bytes": w.total_bytes()}
    results["tiktoken, 57 KB once"] = {"median_ms": tiktoken_s * 1e3, "bytes": len(whole)}

    est, exact = results["keel (estimate)"]["median_ms"], results["keel (o200k)"]["median_ms"]
    for name in peers:
        results[name]["ratio_to_keel_estimate"] = results[name]["median_ms"] / est
        results[name]["ratio_to_keel_o200k"] = results[name]["median_ms"] / exact
    targets: dict[str, Any] = {}
    if "priomptipy" in peers:
        base = results["priomptipy"]["median_ms"]
        for counter, want in TARGETS.items():
            ratio = base / results[f"keel ({counter})"]["median_ms"]
            targets[counter] = {"target": want, "ratio": ratio, "met": ratio >= want}
        targets["o200k"]["counter"] = "toktok" if default_exact is not o200k else "tiktoken"
        for label in ("keel (o200k, tiktoken)", "tiktoken, 57 KB once"):
            if label in results:  # for comparison: tiktoken's speed bounds any use of it
                results[label]["ratio_of_priomptipy"] = base / results[label]["median_ms"]
    profiles = {}
    if args.profile or not all(targets[c]["met"] for c in TARGETS if c in targets):
        profiles = {
            label: profile(keel[label], 50) for label in ("keel (estimate)", "keel (o200k)")
        }
    return {
        "workload": {
            "bytes": w.total_bytes(),
            "budget": wl.BUDGET,
            "uncut_o200k": o200k.count_messages([("", text) for text in parts]),
            "pinned_recent": wl.PINNED_RECENT,
        },
        "runs": args.runs,
        "warmup": args.warmup,
        "cpu": cpu,
        "results": results,
        "targets": targets,
        "profiles": profiles,
        "seconds": time.perf_counter() - started,
    }


def render(report: dict[str, Any]) -> str:
    work, results = report["workload"], report["results"]
    out = [
        f"workload: {work['bytes']:,} bytes, {work['uncut_o200k']:,} o200k tokens uncut, "
        f"budget {work['budget']:,}; median of {report['runs']} renders after "
        f"{report['warmup']} warm-up"
        + (f", all on CPU {report['cpu']}" if report["cpu"] is not None else ""),
        "",
        f"| {'contender':22} | ms/render | vs Keel est | vs Keel o200k | sent (o200k) | "
        "own count | policy | notices |",
        f"|{'-' * 24}|-----------|-------------|---------------|--------------|-----------|"
        "--------|---------|",
    ]
    for label, r in results.items():
        if "sent_tokens" not in r:
            out.append(f"| {label:22} | {r['median_ms']:9.4f} | {'':11} | {'':13} | {'':12} | "
                       f"{'':9} | {'':6} | {'':7} |")  # fmt: skip
            continue
        vs_est = f"{r['ratio_to_keel_estimate']:.1f}x" if "ratio_to_keel_estimate" in r else ""
        vs_exact = f"{r['ratio_to_keel_o200k']:.1f}x" if "ratio_to_keel_o200k" in r else ""
        fits = "" if r["sent_tokens"] <= work["budget"] else " over"
        out.append(
            f"| {label:22} | {r['median_ms']:9.2f} | {vs_est:>11} | {vs_exact:>13} | "
            f"{r['sent_tokens']:7,}{fits:5} | {r['claimed_tokens']:9,} | "
            f"{'yes' if r['policy_ok'] else 'NO':6} | {'yes' if r['cuts_visible'] else 'no':7} |"
        )
    out.append("")
    for label, r in results.items():
        if "policy" not in r:
            continue
        broken = [name for name, ok in r["policy"].items() if not ok]
        levels = sorted(set(r["rows_shown_per_view"]))
        out.append(
            f"{label}: {r['messages']} messages; history {r['history_cut']} oldest cut, "
            f"{r['history_kept']} kept; rows shown per view {'/'.join(map(str, levels))} "
            f"({r['rows_cut']} cut)" + (f"; breaks: {', '.join(broken)}" if broken else "")
        )
        notices = r["notices"]
        shown = notices[:1] + notices[-1:] if len(notices) > 1 else notices
        out += [f"    notice: {notice}" for notice in shown]
        if len(notices) > 2:
            out.append(f"    ({len(notices)} notices in all)")
        if r.get("note"):
            out.append(f"    {r['note']}")
    for counter, t in report["targets"].items():
        verdict = "meets" if t["met"] else "MISSES"
        engine = f" via {t['counter']}" if "counter" in t else ""
        out.append(
            f"target: Keel ({counter}{engine}) {t['ratio']:.1f}x priomptipy's speed — {verdict} "
            f"the {t['target']:.0f}x target"
        )
    for label in ("keel (o200k, tiktoken)", "tiktoken, 57 KB once"):
        if "ratio_of_priomptipy" in results.get(label, {}):
            ratio = results[label]["ratio_of_priomptipy"]
            out.append(f"for comparison: {label} is {ratio:.1f}x priomptipy's speed")
    for label, lines in report["profiles"].items():
        out += ["", f"profile of {label}, per render (own time first):", *lines]
    out.append(f"\n({report['seconds']:.0f} s in all)")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=60, help="timed renders per contender")
    parser.add_argument("--warmup", type=int, default=3, help="untimed renders first")
    parser.add_argument(
        "--block", type=int, default=5, help="renders of each contender in a row per round"
    )
    parser.add_argument(
        "--cpu",
        type=int,
        help="the CPU every contender runs on (default: the first allowed; -1: any)",
    )
    parser.add_argument("--no-peers", action="store_true", help="Keel and the floor only")
    parser.add_argument("--profile", action="store_true", help="profile Keel even on target")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.runs < 2:
        parser.error("--runs must be at least 2")
    report = run(args)
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
