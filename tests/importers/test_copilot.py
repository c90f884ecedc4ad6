"""Copilot instructions map as VS Code applies them: always, by `applyTo`, or by hand."""

from __future__ import annotations

import pytest

from keel.importers.copilot import map_copilot
from keel.importers.globs import GlobSet
from tests.importers.conftest import FIXTURES, WriteTree

SHOP = FIXTURES / "shop"


@pytest.mark.parametrize(
    ("path", "name", "trigger", "globs"),
    [
        pytest.param(
            ".github/copilot-instructions.md",
            "copilot-instructions",
            "always",
            (),
            id="repository-wide",
        ),
        pytest.param(
            ".github/instructions/react.instructions.md",
            "copilot-react",
            "glob",
            ("src/**/*.tsx", "src/**/*.jsx"),
            id="applyTo",
        ),
        pytest.param(
            ".github/instructions/everything.instructions.md",
            "copilot-everything",
            "always",
            (),
            id="applyTo ** is every request",
        ),
    ],
)
def test_copilot_files_map_by_apply_to(
    path: str, name: str, trigger: str, globs: tuple[str, ...]
) -> None:
    mapped = map_copilot(SHOP, path)
    (rule,) = mapped.rules
    assert (rule.name, rule.trigger, rule.globs) == (name, trigger, globs)
    assert mapped.warnings == ()


def test_apply_to_globs_match_at_any_depth_without_regard_to_case() -> None:
    (rule,) = map_copilot(SHOP, ".github/instructions/react.instructions.md").rules
    assert rule.description == "React conventions for Copilot"
    globs = GlobSet.of("copilot", rule.globs)
    assert globs.matches_text("the layout in apps/web/src/pages/Home.TSX")
    assert not globs.matches_text("the layout in apps/web/pages/Home.tsx")


def test_apply_to_as_a_list_is_read_with_a_warning() -> None:
    mapped = map_copilot(SHOP, ".github/instructions/python.instructions.md")
    (rule,) = mapped.rules
    assert (rule.trigger, rule.globs) == ("glob", ("**/*.py",))
    assert [str(w) for w in mapped.warnings] == [
        ".github/instructions/python.instructions.md:2: applyTo is a YAML list; VS Code reads "
        'one comma-separated text — read as the list\'s patterns; write applyTo: "a/**, b/**" '
        "to be sure"
    ]


def test_a_leading_slash_is_anchored_with_a_warning(repo: WriteTree) -> None:
    root = repo(
        {".github/instructions/x.instructions.md": "---\napplyTo: /src/**\n---\nFixture.\n"}
    )
    mapped = map_copilot(root, ".github/instructions/x.instructions.md")
    (rule,) = mapped.rules
    assert GlobSet.of("copilot", rule.globs).matches_path("src/a.py")
    assert not GlobSet.of("copilot", rule.globs).matches_path("lib/src/a.py")
    assert [str(w) for w in mapped.warnings] == [
        ".github/instructions/x.instructions.md:2: applyTo pattern '/src/**' starts with '/': VS "
        "Code matches it against absolute paths, where it matches nothing; this import anchors "
        "it at the repository root — drop the leading '/'"
    ]


@pytest.mark.parametrize(
    ("text", "trigger", "description"),
    [
        pytest.param(
            "---\ndescription: Docs style\n---\nFixture.\n",
            "description",
            "Docs style",
            id="a description, no applyTo",
        ),
        pytest.param(
            "# Docs\n\nFixture.\n",
            "manual",
            "Docs — GitHub Copilot rule attached by hand (.github/instructions/docs/style.instructions.md)",
            id="neither",
        ),
    ],
)
def test_instructions_without_apply_to_are_ask_contexts(
    repo: WriteTree, text: str, trigger: str, description: str
) -> None:
    root = repo({".github/instructions/docs/style.instructions.md": text})
    (rule,) = map_copilot(root, ".github/instructions/docs/style.instructions.md").rules
    assert (rule.name, rule.trigger, rule.description) == (
        "copilot-docs-style",
        trigger,
        description,
    )


def test_frontmatter_of_the_repository_wide_file_is_ignored(repo: WriteTree) -> None:
    root = repo({".github/copilot-instructions.md": "---\napplyTo: '*.py'\n---\nFixture.\n"})
    mapped = map_copilot(root, ".github/copilot-instructions.md")
    (rule,) = mapped.rules
    assert (rule.trigger, rule.body) == ("always", "Fixture.")
    assert [str(w) for w in mapped.warnings] == [
        ".github/copilot-instructions.md:2: copilot-instructions.md applies to every request; "
        "its frontmatter is ignored"
    ]
