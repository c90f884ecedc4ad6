"""`confine` and `end_strays`, run in a forked child of the test: what a worker gives up,
and how it ends what its calls started.

tests/code/test_boundary.py shows the same through real workers; a worker is a process of
its own, which coverage does not follow, so these cases run the functions in a child of
the test process (confining the test itself would confine pytest) and save its coverage.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from keel.code.boundary import confine, end_strays

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")


def in_child(check: Callable[[], None]) -> None:
    """Run `check` in a forked child; fail with what it raised, if it raised."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        os.close(read)
        code = 0
        try:
            check()
        except BaseException as exc:  # noqa: BLE001 - everything goes back to the test
            os.write(write, f"{type(exc).__name__}: {exc}".encode())
            code = 1
        _save_coverage()
        os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as said:
        why = said.read().decode()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, why


def _save_coverage() -> None:
    try:
        import coverage
    except ImportError:
        return
    current = coverage.Coverage.current()
    if current is not None:
        current.stop()
        current.save()


def test_a_confined_process_cannot_signal_its_parent_or_leave_its_group() -> None:
    def check() -> None:
        os.setpgid(0, 0)  # as a worker: a group of its own
        notes = confine(keel=os.getppid(), keel_group=os.getpgid(os.getppid()), network=False)
        assert not [n for n in notes if "seccomp" in n], notes
        with pytest.raises(PermissionError):
            os.kill(os.getppid(), 0)
        with pytest.raises(PermissionError):
            os.kill(-1, 0)
        with pytest.raises(PermissionError):
            os.setsid()
        os.kill(os.getpid(), 0)  # itself: allowed
        with pytest.raises(PermissionError), socket.socket(socket.AF_INET) as sock:
            sock.connect(("127.0.0.1", 9))

    in_child(check)


def test_end_strays_kills_what_a_call_started_and_reaps_it(tmp_path: Path) -> None:
    def check() -> None:
        os.setpgid(0, 0)
        assert end_strays() == 0, "nothing started: nothing ended"
        sleeper = subprocess.Popen(["sleep", "300"])
        # A double fork: the grandchild's parent exits, and it stays in this group.
        pid_file = tmp_path / "daemon.pid"
        subprocess.run(["sh", "-c", f"sleep 300 & echo $! > {pid_file}"], check=True, timeout=30)
        daemon = int(pid_file.read_text())
        assert end_strays() >= 2
        assert not Path(f"/proc/{sleeper.pid}").exists(), "killed and reaped by end_strays"
        for _ in range(1000):
            if not Path(f"/proc/{daemon}").exists() or _zombie(daemon):
                break
            time.sleep(0.01)
        else:
            raise AssertionError("the orphan outlived end_strays")

    in_child(check)


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[0] == "Z"


def test_outside_linux_nothing_is_confined_and_it_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    notes = confine(keel=1, keel_group=1, network=True)
    assert notes == ["brain code is not confined on darwin: only Linux offers it"]
