"""A CLI agent's session (`--session`): whole blocks once, then only what changed."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from keel.cli import app
from tests.runtime.driver import copy_reference

runner = CliRunner()


def tail(brain: Path, *args: str) -> str:
    result = runner.invoke(
        app,
        [
            "turn",
            str(brain),
            "--bot",
            "largo",
            "--chat",
            "tg:user:1",
            "--at",
            "2026-11-29T19:00:00Z",
            "--json",
            *args,
        ],
    )
    assert result.exit_code == 0, result.output
    sections = json.loads(result.output)["sections"]
    return "\n".join(s["text"] for s in sections if s["id"].startswith("context."))


# The first words of the largo contexts' instructions: whole blocks carry them.
FILM = "On the beat, choose tonight's film"
MOOD = "Every message from Largo keeps the week's mood"
CHECKIN = "Ask how the owner slept"


def test_a_session_gets_each_block_once_then_changes_then_withdrawals(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    film = ("--run", "heartbeat:film-of-day", "--session", "s1")
    first = tail(brain, *film)
    assert '<context name="film"' in first
    assert FILM in first
    assert MOOD in first

    again = tail(brain, *film)
    assert again == "", "what the session holds as it is now is not sent again"

    checkin = tail(brain, "--run", "heartbeat:morning-checkin", "--session", "s1")
    assert '<context-withdrawn name="film"' in checkin
    assert '<context name="checkin"' in checkin
    assert CHECKIN in checkin

    compacted = tail(brain, "--run", "heartbeat:morning-checkin", "--session", "s1", "--compacted")
    assert CHECKIN in compacted, "after a compaction everything again"
    assert MOOD in compacted
    assert "(instructions as sent before)" not in compacted


def test_without_a_session_a_cli_role_gets_whole_blocks(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    for _ in range(2):
        text = tail(brain, "--run", "heartbeat:film-of-day")
        assert FILM in text
        assert "(instructions as sent before)" not in text
