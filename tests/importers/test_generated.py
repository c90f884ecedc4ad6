"""The files the import writes: what they say, how their size is measured, how they are owned."""

from __future__ import annotations

from keel.brain.document import parse_yaml, split
from keel.budget import render_block
from keel.importers.generated import (
    block_chars,
    code_text,
    context_text,
    feature_text,
    marker,
    owner_of,
    role_text,
    written_by_import,
)


def test_the_measured_size_is_the_block_keel_renders() -> None:
    for text in ("x", "Fixture rule.\n\nWith — a dash and ünïcode.", "y" * 5000):
        block = render_block(
            context="cursor-testing", entity=None, instructions=text, views=(), chars=10**6
        )
        assert block is not None
        assert block_chars("cursor-testing", text) == block.chars


def test_a_context_file_is_owned_by_its_source_and_loads_as_strict_frontmatter() -> None:
    text = context_text(
        source='odd "name" #1.mdc',
        description='Quotes " and \\ and: colons',
        when=["ask"],
        chars=300,
        body="Body.",
    )
    assert owner_of(text) == 'odd "name" #1.mdc'
    doc = split("x.context.md", text)
    assert doc.front == {
        "description": 'Quotes " and \\ and: colons',
        "when": ["ask"],
        "chars": 300,
    }
    assert doc.body == "Body."


def test_a_file_without_the_line_has_no_owner() -> None:
    assert owner_of("---\ndescription: mine\n---\n") is None
    assert owner_of("\n".join(["---", "a: 1", "b: 2", "c: 3", marker("late.mdc")])) is None


def test_generated_code_lists_its_globs_one_per_line_when_long() -> None:
    text = code_text(
        source="r.mdc",
        context="r",
        tool="cursor",
        dialect="cursor",
        globs=["src/components/**/*.tsx", "src/pages/**/*.tsx", "src/layouts/**/*.tsx"],
    )
    assert (
        '    [\n        "src/components/**/*.tsx",\n        "src/pages/**/*.tsx",\n'
        '        "src/layouts/**/*.tsx",\n    ],\n' in text
    )
    compile(text, "r.context.py", "exec")


def test_feature_and_role_files_say_the_import_wrote_them() -> None:
    feature = feature_text("shop", ["cursor", "claude", "cursor"])
    role = role_text("coder", "shop", [])
    assert written_by_import(feature)
    assert written_by_import(role)
    assert not written_by_import("---\ndescription: mine\n---\n")
    assert parse_yaml("f", split("FEATURE.md", feature).front_text)["description"] == (
        "Coding-agent rules of shop (Claude Code, Cursor), imported by keel import."
    )
    assert split("coder.agent.md", role).front["contexts"] == []
