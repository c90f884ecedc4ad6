"""Reading one brain file: bytes → text → frontmatter + body, or a `ContentError`.

Parsing takes the quick reader (`keel.brain.quickyaml`) or ruamel.yaml's safe loaders,
within the bounds of `keel.brain.yamlread`; only when a file turns out to be wrong is its
node tree composed again to find where a key or item sits (`Locator`), so an error can
name its line without slowing down the files that are fine.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

from keel.brain.limits import MAX_EXACT_YAML_CHARS, MAX_YAML_CHARS, MAX_YAML_DEPTH
from keel.brain.quickyaml import Unsure, plain_load, quick_load
from keel.brain.yamlread import (
    PARSER_SLIPS,
    ShapeError,
    check_shape,
    crowded_line,
    exact_events,
    exact_load,
    exact_node,
    fast_events,
    fast_load,
    fast_node,
)
from keel.errors import ContentError

FENCE = "---"
# Everything a parser may raise for text it cannot read (see yamlread.PARSER_SLIPS).
YAML_PROBLEMS: tuple[type[Exception], ...] = (YAMLError, *PARSER_SLIPS)


@dataclass(frozen=True, slots=True)
class Document:
    """A file split at its frontmatter fences; lines are 1-based lines of the file."""

    path: str
    front: Any
    front_text: str
    front_line: int
    body: str


def is_utf8(text: str) -> bool:
    """Whether `text` can be written as UTF-8: a name the file system gave with bytes that
    were not UTF-8, or a JSON `\\ud800`, holds half of a surrogate pair and cannot."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


EMPTY_MARKDOWN = "the file is empty — write frontmatter between '---' lines"


def decode(path: str, raw: bytes, *, empty: str = EMPTY_MARKDOWN) -> str:
    """The file's text, refusing empty, binary and non-UTF-8 files with a clear reason
    (`empty` says what to write in an empty one)."""
    if not raw or raw.isspace():  # `strip` would copy the whole file to say the same
        raise ContentError(path, empty)
    # Anywhere in the file: a NUL in instructions would reach the model and the database
    # (PostgreSQL refuses it in text).
    if b"\x00" in raw:
        raise ContentError(path, "the file is binary, not text — brain files are UTF-8 text")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ContentError(
            path,
            f"the file is not UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}) — "
            "save it as UTF-8",
            line=line,
        ) from None
    return text.removeprefix("\ufeff")


# Where `str.splitlines` breaks a line, besides "\n".
_OTHER_BREAKS = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def split(path: str, text: str) -> Document:
    """Split `---` frontmatter from the body and parse the frontmatter as YAML."""
    # The usual file: "---\n", the frontmatter, then the first "---\n" line. Found by
    # `find` where every line ends in "\n" alone: the lines below are what any other
    # file takes (and the same cut for this one), at the cost of the whole body's lines.
    end = text.find("\n---", 3) if text.startswith("---\n") else -1
    if (
        end >= 0
        and text[end + 4 : end + 5] in ("\n", "")
        and not _OTHER_BREAKS.search(text, 0, end)
    ):
        front_text = text[4 : end + 1]
        body = text[end + 5 :].strip()
        front = parse_yaml(path, front_text, first_line=2)
        return Document(path=path, front=front, front_text=front_text, front_line=2, body=body)
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip() != FENCE:
        raise ContentError(
            path,
            "no frontmatter — the file must start with a '---' line, then YAML keys, "
            "then another '---' line before the body",
            line=1,
        )
    for index in range(1, len(lines)):
        if lines[index].rstrip() == FENCE:
            front_text = "".join(lines[1:index])
            body = "".join(lines[index + 1 :]).strip()
            front = parse_yaml(path, front_text, first_line=2)
            return Document(path=path, front=front, front_text=front_text, front_line=2, body=body)
    raise ContentError(
        path, "the frontmatter is never closed — add a '---' line after its last key", line=1
    )


def parse_yaml(path: str, text: str, *, first_line: int = 1) -> Any:
    """Parse YAML text within Keel's bounds; any problem is a `ContentError` with its line.

    The quick reader (`keel.brain.quickyaml`: libyaml 0.2, values built for plain
    documents) reads first; it reads the flow form `[context:read]` as YAML 1.2 does and
    gives the exact parser's value or declines. A document it declines goes to ruamel's C
    loader, and one that refuses (its libyaml follows YAML 1.1 in a few places) is read
    again by the exact parser (YAML 1.2), which gets the final word and names the line of
    a real error — for documents up to `MAX_EXACT_YAML_CHARS`; beyond, the C loader's
    verdict stands, so one large file cannot hold up the load of the rest. Errors come
    only from the last two, so a message and its line never depend on the quick reader.
    """
    if len(text) > MAX_YAML_CHARS:
        raise ContentError(
            path,
            f"the YAML holds {len(text):,} characters, over the limit of {MAX_YAML_CHARS:,} "
            "(docs/limits.md) — split it",
            line=first_line,
        )
    try:
        return _held(path, _fast(text), text, first_line)
    except ShapeError as exc:
        raise ContentError(path, exc.message, line=first_line + exc.line) from None
    except YAML_PROBLEMS as exc:
        fast_error = exc
    if len(text) > MAX_EXACT_YAML_CHARS:
        raise _broken(path, fast_error, first_line) from None
    crowded = crowded_line(text)
    if crowded is not None:
        raise ContentError(
            path,
            f"a line opens more than {MAX_YAML_DEPTH} '[' or '{{' (docs/limits.md) — "
            "write the value over several lines",
            line=first_line + crowded,
        )
    try:
        check_shape(text, exact_events)
        return _held(path, exact_load(text), text, first_line)
    except ShapeError as exc:
        raise ContentError(path, exc.message, line=first_line + exc.line) from None
    except YAML_PROBLEMS as exc:
        raise _broken(path, exc, first_line) from None


