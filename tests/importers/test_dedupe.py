"""One rule once: parallel rule sets import as one context that names its sources."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from keel.brain import load_brain
from keel.cli import app
from keel.doctor import run_doctor
from keel.importers import ImportReport, import_rules
from tests.importers.conftest import WriteTree

TEXT = "Use pnpm, never npm. Keep components small; one per file. Run the tests before a push.\n"
CURSOR_ALWAYS = f"---\nalwaysApply: true\n---\n{TEXT}"
WINDSURF_ALWAYS = f"---\ntrigger: always_on\n---\n{TEXT}"


def fates(report: ImportReport) -> dict[str, tuple[str, str | None]]:
    return {s.path: (s.fate, s.context) for s in report.seen}


def test_the_same_rule_for_cursor_and_windsurf_is_one_context(repo: WriteTree, brain: Path) -> None:
    source = repo(
        {".cursor/rules/style.mdc": CURSOR_ALWAYS, ".windsurf/rules/style.md": WINDSURF_ALWAYS}
    )
    report = import_rules(source, brain, role="coder")
    (rule,) = report.rules
    assert (rule.source, rule.context, rule.also) == (
        ".cursor/rules/style.mdc",
        "cursor-style",
        (".windsurf/rules/style.md",),
    )
    assert fates(report)[".windsurf/rules/style.md"] == ("merged", "cursor-style")
    (merged,) = [s for s in report.seen if s.fate == "merged"]
    assert merged.reason == "the same text as .cursor/rules/style.mdc"
    text = (brain / "features/repo/cursor-style.context.md").read_text(encoding="utf-8")
    assert '# also stands for ".windsurf/rules/style.md"' in text
    loaded = load_brain(brain)
    assert set(loaded.contexts) >= {"cursor-style"}
    assert "windsurf-style" not in loaded.contexts
    failing = [f for f in run_doctor(loaded, schema=None).findings if f.level == "fail"]
    assert failing == []


def test_nearly_the_same_text_keeps_the_longer_one(repo: WriteTree, brain: Path) -> None:
    longer = TEXT.strip() + " Always."
    source = repo(
        {
            ".cursor/rules/style.mdc": CURSOR_ALWAYS,
            ".windsurf/rules/style.md": f"---\ntrigger: always_on\n---\n{longer * 3}\n",
            ".github/copilot-instructions.md": TEXT * 3,
        }
    )
    report = import_rules(source, brain)
    kept = {r.source: r.also for r in report.rules}
    assert kept == {
        ".cursor/rules/style.mdc": (),  # a third of the text: not nearly the same
        ".windsurf/rules/style.md": (".github/copilot-instructions.md",),
    }
    reason = next(s.reason for s in report.seen if s.fate == "merged")
    assert reason is not None
    assert reason.startswith("nearly the same text as .windsurf/rules/style.md (")
    assert reason.endswith("% in common)")
    assert "100%" not in reason, "texts that differ are never said to be 100 % the same"


def test_rules_that_apply_differently_stay_apart(repo: WriteTree, brain: Path) -> None:
    source = repo(
        {
            ".cursor/rules/a.mdc": CURSOR_ALWAYS,
            ".cursor/rules/b.mdc": f"---\nglobs: '*.ts'\n---\n{TEXT}",
            ".windsurf/rules/b.md": f"---\ntrigger: glob\nglobs: '*.tsx'\n---\n{TEXT}",
            ".claude/rules/b.md": f"---\npaths: ['*.ts']\n---\n{TEXT}",
        }
    )
    report = import_rules(source, brain)
    assert all(r.also == () for r in report.rules)
    assert len(report.rules) == 4


def test_the_same_globs_read_the_same_way_merge(repo: WriteTree, brain: Path) -> None:
    source = repo(
        {
            ".cursor/rules/ts.mdc": f"---\nglobs: '*.ts, *.tsx'\n---\n{TEXT}",
            ".windsurf/rules/ts.md": f"---\ntrigger: glob\nglobs: '*.tsx, *.ts'\n---\n{TEXT}",
        }
    )
    report = import_rules(source, brain)
    assert [(r.source, r.also) for r in report.rules] == [
        (".cursor/rules/ts.mdc", (".windsurf/rules/ts.md",))
    ]


def test_a_claude_md_that_only_imports_agents_md_is_that_rule(repo: WriteTree, brain: Path) -> None:
    source = repo({"AGENTS.md": TEXT, "CLAUDE.md": "@AGENTS.md\n"})
    report = import_rules(source, brain)
    assert [(r.source, r.also) for r in report.rules] == [("AGENTS.md", ("CLAUDE.md",))]
    (merged,) = [s for s in report.seen if s.fate == "merged"]
    assert merged.reason == "it only @-imports AGENTS.md, which Claude Code expands to that text"


def test_different_texts_are_not_merged(repo: WriteTree, brain: Path) -> None:
    source = repo({"AGENTS.md": TEXT, "CLAUDE.md": "Something else entirely.\n"})
    report = import_rules(source, brain)
    assert sorted(r.context for r in report.rules) == ["agents-md", "claude-md"]


def test_a_rule_that_becomes_a_duplicate_loses_its_own_context(
    repo: WriteTree, brain: Path
) -> None:
    source = repo({"AGENTS.md": TEXT, "CLAUDE.md": "Something else entirely.\n"})
    import_rules(source, brain, role="coder")
    (source / "CLAUDE.md").write_text(TEXT, encoding="utf-8")
    report = import_rules(source, brain, role="coder")
    assert "features/repo/claude-md.context.md" in report.removed
    assert report.role is not None
    assert report.role.dropped == ("claude-md",)


def test_the_terminal_names_what_was_merged_and_why(repo: WriteTree, brain: Path) -> None:
    source = repo(
        {".cursor/rules/style.mdc": CURSOR_ALWAYS, ".windsurf/rules/style.md": WINDSURF_ALWAYS}
    )
    result = CliRunner().invoke(
        app, ["import", str(source), str(brain)], env={"COLUMNS": "200", "NO_COLOR": "1"}
    )
    assert result.exit_code == 0, result.output
    assert "source files: 2 — 1 imported, 1 merged into another's context\n" in result.output
    assert (
        "  .windsurf/rules/style.md → merged into cursor-style: the same text as "
        ".cursor/rules/style.mdc\n" in result.output
    )


def test_two_skills_with_the_same_text_stay_apart_with_their_files(
    repo: WriteTree, brain: Path
) -> None:
    skill = "---\ndescription: Deploy.\n---\nRun scripts/go.sh.\n"
    source = repo(
        {
            ".claude/skills/deploy/SKILL.md": skill,
            ".claude/skills/deploy/scripts/go.sh": "go\n",
            "api/.claude/skills/deploy/SKILL.md": skill,
            "api/.claude/skills/deploy/scripts/go.sh": "go\n",
        }
    )
    report = import_rules(source, brain)
    assert all(r.also == () for r in report.rules)
    assert {s.fate for s in report.seen} == {"imported", "named"}
