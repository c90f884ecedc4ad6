"""The prompt hook's warm server: one per brain, answering `keel agent-hook` with an
engine it keeps open, so a prompt costs the turn and not the imports.

    python -m keel.cli.hook_server BRAIN [--idle SECONDS]

`keel.cli.hook_client` starts it in the background after a prompt it answered itself,
and asks it on the next prompts; `keel.cli.hook_wire` is what they say. It answers each
request exactly as the command would in a new process: the command line is parsed by the
command's own parser, in the client's working folder, the brain is read as the snapshot
cache reads it at that moment (`FollowedSource`: an edit reaches the next prompt), and the
answer is `keel.cli.hook_cmd.respond`'s, printed by the client byte for byte.

It lives while prompts come:

- one per brain: it holds `.keel/hook/server.lock` for its whole life, and a second one
  started at the same time exits at once;
- it exits after `--idle` seconds without a request (`IDLE_SECONDS` by default), when its
  brain folder or its socket goes away, when a client of another Keel asks (the one that
  starts next is the client's), when its own code changed on disk, and when brain code
  would be handed another environment than the client's (the next server gets it);
- it refuses, and the client runs the command itself, what it cannot answer as the
  command would: a request from another user (never answered at all), of another brain,
  or one that failed in a way the command reports as a crash.

Requests are answered one at a time, in the order they come, as prompts are.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import io
import os
import signal
import socket
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import typer
import typer.main

from keel.brain.snapshot import Brain
from keel.brain.snapshot_cache import FollowedSource
from keel.cli.hook_cmd import NAME, Said, respond, room_of
from keel.cli.hook_wire import (
    LOCK,
    Malformed,
    OtherKeel,
    answer,
    folder,
    peer_uid,
    private,
    read_all,
    read_request,
    refusal,
    socket_path,
)
from keel.cli.root import app
from keel.code.process import environment
from keel.errors import KeelError
from keel.runtime.engine import Engine
from keel.state.database import anchored, default_url

IDLE_SECONDS = 600.0
# How often a server with nothing to do looks whether its brain and socket are still there.
TICK_SECONDS = 2.0
# A client sends its whole request at once; one that stalls longer than this is dropped.
READ_SECONDS = 10.0
BACKLOG = 16
# A client checking whether a server runs holds the lock for an instant: try a few times.
LOCK_TRIES, LOCK_PAUSE = 5, 0.05


class Stop(Exception):
    """The server must not answer again: the request that found out is refused."""


@dataclass(slots=True)
class _Held:
    engine: Engine
    file: tuple[int, int] | None  # the SQLite file it has open, by device and inode


class HookServer:
    """The warm server of the brain at `root` (a real path), listening on `listener`."""

    def __init__(
        self,
        root: str,
        listener: socket.socket,
        *,
        idle: float = IDLE_SECONDS,
        tick: float = TICK_SECONDS,
        uid: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`idle` seconds without a request end `serve`; `tick` is how often it looks
        whether it should stop meanwhile; `uid` is the only user it answers (its own)."""
        self.root = root
        self.listener = listener
        self.idle = idle
        self.tick = tick
        self.uid = os.getuid() if uid is None else uid
        self._clock = clock
        self._source = FollowedSource(Path(root))
        self._engines: dict[str, _Held] = {}
        self._command = typer.main.get_group(app).commands["agent-hook"]
        self._code = _code_stamp()
        self._here = _identity(root), _identity(listener.getsockname())
        self._stopped = False

    def serve(self) -> None:
        """Answer requests until idle for `idle` seconds or told to stop (see the module)."""
        deadline = self._clock() + self.idle
        while not self._stopped and self._still_here():
            left = deadline - self._clock()
            if left <= 0:
                return
            self.listener.settimeout(min(left, self.tick))
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            with conn:
                self.handle(conn)
            deadline = self._clock() + self.idle

    def warm(self) -> None:
        """Open what the first prompt needs, when the brain's own database exists: the
        engine on it, its tables checked, and the brain code's workers started."""
        if _sqlite_file(default_url(Path(self.root))) is None:
            return  # a hook on another database; its first prompt opens that one
        # A database that cannot be opened fails the first prompt as the command fails.
        with contextlib.suppress(KeelError), self._engine(None) as engine:
            _ = engine.store, engine.code

    def handle(self, conn: socket.socket) -> None:
        """Answer, or refuse, one connection's request."""
        if peer_uid(conn) != self.uid:
            return  # not a word to another user's process
        conn.settimeout(READ_SECONDS)
        try:
            reply = self._reply(read_all(conn))
        except OSError:
            return  # the client went away, or stalled: it runs the command itself
        with contextlib.suppress(OSError):
            conn.sendall(reply)

    def stop(self) -> None:
        """Make `serve` return within a tick (from another thread, or a signal)."""
        self._stopped = True

    def close(self) -> None:
        """Stop: no engine, and no socket file left for a client to find."""
        self._stopped = True
        if self._still_here():
            with contextlib.suppress(OSError):
                os.unlink(self.listener.getsockname())
        self.listener.close()
        for held in self._engines.values():
            held.engine.close()
        self._engines.clear()

    # -- one request ----------------------------------------------------------------------

    def _reply(self, data: bytes) -> bytes:
        try:
            brain, cwd, args, env, stdin = read_request(data)
        except OtherKeel:
            self._stopped = True  # the client starts a server of its own Keel
            return refusal(self.root, "a client of another Keel")
        except Malformed as exc:
            return refusal(self.root, str(exc))
        if brain != self.root:
            return refusal(self.root, "a request for another brain")
        try:
            said = self._answer(cwd, args, env, stdin)
        except Stop as exc:
            self._stopped = True
            return refusal(self.root, str(exc))
        except Exception as exc:  # noqa: BLE001  (the client runs the command, which shows it)
            # A crash the command would report with its traceback: the client runs the
            # command itself, and this server, in a state no one knows, answers no more.
            self._stopped = True
            return refusal(self.root, f"the server failed: {exc!r}")
        if said is None:
            return refusal(self.root, "a command line this server does not answer")
        return answer(self.root, out=said.out, err=said.err, status=said.status)

    def _answer(self, cwd: str, args: list[str], env: dict[str, str], stdin: bytes) -> Said | None:
        """The command's answer, or None when it would not be the command's own."""
        if _changed(self._code):
            raise Stop("Keel's code changed since this server started")
        brain = self._source.refresh()
        if _handed(brain, env) != _handed(brain, os.environ):
            raise Stop("brain code would be handed another environment")
        try:
            os.chdir(cwd)
        except OSError:
            return None
        errors = io.StringIO()
        try:
            with contextlib.redirect_stderr(errors):
                context = self._command.make_context(NAME, list(args))
        except typer.Exit as done:
            return Said(err=errors.getvalue(), status=done.exit_code)
        params = context.params
        if params["brain"].resolve() != Path(self.root):
            return None
        room = room_of(
            bot=params["bot"],
            chat=params["chat"],
            thread=params["thread"],
            dm=params["dm"],
            role=params["role"],
            sender=params["sender"],
        )
        said = respond(lambda: self._engine(params["db"]), room, stdin)
        return Said(out=said.out, err=errors.getvalue() + said.err, status=said.status)

    @contextlib.contextmanager
    def _engine(self, db: str | None) -> Iterator[Engine]:
        """The open engine on the database `db` names (the brain's own by default); a
        SQLite file replaced or removed since it was opened is opened again."""
        url = anchored(db) if db else default_url(Path(self.root))
        held = self._engines.get(url)
        if held is not None and held.file != _sqlite_file(url):
            held.engine.close()
            held = None
        if held is None:
            held = _Held(Engine(self.root, url, source=self._source), None)
            self._engines[url] = held
        try:
            yield held.engine
        finally:
            held.file = _sqlite_file(url)  # the file it opened, or made, by now

    def _still_here(self) -> bool:
        return (_identity(self.root), _identity(self.listener.getsockname())) == self._here


