"""Text from outside reads back as exactly itself from a literal, and prints on one line."""

from __future__ import annotations

import ast
import os
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keel.brain.document import is_utf8
from keel.brain.yamlread import exact_load, fast_load
from keel.importers.quoting import quoted, shown, unquoted

ANY_CHAR = st.one_of(
    st.characters(exclude_categories=[]),
    st.sampled_from("\n\r\x85\u2028\u2029\x00\x0b\x0c\x1b\x7f\ufeff\u202e\"'\\#:-[]{}"),
    st.sampled_from("\udc80\udcff\ud800\udfff\ud83d\ude00\U0001f600"),
)
# What no YAML text can carry: half of a surrogate pair (the brain refuses a NUL too).
UNHELD = re.compile("[\ud800-\udfff]")


@settings(max_examples=500, derandomize=True, database=None, deadline=None)
@given(st.text(ANY_CHAR, max_size=40))
def test_a_literal_reads_back_as_exactly_the_text(text: str) -> None:
    literal = quoted(text)
    assert all(c == " " or c.isprintable() for c in literal), "one line, nothing hidden"
    assert ast.literal_eval(literal) == text
    assert unquoted(literal) == text
    if not UNHELD.search(text):
        assert fast_load(f"k: {literal}") == {"k": text}
        assert exact_load(f"k: {literal}") == {"k": text}


@settings(max_examples=300, derandomize=True, database=None, deadline=None)
@given(st.text(ANY_CHAR, max_size=40))
def test_shown_text_is_one_printable_line(text: str) -> None:
    line = shown(text)
    line.encode("utf-8")
    assert all(c == " " or c.isprintable() for c in line)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        pytest.param("a\nb/CLAUDE.md", "a\\nb/CLAUDE.md", id="newline"),
        pytest.param("x\x1b[31m\r", "x\\x1b[31m\\r", id="escape-and-return"),
        pytest.param("line\u2028sep\x85", "line\\u2028sep\\x85", id="unicode-line-breaks"),
        pytest.param(os.fsdecode(b"caf\xe9.mdc"), "caf\\xe9.mdc", id="not-utf8"),
        pytest.param("é ü — ok", "é ü — ok", id="printable-stays"),
    ],
)
def test_shown_escapes_what_could_forge_a_line(text: str, line: str) -> None:
    assert shown(text) == line


@pytest.mark.parametrize(
    "literal",
    [
        pytest.param("plain", id="unquoted"),
        pytest.param('"open', id="unclosed"),
        pytest.param('"\\q"', id="unknown-escape"),
        pytest.param('"a" "b"', id="two-literals"),
    ],
)
def test_what_quoted_never_writes_is_no_literal(literal: str) -> None:
    assert unquoted(literal) is None


def test_a_name_with_undecodable_bytes_is_not_utf8() -> None:
    assert not is_utf8(os.fsdecode(b"\xff.md"))
    assert is_utf8("a\nb — é.md")
