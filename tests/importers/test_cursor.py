"""Cursor rules map by their mode, and the mistakes Cursor accepts are read as Cursor reads them."""

from __future__ import annotations

import pytest

from keel.importers.cursor import map_cursor, map_cursorrules
from keel.importers.globs import GlobSet
from keel.importers.rules import Mapped, Rule
from tests.importers.conftest import FIXTURES, WriteTree

SHOP = FIXTURES / "shop"


def only_rule(mapped: Mapped) -> Rule:
    assert len(mapped.rules) == 1, mapped
    return mapped.rules[0]


def messages(mapped: Mapped) -> list[str]:
    return [str(w) for w in mapped.warnings]


@pytest.mark.parametrize(
    ("path", "name", "trigger", "description", "globs"),
    [
        pytest.param(
            ".cursor/rules/testing.mdc",
            "cursor-testing",
            "glob",
            "How tests are written here — naming, fixtures, no network.",
            ("**/*.test.ts", "tests/**"),
            id="globs: auto attached",
        ),
        pytest.param(
            ".cursor/rules/style.mdc",
            "cursor-style",
            "always",
            "House style for every file",
            (),
            id="alwaysApply: always",
        ),
        pytest.param(
            ".cursor/rules/api.mdc",
            "cursor-api",
            "description",
            "Designing HTTP endpoints — status codes, error bodies, pagination.",
            (),
            id="description only: agent requested",
        ),
        pytest.param(
            ".cursor/rules/release.mdc",
            "cursor-release",
            "manual",
            "Release checklist — Cursor rule applied by @release (.cursor/rules/release.mdc)",
            (),
            id="nothing: manual, with a generated description",
        ),
        pytest.param(
            ".cursor/rules/frontend/components/RULE.md",
            "cursor-frontend-components",
            "glob",
            "React component structure",
            ("src/components/**/*.tsx",),
            id="a RULE.md folder is named after the folder",
        ),
    ],
)
def test_each_cursor_mode_maps_to_its_trigger(
    path: str, name: str, trigger: str, description: str, globs: tuple[str, ...]
) -> None:
    mapped = map_cursor(SHOP, path)
    rule = only_rule(mapped)
    assert (rule.name, rule.trigger, rule.description, rule.globs) == (
        name,
        trigger,
        description,
        globs,
    )
    assert rule.dialect == ("cursor" if globs else None)
    assert mapped.warnings == ()


def test_a_comma_separated_globs_text_is_split_with_a_warning() -> None:
    mapped = map_cursor(SHOP, ".cursor/rules/mistakes/comma-globs.mdc")
    assert only_rule(mapped).globs == ("src/**/*.ts", "*.tsx")
    assert messages(mapped) == [
        ".cursor/rules/mistakes/comma-globs.mdc:3: globs is one comma-separated text; Cursor "
        "reads it as 2 patterns (src/**/*.ts, *.tsx), and so does this import — a YAML list "
        "says it plainly"
    ]


def test_always_apply_in_quotes_is_text_so_the_rule_is_not_always_on() -> None:
    mapped = map_cursor(SHOP, ".cursor/rules/mistakes/quoted-always.mdc")
    assert only_rule(mapped).trigger == "description"
    assert messages(mapped) == [
        ".cursor/rules/mistakes/quoted-always.mdc:3: alwaysApply is the text 'true', not the "
        "boolean true — Cursor does not treat the rule as always-on, and neither does this "
        "import; write alwaysApply: true without quotes if it should be"
    ]


def test_globs_beside_always_apply_are_ignored_with_a_warning() -> None:
    mapped = map_cursor(SHOP, ".cursor/rules/mistakes/globs-and-always.mdc")
    rule = only_rule(mapped)
    assert (rule.trigger, rule.globs) == ("always", ())
    assert messages(mapped) == [
        ".cursor/rules/mistakes/globs-and-always.mdc:3: alwaysApply: true and globs are both "
        "set — Cursor applies the rule to every request and ignores the globs, and so does "
        "this import; drop one of them"
    ]


def test_unquoted_globs_that_yaml_refuses_are_read_line_by_line() -> None:
    mapped = map_cursor(SHOP, ".cursor/rules/mistakes/unquoted-star.mdc")
    rule = only_rule(mapped)
    assert (rule.trigger, rule.globs, rule.description) == ("glob", ("*.py",), "Python scripts")
    (warning,) = messages(mapped)
    assert warning.startswith(
        ".cursor/rules/mistakes/unquoted-star.mdc:3: the frontmatter is not valid YAML "
        "(found undefined alias '.py'); read line by line, as Cursor does"
    )