def _handed(brain: Brain, env: Mapping[str, str]) -> dict[str, str]:
    """What brain code is handed of the environment `env`: nothing without brain code."""
    if not brain.with_code and not brain.engage:
        return {}
    return environment(brain.manifest.code.env, env)


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _sqlite_file(url: str) -> tuple[int, int] | None:
    """The SQLite file a URL names, by device and inode; None for none (or another kind)."""
    prefix = "sqlite:///"
    return _identity(url.removeprefix(prefix)) if url.startswith(prefix) else None


def _changed(stamp: list[tuple[str, int, int]]) -> bool:
    """Whether a module file of `stamp` is not what it was."""
    for path, size, mtime in stamp:
        try:
            st = os.stat(path)
        except OSError:
            return True
        if (st.st_size, st.st_mtime_ns) != (size, mtime):
            return True
    return False


def _code_stamp() -> list[tuple[str, int, int]]:
    """The files of every module of Keel this server has loaded, with their sizes and
    mtimes: the code it answers with."""
    found = []
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if (name == "keel" or name.startswith("keel.")) and path:
            st = os.stat(path)
            found.append((path, st.st_size, st.st_mtime_ns))
    return sorted(found)


# -- the process ------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Run the brain's server until it stops; 0 also when another already runs."""
    parser = argparse.ArgumentParser(prog="keel.cli.hook_server", description=__doc__)
    parser.add_argument("brain", help="the brain directory")
    parser.add_argument("--idle", type=float, default=IDLE_SECONDS, help="seconds idle before exit")
    args = parser.parse_args(argv)
    root = os.path.realpath(args.brain)
    path = socket_path(root)
    if path is None or not os.path.isdir(root):
        return 1  # no socket can be bound there, or no brain to serve
    os.chdir("/")  # hold no folder busy; each request runs in its client's
    os.umask(0o077)
    signal.signal(signal.SIGTERM, _exit)  # stopped, it still removes its socket
    with _lock(root) as locked:
        if not locked:
            return 0
        listener = _listen(path)
        if listener is None:
            return 1
        return _run(root, listener, idle=args.idle)


def _run(root: str, listener: socket.socket, *, idle: float) -> int:
    """Serve on `listener` until the server stops; its socket file is gone after."""
    server = None
    try:
        server = HookServer(root, listener, idle=idle)
        server.warm()  # a prompt that comes meanwhile waits for it, listened to
        server.serve()
    except KeelError:  # not a brain (any more): the command says so, prompt by prompt
        return 1
    finally:
        if server is not None:
            server.close()
        else:
            with contextlib.suppress(OSError):
                os.unlink(listener.getsockname())
            listener.close()
    return 0


@contextlib.contextmanager
def _lock(root: str) -> Iterator[bool]:
    """Hold the server's lock while the block runs; False when another process holds it
    (a server already runs), or the folder is not private to this user."""
    where = folder(root)
    with contextlib.suppress(FileExistsError):
        os.makedirs(where, mode=0o700)
    if not private(where):
        yield False
        return
    fd = os.open(os.path.join(where, LOCK), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        for _ in range(LOCK_TRIES):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                time.sleep(LOCK_PAUSE)
        else:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # and with it the lock


def _listen(path: str) -> socket.socket | None:
    """A socket listening at `path`, which only this user may connect to; a socket file
    left there by a dead server (this one holds the lock) is replaced."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(path)
        os.chmod(path, 0o600)
        listener.listen(BACKLOG)
    except OSError:
        listener.close()
        return None
    return listener


def _exit(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    sys.exit(main())
