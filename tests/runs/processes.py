"""Run commands as processes of their own: started, waited for, killed with SIGKILL.

DBOS imports slowly without byte code, and this environment may forbid writing it; the
processes here may (so only the first pays), and run from the repository's root so the
test brain's `tests` package imports.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def environ() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def keel(*args: str) -> subprocess.Popen[str]:
    """`keel ARGS` as a child process."""
    return subprocess.Popen(
        [sys.executable, "-m", "keel", *args],
        cwd=ROOT,
        env=environ(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str], timeout: float = 90.0) -> tuple[int, str, str]:
    """Wait for a child process; its exit status, stdout and stderr."""
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


def kill(process: subprocess.Popen[str]) -> None:
    """SIGKILL: no clean-up, no last word — a crash."""
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=30)


def until(condition: Callable[[], bool], *, timeout: float = 60.0, what: str = "") -> None:
    """Poll `condition` until it holds; fail the test naming `what` if it never does."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what or condition}")
