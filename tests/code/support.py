"""Helpers for brain code tests: writing code files, making calls, looking at processes."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import count
from pathlib import Path
from types import FrameType

import pytest

from keel.code import MatchCall, TurnView

# Short, so a hang costs a test little; long enough for a busy machine to run a quick call.
SHORT_MS = 300
# Far above what a guarded block takes; only one that does not end in sight trips it.
GUARD_S = 30
_names = count()


def write_code(
    root: Path, source: str, *, suffix: str = ".context.py", path: str | None = None
) -> str:
    """Write a code file under a fresh name (or at `path`); its brain-relative path."""
    rel = path or f"features/t/c{next(_names)}{suffix}"
    file = root / rel
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(source, encoding="utf-8")
    return rel


def match_code(body: str, *, imports: str = "") -> str:
    """A context file whose `match(turn, ctx)` runs `body` (indented by the caller's lines)."""
    lines = "\n".join(f"    {line}" for line in body.splitlines())
    return f"{imports}from keel.code import define_context\n\n\ndef match(turn, ctx):\n{lines}\n\n\ncontext = define_context(match=match)\n"


def a_match(
    path: str, *, text: str = "T-481 is late", keyed: bool = True, timeout_ms: int = 2000
) -> MatchCall:
    turn = TurnView(input=text, role="support", surface="chat", subject_id="tg:chat:1")
    return MatchCall(context="ticket", path=path, keyed=keyed, turn=turn, timeout_ms=timeout_ms)


def children() -> dict[int, str]:
    """This process's child processes and their state letter (Z: a zombie)."""
    found: dict[int, str] = {}
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces, so split after its closing paren.
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == me:
            found[int(entry.name)] = state
    return found


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def threads() -> int:
    return threading.active_count()


@contextmanager
def guarded(seconds: int = GUARD_S) -> Iterator[None]:
    """Fail the test, instead of hanging the suite, when the block runs past `seconds`
    (an alarm in the main thread: it stops Python code that loops as well as a wait)."""

    def trip(_signum: int, _frame: FrameType | None) -> None:
        pytest.fail(f"still running after {seconds} s: the guard stopped it")

    previous = signal.signal(signal.SIGALRM, trip)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
