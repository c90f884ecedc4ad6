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


def test_a_session_gets_each_block_once_then_changes_then_withdrawals(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    film = ("--run", "heartbeat:film-of-day", "--session", "s1")
    first = tail(brain, *film)
    assert '<feature-context feature="largo" context="film"' in first
    assert "<instructions>\n" in first

    again = tail(brain, *film)
    assert "<instructions unchanged/>" in again
    assert "<instructions>\n" not in again

    checkin = tail(brain, "--run", "heartbeat:morning-checkin", "--session", "s1")
    assert '<feature-context-withdrawn context="film"' in checkin
    assert 'context="checkin"' in checkin

    compacted = tail(brain, "--run", "heartbeat:morning-checkin", "--session", "s1", "--compacted")
    assert compacted.count("<instructions>\n") == 2, "after a compaction everything again"


def test_without_a_session_a_cli_role_gets_whole_blocks(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    for _ in range(2):
        text = tail(brain, "--run", "heartbeat:film-of-day")
        assert "<instructions>\n" in text
