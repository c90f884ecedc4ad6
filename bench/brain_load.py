"""How fast a brain loads, and what keeping it hot costs per turn.

    uv run python bench/brain_load.py [--contexts 10000 --roles 500 --entities 2000]
                                      [--runs 5] [--cold-runs 3] [--json]

Generates a synthetic brain (bench/generate.py) in a temporary directory, then measures,
each as the median of several runs, with its baseline measured in the same run so the
ratio means the same on a fast or a slow machine:

- cold load: `load_brain` and a fresh `BrainSource`, against just reading every file
  (`ratio_to_reads`, target at most 8x); the loader's in-process caches (cron checks,
  file locations) are cleared before each run, so every run is cold;
- stat probe with nothing changed (the interval has passed): per 1,000 files, against a
  bare `os.stat` loop over the same files and folders;
- a turn between probes, and a turn in watch mode: against one clock read;
- one edit (probe + re-parse + re-assemble) in stat mode and in watch mode: against a
  cold load, with its parts (one parse, one assemble) shown beside it.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from generate import Shape, generate
from keel.brain import files as brain_files
from keel.brain.loader import build_snapshot, load_brain, parse_path, scan
from keel.brain.schedule import cron_problem
from keel.brain.snapshot import Brain
from keel.brain.source import BrainSource

TARGET_PROBE_MS_PER_1000 = 1.0
TARGET_RATIO_TO_READS = 8.0
EDITED = "features/{feature}/bench-edit.context.md"


class FakeClock:
    """Monotonic seconds that jump past the probe interval when told to."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def timed(action: Callable[[], Any]) -> float:
    """Seconds one call of `action` takes, after a collection so runs start alike."""
    gc.collect()
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def forget() -> None:
    """Clear what the loader remembers within a process, so the next load is cold."""
    cron_problem.cache_clear()
    brain_files._location.cache_clear()


def median_of(runs: int, action: Callable[[], Any]) -> float:
    return statistics.median(timed(action) for _ in range(runs))


def per_call(calls: int, action: Callable[[], Any]) -> float:
    """Seconds per call over a tight loop of `calls` calls."""
    start = time.perf_counter()
    for _ in range(calls):
        action()
    return (time.perf_counter() - start) / calls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--contexts", type=int, default=10_000)
    parser.add_argument("--roles", type=int, default=500)
    parser.add_argument("--entities", type=int, default=2_000)
    parser.add_argument("--features", type=int, default=0, help="0: one per 50 contexts")
    parser.add_argument("--runs", type=int, default=5, help="runs of each cheap measure")
    parser.add_argument("--cold-runs", type=int, default=3, help="runs of each cold load")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    # The edit measure writes into the first feature, so the brain needs a context.
    if args.contexts < 1:
        parser.error("--contexts must be 1 or more")
    for option in ("roles", "entities", "features"):
        if getattr(args, option) < 0:
            parser.error(f"--{option} must be 0 or more")
    for option in ("runs", "cold_runs"):
        if getattr(args, option) < 1:
            parser.error(f"--{option.replace('_', '-')} must be 1 or more")
    shape = Shape(
        contexts=args.contexts, roles=args.roles, entities=args.entities, features=args.features
    )
    with tempfile.TemporaryDirectory(prefix="keel-bench-") as tmp:
        report = run(Path(tmp) / "brain", shape, args.runs, args.cold_runs)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(render(report))
    return 0


