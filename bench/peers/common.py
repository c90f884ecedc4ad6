"""What every peer runner shares: the workload, the timing loop, the one JSON line it prints.

A runner is started by `bench/assembly.py` with the peers' own interpreter (the venv under
`bench/.peers/`, never Keel's), so nothing here imports Keel. It renders the standard
workload `--runs` times after `--warmup` renders, each timed alone after a collection (as
Keel's side is timed), and prints one JSON object: the times, the chat messages of the
last render as (role, text) pairs, and the token count the peer itself believed it sent.
The parent measures what was sent with one counter for everyone.

o200k_base comes from tiktoken's own cache folder (`TIKTOKEN_CACHE_DIR`), which the parent
fills from the local rank file: nothing is downloaded.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from types import ModuleType
from typing import Any

Messages = list[tuple[str, str]]
Render = Callable[[], tuple[Messages, int, str]]  # messages, claimed tokens, a note


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workload", type=Path, required=True, help="shared/bench/workload.py")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    if not os.environ.get("TIKTOKEN_CACHE_DIR"):
        raise SystemExit("TIKTOKEN_CACHE_DIR is not set: run this through bench/assembly.py")
    return args


def load_workload(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("workload", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load the workload from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["workload"] = module  # its dataclass looks its module up while being built
    spec.loader.exec_module(module)
    return module


def measure(peer: str, package: str, render: Render, args: argparse.Namespace) -> None:
    """Warm up, time `args.runs` renders, print the JSON report on stdout."""
    for _ in range(args.warmup):
        render()
    times: list[float] = []
    result: tuple[Messages, int, str] | None = None
    for _ in range(args.runs):
        gc.collect()
        start = time.perf_counter()
        result = render()
        times.append(time.perf_counter() - start)
    if result is None:
        raise SystemExit("--runs must be at least 1")
    messages, claimed, note = result
    report: dict[str, Any] = {
        "peer": peer,
        "version": version(package),
        "python": sys.version.split()[0],
        "runs": args.runs,
        "median_ms": statistics.median(times) * 1e3,
        "min_ms": min(times) * 1e3,
        "claimed_tokens": claimed,
        "note": note,
        "messages": messages,
    }
    print(json.dumps(report))
