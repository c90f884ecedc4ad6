"""`--exclude GLOB` and `--force`: re-importing over files a user edited, and leaving files out."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from keel.brain import load_brain
from keel.cli import app
from keel.errors import UsageError
from keel.importers import import_rules
from tests.importers.conftest import WriteTree, write_files

runner = CliRunner()


def invoke(*args: str | Path) -> tuple[int, str]:
    result = runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "200", "NO_COLOR": "1"})
    return result.exit_code, result.output


def unmark(path: Path, text: str | None = None) -> str:
    """Make an imported file the user's: drop its marker line, optionally change its text."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    kept = "".join(line for line in lines if "keel import" not in line)
    if text is not None:
        kept = kept.replace(kept.split("---\n", 2)[2], text)
    path.write_text(kept, encoding="utf-8")
    return kept


def test_an_excluded_source_is_not_imported_and_says_which_pattern(shop: Path, brain: Path) -> None:
    report = import_rules(shop, brain, excludes=[".windsurf/"])
    sources = {r.source for r in report.rules}
    assert not any(s.startswith(".windsurf/") for s in sources)
    assert ".cursor/rules/api.mdc" in sources
    excluded = [n for n in report.skipped if "--exclude" in n.message]
    assert sorted(n.path for n in excluded) == [
        ".windsurf/rules/hotfix.md",
        ".windsurf/rules/migrations.md",
        ".windsurf/rules/naming.md",
        ".windsurf/rules/notrigger.md",
        ".windsurf/rules/perf.md",
        ".windsurf/rules/typo.md",
    ]
    assert excluded[0].message.startswith("excluded by --exclude '.windsurf/' — not imported")
    assert not list((brain / "features/shop").glob("windsurf-*"))


def test_a_pattern_without_a_slash_matches_at_any_depth_and_one_with_a_leading_slash_only_there(
    repo: WriteTree, brain: Path
) -> None:
    source = repo({"CLAUDE.md": "Root.\n", "web/CLAUDE.md": "Web.\n", "AGENTS.md": "Agents.\n"})
    anywhere = import_rules(source, brain, excludes=["CLAUDE.md"])
    assert [r.source for r in anywhere.rules] == ["AGENTS.md"]
    rooted = import_rules(source, brain, excludes=["/CLAUDE.md"])
    assert [r.source for r in rooted.rules] == ["AGENTS.md", "web/CLAUDE.md"]


def test_excluding_a_skill_s_skill_md_excludes_the_files_beside_it(shop: Path, brain: Path) -> None:
    report = import_rules(shop, brain, excludes=[".claude/skills/pdf/SKILL.md"])
    assert not any(r.source.startswith(".claude/skills/pdf/") for r in report.rules)
    beside = {n.path: n.message for n in report.skipped if "--exclude" in n.message}
    assert set(beside) == {
        ".claude/skills/pdf/SKILL.md",
        ".claude/skills/pdf/FORMS.md",
        ".claude/skills/pdf/scripts/fill.py",
    }
    assert "(its skill's .claude/skills/pdf/SKILL.md)" in beside[".claude/skills/pdf/FORMS.md"]


def test_a_pattern_that_excludes_nothing_is_warned_about(shop: Path, brain: Path) -> None:
    report = import_rules(shop, brain, excludes=[".cursor/rule/api.mdc"])
    assert ".cursor/rules/api.mdc" in {r.source for r in report.rules}
    assert [str(n) for n in report.warnings if n.path.startswith("--exclude")] == [
        "--exclude .cursor/rule/api.mdc: matched no rule file — nothing was excluded by it; "
        "patterns are relative to the source directory, as in .gitignore"
    ]


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        pytest.param("", "an empty pattern", id="empty"),
        pytest.param("  ", "an empty pattern", id="blank"),
        pytest.param("!CLAUDE.md", "cannot re-include", id="negated"),
        pytest.param("../other/CLAUDE.md", "cannot leave it ('..')", id="parent"),
        pytest.param("[", "that no ']' closes, so the pattern cannot match", id="unclosed"),
        pytest.param("docs/[!a", "no ']' closes", id="unclosed-negated"),
        pytest.param("a/../../CLAUDE.md", "cannot leave it ('..')", id="inner-parent"),
        pytest.param("{a,b}" * 11, "alternatives", id="braces"),
    ],
)
def test_a_pattern_that_cannot_mean_anything_is_a_usage_error_before_anything_is_written(
    shop: Path, brain: Path, pattern: str, message: str
) -> None:
    before = sorted(p.relative_to(brain) for p in brain.rglob("*"))
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        import_rules(shop, brain, excludes=[pattern])
    assert sorted(p.relative_to(brain) for p in brain.rglob("*")) == before


