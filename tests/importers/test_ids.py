"""Ids are readable slugs, unique across the brain, settled in source order, and stable."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keel.importers.ids import assign, is_id, slug


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        pytest.param(("cursor", "Testing"), "cursor-testing", id="lower case"),
        pytest.param(("claude-skill", "PDF Forms!"), "claude-skill-pdf-forms", id="punctuation"),
        pytest.param(("agents-md", ".claude", "", "a__b"), "agents-md-claude-a-b", id="empties"),
        pytest.param(("…",), "rule", id="nothing left"),
    ],
)
def test_slug(parts: tuple[str, ...], expected: str) -> None:
    assert slug(*parts) == expected


@given(st.lists(st.text(max_size=30), max_size=4))
def test_every_slug_is_a_usable_id(parts: list[str]) -> None:
    assert is_id(slug(*parts))


def test_a_taken_name_gets_the_next_free_number_in_source_order() -> None:
    ids = assign(
        [("b/CLAUDE.md", "claude-md"), ("a/CLAUDE.md", "claude-md"), ("x.mdc", "cursor-x")],
        taken={"claude-md", "claude-md-2"},
        previous={},
    )
    assert ids == {"a/CLAUDE.md": "claude-md-3", "b/CLAUDE.md": "claude-md-4", "x.mdc": "cursor-x"}


def test_a_previous_id_is_kept_while_it_is_free() -> None:
    wanted = [("a.mdc", "cursor-a"), ("b.mdc", "cursor-a")]
    assert assign(wanted, taken=set(), previous={"b.mdc": "cursor-a"}) == {
        "b.mdc": "cursor-a",
        "a.mdc": "cursor-a-2",
    }
    assert assign(wanted, taken={"cursor-a"}, previous={"b.mdc": "cursor-a"}) == {
        "a.mdc": "cursor-a-2",
        "b.mdc": "cursor-a-3",
    }, "taken by someone else now: settled afresh"
    assert assign([("a.mdc", "cursor-a")], taken=set(), previous={"a.mdc": "other"}) == {
        "a.mdc": "cursor-a"
    }, "a previous id from another name is not kept"
