"""The prompt hook's warm server, run in a thread of the test: it answers as the command
does, byte for byte, follows edits, refuses what it must, and stops when it should."""

from __future__ import annotations

import io
import os
import shutil
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NoReturn

import pytest
from typer.testing import CliRunner

import keel.cli.hook_cmd  # noqa: F401  (registers the command)
from keel import __version__
from keel.cli import app, hook_client
from keel.cli.hook_client import ask
from keel.cli.hook_server import HookServer, _listen, _lock, main
from keel.cli.hook_wire import HOME, MAGIC, folder, pack, read_all, request, socket_path, unpack
from tests.mcp.brains import DEV_BRAIN, STYLE
from tests.mcp.test_hook import LINT_CONTEXT, payload

WriteBrain = Callable[[dict[str, str | bytes]], Path]
STYLE_FILE = "features/shop/style.context.md"


class Served:
    """A brain with its server running in a thread; `ask` asks it as the client does."""

    def __init__(self, root: Path, *, idle: float, uid: int | None) -> None:
        self.root = os.path.realpath(root)
        path = socket_path(self.root)
        assert path is not None
        self.path = path
        self._locked = _lock(self.root)
        assert self._locked.__enter__()
        listener = _listen(path)
        assert listener is not None
        self.server = HookServer(self.root, listener, idle=idle, tick=0.05, uid=uid)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            self.server.serve()
        finally:
            self.server.close()
            self._locked.__exit__(None, None, None)

    def ask(self, stdin: str | bytes, *args: str) -> tuple[str, str, int] | None:
        raw = stdin.encode() if isinstance(stdin, str) else stdin
        return ask(self.path, self.root, [self.root, *args], raw)

    def ended(self) -> bool:
        """Whether `serve` returned (waiting as long as a loaded machine may need)."""
        self.thread.join(timeout=60)
        return not self.thread.is_alive()

    def stop(self) -> None:
        self.server.stop()
        assert self.ended()


@pytest.fixture
def serve() -> Iterator[Callable[..., Served]]:
    started: list[Served] = []

    def start(root: Path, *, idle: float = 600.0, uid: int | None = None) -> Served:
        served = Served(root, idle=idle, uid=uid)
        started.append(served)
        return served

    yield start
    for served in started:
        served.stop()


def cold(root: Path, stdin: str | bytes, *args: str) -> tuple[bytes, bytes, int]:
    """The command itself, as it ran before the server: output, errors, status."""
    result = CliRunner().invoke(app, ["agent-hook", str(root), *args], input=stdin)
    return result.stdout_bytes, result.stderr_bytes, result.exit_code


def warm(served: Served, stdin: str | bytes, *args: str) -> tuple[bytes, bytes, int]:
    """The `keel` script's path with the server up: what it writes on each stream."""
    raw = stdin.encode() if isinstance(stdin, str) else stdin
    streams = {name: io.TextIOWrapper(io.BytesIO(), encoding="utf-8") for name in ("out", "err")}
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin = io.TextIOWrapper(io.BytesIO(raw))
    sys.stdout, sys.stderr = streams["out"], streams["err"]

    def no_cold() -> NoReturn:
        raise AssertionError("the server did not answer")

    try:
        with pytest.raises(SystemExit) as done:
            hook_client.main([served.root, *args], cold=no_cold)
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
    said = []
    for stream in streams.values():
        stream.flush()
        said.append(stream.buffer.getvalue())
    code = done.value.code
    assert isinstance(code, int)
    return said[0], said[1], code


def twins(
    write_brain: WriteBrain, tmp_path: Path, files: dict[str, str | bytes]
) -> tuple[Path, Path]:
    """Two copies of one brain, of one name in two folders, each with its own database:
    one for each path."""
    one = write_brain(files)
    return one, shutil.copytree(one, tmp_path / "twin" / one.name)


EVENTS = ["prompt_checkout", "prompt_colour", "session_start_compact", "prompt_done"]


