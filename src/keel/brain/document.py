"""Reading one brain file: bytes → text → frontmatter + body, or a `ContentError`.

Parsing takes ruamel.yaml's fast safe loader; only when a file turns out to be wrong is it
parsed again in round-trip mode, which remembers where every key and item sits, so the
error can name the line without slowing down the files that are fine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.cyaml import CSafeLoader
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from keel.errors import ContentError

FENCE = "---"


@dataclass(frozen=True, slots=True)
class Document:
    """A file split at its frontmatter fences; lines are 1-based lines of the file."""

    path: str
    front: Any
    front_text: str
    front_line: int
    body: str


def decode(path: str, raw: bytes) -> str:
    """The file's text, refusing empty, binary and non-UTF-8 files with a clear reason."""
    if not raw.strip():
        raise ContentError(path, "the file is empty — write frontmatter between '---' lines")
    if b"\x00" in raw[:8192]:
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


def split(path: str, text: str) -> Document:
    """Split `---` frontmatter from the body and parse the frontmatter as YAML."""
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


_EXACT = YAML(typ="safe", pure=True)


def _fast_load(text: str) -> Any:
    # The C loader used directly: `YAML(...).load` builds a loader class per call, which
    # costs more than parsing a small frontmatter.
    loader = CSafeLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def parse_yaml(path: str, text: str, *, first_line: int = 1) -> Any:
    """Parse YAML text; a syntax error names the file line where the parser stopped.

    The C scanner follows YAML 1.1, which refuses a few 1.2 forms such as `[context:read]`
    (a colon inside a flow item); the pure parser, which follows 1.2, gets the final word.
    """
    try:
        return _fast_load(text)
    except YAMLError:
        pass
    try:
        return _EXACT.load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = first_line + mark.line if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise ContentError(path, f"broken YAML: {problem} — fix the syntax", line=line) from None
    except YAMLError as exc:
        raise ContentError(path, f"broken YAML: {exc} — fix the syntax") from None


def locate(text: str, loc: tuple[str | int, ...], *, first_line: int = 1) -> int | None:
    """The file line of the key or item at `loc` in YAML text, as near as can be told."""
    try:
        node: Any = YAML(typ="rt").load(text)
    except YAMLError:
        return None
    line: int | None = None
    for step in loc:
        lc = getattr(node, "lc", None)
        if lc is None:
            break
        try:
            line = lc.item(step)[0] if isinstance(step, int) else lc.key(step)[0]
            node = node[step]
        except (KeyError, IndexError, TypeError):
            break
    return None if line is None else first_line + line
