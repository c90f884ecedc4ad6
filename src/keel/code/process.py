"""One code worker process as Keel holds it: started, fed, read, killed and reaped.

The process is started in the brain's root, in a session of its own (so a kill reaches
whatever brain code started too, a Ctrl-C in Keel's terminal does not, and the worker
cannot signal Keel's group through its own), with stdin and stdout on /dev/null and stderr
on a pipe whose last few kilobytes are kept: a crash leaves its traceback there (the
worker enables `faulthandler`), which gives the line it died at. The channel is a socket
pair; Keel's end never blocks — what cannot be sent yet waits in `out` until the socket
can take it.

Its environment is not Keel's (`environment`): only what Python and the locale need, and
the names MANIFEST `code: { env: [...] }` declares — never one of Keel's own `KEEL_*`
variables, whatever is declared. Keel's secrets, tokens and database URL stay in Keel.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Generic, TypeVar

import keel
from keel.code.protocol import RECV_BYTES, Frames, frame

T = TypeVar("T")
_TAIL_BYTES = 16 * 1024
# How long a worker that hung up is given to end on its own before it is killed.
_REAP_WAIT_S = 0.5
_FRAME_LINE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')


class WorkerProcess(Generic[T]):
    """A worker process, its channel, and the calls Keel has given it (`running`)."""

    def __init__(self, root: Path, hello: dict[str, Any], env: Mapping[str, str]) -> None:
        ours, theirs = socket.socketpair()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-P", "-B", "-m", "keel.code.worker", str(theirs.fileno())],
                cwd=root,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                pass_fds=(theirs.fileno(),),
                start_new_session=True,
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.setblocking(False)
        self.sock = ours
        self.err = self.proc.stderr
        if self.err is not None:
            os.set_blocking(self.err.fileno(), False)
        self.pid = self.proc.pid
        self.ready = False
        self.doomed = False
        # 1 while a caller reads its answers from this socket itself, else 0.
        self.readers = 0
        # Call id → the runner's record of it; the runner owns what is in it.
        self.running: dict[int, T] = {}
        self.out = bytearray(frame(hello))
        self._frames = Frames()
        self._tail = bytearray()

    def send(self, message: dict[str, Any]) -> None:
        self.out += frame(message)
        self.flush()

    def flush(self) -> None:
        """Send what the socket takes now; the rest waits for the next chance."""
        while self.out:
            try:
                sent = self.sock.send(self.out)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                self.out.clear()  # the worker is gone; reading its end says so
                return
            del self.out[:sent]

    def receive(self) -> tuple[list[dict[str, Any]], bool]:
        """Every complete message that has arrived, and whether the channel is still open.

        Raises `BrokenChannel` when the worker sent something that is not a frame.
        """
        messages: list[dict[str, Any]] = []
        while True:
            try:
                data = self.sock.recv(RECV_BYTES)
            except (BlockingIOError, InterruptedError):
                return messages, True
            except OSError:
                return messages, False
            if not data:
                return messages, False
            messages.extend(self._frames.feed(data))

    def drain_errors(self) -> bool:
        """Keep the tail of what the process wrote to stderr; False at its end."""
        if self.err is None:
            return False
        while True:
            try:
                data = os.read(self.err.fileno(), 1 << 16)
            except (BlockingIOError, InterruptedError):
                return True
            except OSError:
                return False
            if not data:
                return False
            self._tail += data
            del self._tail[:-_TAIL_BYTES]

    def crash_line(self, file: str) -> int | None:
        """The line of `file` in the crashing thread's traceback, if the crash left one."""
        text = self._tail.decode("utf-8", errors="replace")
        _, found, current = text.rpartition("Current thread")
        if not found:
            return None
        for match in _FRAME_LINE.finditer(current.split("\n\n", 1)[0]):
            if match["file"] == file:
                return int(match["line"])
        return None

    def last_words(self) -> str:
        """The last line the process wrote to stderr (why it could not start, say)."""
        lines = self._tail.decode("utf-8", errors="replace").strip().splitlines()
        return lines[-1].strip() if lines else ""

    def kill(self) -> None:
        """SIGKILL the worker and everything in its session (before it is reaped)."""
        if self.proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)

    def reap(self) -> int:
        """Wait for the process to end (killing it if it does not), kill what is left in
        its process group, and return its code.

        The group goes before the worker is reaped, while its pid still names the group: a
        worker that died, or was killed from outside, leaves nothing its calls started.
        """
        if self.proc.returncode is not None:
            return self.proc.returncode
        pause, until = 0.0005, time.monotonic() + _REAP_WAIT_S
        while not self._ended() and time.monotonic() < until:
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)  # the worker too, if it still runs
        return self.proc.wait()

    def _ended(self) -> bool:
        """Whether the process has ended, without reaping it."""
        try:
            return os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:
            return True

    def close(self) -> None:
        self.sock.close()
        if self.err is not None:
            self.err.close()

    def end_words(self) -> str:
        """How the process ended, for a message: `exited with code 3`, `was killed by ...`."""
        code = self.proc.returncode
        if code is None:
            return "stopped answering"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"was killed by {name}"
        return f"exited with code {code}"


# What a worker has of Keel's environment without being asked: where programs are, the
# home directory, the temporary one, and the locale and time zone (none of them a secret).
_KEPT = ("PATH", "HOME", "TMPDIR", "LANG", "LANGUAGE", "TZ", "PYTHONHOME")


def environment(declared: Iterable[str], source: Mapping[str, str] | None = None) -> dict[str, str]:
    """A worker's environment: the few names every process needs, with Keel's directory
    first on PYTHONPATH (so the worker imports this very Keel), and the `declared` names
    that `source` (Keel's own environment) has — but never a `KEEL_*` one."""
    source = os.environ if source is None else source
    env = {k: v for k, v in source.items() if k in _KEPT or k.startswith("LC_")}
    for name in declared:
        if name in source and not name.upper().startswith("KEEL_"):
            env[name] = source[name]
    home = str(Path(keel.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (home, source.get("PYTHONPATH")) if p)
    return env
