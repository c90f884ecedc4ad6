"""How far Keel's built-in token estimate is from real counts, and how fast it is.

    uv run python bench/token_accuracy.py [--runs 30] [--json]

Accuracy: every text of the test corpus (tests/assemble/corpus.py: prose in seventeen
languages, code, JSON, tables, markdown, emoji, numbers, URLs and logs, whitespace-heavy
text) is counted by the estimate and, exactly, by tiktoken with the o200k_base and
cl100k_base rank files. Per corpus category the table shows the mean relative error, the
mean absolute error, the worst under and the worst over. The estimate is tuned to
o200k_base; cl100k_base is shown for comparison.

Speed: the standard assembly workload (`shared/bench/workload.py` beside the repository:
110 chat messages, 57 KB) counted as one text and message by message, by the estimate,
by tiktoken (o200k_base) and by toktok if it is installed. Each number is the median of
`--runs` rounds after a warm-up, the counters interleaved so drift hits them alike. The
framed total of the workload (texts + 4 per message + 3) is printed against the 15,813
o200k tokens its README states.

The rank files come from `KEEL_TIKTOKEN_DIR`, else `shared/data` beside the repository.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.tokens.corpus import corpus, missing_rank_files, rank_dir  # noqa: E402

from keel.errors import UsageError  # noqa: E402
from keel.tokens import TokenCounter  # noqa: E402
from keel.tokens.estimate import Estimator, estimate_tokens  # noqa: E402
from keel.tokens.exact import TiktokenCounter, ToktokCounter  # noqa: E402 - root on path first

WORKLOAD = REPO / ".." / "shared" / "bench" / "workload.py"
WORKLOAD_O200K_FRAMED = 15_813  # as the workload's README states


def load_workload() -> ModuleType:
    spec = importlib.util.spec_from_file_location("workload", WORKLOAD)
    if spec is None or spec.loader is None or not WORKLOAD.is_file():
        raise SystemExit(f"the standard workload is missing: expected it at {WORKLOAD}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["workload"] = module  # its dataclass looks its module up while being built
    spec.loader.exec_module(module)
    return module


def workload_messages(workload: Any) -> list[tuple[str, str]]:
    """The workload's canonical chat layout: system, skills, tools, views, history, request."""
    w = workload.make()
    messages = [("system", w.system), ("system", w.skills_text()), ("system", w.tools_text())]
    messages += [("system", w.view_header(name) + "\n" + "\n".join(rows)) for name, rows in w.views]
    messages += list(w.history)
    messages.append(("user", w.user))
    return messages


def accuracy(exact: dict[str, TokenCounter]) -> dict[str, dict[str, dict[str, float]]]:
    """Per encoding, per category (and `all`): mean, mean absolute, worst under and over."""
    categories = dict.fromkeys([*(sample.category for sample in corpus()), "all"])
    errors = {name: {category: list[float]() for category in categories} for name in exact}
    for sample in corpus():
        estimate = estimate_tokens(sample.text)
        for name, counter in exact.items():
            real = counter.count(sample.text)
            error = (estimate - real) / real
            errors[name][sample.category].append(error)
            errors[name]["all"].append(error)
    return {
        name: {
            category: {
                "texts": len(values),
                "mean": statistics.mean(values),
                "mean_abs": statistics.mean(abs(v) for v in values),
                "worst_under": min(values),
                "worst_over": max(values),
            }
            for category, values in by_category.items()
        }
        for name, by_category in errors.items()
    }


def median_ms(runs: int, actions: dict[str, Callable[[], object]]) -> dict[str, float]:
    for action in actions.values():
        action()  # warm-up
    times: dict[str, list[float]] = {label: [] for label in actions}
    for _ in range(runs):
        for label, action in actions.items():
            start = time.perf_counter()
            action()
            times[label].append(time.perf_counter() - start)
    return {label: statistics.median(values) * 1000 for label, values in times.items()}


def count_each(counter: TokenCounter, texts: list[str]) -> list[int]:
    return [counter.count(text) for text in texts]


def speed(runs: int, o200k: TiktokenCounter, workload: Any) -> dict[str, Any]:
    messages = workload_messages(workload)
    texts = [text for _, text in messages]
    whole = "\n".join(texts)
    counters: dict[str, TokenCounter] = {"estimate": Estimator(), "tiktoken": o200k}
    with contextlib.suppress(UsageError):  # toktok is optional
        counters["toktok"] = ToktokCounter.load("o200k_base")
    actions: dict[str, Callable[[], object]] = {}
    for label, counter in counters.items():
        actions[f"{label} whole"] = partial(counter.count, whole)
        actions[f"{label} per message"] = partial(count_each, counter, texts)
        actions[f"{label} batch"] = partial(counter.count_each, texts)
    return {
        "bytes": len(whole.encode()),
        "messages": len(messages),
        "median_ms": median_ms(runs, actions),
        "framed": {label: c.count_messages(messages) for label, c in counters.items()},
    }


def print_report(table: dict[str, dict[str, dict[str, float]]], timing: dict[str, Any]) -> None:
    for name, by_category in table.items():
        print(f"\nestimate against {name} (relative error; + is over, safe)\n")
        print(f"| {'category':16} | texts |   mean | mean abs | worst under | worst over |")
        print(f"|{'-' * 18}|-------|--------|----------|-------------|------------|")
        for category, row in by_category.items():
            print(
                f"| {category:16} | {row['texts']:5} | {row['mean']:+6.1%} | "
                f"{row['mean_abs']:8.1%} | {row['worst_under']:+11.1%} | "
                f"{row['worst_over']:+10.1%} |"
            )
    ms = timing["median_ms"]
    print(
        f"\nspeed on the standard workload ({timing['bytes']:,} bytes, "
        f"{timing['messages']} messages), median ms\n"
    )
    print("| counter | whole text | a call per message | one batch | framed total |")
    print("|---|---|---|---|---|")
    for label, framed in timing["framed"].items():
        print(
            f"| {label} | {ms[f'{label} whole']:.3f} | {ms[f'{label} per message']:.3f} "
            f"| {ms[f'{label} batch']:.3f} | {framed:,} |"
        )
    ratios = ", ".join(
        f"{ms[f'tiktoken {way}'] / ms[f'estimate {way}']:.1f}x {way}"
        for way in ("whole", "per message", "batch")
    )
    print(
        f"\nestimate against tiktoken: {ratios}; the workload README states "
        f"{WORKLOAD_O200K_FRAMED:,} o200k tokens framed"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="timed rounds (median)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    problem = missing_rank_files()
    if problem is not None:
        raise SystemExit(problem)
    folder = rank_dir()
    exact: dict[str, TokenCounter] = {
        name: TiktokenCounter.from_file(folder / f"{name}.tiktoken", name)
        for name in ("o200k_base", "cl100k_base")
    }
    table = accuracy(exact)
    o200k = exact["o200k_base"]
    assert isinstance(o200k, TiktokenCounter)
    timing = speed(args.runs, o200k, load_workload())
    if args.json:
        print(json.dumps({"accuracy": table, "speed": timing}, indent=2))
    else:
        print_report(table, timing)


if __name__ == "__main__":
    main()
