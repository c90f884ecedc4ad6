"""What every peer runner shares: the workload, the timing, and the line protocol.

A runner is started by `bench/assembly.py` with the peers' own interpreter (the venv under
`bench/.peers/`, never Keel's), so nothing here imports Keel. It serves requests on stdin,
one per line, and answers each with one JSON line on stdout:

- `run N`: one untimed render, then N renders, each timed alone with collection off (as
  Keel's side is timed); answers `{"times": [seconds, ...]}`. The parent asks for a block
  of renders per round, between Keel's, so a busy machine slows every contender alike;
  the untimed render lets each block start warm, after another process had the CPU.
- `report`: the last render's chat messages as (role, text) pairs, the token count the
  peer itself believed it sent, and the package's version. The parent measures what was
  sent with one counter for everyone.

o200k_base is put in tiktoken's registry from the local rank file (`--rank-file`), built by
tiktoken's own constructor with its published hash checked: nothing is downloaded.
"""

from __future__ import annotations

import argparse
import base64
import gc
import hashlib
import importlib.util
import json
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
    parser.add_argument("--rank-file", type=Path, required=True, help="o200k_base.tiktoken")
    args = parser.parse_args()
    register_o200k(args.rank_file)
    return args


def register_o200k(rank_file: Path) -> None:
    """o200k_base in tiktoken's registry, from a local rank file, before any peer asks."""
    import tiktoken
    import tiktoken.registry
    from tiktoken_ext import openai_public

    def local(_source: str, expected_hash: str | None = None) -> dict[bytes, int]:
        data = rank_file.read_bytes()
        if expected_hash and hashlib.sha256(data).hexdigest() != expected_hash:
            raise SystemExit(f"{rank_file} is not the o200k_base rank file tiktoken expects")
        return {
            base64.b64decode(token): int(rank)
            for token, rank in (line.split() for line in data.splitlines() if line)
        }

    openai_public.load_tiktoken_bpe = local  # the constructor's only download
    encoding = tiktoken.Encoding(**openai_public.o200k_base())
    tiktoken.registry.ENCODINGS["o200k_base"] = encoding


def load_workload(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("workload", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load the workload from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["workload"] = module  # its dataclass looks its module up while being built
    spec.loader.exec_module(module)
    return module


def serve(peer: str, package: str, render: Render) -> None:
    """Answer `run N` and `report` requests until stdin closes."""
    last = render()  # the first render loads the encoding: never timed
    for line in sys.stdin:
        command, _, count = line.strip().partition(" ")
        if command == "run":
            times: list[float] = []
            last = render()  # warm again after the other contenders' turn
            for _ in range(int(count)):
                gc.disable()  # no collection pause inside a timed render (Keel's side alike)
                start = time.perf_counter()
                last = render()
                times.append(time.perf_counter() - start)
                gc.enable()
            answer: dict[str, Any] = {"times": times}
        elif command == "report":
            messages, claimed, note = last
            answer = {
                "peer": peer,
                "version": version(package),
                "python": sys.version.split()[0],
                "claimed_tokens": claimed,
                "note": note,
                "messages": messages,
            }
        else:
            answer = {"error": f"unknown request {line.strip()!r}"}
        print(json.dumps(answer), flush=True)