def test_an_edited_import_refuses_then_exclude_keeps_it_and_exits_0(
    shop: Path, brain: Path
) -> None:
    assert invoke("import", shop, brain, "--role", "coder")[0] == 0
    path = brain / "features/shop/agents-md.context.md"
    mine = unmark(path, "My own agents rules.\n")
    code, out = invoke("import", shop, brain, "--role", "coder")
    assert code == 3
    flat = " ".join(out.split())  # the terminal report wraps long lines
    assert "re-run with --exclude /AGENTS.md to keep it as it is, or with --force" in flat
    code, out = invoke("import", shop, brain, "--role", "coder", "--exclude", "/AGENTS.md")
    assert code == 0, out
    assert "AGENTS.md: excluded by --exclude '/AGENTS.md'" in out
    assert "refused" not in out
    assert path.read_text(encoding="utf-8") == mine
    loaded = load_brain(brain)
    assert loaded.contexts["agents-md"].instructions == "My own agents rules."
    kept = loaded.roles["coder"].contexts
    assert kept is not None
    assert "agents-md" in kept, "the role keeps the user's context"


def test_exclude_leaves_an_earlier_import_s_files_as_they_are(shop: Path, brain: Path) -> None:
    import_rules(shop, brain)
    code_file = brain / "features/shop/cursor-testing.context.py"
    before = code_file.read_text(encoding="utf-8")
    (shop / ".cursor/rules/testing.mdc").write_text("---\nglobs: x/**\n---\nNew.\n")
    report = import_rules(shop, brain, excludes=[".cursor/rules/testing.mdc"])
    assert report.removed == ()
    assert code_file.read_text(encoding="utf-8") == before
    assert "cursor-testing" in load_brain(brain).contexts
    # Without the pattern the source is imported again, as edited.
    again = import_rules(shop, brain)
    assert "features/shop/cursor-testing.context.py" in again.updated


def test_force_overwrites_an_edited_import_and_says_so(shop: Path, brain: Path) -> None:
    import_rules(shop, brain)
    path = brain / "features/shop/agents-md.context.md"
    unmark(path, "My own agents rules.\n")
    report = import_rules(shop, brain, force=True)
    assert report.refused == ()
    assert report.updated == ("features/shop/agents-md.context.md",)
    assert [str(n) for n in report.warnings if "--force" in n.message] == [
        "features/shop/agents-md.context.md: not written by keel import; overwritten (--force) "
        "by the import of AGENTS.md"
    ]
    source = (shop / "AGENTS.md").read_text(encoding="utf-8").strip()
    assert load_brain(brain).contexts["agents-md"].instructions == source
    # The file is the import's again: the next run owns it, with no refusal and no warning.
    again = import_rules(shop, brain)
    assert again.refused == ()
    assert "features/shop/agents-md.context.md" in again.unchanged


def test_force_never_writes_a_code_file_the_rule_does_not_have(shop: Path, brain: Path) -> None:
    mine = "# mine\n"
    write_files(brain, {"features/shop/cursor-api.context.py": mine})
    report = import_rules(shop, brain, force=True)
    assert [n.path for n in report.refused] == ["features/shop/cursor-api.context.py"]
    assert "--force" not in report.refused[0].message
    assert (brain / "features/shop/cursor-api.context.py").read_text(encoding="utf-8") == mine


def test_force_never_writes_through_a_link(shop: Path, brain: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("Outside.\n", encoding="utf-8")
    (brain / "features/shop").mkdir(parents=True)
    (brain / "features/shop/agents-md.context.md").symlink_to(outside)
    report = import_rules(shop, brain, force=True)
    assert [n.path for n in report.refused] == ["features/shop/agents-md.context.md"]
    assert outside.read_text(encoding="utf-8") == "Outside.\n"


def test_the_cli_takes_exclude_more_than_once(shop: Path, brain: Path) -> None:
    code, out = invoke(
        "import", shop, brain, "--exclude", ".windsurf/", "--exclude", ".github/", "--json"
    )
    assert code == 0, out
    assert '"tool": "windsurf"' not in out
    assert '"tool": "copilot"' not in out
    assert '"tool": "cursor"' in out


def test_the_cli_names_a_bad_pattern_and_exits_2(shop: Path, brain: Path) -> None:
    result = runner.invoke(app, ["import", str(shop), str(brain), "--exclude", "../x"])
    assert result.exit_code == 2
    assert "--exclude '../x': patterns are relative to the source directory" in result.output
