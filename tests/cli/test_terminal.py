"""`keel turn` in a real terminal 80 columns wide, captured from tmux.

The command runs in a tmux pane of 80 columns with no COLUMNS set, so the width it finds
is the terminal's own. Joined back together (`capture-pane -J`), no line of Keel's own
output may be longer than the pane: a longer one is text the terminal had to break
wherever the column ran out, in the middle of a word or an id. The model input is the
other way round: it is printed as the model gets it, so each of its lines comes back
whole, however long — Keel must not have broken it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.runtime.driver import copy_reference

WIDTH = 80
TMUX = shutil.which("tmux")
TICKETS = [f"--attach=ticket=T-{n}" for n in range(479, 484)]
ARGS = ["--bot", "desk", "--chat", "tg:user:42", "--input", "orders?"]
TURN = [*ARGS, *TICKETS, "--open", "client", "--reply-to", "m-unknown"]


def run_in_tmux(command: list[str], cwd: Path) -> str:
    """The pane's text once `command` has finished, wrapped lines joined."""
    assert TMUX is not None, "tmux is needed for this test (apt-get install tmux)"
    session = f"keel-{uuid.uuid4().hex[:8]}"
    done = cwd / "done"
    line = " ".join(_quote(part) for part in command) + f"; touch {_quote(str(done))}"
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    env["TERM"] = "xterm-256color"
    subprocess.run(
        [TMUX, "-L", session, "new-session", "-d", "-s", session, "-x", str(WIDTH), "-y", "300"],
        check=True,
        env=env,
        cwd=cwd,
    )
    try:
        subprocess.run([TMUX, "-L", session, "send-keys", "-t", session, line, "Enter"], check=True)
        deadline = time.monotonic() + 60
        while not done.exists():  # the command's own end, not a guess at its duration
            assert time.monotonic() < deadline, "keel turn did not finish within a minute"
            time.sleep(0.05)
        captured = subprocess.run(
            [TMUX, "-L", session, "capture-pane", "-p", "-J", "-S", "-", "-t", session],
            check=True,
            capture_output=True,
            text=True,
        )
        return captured.stdout
    finally:
        subprocess.run([TMUX, "-L", session, "kill-server"], check=False)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


HANG = "from keel.code import define_context\n\ndef match(turn, ctx):\n    while True:\n        pass\n\ncontext = define_context(match=match)\n"


def hanging_matches(brain: Path, count: int) -> None:
    """Contexts of the support role whose match never returns (in 300 ms, each)."""
    folder = brain / "features" / "support"
    for n in range(count):
        front = f"---\nwhen: [chat]\ndescription: hangs.\ncodeTimeoutMs: 300\n---\nHang {n}.\n"
        (folder / f"hang{n}.context.md").write_text(front)
        (folder / f"hang{n}.context.py").write_text(HANG)
    role = folder / "support.agent.md"
    listed = ", ".join(f"hang{n}" for n in range(count))
    role.write_text(role.read_text().replace("contexts: [ticket", f"contexts: [{listed}, ticket"))


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("terminal")
    brain = copy_reference(root / "brain")
    hanging_matches(brain, 3)
    keel = [sys.executable, "-c", "from keel.cli import main; main()"]
    text = run_in_tmux([*keel, "turn", str(brain), *TURN], root)
    return text[text.index("turn 1 · role support") :]


@pytest.fixture(scope="module")
def screen(captured: str) -> str:
    """Keel's own output: from the turn's header to where the model input begins."""
    return captured[: captured.index("system (stable, cached)")]


@pytest.fixture(scope="module")
def model_input(captured: str) -> str:
    return captured[captured.index("system (stable, cached)") :]


def test_no_line_is_wider_than_the_terminal(screen: str) -> None:
    wide = [line for line in screen.splitlines() if len(line.rstrip()) > WIDTH]
    assert wide == []


def test_the_note_and_the_refusal_show_once_and_ids_whole(screen: str) -> None:
    assert screen.count("reply to m-unknown: not a message this bot sent here") == 1
    assert screen.count("refused:") == 1
    assert "…" not in screen, "an id was cut short"
    for n in range(479, 484):
        assert f"T-{n}" in screen
    assert "stub (contexts.maxActive)" in screen


def test_long_lines_break_between_words(screen: str) -> None:
    words = " ".join(line.strip() for line in screen.splitlines())
    assert "window 200,000 with 8,000 reserved for output" in words


def test_the_same_advice_is_given_once_after_the_notes_it_follows(screen: str) -> None:
    words = " ".join(line.strip() for line in screen.splitlines())
    for n in range(3):
        assert f"note: features/support/hang{n}.context.py" in words
    assert words.count("match ran past its 300 ms timeout") == 3
    assert words.count("make it return sooner") == 1
    assert "↳ each of these 3: make it return sooner" in words


def test_the_model_input_keeps_its_lines_whole(model_input: str) -> None:
    lines = {line.rstrip() for line in model_input.splitlines()}
    wide = [
        # The role's persona, hard-wrapped at 90 characters in its file.
        "You are the shop's support desk: calm, specific and honest about what you can and cannot",
        # A view's header row: one line, however many columns.
        "ticket_id | customer | subject | priority | status | opened_at | order_total | "
        "last_update",
    ]
    for line in wide:
        assert len(line) > WIDTH
        assert line in lines, line
