"""Source frontmatter is read as YAML, else line by line as the agents read it, else refused."""

from __future__ import annotations

from typing import Any

import pytest

from keel.importers.frontmatter import Unmappable, read_source
from tests.importers.conftest import WriteTree


def test_yaml_frontmatter_gives_keys_their_lines_and_the_body(repo: WriteTree) -> None:
    root = repo({"r.md": "---\n# a comment\ndescription: D\nglobs: [a, b]\n---\n\n\nBody.\n"})
    doc = read_source(root, "r.md")
    assert dict(doc.front) == {"description": "D", "globs": ["a", "b"]}
    assert (doc.line("description"), doc.line("globs"), doc.line("other")) == (3, 4, None)
    assert (doc.body, doc.body_line, doc.has_front, doc.lenient) == ("Body.", 8, True, None)


@pytest.mark.parametrize(
    ("front", "expected", "line"),
    [
        pytest.param("globs: *.ts, src/**", {"globs": "*.ts, src/**"}, 2, id="unquoted star"),
        pytest.param(
            "globs: [*.ts, 'a,b', {c,d}]\nalwaysApply: true",
            {"globs": ["*.ts", "a,b", "{c,d}"], "alwaysApply": True},
            2,
            id="flow list and a boolean",
        ),
        pytest.param(
            'globs:\n  - *.ts\n  - "src/**"\nalwaysApply: "true"',
            {"globs": ["*.ts", "src/**"], "alwaysApply": "true"},
            3,
            id="block list and quoted text",
        ),
        pytest.param(
            "globs: *.md  # docs\ndescription:",
            {"globs": "*.md", "description": None},
            2,
            id="a comment and an empty value",
        ),
    ],
)
def test_frontmatter_yaml_refuses_is_read_line_by_line(
    repo: WriteTree, front: str, expected: dict[str, Any], line: int
) -> None:
    root = repo({"r.md": f"---\n{front}\n---\nBody.\n"})
    doc = read_source(root, "r.md")
    assert dict(doc.front) == expected
    assert doc.lenient is not None
    assert doc.lenient_line == line


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        pytest.param(
            "---\ndescription: x\n",
            "the frontmatter is never closed — add a '---' line after its last key",
            1,
            id="never closed",
        ),
        pytest.param(
            "---\n- a\n- b\n---\nBody.\n",
            "the frontmatter is not a mapping of keys to values",
            2,
            id="a list",
        ),
        pytest.param("\n\n  \n", "the file is empty — nothing to import", None, id="blank"),
        pytest.param(b"\x00\x01binary", "the file is binary, not text", None, id="binary"),
    ],
)
def test_files_that_cannot_be_read_say_why(
    repo: WriteTree, text: str | bytes, message: str, line: int | None
) -> None:
    root = repo({"r.md": text})
    with pytest.raises(Unmappable, match=message) as caught:
        read_source(root, "r.md")
    assert caught.value.line == line


def test_without_frontmatter_the_whole_text_is_the_body(repo: WriteTree) -> None:
    root = repo({"CLAUDE.md": "---\nnot: frontmatter here\n---\nBody.\n"})
    doc = read_source(root, "CLAUDE.md", frontmatter=False)
    assert doc.body.startswith("---\nnot:")
    assert not doc.has_front


def test_a_byte_order_mark_is_dropped(repo: WriteTree) -> None:
    root = repo({"r.md": "\ufeff---\ndescription: D\n---\nBody.\n"})
    assert read_source(root, "r.md").front == {"description": "D"}


def test_windows_line_endings_become_newlines(repo: WriteTree) -> None:
    root = repo({"r.md": b"---\r\ndescription: D\r\n---\r\nOne.\r\nTwo.\r\n"})
    doc = read_source(root, "r.md")
    assert (dict(doc.front), doc.body) == ({"description": "D"}, "One.\nTwo.")
