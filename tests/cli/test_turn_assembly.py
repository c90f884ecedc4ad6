"""`keel turn` and assembly: sections and fit in JSON, provider payloads, exit 4."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from keel.cli import app
from tests.runtime.driver import copy_reference

runner = CliRunner()
ACME = ("--bot", "nova", "--chat", "tg:chat:-1002000000101", "--at", "2026-11-29T19:00:00Z")


def turn(brain: Path, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["turn", str(brain), *ACME, *args])
    return result.exit_code, result.output


def test_json_carries_sections_and_the_fit(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    code, out = turn(brain, "--input", "hello", "--json")
    assert code == 0, out
    data = json.loads(out)
    ids = [s["id"] for s in data["sections"]]
    assert ids[:3] == ["sys.time", "identity", "tenancy"]
    assert "context.client@acme" in ids
    assert ids[-1] == "current"
    assert data["fit"]["ok"] is True
    assert data["fit"]["estimate"] > sum(s["used_tokens"] for s in data["sections"]) // 2


def test_the_human_view_shows_a_section_table_then_the_input(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    code, out = turn(brain, "--input", "hello")
    assert code == 0, out
    table = out.index("section")
    assert out.index("context.client@acme") > table
    assert "fits: " in out
    assert out.index("user (this turn)") > out.index("fits: ")
    assert out.rstrip().endswith("hello")


def test_each_format_prints_its_providers_request(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    _, out = turn(brain, "--input", "hi", "--format", "openai")
    chat = json.loads(out)
    assert chat["messages"][-1]["role"] == "user"
    assert chat["messages"][-1]["content"].endswith("hi")
    _, out = turn(brain, "--input", "hi", "--format", "anthropic")
    anthropic = json.loads(out)
    assert anthropic["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert "<context name=" not in json.dumps(anthropic["system"])
    _, out = turn(brain, "--input", "hi", "--format", "responses")
    assert "instructions" in json.loads(out)


def test_a_turn_that_does_not_fit_exits_4_and_records_nothing(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    manifest = brain / "constitution" / "MANIFEST.yaml"
    text = manifest.read_text(encoding="utf-8")
    manifest.write_text(text.replace("input_allocation:", "input_allocation: 100 #"), "utf-8")
    code, out = turn(brain, "--input", "hello", "--json")
    assert code == 4
    data = json.loads(out)
    assert "over the input allocation of 100" in data["overflow"]
    assert data["fit"]["ok"] is False
    code, out = turn(brain, "--input", "hello")
    assert code == 4
    manifest.write_text(text, "utf-8")
    code, out = turn(brain, "--input", "hello", "--json")
    assert code == 0
    assert json.loads(out)["turn"] == 1, "the refused turns left no trace"


def test_a_sent_message_is_in_the_history_of_the_turn_that_answers_it(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    sent = runner.invoke(
        app,
        [
            "send",
            str(brain),
            "--bot",
            "nova",
            "--chat",
            "tg:user:1",
            "--text",
            "Tonight: Whiplash",
            "--run",
            "heartbeat:evening-film",
            "--about-entity",
            "tt2582802",
            "--message-id",
            "m1",
        ],
    )
    assert sent.exit_code == 0, sent.output
    result = runner.invoke(
        app,
        [
            "turn",
            str(brain),
            "--dm",
            "--bot",
            "nova",
            "--chat",
            "tg:user:1",
            "--reply-to",
            "m1",
            "--input",
            "8/10",
            "--json",
        ],
    )
    data = json.loads(result.output)
    history = next(s for s in data["sections"] if s["id"] == "history")
    assert "assistant: Tonight: Whiplash" in history["text"]


def test_a_turn_warns_when_its_role_lists_a_context_that_did_not_load(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    kb = brain / "features/support/kb.context.md"
    kb.write_text(kb.read_text(encoding="utf-8").replace("when:", "whne:"), "utf-8")
    result = runner.invoke(
        app,
        [
            "turn",
            str(brain),
            "--bot",
            "desk",
            "--chat",
            "tg:user:7",
            "--role",
            "support",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    warnings = json.loads(result.output)["warnings"]
    assert len(warnings) == 1
    assert warnings[0].startswith("role 'support' lists 'kb', whose file did not load")
    assert "features/support/kb.context.md:" in warnings[0]
    assert "did you mean 'when'?" in warnings[0]
