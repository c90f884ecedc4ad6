"""The files the import writes: what they say, how their size is measured, how they are owned."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keel.brain.document import parse_yaml, split
from keel.brain.files import Location, Parsed, location_of, parse_file
from keel.brain.limits import MAX_FILE_BYTES
from keel.budget import render_block
from keel.importers.generated import (
    block_chars,
    brain_refusal,
    code_text,
    context_text,
    feature_text,
    marker,
    owner_of,
    role_text,
    written_by_import,
)
from keel.importers.quoting import shown


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


# -- text from outside is data ------------------------------------------------------------

INJECTION = "x\nentity: __import__('os').system('touch PWNED')\n#"


def test_a_source_path_cannot_add_a_line_to_the_context_file() -> None:
    source = f".cursor/rules/{INJECTION}/r.mdc"
    text = context_text(source=source, description="d", when=["ask"], chars=300, body="Body.")
    assert split("x.context.md", text).front == {"description": "d", "when": ["ask"], "chars": 300}
    assert owner_of(text) == source


def test_a_source_path_cannot_add_a_statement_to_the_code_file() -> None:
    source = f".cursor/rules/{INJECTION}/r.mdc"
    text = code_text(source=source, tool="cursor", dialect="cursor", globs=["*.ts"])
    reference = code_text(source="r.mdc", tool="cursor", dialect="cursor", globs=["*.ts"])
    assert ast.dump(ast.parse(text)) == ast.dump(ast.parse(reference))
    assert owner_of(text) == source


@pytest.mark.parametrize(
    ("line", "source"),
    [
        pytest.param(
            "# imported from .cursor/rules/a.mdc by keel import — edit the source and re-run; "
            "delete this line to keep your own edits",
            ".cursor/rules/a.mdc",
            id="as-written-before-quoting",
        ),
        pytest.param(
            '# imported from odd "name" #1.mdc by keel import — edit the source',
            'odd "name" #1.mdc',
            id="unquoted-with-quotes-inside",
        ),
        pytest.param('# imported from "a.mdc".md by keel import', '"a.mdc".md', id="starts-quoted"),
        pytest.param(marker('new \\ "x".mdc'), 'new \\ "x".mdc', id="quoted"),
    ],
)
def test_markers_of_every_version_name_their_source(line: str, source: str) -> None:
    assert owner_of(f"---\n{line}\ndescription: d\n---\n") == source


# Any character at all: line breaks of every kind, controls, quotes, YAML and Python syntax,
# and lone surrogates, which a file name that is not UTF-8 carries.
ANY_CHAR = st.one_of(
    st.characters(exclude_categories=[]),
    st.sampled_from("\n\r\x85\u2028\u2029\x00\x0b\x0c\x1b\x7f\ufeff\"'\\#:-[]{}&*!|>%@`"),
    st.sampled_from("\udc80\udcff\ud800\udfff"),
)
ANY_TEXT = st.text(ANY_CHAR, max_size=30)
# What no brain text can hold (a NUL, half of a surrogate pair): the brain refuses it.
UNHELD = re.compile("[\x00\ud800-\udfff]")
CONTEXT = "features/f/x.context.md"


def parsed(path: str, text: str) -> Parsed:
    location = location_of(path)
    assert isinstance(location, Location)
    return parse_file(Path(), path, location, text.encode("utf-8"))


def glob_list(tree: ast.Module) -> ast.List:
    """The list of globs in `GLOBS = GlobSet.of(dialect, [...])`."""
    (assign,) = [
        n for n in tree.body if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "GLOBS"
    ]
    assert isinstance(assign.value, ast.Call)
    listed = assign.value.args[1]
    assert isinstance(listed, ast.List)
    return listed


@settings(max_examples=300, derandomize=True, database=None, deadline=None)
@given(
    source=ANY_TEXT,
    description=st.text(ANY_CHAR, min_size=1, max_size=30),
    globs=st.lists(ANY_TEXT, max_size=4),
    name=ANY_TEXT,
)
def test_text_from_outside_reads_back_as_itself_and_nothing_else(
    source: str, description: str, globs: list[str], name: str
) -> None:
    context = context_text(
        source=source, description=description, when=["ask"], chars=300, body="B."
    )
    assert owner_of(context) == source
    read = parsed(CONTEXT, context)
    if UNHELD.search(description):
        assert read.errors, "the brain refuses a text it cannot hold"
        assert brain_refusal(CONTEXT, context) is not None
    else:
        assert read.errors == ()
        spec = read.spec
        assert (spec.description, spec.when, spec.chars, spec.instructions) == (
            description,
            {"ask"},
            300,
            "B.",
        )
        assert brain_refusal(CONTEXT, context) is None

    code = code_text(source=source, tool="cursor", dialect="cursor", globs=globs)
    assert owner_of(code) == source
    tree = ast.parse(code)
    listed = glob_list(tree)
    assert ast.literal_eval(listed) == globs
    # The fixed shape: the same module as for placeholder globs, the globs aside.
    listed.elts = [ast.Constant("g") for _ in globs]
    reference = code_text(source="s", tool="cursor", dialect="cursor", globs=["g"] * len(globs))
    assert ast.dump(tree) == ast.dump(ast.parse(reference))
    comments = [
        t.string
        for t in tokenize.generate_tokens(io.StringIO(code).readline)
        if t.type == tokenize.COMMENT
    ]
    assert comments == [marker(source)]

    feature = feature_text(name, ["cursor"])
    assert parsed("features/f/FEATURE.md", feature).errors == ()
    assert split("FEATURE.md", feature).front["title"] == f"{shown(name)} coding rules"


def test_the_brain_s_refusal_is_found_before_the_write() -> None:
    big = context_text(
        source="s", description=None, when=["always"], chars=300, body="x" * MAX_FILE_BYTES
    )
    assert brain_refusal(CONTEXT, big) == (
        f"it would hold {len(big.encode()):,} bytes, over the limit of {MAX_FILE_BYTES:,} for a "
        "brain file (docs/limits.md) — split the source rule"
    )
    nul = context_text(source="s", description=None, when=["always"], chars=300, body="a\x00b")
    assert (
        brain_refusal(CONTEXT, nul) == "the file is binary, not text — brain files are UTF-8 text"
    )
