"""Source frontmatter is read as YAML, else line by line as the agents read it, else refused."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from keel.brain.limits import MAX_FILE_BYTES
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
        pytest.param(b"\x00\x01binary", "the file is binary, not text", 1, id="binary"),
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


# -- source files are read as the brain reads its own ------------------------------------

SECRET = "-----BEGIN OPENSSH PRIVATE KEY-----\nnot a real key\n"
Make = Callable[[Path], None]


def _secret(root: Path) -> Path:
    secret = root.parent / "id_rsa"
    secret.write_text(SECRET, encoding="utf-8")
    return secret


def _link_out(root: Path) -> None:
    (root / "CLAUDE.md").symlink_to(_secret(root))


def _relative_link_out(root: Path) -> None:
    _secret(root)
    (root / "CLAUDE.md").symlink_to("../id_rsa")


def _fifo(root: Path) -> None:
    os.mkfifo(root / "CLAUDE.md")


def _link_to_fifo(root: Path) -> None:
    os.mkfifo(root / "pipe")
    (root / "CLAUDE.md").symlink_to(root / "pipe")


def _link_to(target: str) -> Make:
    return lambda root: (root / "CLAUDE.md").symlink_to(target)


def _write(content: bytes) -> Make:
    def make(root: Path) -> None:
        (root / "CLAUDE.md").write_bytes(content)

    return make


OUTSIDE = (
    "a symbolic link to a file outside the repository — Keel reads only what lies inside the "
    "repository directory; copy it in, or point the link inside the repository"
)


@pytest.mark.parametrize(
    ("make", "message", "line"),
    [
        pytest.param(_link_out, OUTSIDE, None, id="link-to-a-secret"),
        pytest.param(_relative_link_out, OUTSIDE, None, id="relative-link-out"),
        pytest.param(_link_to("/dev/zero"), OUTSIDE, None, id="link-to-dev-zero"),
        pytest.param(
            _fifo,
            "this is a named pipe (FIFO), not a regular file — rule files are plain files; "
            "replace it with a file",
            None,
            id="fifo",
        ),
        pytest.param(_link_to_fifo, "a named pipe (FIFO)", None, id="link-to-a-fifo"),
        pytest.param(_link_to("nowhere.md"), "cannot read: No such file", None, id="dangling"),
        pytest.param(
            _write(b"x" * (MAX_FILE_BYTES + 1)),
            f"the file holds {MAX_FILE_BYTES + 1:,} bytes, over the limit of {MAX_FILE_BYTES:,} "
            "bytes for a rule file (docs/limits.md) — split it into smaller rules",
            None,
            id="too-big",
        ),
        pytest.param(
            _write(b"Rules.\n" + b"x" * 9000 + b"\n\x00 late\n"),
            "the file is binary, not text (a NUL byte at offset 9008) — rule files are UTF-8 text",
            3,
            id="nul-after-8-KiB",
        ),
    ],
)
def test_a_source_file_is_read_only_when_the_brain_would_read_it(
    tmp_path: Path, make: Make, message: str, line: int | None
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    make(root)
    with pytest.raises(Unmappable, match=re.escape(message)) as caught:
        read_source(root, "CLAUDE.md", frontmatter=False)
    assert caught.value.line == line


def test_a_link_that_stays_inside_the_repository_is_followed(repo: WriteTree) -> None:
    root = repo({"docs/rules.md": "Shared rules.\n"})
    (root / "CLAUDE.md").symlink_to("docs/rules.md")
    assert read_source(root, "CLAUDE.md", frontmatter=False).body == "Shared rules."


@pytest.mark.parametrize(
    ("front", "line"),
    [
        pytest.param("globs: " + "[" * 500 + "]" * 500, 2, id="flow-500"),
        pytest.param("description: d\nglobs:\n  - " + "[" * 65 + "]" * 65, 4, id="item-65"),
    ],
)
def test_a_value_nested_too_deep_is_refused_with_its_line(
    repo: WriteTree, front: str, line: int
) -> None:
    root = repo({"r.mdc": f"---\n{front}\n---\nBody.\n"})
    deep = "a value nested more than 64 lists deep (docs/limits.md) — write it flat"
    with pytest.raises(Unmappable, match=re.escape(deep)) as caught:
        read_source(root, "r.mdc")
    assert caught.value.line == line


def test_a_value_nested_as_deep_as_yaml_allows_reads_line_by_line(repo: WriteTree) -> None:
    root = repo({"r.mdc": "---\nglobs: *.ts, " + "[" * 64 + "x" + "]" * 64 + "\n---\nBody.\n"})
    assert read_source(root, "r.mdc").lenient is not None
