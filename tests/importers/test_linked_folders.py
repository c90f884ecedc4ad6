"""Folders linked into the tree: followed when they stay inside it, said when they leave."""

from __future__ import annotations

from pathlib import Path

from keel.brain import load_brain
from keel.importers import import_rules
from tests.importers.conftest import WriteTree, write_files

SKILL = "---\ndescription: Build with turbo.\n---\nRun turbo build; see REFERENCE.md.\n"


def test_a_skill_linked_from_inside_the_repository_is_imported_under_its_link(
    repo: WriteTree, brain: Path
) -> None:
    # As a repository that keeps its skills once in .agents/ and links them for each tool.
    source = repo(
        {
            ".agents/skills/turborepo/SKILL.md": SKILL,
            ".agents/skills/turborepo/REFERENCE.md": "# Reference\n\nFlags.\n",
            ".agents/skills/turborepo/bin/run.sh": "turbo run\n",
        }
    )
    (source / ".claude/skills").mkdir(parents=True)
    (source / ".claude/skills/turborepo").symlink_to("../../.agents/skills/turborepo")
    report = import_rules(source, brain)
    seen = {s.path: (s.fate, s.context) for s in report.seen}
    assert seen == {
        ".claude/skills/turborepo/SKILL.md": ("imported", "claude-skill-turborepo"),
        ".claude/skills/turborepo/REFERENCE.md": ("imported", "claude-skill-turborepo-reference"),
        ".claude/skills/turborepo/bin/run.sh": ("named", "claude-skill-turborepo"),
    }
    assert "Run turbo build" in load_brain(brain).contexts["claude-skill-turborepo"].instructions


def test_a_visible_folder_linked_into_a_rules_folder_is_imported_under_its_link(
    repo: WriteTree, brain: Path
) -> None:
    # `shared-rules/` is walked first (at the root, where no tool reads rules); the link
    # into .cursor/rules/ still brings its rules, and a link to the root is no way round.
    source = repo({"shared-rules/shared.mdc": "---\nalwaysApply: true\n---\nShared.\n"})
    (source / ".cursor/rules").mkdir(parents=True)
    (source / ".cursor/rules/linked").symlink_to("../../shared-rules")
    (source / ".cursor/rules/everything").symlink_to("../..")
    (source / "skills/turborepo").mkdir(parents=True)
    (source / "skills/turborepo/SKILL.md").write_text(SKILL, encoding="utf-8")
    (source / ".claude/skills").mkdir(parents=True)
    (source / ".claude/skills/turborepo").symlink_to("../../skills/turborepo")
    report = import_rules(source, brain)
    seen = {s.path: (s.fate, s.context) for s in report.seen}
    assert seen == {
        ".cursor/rules/linked/shared.mdc": ("imported", "cursor-linked-shared"),
        ".claude/skills/turborepo/SKILL.md": ("imported", "claude-skill-turborepo"),
    }


def test_a_rules_folder_linked_out_of_the_repository_is_said_and_not_read(
    tmp_path: Path, repo: WriteTree, brain: Path
) -> None:
    outside = write_files(
        tmp_path / "elsewhere", {"secret.mdc": "---\nalwaysApply: true\n---\nSECRET-RULE-TEXT\n"}
    )
    source = repo({"AGENTS.md": "Fixture.\n"})
    (source / ".cursor/rules").mkdir(parents=True)
    (source / ".cursor/rules/shared").symlink_to(outside)
    report = import_rules(source, brain)
    assert [r.source for r in report.rules] == ["AGENTS.md"]
    (notice,) = [n for n in report.skipped if n.path == ".cursor/rules/shared"]
    assert notice.message.startswith("a symbolic link to a folder outside the repository")
    assert {s.path: s.fate for s in report.seen}[".cursor/rules/shared"] == "skipped"
    assert not any(
        "SECRET-RULE-TEXT" in p.read_text(encoding="utf-8") for p in brain.rglob("*.context.md")
    )


def test_a_folder_link_outside_the_rule_places_is_passed_over_quietly(
    tmp_path: Path, repo: WriteTree, brain: Path
) -> None:
    outside = write_files(tmp_path / "elsewhere", {"notes.md": "Notes.\n"})
    source = repo({"AGENTS.md": "Fixture.\n"})
    (source / "docs").symlink_to(outside)
    report = import_rules(source, brain)
    assert report.skipped == ()


def test_a_link_that_loops_ends_the_walk(repo: WriteTree, brain: Path) -> None:
    source = repo({".cursor/rules/a.mdc": "---\ndescription: A.\n---\nA.\n"})
    (source / ".cursor/rules/again").symlink_to("..")
    (source / "loop").symlink_to(".")
    report = import_rules(source, brain)
    assert [r.source for r in report.rules] == [".cursor/rules/a.mdc"]
