"""Reading one source rule file: bytes → text → frontmatter keys and a body, or the reason not.

The coding agents parse rule frontmatter leniently: Cursor writes `globs: **/*.ts` without
quotes, which YAML reads as an alias and refuses, and Cursor, Copilot and Windsurf accept it
all the same. So YAML comes first (the same parser as the brain's), and when it refuses,
the frontmatter is read line by line — `key: value` and `- item` — as those tools do; the
file then carries a note saying so. Only frontmatter that neither reading can make sense of
keeps a file out, as an `Unmappable` naming the line.

A source file is read by the brain's own reader (`keel.brain.reading.read_file`) with the
repository as its tree: a regular file only (a FIFO or a device is never opened), a
symbolic link followed only when its target stays inside the repository, at most
`MAX_FILE_BYTES`, no NUL byte anywhere, UTF-8. The line-by-line reading is bounded as YAML
is: lists nested at most `MAX_YAML_DEPTH` deep, frontmatter of at most
`MAX_EXACT_YAML_CHARS` characters.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from keel.brain.document import parse_yaml
from keel.brain.limits import MAX_EXACT_YAML_CHARS, MAX_FILE_BYTES, MAX_YAML_DEPTH
from keel.brain.reading import Tree, read_file
from keel.errors import ContentError

FENCE = "---"
# A repository's rule files, read by the brain's rules (docs/limits.md).
SOURCE = Tree(
    name="the repository",
    file="rule file",
    limit=MAX_FILE_BYTES,
    split="split it into smaller rules",
)
_KEY = re.compile(r"^([A-Za-z_][\w.-]*)\s*:(?:\s+(.*?))?\s*$")
_ITEM = re.compile(r"^\s+-\s*(.*?)\s*$")


class Unmappable(Exception):
    """A source file that cannot be imported, and why (with the file line when known)."""

    def __init__(self, reason: str, *, line: int | None = None) -> None:
        self.reason = reason
        self.line = line
        super().__init__(reason)


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceFile:
    """A source rule file split into its frontmatter keys and its body."""

    path: str
    body: str
    body_line: int = 1  # the file line the body starts on
    front: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    lines: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    has_front: bool = False
    # Why YAML refused the frontmatter (and where), when it was read line by line instead.
    lenient: str | None = None
    lenient_line: int | None = None

    def line(self, key: str) -> int | None:
        """The file line of a frontmatter key, if the file has it."""
        return self.lines.get(key)


def read_text(root: Path, path: str) -> str:
    """The file's text; `Unmappable` when it is not a regular file inside the repository
    within its size, or is empty, binary or not UTF-8."""
    try:
        raw = read_file(str(root.resolve()), path, tree=SOURCE)
    except ContentError as exc:
        raise Unmappable(exc.reason) from None
    if not raw.strip():
        raise Unmappable("the file is empty — nothing to import")
    nul = raw.find(b"\x00")
    if nul >= 0:
        # Anywhere in the file: the brain refuses a NUL (the database could not store it).
        raise Unmappable(
            f"the file is binary, not text (a NUL byte at offset {nul}) — rule files are "
            "UTF-8 text",
            line=raw[:nul].count(b"\n") + 1,
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise Unmappable(
            f"not UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}) — save it as UTF-8",
            line=line,
        ) from None
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def read_source(root: Path, path: str, *, frontmatter: bool = True) -> SourceFile:
    """Read `root/path`; with `frontmatter`, split and parse a leading `---` block."""
    text = read_text(root, path)
    lines = text.splitlines()
    if not frontmatter or not lines or lines[0].rstrip() != FENCE:
        return SourceFile(path=path, body=_body(text), body_line=_first_text(lines, 0))
    close = next((i for i in range(1, len(lines)) if lines[i].rstrip() == FENCE), None)
    if close is None:
        raise Unmappable(
            "the frontmatter is never closed — add a '---' line after its last key", line=1
        )
    front_lines = lines[1:close]
    body = _body("\n".join(lines[close + 1 :]))
    front, lenient, lenient_line = _parse(path, front_lines)
    return SourceFile(
        path=path,
        body=body,
        body_line=_first_text(lines, close + 1),
        front=MappingProxyType(front),
        lines=MappingProxyType(_key_lines(front_lines)),
        has_front=True,
        lenient=lenient,
        lenient_line=lenient_line,
    )


def _body(text: str) -> str:
    body = text.strip()
    if not body:
        raise Unmappable("no text after the frontmatter — nothing to import")
    return body


def _first_text(lines: list[str], start: int) -> int:
    index = start
    while index < len(lines) and not lines[index].strip():
        index += 1
    return index + 1


def _parse(path: str, front_lines: list[str]) -> tuple[dict[str, Any], str | None, int | None]:
    text = "\n".join(front_lines)
    try:
        data = parse_yaml(path, text, first_line=2)
    except ContentError as exc:
        problem = exc.reason.removeprefix("broken YAML: ").removesuffix(" — fix the syntax")
        if len(text) > MAX_EXACT_YAML_CHARS:
            # As the brain: past this size the fast parser's verdict is final.
            raise Unmappable(
                f"the frontmatter does not parse ({problem}) — fix it, then re-run",
                line=exc.line,
            ) from None
        try:
            return _lenient(front_lines), problem, exc.line
        except _TooDeep as deep:
            raise Unmappable(deep.reason, line=deep.line) from None
        except Unmappable as lenient:
            raise Unmappable(
                f"the frontmatter does not parse ({problem}), not even line by line as the "
                "coding agents read it — fix it, then re-run",
                line=exc.line or lenient.line,
            ) from None
    if data is None:
        return {}, None, None
    if not isinstance(data, dict):
        raise Unmappable("the frontmatter is not a mapping of keys to values", line=2)
    return {str(k): v for k, v in data.items()}, None, None


class _TooDeep(Unmappable):
    """A value nested deeper than `MAX_YAML_DEPTH` lists: the file is refused, whatever
    YAML said about it."""


def _lenient(front_lines: list[str]) -> dict[str, Any]:
    """`key: value` lines and `- item` lists, values read as the agents read them."""
    found: dict[str, Any] = {}
    key: str | None = None
    for index, line in enumerate(front_lines):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        number = index + 2
        item = _ITEM.match(line)
        if item is not None and key is not None and isinstance(found[key], list | type(None)):
            found[key] = [*(found[key] or []), _scalar(item.group(1), number, 1)]
            continue
        pair = _KEY.match(line)
        if pair is None:
            raise Unmappable(
                f"frontmatter line {number} is neither 'key: value' nor a '- item'", line=number
            )
        key = pair.group(1)
        raw = pair.group(2) or ""
        found[key] = _scalar(raw, number, 0) if raw else None
    return found


def _scalar(raw: str, line: int, depth: int) -> Any:
    text = re.sub(r"\s+#.*$", "", raw).strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if text in ("", "~", "null"):
        return None
    if text.startswith("[") and text.endswith("]"):
        if depth >= MAX_YAML_DEPTH:
            raise _TooDeep(
                f"frontmatter line {line}: a value nested more than {MAX_YAML_DEPTH} lists "
                "deep (docs/limits.md) — write it flat",
                line=line,
            )
        return [_scalar(item, line, depth + 1) for item in _flow_items(text[1:-1])]
    return text


def _flow_items(text: str) -> list[str]:
    """A `[a, 'b,c', {x,y}]` list's items: commas inside quotes and brackets stay."""
    items: list[str] = []
    current: list[str] = []
    quote: str | None = None
    depth = 0
    for char in text:
        if quote is not None:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "{[":
            depth += 1
        elif char in "}]" and depth:
            depth -= 1
        elif char == "," and depth == 0:
            items.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    items.append("".join(current).strip())
    return [item for item in items if item]


def _key_lines(front_lines: list[str]) -> dict[str, int]:
    lines: dict[str, int] = {}
    for index, line in enumerate(front_lines):
        pair = _KEY.match(line)
        if pair is not None:
            lines.setdefault(pair.group(1), index + 2)
    return lines
