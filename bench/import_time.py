"""What `import keel` costs: a fresh interpreter importing it, beside one that imports nothing.

    uv run python bench/import_time.py [--runs 30] [--json]

`import keel` loads only the error classes: every public name is imported on first use,
so a program that only checks a brain never pays for the database layer, the terminal UI
or the file watcher. Each case starts a new interpreter (`python -c ...`) `--runs` times,
interleaved so that a slow moment hits both; the medians and their difference are what
Keel adds to a process's start. `import keel; keel.Engine` shows what the engine pulls in.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

CASES = {
    "python -c pass": "pass",
    "import keel": "import keel",
    "import keel; keel.Engine": "import keel; keel.Engine",
}


def once(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be 1 or more")
    times: dict[str, list[float]] = {name: [] for name in CASES}
    for _ in range(args.runs):
        for name, code in CASES.items():
            times[name].append(once(code))
    medians = {name: statistics.median(values) * 1000 for name, values in times.items()}
    base = medians["python -c pass"]
    if args.json:
        print(
            json.dumps(
                {"median_ms": medians, "added_ms": {n: m - base for n, m in medians.items()}}
            )
        )
        return
    print(f"{'case':28} {'median ms':>10} {'added ms':>10}")
    for name, median in medians.items():
        print(f"{name:28} {median:10.1f} {median - base:10.1f}")


if __name__ == "__main__":
    main()
