"""The helpers every mapper shares: catalog lines, titles, first paragraphs, globs of a key."""

from __future__ import annotations

from keel.importers.frontmatter import read_source
from keel.importers.rules import DESCRIPTION_LIMIT, Notes, catalog_line, first_paragraph, title_of
from tests.importers.conftest import WriteTree


def test_a_long_description_is_cut_at_a_word_with_a_warning(repo: WriteTree) -> None:
    root = repo({"r.mdc": "---\ndescription: d\n---\nBody.\n"})
    notes = Notes(read_source(root, "r.mdc"))
    line = catalog_line("word " * 200, notes)
    assert len(line) <= DESCRIPTION_LIMIT
    assert line.endswith("word…")
    assert [str(w) for w in notes.found] == [
        f"r.mdc:2: the description has 999 characters; the catalog line keeps the first "
        f"{len(line)} — shorten it in the source"
    ]
    assert catalog_line("  one\n two  ") == "one two"


def test_titles_and_first_paragraphs() -> None:
    body = "Intro line one\nline two.\n\n## Usage ##\n\nMore."
    assert title_of(body, "fallback") == "Usage"
    assert title_of("No heading.", "fallback") == "fallback"
    assert first_paragraph("# Title\n\nFirst\nparagraph.\n\nSecond.") == "First paragraph."
    assert first_paragraph("# Only a title") == ""


def test_globs_of_a_key_drop_what_cannot_match_with_a_warning(repo: WriteTree) -> None:
    root = repo({"r.mdc": "---\nglobs: ['*.py', '!', 3]\n---\nBody.\n"})
    notes = Notes(read_source(root, "r.mdc"))
    assert notes.globs("globs", "cursor") == ("*.py",)
    assert [str(w) for w in notes.found] == [
        "r.mdc:2: 'globs' holds items that are not text — they are ignored",
        "r.mdc:2: glob left out: '!' is an empty pattern — remove it",
    ]


def test_a_value_that_is_not_text_is_ignored_with_a_warning(repo: WriteTree) -> None:
    root = repo({"r.mdc": "---\ndescription: [a, b]\nglobs: {a: 1}\n---\nBody.\n"})
    notes = Notes(read_source(root, "r.mdc"))
    assert notes.text("description") is None
    assert notes.globs("globs", "cursor") == ()
    assert [str(w) for w in notes.found] == [
        "r.mdc:2: 'description' is not text (list) — ignored",
        "r.mdc:3: 'globs' is not a glob list (dict) — ignored",
    ]