def _fast(text: str) -> Any:
    """The document by the plain reader, or a C parser: the quick reader where it vouches
    for the value, else ruamel's C loader. Raises `ShapeError`, or what ruamel's C parser
    raises."""
    with contextlib.suppress(Unsure):
        return plain_load(text)  # within the bounds whenever it reads a document
    try:
        check_shape(text, fast_events)
    except YAML_PROBLEMS:
        # ruamel's libyaml refused a long or anchored document while walking it; libyaml
        # 0.2 may read it (`[context:read]`), its shape proved on its own events. If not,
        # the refusal stands and the exact parser has the last word.
        with contextlib.suppress(ShapeError, Unsure):
            return quick_load(text, walk=True)
        raise
    try:
        return quick_load(text, plain=False)
    except Unsure:
        return fast_load(text)


# What text cannot hold: a NUL (PostgreSQL refuses it) and half of a surrogate pair (no
# UTF-8 encoder takes it). The file's bytes have neither; only an escape makes them.
_UNHELD = re.compile("[\x00\ud800-\udfff]")
_UNHELD_ESCAPE = re.compile(r"\\(?:0|x00|u0000|U00000000|u[dD][89a-fA-F]|U0000[dD][89a-fA-F])")


def _held(path: str, data: Any, text: str, first_line: int) -> Any:
    """`data`, unless an escape put a character in it that no text can hold."""
    if "\\" not in text:
        return data
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            if _UNHELD.search(value):
                escape = _UNHELD_ESCAPE.search(text)
                line = first_line + text.count("\n", 0, escape.start()) if escape else None
                raise ContentError(
                    path,
                    "an escape makes a NUL or half of a surrogate pair, which text cannot "
                    "hold — write the character itself (or \\U0001F600 for one beyond "
                    "\\uFFFF)",
                    line=line,
                )
        elif isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, (list, tuple, set, frozenset)):
            stack.extend(value)
    return data


def _broken(path: str, exc: Exception, first_line: int) -> ContentError:
    if not isinstance(exc, YAMLError):
        return ContentError(
            path, f"broken YAML: the parser cannot read it ({exc}) — fix the syntax"
        )
    if isinstance(exc, MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        line = first_line + mark.line if mark is not None else None
        problem = str(exc.problem or exc.context or "invalid YAML")
        fix = "" if " — " in problem else " — fix the syntax"
        return ContentError(path, f"broken YAML: {problem}{fix}", line=line)
    return ContentError(path, f"broken YAML: {exc} — fix the syntax")


class Locator:
    """Lines of keys and list items in one YAML text, its node tree composed once.

    Only text that `parse_yaml` accepted is located, so the bounds already hold.
    """

    def __init__(self, text: str, *, first_line: int = 1) -> None:
        self._text = text
        self._first_line = first_line
        self._root: Any = None
        self._composed = False
        # Each mapping's keys by their text, built when first asked: a file with thousands
        # of keys and thousands of problems must not scan every key for every problem.
        self._keys: dict[int, dict[str, tuple[Any, Any]]] = {}

    def line(self, loc: tuple[str | int, ...]) -> int | None:
        """The file line of the key or item at `loc`, as near as can be told."""
        node = self._tree()
        line: int | None = None
        for step in loc:
            if isinstance(node, MappingNode):
                found = self._key(node, step)
                if found is None:
                    break
                line, node = found[0].start_mark.line, found[1]
            elif isinstance(node, SequenceNode) and isinstance(step, int):
                if not 0 <= step < len(node.value):
                    break
                node = node.value[step]
                line = node.start_mark.line
            else:
                break
        return None if line is None else self._first_line + line

    def _key(self, node: MappingNode, step: str | int) -> tuple[Any, Any] | None:
        keys = self._keys.get(id(node))
        if keys is None:
            keys = {}
            for key, value in node.value:
                if isinstance(key, ScalarNode):
                    keys.setdefault(str(key.value), (key, value))
            self._keys[id(node)] = keys
        return keys.get(str(step))

    def _tree(self) -> Any:
        if not self._composed:
            self._composed = True
            self._root = _compose(self._text)
        return self._root


def _compose(text: str) -> Any:
    try:
        return fast_node(text)
    except YAML_PROBLEMS:
        pass
    if len(text) > MAX_EXACT_YAML_CHARS or crowded_line(text) is not None:
        return None
    try:
        return exact_node(text)
    except YAML_PROBLEMS:
        return None


@lru_cache(maxsize=16)
def _locator(text: str, first_line: int) -> Locator:
    return Locator(text, first_line=first_line)


def locate(text: str, loc: tuple[str | int, ...], *, first_line: int = 1) -> int | None:
    """The file line of the key or item at `loc` in YAML text, as near as can be told.

    Repeated calls on the same text (doctor asks for many keys of one file) share one
    composed tree.
    """
    return _locator(text, first_line).line(loc)
