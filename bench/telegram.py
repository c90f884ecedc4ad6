"""What the Telegram adapter adds to a turn: updates through a local Bot API double,
against `Engine.prepare` on the same turns in-process.

    uv run python bench/telegram.py [--updates 300] [--warmup 20] [--tmpdir DIR] [--json]

Both series prepare plain chat turns of the reference brain's desk bot in its support
forum (no model: `--model none`, so no answer is sent), each on its own copy of the
brain and its own SQLite file. The adapter series pushes every update to the double
(the test suite's, on 127.0.0.1) and runs `Adapter.poll(until_idle=True)`: getUpdates
over HTTP, the update read into a turn, the update id claimed in the turn's
transaction. The baseline calls `Engine.prepare` with the same requests. Reported: the
median and p99 per update of each, updates/s, and the ratio of the medians (the target is
at most 1.25: the adapter adds 25 % or less).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from aiogram.types import Update  # noqa: E402 - after the repository is on the path
from tests.telegram.double import TOKEN, running_double  # noqa: E402

from keel.runtime.engine import Engine  # noqa: E402
from keel.telegram.polling import Adapter  # noqa: E402
from keel.telegram.updates import Incoming, read_update, turn_request  # noqa: E402
from keel.telegram.webhook import client  # noqa: E402

FORUM = {"id": -1003000000001, "type": "supergroup", "title": "Support", "is_forum": True}
ANA = {"id": 5513001, "is_bot": False, "first_name": "Ana"}


def update(n: int) -> dict[str, Any]:
    return {
        "update_id": n,
        "message": {
            "message_id": 100 + n,
            "date": 1_777_000_000,
            "chat": FORUM,
            "from": ANA,
            "text": f"Where is my parcel? Order {5000 + n}",
        },
    }


def brain_copy(where: Path, name: str) -> tuple[Path, str]:
    root = where / name
    shutil.copytree(REPO / "examples" / "brain", root, ignore=shutil.ignore_patterns(".keel"))
    return root, f"sqlite:///{(where / f'{name}.db').as_posix()}"


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def adapter_series(where: Path, first: int, count: int) -> list[float]:
    brain, url = brain_copy(where, f"adapter-{first}")
    times: list[float] = []
    with running_double() as double, Engine(brain, url, watch=False) as engine:
        for n in range(first, first + count):
            double.push(update(n))

        async def run() -> None:
            bot = client(TOKEN, double.url)
            adapter = Adapter(engine, None, bot, bot="desk")
            handle = adapter.handle_update

            async def timed(given: Update) -> Any:
                start = time.perf_counter()
                done = await handle(given)
                times.append(time.perf_counter() - start)
                return done

            adapter.handle_update = timed  # type: ignore[method-assign]
            try:
                await adapter.poll(until_idle=True)
            finally:
                await bot.session.close()

        started = time.perf_counter()
        asyncio.run(run())
        times.append(-(time.perf_counter() - started))  # the whole poll, kept apart below
    return times


def baseline_series(where: Path, first: int, count: int) -> list[float]:
    brain, url = brain_copy(where, f"baseline-{first}")
    times: list[float] = []
    with Engine(brain, url, watch=False) as engine:
        for n in range(first, first + count):
            read = read_update(Update.model_validate(update(n)))
            assert isinstance(read, Incoming)
            request = turn_request(read, bot="desk", now=datetime.now(UTC))
            start = time.perf_counter()
            engine.prepare(request)
            times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--tmpdir", type=Path, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.tmpdir) as tmp:
        where = Path(tmp)
        adapter_all = adapter_series(where, 1, args.warmup + args.updates)
        whole = -adapter_all.pop()
        adapter = adapter_all[args.warmup :]
        baseline = baseline_series(where, 1, args.warmup + args.updates)[args.warmup :]
    result = {
        "updates": args.updates,
        "adapter_ms": {"median": statistics.median(adapter) * 1e3, "p99": p99(adapter) * 1e3},
        "prepare_ms": {"median": statistics.median(baseline) * 1e3, "p99": p99(baseline) * 1e3},
        "updates_per_s": (args.warmup + args.updates) / whole,
        "ratio": statistics.median(adapter) / statistics.median(baseline),
        "target_ratio": 1.25,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{args.updates} updates through the double, each a turn of desk (no model)")
    for name in ("adapter_ms", "prepare_ms"):
        got = result[name]
        print(f"  {name:<11} median {got['median']:7.2f} ms   p99 {got['p99']:7.2f} ms")
    print(f"  updates/s   {result['updates_per_s']:.1f} (the whole poll, getUpdates included)")
    print(f"  ratio       {result['ratio']:.2f} (target ≤ 1.25)")


if __name__ == "__main__":
    main()