def test_another_tools_key_is_named_and_ignored() -> None:
    mapped = map_cursor(SHOP, ".cursor/rules/mistakes/paths-key.mdc")
    assert only_rule(mapped).trigger == "description"
    assert messages(mapped) == [
        ".cursor/rules/mistakes/paths-key.mdc:3: 'paths' is Claude Code's key; Cursor ignores "
        "it, and so does this import"
    ]


def test_a_misspelt_key_gets_a_did_you_mean(repo: WriteTree) -> None:
    root = repo({".cursor/rules/x.mdc": "---\nglob: '*.py'\n---\nFixture.\n"})
    mapped = map_cursor(root, ".cursor/rules/x.mdc")
    assert only_rule(mapped).trigger == "manual"
    assert messages(mapped) == [
        ".cursor/rules/x.mdc:2: unknown key 'glob' — did you mean 'globs'? Cursor ignores it, "
        "and so does this import"
    ]


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        pytest.param(
            ".cursor/rules/broken.mdc",
            ".cursor/rules/broken.mdc:3: the frontmatter does not parse (expected ',' or ']', "
            "but got '<stream end>'), not even line by line as the coding agents read it — fix "
            "it, then re-run",
            id="frontmatter that does not parse",
        ),
        pytest.param(
            ".cursor/rules/empty.mdc",
            ".cursor/rules/empty.mdc: the file is empty — nothing to import",
            id="empty",
        ),
        pytest.param(
            ".cursor/rules/latin1.mdc",
            ".cursor/rules/latin1.mdc:2: not UTF-8 (byte 0xe9 at offset 20) — save it as UTF-8",
            id="not UTF-8",
        ),
    ],
)
def test_a_file_that_cannot_be_mapped_is_skipped_with_its_reason(path: str, reason: str) -> None:
    mapped = map_cursor(SHOP, path)
    assert mapped.rules == ()
    assert [str(s) for s in mapped.skipped] == [reason]


def test_frontmatter_with_no_text_after_it_is_skipped(repo: WriteTree) -> None:
    root = repo({".cursor/rules/x.mdc": "---\nalwaysApply: true\n---\n\n"})
    assert [str(s) for s in map_cursor(root, ".cursor/rules/x.mdc").skipped] == [
        ".cursor/rules/x.mdc: no text after the frontmatter — nothing to import"
    ]


def test_a_nested_rules_folder_applies_to_its_own_folder() -> None:
    rule = only_rule(map_cursor(SHOP, "backend/.cursor/rules/db.mdc"))
    assert rule.name == "cursor-backend-db"
    assert rule.globs == ("/backend/**/*.sql", "/backend/migrations/**")
    globs = GlobSet.of("cursor", rule.globs)
    assert globs.matches_path("backend/db/schema.sql")
    assert globs.matches_path("backend/migrations/0001_init.py")
    assert not globs.matches_path("schema.sql")
    assert not globs.matches_path("migrations/0001_init.py")


def test_a_nested_always_rule_applies_to_files_of_its_folder(repo: WriteTree) -> None:
    root = repo({"web/[id]/.cursor/rules/x.mdc": "---\nalwaysApply: true\n---\nFixture.\n"})
    rule = only_rule(map_cursor(root, "web/[id]/.cursor/rules/x.mdc"))
    assert (rule.trigger, rule.globs) == ("glob", ("/web/\\[id\\]/**",))
    assert (
        rule.description
        == "x — Cursor rule for files under web/[id]/ (web/[id]/.cursor/rules/x.mdc)"
    )
    assert GlobSet.of("cursor", rule.globs).matches_path("web/[id]/page.tsx")


def test_the_legacy_cursorrules_file_is_always_on() -> None:
    mapped = map_cursorrules(SHOP, ".cursorrules", beside_rules=True)
    rule = only_rule(mapped)
    assert (rule.name, rule.trigger) == ("cursorrules", "always")
    assert rule.body == "Fixture legacy rule. Answer in British English."
    assert messages(mapped) == [
        ".cursorrules: .cursorrules is Cursor's legacy file and .cursor/rules/ exists too; both "
        "are imported (.cursorrules as always-on) — fold it into .cursor/rules/ if they overlap"
    ]
    assert map_cursorrules(SHOP, ".cursorrules", beside_rules=False).warnings == ()


def test_always_apply_that_is_not_a_boolean_is_false(repo: WriteTree) -> None:
    root = repo({".cursor/rules/x.mdc": "---\nalwaysApply: 1\n---\nFixture.\n"})
    mapped = map_cursor(root, ".cursor/rules/x.mdc")
    assert only_rule(mapped).trigger == "manual"
    assert messages(mapped) == [
        ".cursor/rules/x.mdc:2: alwaysApply is 1, not true or false — read as false, as Cursor does"
    ]