def run(root: Path, shape: Shape, runs: int, cold_runs: int) -> dict[str, Any]:
    started = time.perf_counter()
    made = generate(root, shape)
    generated_s = time.perf_counter() - started
    root = root.resolve()
    check(load_brain(root), shape)
    edited = EDITED.format(feature=made.features[0])
    write_edit(root / edited, 0)
    files, dirs = scan(root)
    file_paths = [str(root / rel) for rel in files]
    stat_paths = [*file_paths, str(root), *(str(root / rel) for rel in sorted(dirs))]

    def read_all() -> None:
        for path in file_paths:
            with open(path, "rb") as handle:
                handle.read()

    def stat_all() -> None:
        for path in stat_paths:
            os.stat(path)

    # Cold load, baseline and measures interleaved run by run.
    read_s, load_s, source_s = [], [], []
    for _ in range(cold_runs):
        read_s.append(timed(read_all))
        forget()
        load_s.append(timed(lambda: load_brain(root)))
        forget()
        source_s.append(timed(lambda: BrainSource(root, watch=False)))
    cold = statistics.median(load_s)

    # A stat probe that finds nothing: every call is past the interval.
    clock = FakeClock()
    live = BrainSource(root, watch=False, clock=clock)
    clock.now += 60
    live.current()  # settles anything written in the last moments

    def probe() -> None:
        clock.now += 60
        live.current()

    bare_stat = median_of(runs, stat_all)
    probe_s = median_of(runs, probe)
    count = len(files)

    # Turns between probes (a real clock, the default two-second interval) and in watch
    # mode: both should cost about a clock read, whatever the brain's size.
    calls = 200_000
    clock_read = statistics.median(per_call(calls, time.monotonic) for _ in range(runs))
    between_source = BrainSource(root, watch=False)
    between = statistics.median(per_call(calls, between_source.current) for _ in range(runs))
    with BrainSource(root, watch=True) as watched:
        watch_mode = watched.mode
        watched.current()
        watch_turn = statistics.median(per_call(calls, watched.current) for _ in range(runs))
        # One edit in watch mode: the call that picks up the event (read, parse, assemble).
        edit_watch = [edit_seen_by_watch(watched, root / edited, n) for n in range(1, runs + 1)]

    # One edit in stat mode: the probe, then read, parse and assemble.
    edit_stat: list[float] = []
    for n in range(runs + 1, 2 * runs + 1):
        write_edit(root / edited, n)
        clock.now += 60
        edit_stat.append(timed(live.current))
        if live.current().contexts["bench-edit"].instructions.count("Edit.") != n:
            raise SystemExit("the stat probe missed the benchmark's edit")
    one_parse = median_of(runs, lambda: parse_path(root, edited))
    cached = [parse_path(root, rel) for rel in files]
    one_assemble = median_of(runs, lambda: build_snapshot(root, cached))

    return {
        "shape": {
            "contexts": shape.contexts,
            "roles": shape.roles,
            "entities": shape.entities,
            "features": len(made.features),
            "files": count,
            "folders": len(dirs) + 1,
        },
        "generated_s": generated_s,
        "runs": runs,
        "cold_runs": cold_runs,
        "cold_load": {
            "load_brain_s": cold,
            "brain_source_s": statistics.median(source_s),
            "read_every_file_s": statistics.median(read_s),
            "ratio_to_reads": cold / statistics.median(read_s),
            "target_ratio_to_reads": TARGET_RATIO_TO_READS,
            "meets_target": cold / statistics.median(read_s) <= TARGET_RATIO_TO_READS,
            "met": cold / statistics.median(read_s) <= TARGET_RATIO_TO_READS,
            "ms_per_file": cold / count * 1e3,
        },
        "stat_probe": {
            "ms": probe_s * 1e3,
            "ms_per_1000_files": probe_s / count * 1e6,
            "bare_stat_loop_ms": bare_stat * 1e3,
            "stat_us_each": bare_stat / len(stat_paths) * 1e6,
            "ratio": probe_s / bare_stat,
            "target_ms_per_1000_files": TARGET_PROBE_MS_PER_1000,
            "meets_target": probe_s / count * 1e6 < TARGET_PROBE_MS_PER_1000,
            "met": probe_s / count * 1e6 < TARGET_PROBE_MS_PER_1000,
        },
        "between_probes": {
            "ns_per_turn": between * 1e9,
            "clock_read_ns": clock_read * 1e9,
            "ratio": between / clock_read,
        },
        "watch": {
            "mode": watch_mode,
            "ns_per_turn": watch_turn * 1e9,
            "clock_read_ns": clock_read * 1e9,
            "ratio": watch_turn / clock_read,
        },
        "one_edit": {
            "stat_mode_ms": statistics.median(edit_stat) * 1e3,
            "watch_mode_ms": statistics.median(edit_watch) * 1e3,
            "parse_one_file_ms": one_parse * 1e3,
            "assemble_ms": one_assemble * 1e3,
            "stat_ratio_to_cold_load": statistics.median(edit_stat) / cold,
            "watch_ratio_to_cold_load": statistics.median(edit_watch) / cold,
        },
    }


