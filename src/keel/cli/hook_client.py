"""`keel agent-hook` before anything heavy loads: the brain's warm server answers, or the
command runs here and a server is started for the next prompt.

A coding agent runs the hook on every prompt, as a new process; importing the engine (the
database layer, validation, the command line framework) costs many times what the turn
does. So the `keel` script hands an `agent-hook` command line here first, and this module
imports only built-in modules (`keel.cli.hook_wire`):

1. It finds the brain in the command line (`brain_of`); a command line it does not fully
   understand (`--help`, an unknown option) goes to the command as it is.
2. It asks the brain's server (`ask`), checking that the folder is private, that the
   server runs as this user and that it is this Keel, for this brain; what the server
   answers is printed exactly as the command would print it, with its exit status.
3. With no answer (no server, a dead one, another Keel's, or one that refused), the
   command runs here, on the input already read — the cold path, today's behaviour — and
   when it succeeded a server is started in the background (`start_server`) for the
   next prompt, unless one is already starting.

`KEEL_HOOK_SERVER=off` in the environment turns all of this off: every prompt runs the
command here and no server is started. `KEEL_HOOK_SERVER_IDLE` sets how many seconds a
server started from here waits for a prompt before it exits (see `keel.cli.hook_server`).
"""

from __future__ import annotations

import _socket
import io
import os
import sys

from keel.cli.hook_wire import (
    HOME,
    LOCK,
    Malformed,
    folder,
    peer_uid,
    private,
    read_all,
    read_answer,
    request,
    socket_path,
)

# Not `typing.TYPE_CHECKING`: importing typing would cost every prompt its time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NoReturn

SWITCH = "KEEL_HOOK_SERVER"  # "off": no server is asked or started
IDLE = "KEEL_HOOK_SERVER_IDLE"  # seconds a server waits for a prompt before it exits
# The server's process: this Keel's (its folder comes first on the path, an argument: the
# program is a constant), then the server's own arguments.
SERVER = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); "
    "from keel.cli.hook_server import main; sys.exit(main(sys.argv[1:]))"
)
# A live server accepts at once; one that does not within this is as good as dead.
CONNECT_SECONDS = 2.0
# How long a prompt waits for the server's answer: a turn's brain code has its own
# timeouts, far below this, and the agent its own for the whole hook.
ANSWER_SECONDS = 300.0
# The command's options that take a value, and its one flag.
VALUED = frozenset({"--bot", "--chat", "--thread", "--role", "--db"})
FLAGS = frozenset({"--dm"})


def main(args: list[str], cold: Callable[[], NoReturn]) -> NoReturn:
    """Answer the hook with the command line `args` (after `agent-hook`): by the brain's
    server when one answers, else by `cold`, the command itself."""
    brain = None if os.environ.get(SWITCH) == "off" else brain_of(args)
    path = None if brain is None else socket_path(brain)
    if brain is None or path is None:
        cold()
    stdin = sys.stdin.buffer.read()
    said = ask(path, brain, args, stdin)
    if said is not None:
        out, err, status = said
        sys.stderr.write(err)
        sys.stderr.flush()
        sys.stdout.write(out)
        sys.stdout.flush()
        raise SystemExit(status)
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))  # the command reads what was read here
    try:
        cold()
    except SystemExit as done:
        if done.code in (0, None):
            start_server(brain)
        raise


def brain_of(args: list[str]) -> str | None:
    """The real path of the brain a command line names; None for a command line that is
    not one brain and the command's own options."""
    positional: list[str] = []
    rest = iter(args)
    for arg in rest:
        if arg in VALUED:
            if next(rest, None) is None:
                return None
        elif arg in FLAGS or arg.partition("=")[0] in VALUED:
            continue
        elif arg.startswith("-"):
            return None
        else:
            positional.append(arg)
    return os.path.realpath(positional[0]) if len(positional) == 1 else None


def ask(path: str, brain: str, args: list[str], stdin: bytes) -> tuple[str, str, int] | None:
    """The server's answer at `path` for one hook call: its output, errors and exit status;
    None when no server of this Keel and this user answered it."""
    if not private(os.path.dirname(path)):
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_SECONDS)
        sock.connect(path)
        if peer_uid(sock) != os.getuid():
            return None
        sock.settimeout(ANSWER_SECONDS)
        message = request(
            brain=brain, cwd=os.getcwd(), args=args, env=dict(os.environ), stdin=stdin
        )
        sock.sendall(message)
        sock.shutdown(_socket.SHUT_WR)
        return read_answer(read_all(sock), brain)
    except (OSError, Malformed):
        # No server (no socket, or a dead one's), a busy or hung one, a torn answer, or
        # one of another Keel: the command runs here, and says what is wrong if anything.
        return None
    finally:
        sock.close()


def start_server(brain: str) -> int | None:
    """Start the brain's server in the background, detached from this process's session
    and streams; its process id, or None when one is already starting or running.

    This process exits right after, so the server never waits to be reaped by it; a
    long-lived caller (a test) reaps it itself."""
    if sys.executable == "" or _locked(os.path.join(folder(brain), LOCK)):
        return None
    argv = [sys.executable, "-c", SERVER, os.path.dirname(HOME), brain]
    idle = os.environ.get(IDLE)
    if idle is not None:
        argv += ["--idle", idle]
    null = os.devnull
    streams = [
        (os.POSIX_SPAWN_OPEN, 0, null, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, null, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_DUP2, 1, 2),
        *((os.POSIX_SPAWN_CLOSE, fd) for fd in _inherited()),
    ]
    try:
        return os.posix_spawn(sys.executable, argv, os.environ, file_actions=streams, setsid=True)
    except OSError:
        return None  # the next prompt tries again; this one was answered


def _inherited() -> list[int]:
    """This process's descriptors past the three streams that a child would inherit: the
    server must not hold open a pipe the agent waits on to see closed."""
    try:
        listed = os.listdir("/proc/self/fd")
    except OSError:
        return []
    found = []
    for name in listed:
        fd = int(name)
        try:
            if fd > 2 and os.get_inheritable(fd):
                found.append(fd)
        except OSError:
            continue  # the listing's own descriptor, closed by now
    return found


def _locked(path: str) -> bool:
    """Whether a process holds the server's lock: a server is starting or running."""
    import fcntl

    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False
