"""The files that once brought a whole brain down, each loaded beside a good brain.

Run as a script (`python -m tests.brain.catastrophes`), in a process of its own: a
regression here can crash the interpreter (the C stack at 100,000 levels), block it for
ever (a FIFO) or eat the machine's memory (`/dev/zero`), so the test that drives it
(`test_fuzz.py`) runs it in a subprocess with a timeout and a memory limit. Prints one
JSON line per case: its name, seconds to load the brain, what loaded, the skips.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypedDict

GOOD = "---\ndescription: A ticket.\nwhen: [run, ask]\n---\nBe kind.\n"
ROLE = "---\ncontexts: [good]\ncapabilities: [context:read]\n---\nYou help.\n"
BAD = "features/a/bad.context.md"
BAD_ROLE = "features/a/bad.agent.md"
MANIFEST = "constitution/MANIFEST.yaml"
ACCESS = "constitution/access.yaml"


def _front(yaml: str) -> str:
    return f"---\nwhen: [run]\n{yaml}\n---\nBody.\n"


def _laughs_file() -> str:
    """The classic: nine levels of nine aliases, a billion strings in under 900 bytes."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level, name in enumerate("bcdefghi"):
        prev = "abcdefghi"[level]
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "---\nwhen: [run]\n" + "\n".join(lines) + "\ndata: *i\n---\nx\n"


def _write(root: Path, rel: str, text: str) -> None:
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def _fifo(root: Path, rel: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(root / rel)


def _fifo_link(root: Path, rel: str) -> None:
    os.mkfifo(root / "pipe")
    (root / rel).symlink_to(root / "pipe")


def _link(target: str) -> Callable[[Path, str], None]:
    def make(root: Path, rel: str) -> None:
        (root / rel).symlink_to(target)

    return make


def _outside_file(root: Path, rel: str) -> None:
    outside = root.parent / "outside.context.md"
    outside.write_text(GOOD, encoding="utf-8")
    (root / rel).symlink_to(outside)


def _directory(root: Path, rel: str) -> None:
    (root / rel).mkdir(parents=True)


def _text(text: str) -> Callable[[Path, str], None]:
    return lambda root, rel: _write(root, rel, text)


# name -> (path of the bad file, how to make it)
CASES: dict[str, tuple[str, Callable[[Path, str], None]]] = {
    "int-5000-digits": (BAD, _text(_front("chars: " + "9" * 5000))),
    "hex-description": (BAD, _text(_front("description: 0x" + "f" * 5000))),
    "nested-1000": (BAD, _text(_front("data: " + "[" * 1000 + "]" * 1000))),
    "nested-100000": (BAD, _text(_front("data: " + "[" * 100_000 + "]" * 100_000))),
    "nested-100000-yaml-1.2": (
        BAD_ROLE,
        _text(
            "---\ncapabilities: [context:read]\nstate: "
            + "[" * 100_000
            + "]" * 100_000
            + "\n---\nx\n"
        ),
    ),
    "nested-30000-yaml-1.2": (
        BAD_ROLE,
        _text(
            "---\ncapabilities: [context:read]\nstate: "
            + "[" * 30_000
            + "]" * 30_000
            + "\n---\nx\n"
        ),
    ),
    "nested-60000-lines": (BAD, _text(_front("data:\n" + " [\n" * 60_000 + "]" * 60_000))),
    "nested-15000-lines-yaml-1.2": (
        BAD_ROLE,
        _text(
            "---\ncapabilities: [context:read]\nstate:\n"
            + " [\n" * 15_000
            + "]" * 15_000
            + "\n---\nx\n"
        ),
    ),
    "block-100000": (BAD, _text(_front("data:\n" + "- " * 100_000 + "x"))),
    "billion-laughs": (BAD, _text(_laughs_file())),
    "fifo": (BAD, _fifo),
    "fifo-link": (BAD, _fifo_link),
    "dev-zero-link": (BAD, _link("/dev/zero")),
    "dev-null-link": (BAD, _link("/dev/null")),
    "outside-link": (BAD, _outside_file),
    "directory": (BAD, _directory),
    "chars-true": (BAD, _text(_front("chars: true"))),
    "rows-2**63": (MANIFEST, _text("state: { rows: 9223372036854775808 }\n")),
    "keep-20-digits": (MANIFEST, _text("contexts: { keep: 12345678901234567890 }\n")),
    "retention-days": (MANIFEST, _text("messageOrigins: { retentionDays: 99999999999 }\n")),
    "model-window": (MANIFEST, _text("model: { window: 99999999999999999999999 }\n")),
    "access-directory": (ACCESS, _directory),
    "access-fifo": (ACCESS, _fifo),
    "access-broken-yaml": (ACCESS, _text("bots:\n  nova: [\n")),
    "big-file": (BAD, _text(_front("") + "x" * (2 << 20))),
}


class Result(TypedDict):
    """What loading one case's brain gave."""

    case: str
    bad: str
    seconds: float
    contexts: list[str]
    roles: list[str]
    broken_access: bool
    skips: list[tuple[str, int | None, str]]


def run(name: str) -> Result:
    """Load a good brain with one bad file beside it; what happened, and how long it took."""
    from keel.brain import load_brain  # imported here so the import is not timed

    rel, make = CASES[name]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "brain"
        _write(root, "features/a/good.context.md", GOOD)
        _write(root, "features/a/helper.agent.md", ROLE)
        make(root, rel)
        start = time.perf_counter()
        brain = load_brain(root)
        seconds = time.perf_counter() - start
    return {
        "case": name,
        "bad": rel,
        "seconds": round(seconds, 4),
        "contexts": sorted(brain.contexts),
        "roles": sorted(brain.roles),
        "broken_access": brain.access.broken is not None,
        "skips": [(s.path, s.line, s.reason) for s in brain.skips],
    }


def main(args: list[str]) -> None:
    """JSON lines for the named cases (every case by default); `--table` for people."""
    import resource

    # A regression that reads /dev/zero fails here, not on the machine's memory.
    limit = 2 << 30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    table = "--table" in args
    for name in [a for a in args if a != "--table"] or list(CASES):
        found = run(name)
        if table:
            reasons = [s[2] for s in found["skips"] if s[0] == found["bad"]] or ["(loaded)"]
            line = f"  {name:<30} {found['seconds'] * 1000:8.1f} ms  {reasons[0][:64]}\n"
        else:
            line = json.dumps(found) + "\n"
        sys.stdout.write(line)
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