def check(brain: Brain, shape: Shape) -> None:
    """The generated brain must load whole, or the numbers measure the wrong thing."""
    if brain.skips:
        raise SystemExit(f"the generated brain has skips, first: {brain.skips[0]}")
    found = (len(brain.contexts), len(brain.roles), len(brain.entities))
    if found != (shape.contexts, shape.roles, shape.entities):
        raise SystemExit(f"the generated brain loaded {found}, expected {shape}")


def write_edit(path: Path, n: int) -> None:
    # The size changes with n, so even a settled stamp moves; the body differs every time.
    path.write_text(
        f"---\ndescription: Edited by the benchmark.\nwhen: [run, ask]\n---\n{'Edit. ' * n}\n",
        encoding="utf-8",
    )


def edit_seen_by_watch(source: BrainSource, path: Path, n: int) -> float:
    """Edit, then call `current()` until the watcher's event lands; time that one call."""
    before = source.current()
    write_edit(path, n)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        start = time.perf_counter()
        after = source.current()
        spent = time.perf_counter() - start
        if after is not before:
            return spent
        time.sleep(0.005)
    raise SystemExit("watch mode never saw the edit within 10 s")


def render(report: dict[str, Any]) -> str:
    shape, cold, probe = report["shape"], report["cold_load"], report["stat_probe"]
    between, watch, edit = report["between_probes"], report["watch"], report["one_edit"]
    gap = " " * 16  # under the measure's name, for its second and third lines
    return "\n".join(
        [
            f"brain: {shape['files']} files ({shape['contexts']} contexts, {shape['roles']} "
            f"roles, {shape['entities']} entities,",
            f"  {shape['features']} features, {shape['folders']} folders); medians of "
            f"{report['runs']} runs ({report['cold_runs']} for cold loads)",
            "",
            f"cold load       load_brain {cold['load_brain_s']:.2f} s "
            f"({cold['ms_per_file']:.3f} ms/file), BrainSource {cold['brain_source_s']:.2f} s",
            f"{gap}read every file {cold['read_every_file_s'] * 1e3:.0f} ms; "
            f"ratio {cold['ratio_to_reads']:.1f}x",
            f"{gap}target ≤ {cold['target_ratio_to_reads']:g}x the reads: {verdict(cold)}",
            f"stat probe      {probe['ms']:.1f} ms = {probe['ms_per_1000_files']:.2f} ms per "
            "1,000 files (a stat per file and folder)",
            f"{gap}bare os.stat loop {probe['bare_stat_loop_ms']:.1f} ms "
            f"({probe['stat_us_each']:.1f} µs a stat); ratio {probe['ratio']:.2f}x",
            f"{gap}target < {probe['target_ms_per_1000_files']:g} ms per 1,000 files: "
            f"{verdict(probe)}",
            f"between probes  {between['ns_per_turn']:.0f} ns a turn; clock read "
            f"{between['clock_read_ns']:.0f} ns; ratio {between['ratio']:.1f}x",
            f"watch           {watch['mode']} mode: {watch['ns_per_turn']:.0f} ns a turn, "
            "whatever the brain's size",
            f"{gap}ratio to a clock read {watch['ratio']:.1f}x",
            f"one edit        stat {edit['stat_mode_ms']:.1f} ms, watch "
            f"{edit['watch_mode_ms']:.1f} ms: {edit['stat_ratio_to_cold_load']:.3f}x / "
            f"{edit['watch_ratio_to_cold_load']:.3f}x a cold load",
            f"{gap}one parse {edit['parse_one_file_ms']:.2f} ms + assemble "
            f"{edit['assemble_ms']:.1f} ms",
        ]
    )


def verdict(measure: dict[str, Any]) -> str:
    return "MET" if measure["met"] else "MISSED"


if __name__ == "__main__":
    sys.exit(main())
