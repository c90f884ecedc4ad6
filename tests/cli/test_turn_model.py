"""`keel turn --model`: the model answers the prepared turn, and what it said is recorded;
a relative SQLite path names the same file for the brain's code as for Keel."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from keel.cli import app
from tests.runtime.driver import copy_reference

DESK = ("--bot", "desk", "--chat", "tg:chat:-1003000000001")
runner = CliRunner()


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder holding a copy of the reference brain, as the working folder."""
    copy_reference(tmp_path / "brain")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def scripted(folder: Path, steps: list[dict[str, object]]) -> str:
    path = folder / "model.json"
    path.write_text(json.dumps(steps), encoding="utf-8")
    return f"scripted:{path}"


def turn(*args: str) -> dict[str, object]:
    result = runner.invoke(app, ["turn", "brain", *DESK, "--db", "sqlite:///k.db", *args])
    assert result.exit_code == 0, result.output
    data: dict[str, object] = json.loads(result.stdout)
    return data


def test_the_model_answers_and_its_answer_is_history(here: Path) -> None:
    model = scripted(here, [{"text": "T-481 is with the vendor."}])
    answered = turn("--input", "Any update on T-481?", "--model", model, "--json")
    assert answered["reply"] == "T-481 is with the vendor."
    assert answered["requests"] == 1
    listed = runner.invoke(
        app, ["history", "brain", "--chat", DESK[3], "--db", "sqlite:///k.db", "--json"]
    )
    assert "T-481 is with the vendor." in listed.stdout


@pytest.mark.usefixtures("here")
def test_without_a_model_nothing_answers() -> None:
    prepared = turn("--input", "Any update on T-481?", "--json")
    assert "reply" not in prepared


def test_the_answer_is_printed_under_the_turn(here: Path) -> None:
    model = scripted(here, [{"text": "On its way."}])
    result = runner.invoke(
        app, ["turn", "brain", *DESK, "--db", "sqlite:///k.db", "--input", "hi", "--model", model]
    )
    assert result.exit_code == 0, result.output
    head, _, tail = result.stdout.partition("answer (1 model request)")
    assert "hi" in head
    assert tail.strip("─ \n") == "On its way."


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (("--dry-run",), "--dry-run records nothing"),
        (("--format", "openai"), "--format prints the request"),
    ],
)
def test_a_model_with_a_flag_that_sends_nothing_is_a_usage_error(
    here: Path, flags: tuple[str, ...], says: str
) -> None:
    model = scripted(here, [{"text": "x"}])
    result = runner.invoke(
        app, ["turn", "brain", *DESK, "--db", "sqlite:///k.db", "--model", model, *flags]
    )
    assert result.exit_code == 2
    assert says in result.stderr


@pytest.mark.usefixtures("here")
def test_a_missing_key_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = runner.invoke(
        app, ["turn", "brain", "--model", "openai:gpt-x", "--db", "sqlite:///k.db"]
    )
    assert result.exit_code == 2
    assert "OPENAI_API_KEY" in result.stderr


@pytest.mark.usefixtures("here")
def test_brain_code_reads_the_database_a_relative_path_names() -> None:
    # The ticket's code half reads the SLA from the state database: it must open k.db here,
    # not a k.db beside wherever its worker process runs.
    prepared = turn("--input", "Any update on T-481?", "--json")
    assert prepared["warnings"] == []
    block = next(b for b in prepared["blocks"] if b["context"] == "ticket")  # type: ignore[attr-defined]
    assert "T-481 is urgent: first reply within 30 minutes" in block["text"]
