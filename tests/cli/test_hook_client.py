"""The `keel agent-hook` client: what it takes for a brain, when it runs the command itself,
and the whole path as an agent runs it — a cold prompt that starts a server, then warm
prompts that load nothing heavy and print what the command prints."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest

from keel.cli import hook_client
from keel.cli.hook_wire import peer, socket_path
from tests.cli.test_entry import HEAVY
from tests.conftest import WriteBrain
from tests.mcp.brains import DEV_BRAIN, STYLE
from tests.mcp.test_hook import payload


@pytest.mark.parametrize(
    ("args", "brain"),
    [
        pytest.param(["b"], "b", id="alone"),
        pytest.param(["--role", "dev", "b", "--dm"], "b", id="options-around-it"),
        pytest.param(["--db=sqlite:///x.db", "b", "--chat", "-100"], "b", id="joined-and-dashed"),
        pytest.param(["b", "--help"], None, id="help"),
        pytest.param(["b", "--sesion", "x"], None, id="unknown-option"),
        pytest.param(["b", "c"], None, id="two-brains"),
        pytest.param([], None, id="no-brain"),
        pytest.param(["b", "--role"], None, id="an-option-without-its-value"),
        pytest.param(["--", "b"], None, id="end-of-options"),
    ],
)
def test_the_brain_of_a_command_line(
    args: list[str], brain: str | None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    expected = None if brain is None else os.path.realpath(tmp_path / brain)
    assert hook_client.brain_of(args) == expected


class Cold(Exception):
    """The command ran (in these tests, a stand-in for it)."""


def run_main(
    monkeypatch: pytest.MonkeyPatch, args: list[str], stdin: bytes, status: int
) -> tuple[list[bytes], list[str]]:
    """`hook_client.main` with a command that reads stdin and exits `status`: what the
    command read, and the brains a server was started for."""
    read: list[bytes] = []
    started: list[str] = []
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    monkeypatch.setattr(hook_client, "start_server", started.append)

    def command() -> NoReturn:
        read.append(sys.stdin.buffer.read())
        raise SystemExit(status)

    with pytest.raises(SystemExit) as done:
        hook_client.main(args, cold=command)
    assert done.value.code == status
    return read, started


@pytest.mark.parametrize(("status", "starts"), [(0, True), (1, False)])
def test_with_no_server_the_command_runs_on_the_same_input_and_a_server_starts_after_success(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, status: int, starts: bool
) -> None:
    monkeypatch.delenv(hook_client.SWITCH, raising=False)
    read, started = run_main(monkeypatch, [str(tmp_path)], b'{"prompt": "\xff"}', status)
    assert read == [b'{"prompt": "\xff"}']
    assert started == ([str(tmp_path.resolve())] if starts else [])


def test_switched_off_the_command_runs_and_no_server_starts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(hook_client.SWITCH, "off")
    read, started = run_main(monkeypatch, [str(tmp_path)], b"{}", 0)
    assert (read, started) == ([b"{}"], [])


def test_a_command_line_it_does_not_understand_goes_to_the_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(hook_client.SWITCH, raising=False)
    read, started = run_main(monkeypatch, [str(tmp_path), "--help"], b"{}", 0)
    assert (read, started) == ([b"{}"], [])


# -- the whole path, as a coding agent runs it -------------------------------------------

# `keel ARGS` in a fresh interpreter, printing on stderr the modules it loaded by its end.
LAUNCH = (
    "import atexit, json, sys\n"
    "atexit.register(lambda: sys.stderr.write('\\nMODULES ' + json.dumps(sorted(sys.modules))))\n"
    "from keel.cli import main\n"
    "sys.argv[0] = 'keel'\n"
    "main()\n"
)


def keel_hook(brain: Path, event: str, **env: str) -> tuple[bytes, bytes, int, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", LAUNCH, "agent-hook", str(brain)],
        input=payload(event).encode(),
        capture_output=True,
        env={**os.environ, **env},
        check=False,
    )
    errors, _, modules = done.stderr.rpartition(b"\nMODULES ")
    return done.stdout, errors, done.returncode, set(json.loads(modules))


@pytest.fixture
def server_pids() -> Iterator[list[int]]:
    """The servers a test started (by process id), stopped when it ends."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue


def serving(path: str) -> int:
    """The process id of the server listening at `path`, once one does."""
    deadline = time.monotonic() + 180  # a server starting on a loaded machine
    while time.monotonic() < deadline:
        with socket.socket(socket.AF_UNIX) as sock:
            try:
                sock.connect(path)
            except OSError:
                time.sleep(0.1)
                continue
            return peer(sock)[0]
    raise AssertionError(f"no server came to listen at {path}")


def test_a_cold_prompt_starts_a_server_and_the_next_prompts_are_answered_warm(
    write_brain: WriteBrain, tmp_path: Path, server_pids: list[int]
) -> None:
    brain = write_brain(DEV_BRAIN)
    twin = shutil.copytree(brain, tmp_path / "twin")
    env = {hook_client.IDLE: "120", hook_client.SWITCH: "on"}
    events = ["prompt_checkout", "prompt_colour", "prompt_done"]

    first = keel_hook(brain, events[0], **env)
    path = socket_path(str(brain.resolve()))
    assert path is not None
    pid = serving(path)
    server_pids.append(pid)
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # not a child of this process: never its zombie
    said = [first] + [keel_hook(brain, event, **env) for event in events[1:]]
    alone = [keel_hook(twin, event, **{hook_client.SWITCH: "off"}) for event in events]

    assert [s[:3] for s in said] == [a[:3] for a in alone]
    assert STYLE.encode() in said[0][0]
    assert {m for m in said[0][3] if m.startswith(HEAVY)}, "the first prompt ran cold"
    for _, _, _, modules in said[1:]:
        assert {m for m in modules if m.startswith(HEAVY)} == set(), "answered warm"
    os.kill(server_pids.pop(), signal.SIGTERM)
    deadline = time.monotonic() + 60
    while os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not os.path.exists(path), "a stopped server leaves no socket"


def test_the_server_inherits_no_descriptor_past_the_three_streams() -> None:
    kept, leaked = os.pipe()  # both close on exec, as Python opens them
    os.set_inheritable(leaked, True)  # as a pipe an agent handed down would be
    try:
        inherited = hook_client._inherited()
        assert leaked in inherited
        assert kept not in inherited
        assert not {0, 1, 2} & set(inherited)
    finally:
        os.close(kept)
        os.close(leaked)


def test_start_server_starts_one_detached_server_and_none_while_one_runs(
    write_brain: WriteBrain, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = os.path.realpath(write_brain(DEV_BRAIN))
    path = socket_path(root)
    assert path is not None
    monkeypatch.setenv(hook_client.IDLE, "120")
    pid = hook_client.start_server(root)
    assert pid is not None
    try:
        assert serving(path) == pid
        assert os.getsid(pid) == pid, "a session of its own: no terminal's signals reach it"
        assert hook_client.start_server(root) is None, "its lock is held"
    finally:
        os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)  # started from this long-lived process, so reaped here
    assert not os.path.exists(path)
