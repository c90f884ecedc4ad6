"""CLAUDE.md, AGENTS.md, skills and `.claude/rules/` map as Claude Code loads them."""

from __future__ import annotations

import pytest

from keel.importers.claude import map_claude_rule, map_memory, map_skill
from keel.importers.discovery import Skill
from keel.importers.globs import GlobSet
from keel.importers.rules import Attachment
from tests.importers.conftest import FIXTURES, WriteTree

SHOP = FIXTURES / "shop"


@pytest.mark.parametrize(
    ("path", "tool", "name", "trigger", "globs"),
    [
        pytest.param("CLAUDE.md", "claude", "claude-md", "always", (), id="root CLAUDE.md"),
        pytest.param(
            ".claude/CLAUDE.md", "claude", "claude-md-claude", "always", (), id=".claude/CLAUDE.md"
        ),
        pytest.param(
            "frontend/CLAUDE.md",
            "claude",
            "claude-md-frontend",
            "glob",
            ("frontend/**",),
            id="a nested CLAUDE.md is for its folder",
        ),
        pytest.param("AGENTS.md", "agents", "agents-md", "always", (), id="root AGENTS.md"),
        pytest.param(
            "packages/api/AGENTS.md",
            "agents",
            "agents-md-packages-api",
            "glob",
            ("packages/api/**",),
            id="a nested AGENTS.md is for its folder",
        ),
    ],
)
def test_memory_files_are_always_on_at_the_root_and_for_their_folder_below(
    path: str, tool: str, name: str, trigger: str, globs: tuple[str, ...]
) -> None:
    (rule,) = map_memory(SHOP, path).rules
    assert (rule.tool, rule.name, rule.trigger, rule.globs) == (tool, name, trigger, globs)
    if globs:
        assert rule.dialect == "claude"
        assert rule.description is not None
        assert "for work under" in rule.description


def test_a_nested_claude_md_links_for_its_folder_only() -> None:
    (rule,) = map_memory(SHOP, "frontend/CLAUDE.md").rules
    globs = GlobSet.of("claude", rule.globs)
    assert globs.matches_text("the button in frontend/src/components/Button.vue is off")
    assert not globs.matches_text("the handler in backend/api.py is slow")


def test_claude_md_imports_are_named_but_not_email_or_code() -> None:
    mapped = map_memory(SHOP, "CLAUDE.md")
    assert [str(w) for w in mapped.warnings] == [
        "CLAUDE.md:3: Claude Code expands @-imports into CLAUDE.md (@docs/architecture.md); "
        "Keel keeps them as text — import those files too (e.g. as .claude/rules/) or paste "
        "them in"
    ]


def test_imports_inside_a_fence_are_code(repo: WriteTree) -> None:
    root = repo({"CLAUDE.md": "Fixture.\n\n```\n@inside/fence.md\n```\n"})
    assert map_memory(root, "CLAUDE.md").warnings == ()


def test_a_skill_and_the_text_files_beside_it_become_ask_contexts() -> None:
    skill = Skill(
        folder=".claude/skills/pdf",
        files=(".claude/skills/pdf/FORMS.md", ".claude/skills/pdf/scripts/fill.py"),
    )
    mapped = map_skill(SHOP, skill)
    main, forms = mapped.rules
    assert (main.name, main.trigger, main.description) == (
        "claude-skill-pdf",
        "description",
        "Fill in and read PDF forms. Use when the user mentions a PDF or a form.",
    )
    assert main.attachments == (
        Attachment(path=".claude/skills/pdf/FORMS.md", source=".claude/skills/pdf/FORMS.md"),
        Attachment(path=".claude/skills/pdf/scripts/fill.py"),
    )
    assert (forms.name, forms.trigger, forms.description) == (
        "claude-skill-pdf-forms",
        "description",
        "Form fields — part of the pdf skill (.claude/skills/pdf/FORMS.md)",
    )
    assert mapped.warnings == mapped.skipped == ()


def test_a_skill_with_paths_applies_to_matching_files_and_lists_its_first_paragraph() -> None:
    mapped = map_skill(SHOP, Skill(folder=".claude/skills/changelog", files=()))
    (rule,) = mapped.rules
    assert (rule.trigger, rule.dialect, rule.globs) == (
        "glob",
        "claude",
        ("CHANGELOG.md", "docs/releases/*.md"),
    )
    assert (
        rule.description
        == "Fixture skill: write changelog entries in the imperative, newest first."
    )
    assert [str(w) for w in mapped.warnings] == [
        ".claude/skills/changelog/SKILL.md:1: no description: Claude Code lists the skill by its "
        "first paragraph, and so does this import — add a description saying what it is for "
        "and when to use it"
    ]
    globs = GlobSet.of("claude", rule.globs)
    assert globs.matches_text("add CHANGELOG.md entries for docs/releases/2.1.md")
    assert not globs.matches_text("fix docs/CHANGELOG.md"), "paths are anchored at the root"


def test_a_person_only_skill_and_a_foreign_key_are_warned_about() -> None:
    mapped = map_skill(SHOP, Skill(folder=".claude/skills/deploy", files=()))
    (rule,) = mapped.rules
    assert (rule.trigger, rule.globs) == ("manual", ())
    assert [str(w) for w in mapped.warnings] == [
        ".claude/skills/deploy/SKILL.md:4: 'globs' is Cursor's key; Claude Code ignores it, and "
        "so does this import",
        ".claude/skills/deploy/SKILL.md:3: disable-model-invocation: true — in Claude Code only a "
        "person can invoke it; Keel has no person-only contexts, so it is an ask context the "
        "agent may open (leave it out of a role's contexts: if the agent must not)",
    ]


def test_when_to_use_joins_the_description(repo: WriteTree) -> None:
    root = repo(
        {
            ".claude/skills/x/SKILL.md": "---\ndescription: Does x.\nwhen_to_use: When y.\n---\nFixture.\n"
        }
    )
    (rule,) = map_skill(root, Skill(folder=".claude/skills/x", files=())).rules
    assert rule.description == "Does x. When y."


def test_a_skill_whose_skill_md_cannot_be_read_takes_its_files_with_it(repo: WriteTree) -> None:
    root = repo({".claude/skills/x/SKILL.md": "", ".claude/skills/x/REF.md": "Fixture.\n"})
    mapped = map_skill(root, Skill(folder=".claude/skills/x", files=(".claude/skills/x/REF.md",)))
    assert mapped.rules == ()
    assert [str(s) for s in mapped.skipped] == [
        ".claude/skills/x/SKILL.md: the file is empty — nothing to import",
        ".claude/skills/x/REF.md: its skill's .claude/skills/x/SKILL.md was not imported, so "
        "neither is it",
    ]


@pytest.mark.parametrize(
    ("path", "trigger", "globs"),
    [
        pytest.param(
            ".claude/rules/security.md",
            "glob",
            ("src/auth/**", "**/*.secret.ts"),
            id="paths: for matching files",
        ),
        pytest.param(".claude/rules/commits.md", "always", (), id="no paths: at launch"),
    ],
)
def test_claude_rules_are_always_on_unless_paths_scope_them(
    path: str, trigger: str, globs: tuple[str, ...]
) -> None:
    (rule,) = map_claude_rule(SHOP, path).rules
    assert (rule.trigger, rule.globs) == (trigger, globs)
