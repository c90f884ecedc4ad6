"""`keel import` from the command line: the summary, `--json`, and the exit codes."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from keel.cli import app
from tests.importers.conftest import WriteTree, write_files

runner = CliRunner()


def invoke(*args: str | Path) -> tuple[int, str]:
    result = runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "200", "NO_COLOR": "1"})
    return result.exit_code, result.output


def test_the_summary_lists_each_rule_the_files_and_what_to_look_at(shop: Path, brain: Path) -> None:
    code, out = invoke("import", shop, brain)
    assert code == 0, out
    assert "32 rules → features/shop/" in out
    assert "cursor-testing" in out
    assert "**/*.test.ts, tests/**" in out
    assert "files: 45 written, 0 updated, 0 removed, 0 unchanged" in out
    assert "warnings (22)" in out
    assert "skipped (7)" in out
    assert ".windsurf/rules/typo.md:2: unknown trigger 'always' — did you mean 'always_on'?" in out
    assert "no role admits these contexts yet" in out
    assert f"Next: keel doctor {brain}\n" in out


def test_json_is_the_report(shop: Path, brain: Path) -> None:
    code, out = invoke("import", shop, brain, "--role", "coder", "--json")
    assert code == 0, out
    data = json.loads(out)
    linking = [r["chars"] for r in data["rules"] if r["trigger"] in ("always", "glob")]
    assert set(data) == {
        "source",
        "brain",
        "feature",
        "rules",
        "files",
        "role",
        "warnings",
        "skipped",
        "refused",
        "hint",
        "seen",
    }
    first = data["rules"][0]
    assert isinstance(first.pop("chars"), int)
    assert first == {
        "source": ".claude/CLAUDE.md",
        "tool": "claude",
        "context": "claude-md-claude",
        "when": ["always"],
        "trigger": "always",
        "description": None,
        "globs": [],
        "code": None,
        "also": [],
    }
    assert data["role"]["created"] is True
    assert data["role"]["path"] == "features/shop/coder.agent.md"
    assert data["role"]["max_active"] == len(linking) + 3 == 25  # and the brain's maxActive
    assert data["role"]["turn_chars"] == sum(linking) + 12_000
    assert data["skipped"][0] == {
        "path": ".claude/skills/stray.md",
        "line": None,
        "message": "a skill is a folder with a SKILL.md (.claude/skills/<name>/SKILL.md); "
        "Claude Code loads no loose files here — not imported",
    }


def test_a_second_run_reports_everything_unchanged(shop: Path, brain: Path) -> None:
    invoke("import", shop, brain, "--feature", "rules", "--role", "coder")
    code, out = invoke("import", shop, brain, "--feature", "rules", "--role", "coder")
    assert code == 0
    assert "files: 0 written, 0 updated, 0 removed, 46 unchanged" in out
    assert "role coder: unchanged features/rules/coder.agent.md" in out


def test_paths_are_printed_as_they_are(repo: WriteTree, brain: Path) -> None:
    source = repo({"app/[id]/CLAUDE.md": "Fixture.\n"})
    code, out = invoke("import", source, brain)
    assert code == 0
    assert "app/[id]/CLAUDE.md → claude-md-app-id  (ask, " in out
    assert " chars; files app/\\[id\\]/**)" in out


def test_a_refusal_exits_3_after_importing_the_rest(shop: Path, brain: Path) -> None:
    write_files(brain, {"features/shop/agents-md.context.md": "---\nwhen: [always]\n---\nMine.\n"})
    code, out = invoke("import", shop, brain)
    assert code == 3
    assert "refused (1)" in out
    assert "features/shop/agents-md.context.md: not written by keel import" in out
    assert "31 rules → features/shop/" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["nowhere", "{brain}"], "nowhere: no such directory", id="source"),
        pytest.param(["{shop}", "{brain}", "--feature", "a/b"], "--feature 'a/b'", id="feature"),
    ],
)
def test_a_usage_error_exits_2(shop: Path, brain: Path, args: list[str], message: str) -> None:
    filled = [a.format(shop=shop, brain=brain) for a in args]
    result = runner.invoke(app, ["import", *filled], env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert result.exit_code == 2
    assert message in result.output


def test_a_usage_error_with_json_is_still_exit_2(brain: Path) -> None:
    code, _ = invoke("import", "nowhere", brain, "--json")
    assert code == 2


def test_a_destination_that_is_not_a_brain_is_refused_and_left_untouched(
    repo: WriteTree, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo({"AGENTS.md": "Fixture.\n"})
    (tmp_path / "notabrain").mkdir()
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["import", "repo", "notabrain"], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert result.stderr == (
        "error: notabrain is not a brain (no constitution/MANIFEST.yaml) — `keel init "
        "notabrain` starts one\n"
    )
    assert list((tmp_path / "notabrain").iterdir()) == []


def test_a_file_as_the_destination_is_not_offered_to_keel_init(
    repo: WriteTree, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo({"AGENTS.md": "Fixture.\n"})
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["import", "repo", "repo/AGENTS.md"], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert "repo/AGENTS.md: not a directory — give the brain directory" in result.stderr
    assert "keel init" not in result.stderr


@pytest.mark.usefixtures("brain")
def test_an_empty_source_says_so_with_the_path_as_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path)
    code, out = invoke("import", "empty", "brain")
    assert code == 0
    assert out == (
        "files: 0 written, 0 updated, 0 removed, 0 unchanged\n"
        "\n"
        "no rule files found in empty — nothing to import\n"
    )


def test_the_room_given_to_the_role_is_reported(repo: WriteTree, brain: Path) -> None:
    source = repo({"AGENTS.md": "Fixture.\n", "docs/AGENTS.md": "Docs.\n"})
    code, out = invoke("import", source, brain, "--role", "coder")
    assert code == 0
    assert (
        "role coder: created features/repo/coder.agent.md; added 2\n"
        "  contexts_budget.maxActive: 5 — room for 1 always-on and 1 file rule at once, and 3 "
        "contexts that opens and bindings bring\n"
    ) in out
    _, again = invoke("import", source, brain, "--role", "coder")
    assert "role coder: unchanged features/repo/coder.agent.md\n" in again
    assert "maxActive" not in again


CANARY = "PWNED"
# A folder name that is a valid YAML line and a valid Python line, each running a command.
INJECTION = f"x\nentity: __import__('os').system('touch {CANARY}')\n#"


def test_a_folder_name_holding_code_is_imported_as_data(
    tmp_path: Path, brain: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    source = write_files(
        tmp_path / "repo",
        {f".cursor/rules/{INJECTION}/r.mdc": '---\nglobs: "*.ts"\n---\nBody.\n'},
    )
    code, out = invoke("import", source, brain, "--role", "coder")
    assert code == 0, out
    assert "x\\nentity: __import__('os').system('touch PWNED')\\n#/r.mdc → " in out
    code, out = invoke("doctor", brain)
    assert code == 0, out
    code, out = invoke("turn", brain, "--role", "coder", "--input", "fix src/app.ts")
    assert code == 0, out
    assert "Body." in out, "the rule links by its glob, as data"
    # Brain code runs in the brain directory: the canary would be there, or in the cwd.
    assert list(tmp_path.rglob(CANARY)) == []


def test_a_feature_folder_linked_out_of_the_brain_exits_2_before_reading(
    repo: WriteTree, brain: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (brain / "features/repo").symlink_to(elsewhere, target_is_directory=True)
    source = repo({"CLAUDE.md": "Fixture.\n"})
    os.mkfifo(source / "AGENTS.md")  # read, it would block: it is not read at all
    code, out = invoke("import", source, brain)
    assert code == 2
    assert "features/repo is a symbolic link out of the brain" in out
    assert list(elsewhere.iterdir()) == []


def test_the_summary_says_what_room_the_role_got(shop: Path, brain: Path) -> None:
    code, out = invoke("import", shop, brain, "--role", "coder")
    assert code == 0, out
    assert (
        "  contexts_budget.maxActive: 25 — room for 10 always-on and 12 file rules at once" in out
    )
    found = re.search(
        r"contexts_budget\.turnChars: ([\d,]+) — the always-on and file rules' ([\d,]+) ", out
    )
    assert found is not None, out
    total, linking = (int(g.replace(",", "")) for g in found.groups())
    assert total == linking + 12_000
