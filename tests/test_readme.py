"""The README runs as written: its library example, and its tour's commands on a fresh database."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tests import test_docs_service as service
from tests.runtime.driver import copy_reference
from tests.test_docs_tutorial import commands
from tests.web.test_serve_cmd import serving

ROOT = Path(__file__).parents[1]
RUN_ID = re.compile(r"\b(heartbeat-invoice-chase)-[0-9a-f]{8}\b")
STEP_ROW = re.compile(r"^(\d+)\s+(\w+)\s+(\w+)\s+\d+\.\d+(?:\s+(.*))?$")


def normalised_run(text: str) -> str:
    """A run's random id tail and its steps' milliseconds, which differ on every run."""
    lines = []
    for line in RUN_ID.sub(r"\1-<id>", text).split("\n"):
        row = STEP_ROW.match(line.rstrip())
        if row:
            line = f"{row[1]} {row[2]} {row[3]} <ms> {row[4] or ''}".rstrip()
        elif line.startswith("#  step"):
            line = " ".join(line.split())
        lines.append(line)
    return "\n".join(lines)


def test_the_python_example_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, re.DOTALL)
    assert blocks, "the README has a Python example"
    brain = tmp_path / "brain"
    shutil.copytree(ROOT / "examples" / "brain", brain, ignore=shutil.ignore_patterns(".keel"))
    code = blocks[0].replace("examples/brain", brain.as_posix())
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "('client', 'acme', 'chat')" in out
    assert out.rstrip().endswith("True")


# The tour's commands, each run as the reader runs it: in a terminal 80 columns wide (the
# tables, bars and wrapped findings are what a terminal shows), from the checkout's root,
# on a fresh database. A line `...` in the README stands for output left out.
TOUR_BLOCK = re.compile(r"^```\n(\$ uv run keel .*?)^```$", re.DOTALL | re.MULTILINE)


def tour_commands() -> list[tuple[str, list[str]]]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    tour = readme.split("## A tour", 1)[1].split("\n## ", 1)[0]
    found = []
    for block in TOUR_BLOCK.findall(tour):
        for chunk in re.split(r"^\$ ", block, flags=re.MULTILINE)[1:]:
            command, *output = chunk.rstrip("\n").split("\n")
            found.append((command, output))
    return found


def in_terminal(command: str, cwd: Path) -> str:
    """What `command` prints to an 80-column terminal (a pseudo-terminal of its own)."""
    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 80, 0, 0))
    keel = Path(sys.executable).parent / "keel"
    env = {**os.environ, "COLUMNS": "80", "LINES": "40", "TERM": "xterm"}
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "NO_COLOR", "FORCE_COLOR"):
        env.pop(name, None)
    done = subprocess.Popen(
        ["bash", "-c", command.replace("uv run keel ", f"{keel} ", 1)],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=secondary,
        stderr=secondary,
    )
    os.close(secondary)
    chunks = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([primary], [], [], 0.2)
        if not ready:
            if done.poll() is not None:
                break  # ended, and a worker it left behind still holds the terminal
            continue
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # the terminal closes when the command and its children end
            break
        if not chunk:
            break
        chunks.append(chunk)
    done.wait(timeout=10)
    os.close(primary)
    # Bold and the like are the terminal's to render, not text.
    return re.sub(r"\x1b\[[0-9;]*m", "", b"".join(chunks).decode().replace("\r\n", "\n"))


def shown(expected: list[str], actual: list[str]) -> bool:
    """The README's lines are the output's; after a `...`, its lines follow somewhere later."""
    if "..." not in expected:
        return actual == expected
    cut = expected.index("...")
    head, tail = expected[:cut], expected[cut + 1 :]
    if actual[:cut] != head:
        return False
    rest = actual[cut:]
    return not tail or any(
        rest[i : i + len(tail)] == tail for i in range(len(rest) - len(tail) + 1)
    )


def test_the_tour_prints_what_it_shows_on_a_fresh_database(tmp_path: Path) -> None:
    shutil.copytree(
        ROOT / "examples" / "brain",
        tmp_path / "examples" / "brain",
        ignore=shutil.ignore_patterns(".keel"),
    )
    commands = tour_commands()
    assert len(commands) >= 6, "the tour's commands were found"
    for command, expected in commands:
        actual = in_terminal(command, tmp_path)
        lines = [line.rstrip() for line in normalised_run(actual).rstrip("\n").split("\n")]
        readme = normalised_run("\n".join(expected)).split("\n")
        assert shown([line.rstrip() for line in readme], lines), (
            f"$ {command}\n--- README\n"
            + "\n".join(expected)
            + "\n--- printed\n"
            + "\n".join(lines)
        )


# The API example: the README's curl commands, against `keel serve` on a fresh copy of the
# reference brain with its seed (the turn is the Acme room's fifth, after the seed's four).
CURL_BLOCK = re.compile(r"^```\n(\$ curl .*?)^```$", re.DOTALL | re.MULTILINE)
TURN_ID = re.compile(r'^\{"id":\d+,')


def test_the_curl_example_answers_what_the_readme_shows(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    (block,) = CURL_BLOCK.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    ran = commands(block)
    assert len(ran) == 2, "the README's two curl commands were found"
    with serving(brain) as server:
        for command in ran:
            line = command.line.replace("localhost:8000", server.base, 1)
            done = subprocess.run(
                ["bash", "-c", line], capture_output=True, text=True, timeout=60, check=False
            )
            assert done.returncode == 0, done.stderr
            # Only the turn's database id is normalised: it counts every turn recorded. The
            # README wraps its lines inside strings too: each line break is the space it cut.
            printed = TURN_ID.sub('{"id":60,', done.stdout)
            expected = command.expected.replace("\n", " ")
            assert service.shown(expected, printed), (
                f"the README's output drifted for:\n$ {line}\n--- not printed\n"
                f"{service.first_unseen(expected, printed)}\n--- printed\n{printed}"
            )