def test_the_warm_path_prints_what_the_command_prints(
    write_brain: WriteBrain, tmp_path: Path, serve: Callable[..., Served]
) -> None:
    warm_brain, cold_brain = twins(write_brain, tmp_path, DEV_BRAIN)
    served = serve(warm_brain)
    printed = []
    for event in EVENTS:
        said = warm(served, payload(event))
        assert said == cold(cold_brain, payload(event)), event
        printed.append(bool(said[0]))
    assert printed == [True, False, True, False], "colour and done bring nothing new"


@pytest.mark.parametrize(
    ("stdin", "args"),
    [
        pytest.param("not json", (), id="malformed-input"),
        pytest.param(b'{"session_id": "\xff"}', (), id="input-not-utf8"),
        pytest.param('{"session_id": "s", "hook_event_name": "Stop"}', (), id="unanswered-event"),
        pytest.param(payload("prompt_checkout"), ("--chat", ""), id="a-chat-keel-cannot-store"),
        pytest.param(payload("prompt_checkout"), ("--role", "nobody"), id="an-unknown-role"),
        pytest.param(payload("session_start_clear"), ("--dm",), id="nothing-to-add"),
    ],
)
def test_what_goes_wrong_is_said_as_the_command_says_it(
    write_brain: WriteBrain,
    tmp_path: Path,
    serve: Callable[..., Served],
    stdin: str | bytes,
    args: tuple[str, ...],
) -> None:
    warm_brain, cold_brain = twins(write_brain, tmp_path, DEV_BRAIN)
    assert warm(serve(warm_brain), stdin, *args) == cold(cold_brain, stdin, *args)


def test_brain_code_warnings_are_said_as_the_command_says_them(
    write_brain: WriteBrain, tmp_path: Path, serve: Callable[..., Served]
) -> None:
    files: dict[str, str | bytes] = {
        **DEV_BRAIN,
        "features/shop/dev.agent.md": str(DEV_BRAIN["features/shop/dev.agent.md"]).replace(
            "[style, ticket]", "[style, ticket, lint]"
        ),
        "features/shop/lint.context.md": LINT_CONTEXT,
        "features/shop/lint.context.py": (
            "from keel.code import define_context\n\n"
            "def match(turn, ctx=None):\n    raise RuntimeError('boom')\n\n"
            "context = define_context(match=match)\n"
        ),
    }
    warm_brain, cold_brain = twins(write_brain, tmp_path, files)
    said = warm(serve(warm_brain), payload("prompt_checkout"))
    assert said == cold(cold_brain, payload("prompt_checkout"))
    assert b"match raised RuntimeError: boom" in said[1]


def test_an_edit_reaches_the_next_prompt_and_a_deleted_file_leaves(
    write_brain: WriteBrain, tmp_path: Path, serve: Callable[..., Served]
) -> None:
    warm_brain, cold_brain = twins(write_brain, tmp_path, DEV_BRAIN)
    served = serve(warm_brain)
    edit = "---\nwhen: [always]\n---\nWrite the test first, then the code.\n"
    steps: list[tuple[str, Callable[[Path], object]]] = [
        ("prompt_checkout", lambda _: None),
        ("prompt_colour", lambda brain: (brain / STYLE_FILE).write_text(edit, encoding="utf-8")),
        ("prompt_done", lambda brain: (brain / STYLE_FILE).unlink()),
    ]
    said = []
    for event, change in steps:
        change(warm_brain)
        change(cold_brain)
        said.append(warm(served, payload(event)))
        assert said[-1] == cold(cold_brain, payload(event)), event
    assert b"Write the test first" in said[1][0]
    assert b'<context-withdrawn name=\\"style\\"/>' in said[2][0]


