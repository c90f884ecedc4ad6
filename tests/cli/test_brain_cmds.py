"""`keel doctor` and `keel init` from the command line: output, JSON and exit status."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from keel.brain.snapshot_cache import CACHE_FILE
from keel.cli import app

EXAMPLES = Path(__file__).parents[2] / "examples"
runner = CliRunner()


def copy_example(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copytree(EXAMPLES / name, target, ignore=shutil.ignore_patterns(".keel"))
    return target


def test_the_reference_brain_passes_doctor_with_no_fail_and_no_warn(tmp_path: Path) -> None:
    brain = copy_example("brain", tmp_path)
    result = runner.invoke(app, ["doctor", str(brain), "--json"])
    assert result.exit_code == 0, result.output
    checks = json.loads(result.output)["checks"]
    assert [c for c in checks if c["level"] in ("fail", "warn")] == []
    assert (brain / ".keel" / "keel.db").is_file(), "the embedded database was created"


def test_the_broken_brain_fails_doctor_with_exit_1(tmp_path: Path) -> None:
    brain = copy_example("broken", tmp_path)
    result = runner.invoke(app, ["doctor", str(brain)])
    assert result.exit_code == 1
    assert "fail" in result.output
    assert "features/desk/" in result.output


def test_doctor_reads_the_brain_through_its_cache_and_sees_an_edit(tmp_path: Path) -> None:
    brain = copy_example("brain", tmp_path)
    assert runner.invoke(app, ["doctor", str(brain)]).exit_code == 0
    assert (brain / CACHE_FILE).is_file(), "the snapshot cache was written"
    role = next((brain / "features").rglob("*.agent.md"))
    role.write_text("---\nwhne: [always]\n---\n", encoding="utf-8")
    result = runner.invoke(app, ["doctor", str(brain)])
    assert result.exit_code == 1
    assert "whne" in result.output


def test_doctor_json_has_the_documented_shape(tmp_path: Path) -> None:
    brain = copy_example("broken", tmp_path)
    result = runner.invoke(app, ["doctor", str(brain), "--json"])
    checks = json.loads(result.output)["checks"]
    assert checks
    for check in checks:
        assert {"group", "level", "subject", "file", "line", "message"} <= set(check)
        assert check["level"] in ("fail", "warn", "note")
        assert check["group"] in (
            "Brain entities",
            "Feature context code",
            "Chat access",
            "Feature contexts",
        )


def test_doctor_with_an_unreachable_database_says_it_did_not_look(tmp_path: Path) -> None:
    brain = copy_example("brain", tmp_path)
    url = "postgresql://nobody@127.0.0.1:1/none"
    result = runner.invoke(app, ["doctor", str(brain), "--db", url, "--json"])
    assert result.exit_code == 0, result.output
    unchecked = [c for c in json.loads(result.output)["checks"] if c["check"] == "view.unchecked"]
    assert len(unchecked) == 1
    assert "cannot reach the database" in unchecked[0]["message"]


@pytest.mark.parametrize("args", [["doctor", "no/such/brain"], ["doctor"], ["frobnicate"]])
def test_usage_errors_exit_2(args: list[str]) -> None:
    assert runner.invoke(app, args).exit_code == 2


def test_init_scaffolds_a_brain_that_doctor_passes(tmp_path: Path) -> None:
    brain = tmp_path / "my-brain"
    created = runner.invoke(app, ["init", str(brain)])
    assert created.exit_code == 0, created.output
    assert (brain / "features/hello/greeting.context.md").is_file()
    result = runner.invoke(app, ["doctor", str(brain), "--json"])
    assert result.exit_code == 0, result.output
    assert [c for c in json.loads(result.output)["checks"] if c["level"] != "note"] == []


def test_a_new_brain_answers_keel_turn_without_flags(tmp_path: Path) -> None:
    brain = tmp_path / "my-brain"
    assert runner.invoke(app, ["init", str(brain)]).exit_code == 0
    result = runner.invoke(app, ["turn", str(brain), "--input", "hi", "--json"])
    assert result.exit_code == 0, result.output
    turn = json.loads(result.output)
    assert turn["role"] == "helper", "init's bot is the one keel turn speaks as by default"
    assert [a["context"] for a in turn["attached"]] == ["greeting"]


def test_init_refuses_a_directory_that_is_not_empty(tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("keep me")
    result = runner.invoke(app, ["init", str(tmp_path / "full")])
    assert result.exit_code == 2
    assert (tmp_path / "full" / "x").read_text() == "keep me"


def test_init_refuses_a_file_or_a_place_it_cannot_write_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "morning.json").write_text("{}")
    for target, said in (
        ("morning.json", "is a file"),
        ("morning.json/sub", "cannot create the brain there"),
    ):
        result = runner.invoke(app, ["init", str(tmp_path / target)])
        assert result.exit_code == 2, result.output
        assert said in " ".join(result.output.split())
        assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.mark.parametrize("command", ["doctor", "turn", "runs"])
def test_a_folder_that_is_not_a_brain_is_a_usage_error(tmp_path: Path, command: str) -> None:
    (tmp_path / "notes.txt").write_text("not a brain", encoding="utf-8")
    result = CliRunner().invoke(app, [command, str(tmp_path)], env={"COLUMNS": "400"})
    assert result.exit_code == 2
    assert "is not a brain" in result.output
    assert "keel init" in result.output
