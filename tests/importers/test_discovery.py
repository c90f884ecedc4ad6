"""Discovery finds rule files where each tool looks, reports strays, and skips the rest."""

from __future__ import annotations

import os
from pathlib import Path

from keel.importers.discovery import Skill, discover
from tests.importers.conftest import FIXTURES, WriteTree


def test_the_fixture_repository_is_sorted_by_tool() -> None:
    found = discover(FIXTURES / "shop")
    assert found.cursor == (
        ".cursor/rules/api.mdc",
        ".cursor/rules/broken.mdc",
        ".cursor/rules/empty.mdc",
        ".cursor/rules/frontend/components/RULE.md",
        ".cursor/rules/latin1.mdc",
        ".cursor/rules/mistakes/comma-globs.mdc",
        ".cursor/rules/mistakes/globs-and-always.mdc",
        ".cursor/rules/mistakes/paths-key.mdc",
        ".cursor/rules/mistakes/quoted-always.mdc",
        ".cursor/rules/mistakes/unquoted-star.mdc",
        ".cursor/rules/release.mdc",
        ".cursor/rules/style.mdc",
        ".cursor/rules/testing.mdc",
        "backend/.cursor/rules/db.mdc",
    )
    assert found.cursorrules == (".cursorrules",)
    assert found.memory == (
        ".claude/CLAUDE.md",
        "AGENTS.md",
        "CLAUDE.md",
        "frontend/CLAUDE.md",
        "packages/api/AGENTS.md",
    ), "node_modules is never read"
    assert found.skills == (
        Skill(folder=".claude/skills/changelog", files=()),
        Skill(folder=".claude/skills/deploy", files=()),
        Skill(
            folder=".claude/skills/pdf",
            files=(".claude/skills/pdf/FORMS.md", ".claude/skills/pdf/scripts/fill.py"),
        ),
    )
    assert found.claude_rules == (".claude/rules/commits.md", ".claude/rules/security.md")
    assert found.copilot == (
        ".github/copilot-instructions.md",
        ".github/instructions/everything.instructions.md",
        ".github/instructions/python.instructions.md",
        ".github/instructions/react.instructions.md",
    )
    assert len(found.windsurf) == 6
    assert [n.path for n in found.stray] == [
        ".claude/skills/stray.md",
        ".cursor/rules/notes.txt",
        ".github/instructions/README.md",
    ]


def test_a_skill_folder_without_skill_md_is_reported(repo: WriteTree) -> None:
    root = repo({".claude/skills/x/notes.md": "Fixture.\n"})
    found = discover(root)
    assert found.skills == ()
    assert [str(n) for n in found.stray] == [
        ".claude/skills/x/notes.md: .claude/skills/x/ has no SKILL.md, so Claude Code loads no "
        "skill from it — add one, or move the file"
    ]


def test_the_brain_inside_the_repository_and_hidden_folders_are_skipped(repo: WriteTree) -> None:
    root = repo(
        {
            "CLAUDE.md": "Fixture.\n",
            "brain/features/x/CLAUDE.md": "Fixture: part of the brain.\n",
            ".idea/CLAUDE.md": "Fixture: hidden folder.\n",
            ".venv/lib/AGENTS.md": "Fixture: virtualenv.\n",
            "docs/AGENTS.md": "Fixture.\n",
        }
    )
    assert discover(root, skip=root / "brain").memory == ("CLAUDE.md", "docs/AGENTS.md")


def test_an_empty_repository_has_nothing(tmp_path: Path) -> None:
    found = discover(tmp_path)
    assert found.count == 0
    assert found.stray == ()


def test_a_rule_file_linked_to_another_is_imported_once(repo: WriteTree) -> None:
    root = repo({"AGENTS.md": "Fixture.\n", "notes/readme.md": "Fixture.\n"})
    (root / "CLAUDE.md").symlink_to("AGENTS.md")
    (root / "docs").mkdir()
    (root / "docs/readme.md").symlink_to("../notes/readme.md")
    found = discover(root)
    assert found.memory == ("AGENTS.md",)
    assert [str(n) for n in found.stray] == [
        "CLAUDE.md: a symbolic link to AGENTS.md, which is imported (once) in its own right"
    ], "links between files that are not rules say nothing"


NOT_UTF8 = (
    "the name is not valid UTF-8 (its undecodable bytes are shown as \\xNN) — rename it, "
    "then re-run"
)


def test_a_name_that_is_not_utf8_is_skipped_with_its_bytes_shown(repo: WriteTree) -> None:
    root = repo({".cursor/rules/good.mdc": "Fixture.\n", "notes/readme.md": "Not a rule.\n"})
    (root / ".cursor/rules" / os.fsdecode(b"caf\xe9.mdc")).write_text("Fixture.\n")
    (root / os.fsdecode(b"pkg\xff")).mkdir()
    (root / os.fsdecode(b"pkg\xff") / "CLAUDE.md").write_text("Fixture.\n")
    (root / "notes" / os.fsdecode(b"\xfe.md")).write_text("Not a rule either.\n")
    found = discover(root)
    assert (found.cursor, found.memory) == ((".cursor/rules/good.mdc",), ())
    assert [str(n) for n in found.stray] == [
        f".cursor/rules/caf\\xe9.mdc: {NOT_UTF8}",
        f"pkg\\xff/CLAUDE.md: {NOT_UTF8}",
    ], "only where a rule would be; every name printable"


def test_a_name_with_a_newline_is_a_rule_like_any_other(repo: WriteTree) -> None:
    root = repo({".cursor/rules/a\nb/r.mdc": "Fixture.\n"})
    assert discover(root).cursor == (".cursor/rules/a\nb/r.mdc",)


def test_links_that_loop_are_found_and_left_to_the_reader(repo: WriteTree) -> None:
    root = repo({"AGENTS.md": "Fixture.\n"})
    (root / "CLAUDE.md").symlink_to("CLAUDE.md")
    (root / ".cursor/rules").mkdir(parents=True)
    (root / ".cursor/rules/a.mdc").symlink_to("b.mdc")
    (root / ".cursor/rules/b.mdc").symlink_to("a.mdc")
    (root / "loop").symlink_to("loop")
    found = discover(root)
    assert (found.cursor, found.memory) == (
        (".cursor/rules/a.mdc", ".cursor/rules/b.mdc"),
        ("AGENTS.md", "CLAUDE.md"),
    )