def test_a_database_removed_under_the_server_is_made_again(
    write_brain: WriteBrain, tmp_path: Path, serve: Callable[..., Served]
) -> None:
    warm_brain, cold_brain = twins(write_brain, tmp_path, DEV_BRAIN)
    served = serve(warm_brain)
    first = warm(served, payload("prompt_checkout"))
    assert first == cold(cold_brain, payload("prompt_checkout"))
    for brain in (warm_brain, cold_brain):
        for name in os.listdir(brain / ".keel"):
            if name.startswith("keel.db"):
                os.unlink(brain / ".keel" / name)
    # A new database: the session was sent nothing, so it is sent everything again.
    assert warm(served, payload("prompt_checkout")) == first
    assert cold(cold_brain, payload("prompt_checkout")) == first


def test_a_relative_brain_and_database_are_read_in_the_clients_folder(
    write_brain: WriteBrain,
    tmp_path: Path,
    serve: Callable[..., Served],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    warm_brain, cold_brain = twins(write_brain, tmp_path, DEV_BRAIN)
    served = serve(warm_brain)
    args = [warm_brain.name, "--db", "sqlite:///elsewhere.db"]
    monkeypatch.chdir(warm_brain.parent)
    said = ask(served.path, served.root, args, payload("prompt_checkout").encode())
    monkeypatch.chdir(cold_brain.parent)
    out, err, status = cold(Path(args[0]), payload("prompt_checkout"), *args[1:])
    assert said == (out.decode(), err.decode(), status)
    assert STYLE in said[0]
    assert (warm_brain.parent / "elsewhere.db").is_file()
    assert not (warm_brain / ".keel" / "keel.db").exists()


def test_another_users_process_gets_not_a_word(
    write_brain: WriteBrain, serve: Callable[..., Served]
) -> None:
    served = serve(write_brain(DEV_BRAIN), uid=os.getuid() + 1)
    assert served.ask(payload("prompt_checkout")) is None
    assert not (Path(served.root) / ".keel" / "keel.db").exists(), "no turn was recorded"


def test_a_request_for_another_brain_is_refused(
    write_brain: WriteBrain, serve: Callable[..., Served]
) -> None:
    served = serve(write_brain(DEV_BRAIN))
    data = request(brain="/elsewhere", cwd="/", args=["/elsewhere"], env={}, stdin=b"{}")
    assert _exchange(served.path, data) == ("refused", "a request for another brain")
    assert served.ask(payload("prompt_checkout")) is not None, "and it still serves"


def test_a_client_of_another_keel_is_refused_and_the_server_stops(
    write_brain: WriteBrain, serve: Callable[..., Served]
) -> None:
    served = serve(write_brain(DEV_BRAIN))
    fields = unpack(request(brain=served.root, cwd="/", args=[served.root], env={}, stdin=b""))
    data = pack(MAGIC, b"0.0.1", HOME.encode(), *fields[3:])
    assert _exchange(served.path, data) == ("refused", "a client of another Keel")
    assert served.ended()
    assert not os.path.exists(served.path), "the next prompt starts a server of its own"


def test_a_server_whose_code_changed_stops(
    write_brain: WriteBrain, serve: Callable[..., Served]
) -> None:
    served = serve(write_brain(DEV_BRAIN))
    path, size, mtime = served.server._code[0]
    served.server._code[0] = (path, size, mtime - 1)
    assert served.ask(payload("prompt_checkout")) is None
    assert served.ended()


def test_brain_code_would_be_handed_another_environment_so_the_server_stops(
    write_brain: WriteBrain, serve: Callable[..., Served]
) -> None:
    files: dict[str, str | bytes] = {
        **DEV_BRAIN,
        "features/shop/lint.context.md": LINT_CONTEXT,
        "features/shop/lint.context.py": (
            "from keel.code import define_context\n\n"
            "context = define_context(match=lambda turn, ctx=None: False)\n"
        ),
    }
    served = serve(write_brain(files))
    assert served.ask(payload("prompt_checkout")) is not None
    env = {**os.environ, "LANG": "xx_XX.UTF-8"}  # handed to every worker
    data = request(brain=served.root, cwd="/", args=[served.root], env=env, stdin=b"{}")
    said = ("refused", "brain code would be handed another environment")
    assert _exchange(served.path, data) == said
    assert served.ended()


def test_an_idle_server_stops_and_leaves_no_socket(
    write_brain: WriteBrain, serve: Callable[..., Served]
) -> None:
    served = serve(write_brain(DEV_BRAIN), idle=0.2)
    assert served.ended()
    assert not os.path.exists(served.path)


def test_a_server_whose_brain_went_away_stops(
    write_brain: WriteBrain, serve: Callable[..., Served]
) -> None:
    served = serve(write_brain(DEV_BRAIN))
    shutil.rmtree(served.root)
    assert served.ended()


def test_a_server_whose_socket_was_removed_stops(
    write_brain: WriteBrain, serve: Callable[..., Served]
) -> None:
    served = serve(write_brain(DEV_BRAIN))
    os.unlink(served.path)
    assert served.ended()


def test_one_server_per_brain(write_brain: WriteBrain) -> None:
    root = os.path.realpath(write_brain(DEV_BRAIN))
    with _lock(root) as first, _lock(root) as second:
        assert (first, second) == (True, False)
        assert hook_client._locked(os.path.join(folder(root), "server.lock"))
    assert not hook_client._locked(os.path.join(folder(root), "server.lock"))


def test_a_folder_others_may_enter_gets_no_server(write_brain: WriteBrain) -> None:
    root = os.path.realpath(write_brain(DEV_BRAIN))
    os.makedirs(folder(root), mode=0o755)
    os.chmod(folder(root), 0o755)
    with _lock(root) as locked:
        assert not locked


def test_a_dead_servers_socket_is_replaced(write_brain: WriteBrain) -> None:
    root = os.path.realpath(write_brain(DEV_BRAIN))
    with _lock(root):
        path = socket_path(root)
        assert path is not None
        dead = socket.socket(socket.AF_UNIX)
        dead.bind(path)
        dead.close()  # the file stays, and no one listens
        assert ask(path, root, [root], b"{}") is None
        listener = _listen(path)
        assert listener is not None
        listener.close()


def _exchange(path: str, data: bytes) -> tuple[str, str]:
    """Send raw bytes to a server; the kind of its answer and the reason (or errors)."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(path)
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        fields = unpack(read_all(sock))
    assert fields[:2] == [MAGIC, __version__.encode()]
    return fields[4].decode(), fields[7].decode()


# -- the process: `python -m keel.cli.hook_server`, run here in the test's own thread ------


@pytest.fixture
def process_state(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """What `main` changes for its process, put back: the folder, the umask, SIGTERM."""
    monkeypatch.chdir(tmp_path)
    umask = os.umask(0o022)
    os.umask(umask)
    handler = signal.getsignal(signal.SIGTERM)
    yield
    os.umask(umask)
    signal.signal(signal.SIGTERM, handler)


@pytest.mark.usefixtures("process_state")
def test_the_server_process_warms_serves_and_leaves_nothing_when_idle(
    write_brain: WriteBrain,
) -> None:
    brain = write_brain(DEV_BRAIN)
    assert cold(brain, payload("prompt_checkout"))[2] == 0  # the brain's own database
    assert main([str(brain), "--idle", "0.3"]) == 0
    path = socket_path(os.path.realpath(brain))
    assert path is not None
    assert not os.path.exists(path)
    assert os.path.exists(os.path.join(folder(os.path.realpath(brain)), "server.lock"))


@pytest.mark.usefixtures("process_state")
def test_a_second_server_process_leaves_at_once(write_brain: WriteBrain) -> None:
    root = os.path.realpath(write_brain(DEV_BRAIN))
    with _lock(root):
        assert main([root, "--idle", "600"]) == 0


@pytest.mark.usefixtures("process_state")
def test_a_server_process_for_no_brain_exits_with_1(tmp_path: Path) -> None:
    assert main([str(tmp_path / "gone"), "--idle", "600"]) == 1
    assert main(["/" + "d" * 100, "--idle", "600"]) == 1
