"""YAML within bounds: nesting depth, alias expansion and number size checked before use.

ruamel.yaml will build whatever a document spells out, and some documents spell out far
too much: a list nested a hundred thousand levels deep overflows the C stack of the
composer; nine aliases of nine aliases ("billion laughs") expand to a billion nodes in
whatever walks the data afterwards; an integer of 5,000 digits raises `ValueError` deep
in the constructor, and a date such as `2025-02-30` does the same. Here:

- `check_shape` proves a document is shallow and has no expanding aliases before any
  parser composes it. Most documents are shown shallow by counting characters alone
  (`depth_bound`); only a document that might be deep, or that defines an anchor, is
  walked event by event (the event parsers do not recurse), and the walk stops at the
  first level past the bound, so even the deepest document costs a few milliseconds.
- the loaders' constructor refuses over-long integers and turns every value it cannot
  build into a `ConstructorError` with its line, like any other YAML error.

Two parser families are used: the fast C parser (YAML 1.1) and the exact pure-Python
one (YAML 1.2), which reads what the fast one refuses and names error lines.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from ruamel.yaml.composer import Composer
from ruamel.yaml.constructor import ConstructorError, SafeConstructor
from ruamel.yaml.cyaml import CSafeLoader
from ruamel.yaml.docinfo import DocInfo
from ruamel.yaml.events import (
    Event,
    StreamEndEvent,
)
from ruamel.yaml.parser import Parser
from ruamel.yaml.reader import Reader
from ruamel.yaml.resolver import VersionedResolver
from ruamel.yaml.scanner import Scanner

from keel.brain.limits import MAX_INT_DIGITS, MAX_YAML_DEPTH, MAX_YAML_NODES

# What ruamel's scanners raise, besides YAMLError, on text that spells something no
# Python value can be: `"\U00110000"` (chr), `%YAML 999...9.1` (int), a huge \U escape.
PARSER_SLIPS: tuple[type[Exception], ...] = (ValueError, OverflowError, IndexError, KeyError)


class ShapeError(Exception):
    """A document past a bound; `line` is 0-based within the document."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


# -- the cheap proof ------------------------------------------------------------------

_BREAK = "\n\r\x85\u2028\u2029"
# What may open block collections at the start of a line: indentation, and the `- `, `? `,
# `: ` and `---` indicators (compact nesting: `- - - x` is three sequences deep).
_PREFIX_CHARS = " \t-?:"
# Where an anchor may stand: after a separator, or a flow indicator.
_ANCHOR = re.compile(r"(?:^|(?<=[\s\[{,:]))&[^\s\[\]{},]")


def depth_bound(text: str) -> int:
    """An upper bound of the document's nesting depth, from counting characters.

    Block collections nest only at strictly larger columns, or (a sequence under a mapping
    key) at the same one once, and each starts within its line's prefix of indentation and
    indicators: so block depth is at most twice the widest such prefix, plus one. Every
    flow collection needs its own `[` or `{`, and a `[` may hold one implicit mapping.
    The prefix is measured generously (every leading space, tab, `-`, `?` and `:`), and
    `splitlines` breaks at every YAML line break and a few more: both can only raise the
    bound, never lower it.
    """
    widest = max(
        (len(line) - len(line.lstrip(_PREFIX_CHARS)) for line in text.splitlines()), default=0
    )
    return 2 * (widest + 1) + 2 * text.count("[") + text.count("{")


def crowded_line(text: str) -> int | None:
    """The 0-based line holding more flow openers than the depth bound, if any.

    The exact parser looks ahead over a whole line while a simple key may still start on
    it, at a cost that grows with the flow levels open on that line: a line of many
    thousands of `[` would take it seconds. No real document has such a line.
    """
    if text.count("[") + text.count("{") <= MAX_YAML_DEPTH:
        return None
    for number, line in enumerate(re.split(f"[{_BREAK}]", text)):
        if line.count("[") + line.count("{") > MAX_YAML_DEPTH:
            return number
    return None


def has_anchor(text: str) -> bool:
    """Whether the document may define an anchor (`&name`), so aliases may expand."""
    return "&" in text and _ANCHOR.search(text) is not None


def check_shape(text: str, events: Callable[[str], Iterator[Any]]) -> None:
    """Raise `ShapeError` when the document nests deeper than the bound, or its aliases
    expand past the node bound or into themselves. `events` parses (see `fast_events`;
    ruamel's events or PyYAML's)."""
    anchored = has_anchor(text)
    # No spelling gets more than two values out of one character (`[?,?]`), so a short
    # document without anchors cannot pass the node bound.
    short = len(text) <= MAX_YAML_NODES // 2
    if not anchored and short and depth_bound(text) <= MAX_YAML_DEPTH:
        return
    _walk(events(text))


# ruamel's events and PyYAML's (`keel.brain.quickyaml.quick_events`) share these names.
_STEPS = {
    "SequenceStartEvent": "open",
    "MappingStartEvent": "open",
    "SequenceEndEvent": "close",
    "MappingEndEvent": "close",
    "AliasEvent": "alias",
    "ScalarEvent": "scalar",
}


def _walk(events: Iterator[Any]) -> None:
    walk = _Walk()
    for event in events:
        step = _STEPS.get(type(event).__name__)
        line = event.start_mark.line if event.start_mark is not None else 0
        if step == "open":
            walk.open(event.anchor, line)
        elif step == "close":
            walk.close()
        elif step == "alias":
            walk.alias(event.anchor, line)
        elif step == "scalar":
            walk.scalar(event.anchor, line)
        if walk.total > MAX_YAML_NODES:
            raise ShapeError(
                f"the aliases expand this document past {MAX_YAML_NODES:,} values "
                "(docs/limits.md) — write the values out, or use fewer aliases"
                if walk.aliased
                else f"the document holds more than {MAX_YAML_NODES:,} values "
                "(docs/limits.md) — split it",
                line,
            )


class _Walk:
    """The open collections of a document being walked, and what each anchor expands to."""

    def __init__(self) -> None:
        # Per open collection: [height of its tallest child, node count when it opened].
        self.stack: list[list[int]] = []
        self.names: list[str | None] = []
        self.anchors: dict[str, tuple[int, int]] = {}  # anchor -> (expanded nodes, height)
        self.total = 0
        self.aliased = False

    def open(self, anchor: str | None, line: int) -> None:
        if len(self.stack) >= MAX_YAML_DEPTH:
            raise ShapeError(_too_deep(), line)
        self._define(anchor, line)
        self.stack.append([0, self.total])
        self.names.append(anchor)
        self.total += 1

    def close(self) -> None:
        tallest, start = self.stack.pop()
        anchor = self.names.pop()
        if anchor is not None:
            self.anchors[anchor] = (self.total - start, tallest + 1)
        self._child(tallest + 1)

    def alias(self, anchor: str, line: int) -> None:
        if anchor in self.names:
            raise ShapeError(
                f"the alias *{anchor} stands inside the node it names, which would never end "
                "— copy the values instead",
                line,
            )
        self.aliased = True
        size, height = self.anchors.get(anchor, (1, 0))
        if len(self.stack) + height > MAX_YAML_DEPTH:
            raise ShapeError(_too_deep(" once its aliases are expanded"), line)
        self.total += size
        self._child(height)

    def scalar(self, anchor: str | None, line: int) -> None:
        self._define(anchor, line)
        self.total += 1

    def _child(self, height: int) -> None:
        if self.stack:
            self.stack[-1][0] = max(self.stack[-1][0], height)

    def _define(self, anchor: str | None, line: int) -> None:
        # A reused anchor silently rebinds later aliases (and makes ruamel warn): refuse it.
        if anchor is None:
            return
        if anchor in self.anchors:
            raise ShapeError(
                f"the anchor &{anchor} is defined twice — give each its own name", line
            )
        self.anchors[anchor] = (1, 0)


def _too_deep(how: str = "") -> str:
    return (
        f"the YAML nests more than {MAX_YAML_DEPTH} levels deep{how} (docs/limits.md) — flatten it"
    )


# -- building values ------------------------------------------------------------------


def _marked(node: Any, problem: str) -> ConstructorError:
    return ConstructorError(None, None, problem, node.start_mark)


class BoundedConstructor(SafeConstructor):
    """The safe constructor, refusing over-long integers and values it cannot build
    (a 30th of February, `!!bool maybe`) with a marked error instead of a crash."""

    def construct_yaml_int(self, node: Any) -> Any:
        value = node.value
        if (
            isinstance(value, str)
            and len(value) > MAX_INT_DIGITS
            and _digits(value) > MAX_INT_DIGITS
        ):
            raise _marked(
                node,
                f"a number of {_digits(value):,} digits — Keel reads numbers of up to "
                f"{MAX_INT_DIGITS} digits (docs/limits.md); quote it if it is text",
            )
        return self._built(SafeConstructor.construct_yaml_int, node, "a whole number")

    def construct_yaml_float(self, node: Any) -> Any:
        # Read here rather than by ruamel, which warns on `1e3` under YAML 1.1.
        text = str(node.value).replace("_", "").lower()
        sign = -1.0 if text.startswith("-") else 1.0
        text = text.lstrip("+-")
        if text in (".inf", ".nan"):
            return sign * float(text[1:])
        if ":" in text:
            return self._built(SafeConstructor.construct_yaml_float, node, "a number")
        try:
            return sign * float(text)
        except ValueError:
            raise _marked(node, f"'{_short(node.value)}' is not a number") from None

    def construct_yaml_bool(self, node: Any) -> Any:
        value = self.bool_values.get(str(node.value).lower())
        if value is None:
            raise _marked(node, f"'{_short(node.value)}' is not a yes/no value")
        return value

    def construct_yaml_timestamp(self, node: Any) -> Any:  # type: ignore[override]
        return self._built(SafeConstructor.construct_yaml_timestamp, node, "a date or time")

    def _built(self, build: Callable[[Any, Any], Any], node: Any, what: str) -> Any:
        # ruamel builds these with int(), float() and datetime(), which raise plain
        # exceptions for values that match the pattern but mean nothing (`2025-02-30`).
        try:
            return build(self, node)
        except (ValueError, KeyError, IndexError, TypeError, OverflowError) as exc:
            raise _marked(
                node, f"'{_short(node.value)}' is not {what} ({exc}) — fix it, or quote it"
            ) from None


for _tag, _name in (
    ("int", "construct_yaml_int"),
    ("float", "construct_yaml_float"),
    ("bool", "construct_yaml_bool"),
    ("timestamp", "construct_yaml_timestamp"),
):
    BoundedConstructor.add_constructor(
        f"tag:yaml.org,2002:{_tag}", getattr(BoundedConstructor, _name)
    )


def _digits(value: object) -> int:
    """Digits of an integer as written: no sign, underscores or 0x / 0o / 0b prefix."""
    body = str(value).lstrip("+-").replace("_", "")
    return len(body) - 2 if body[:2].lower() in ("0x", "0o", "0b") else len(body)


def _short(value: object) -> str:
    text = str(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


class FastLoader(BoundedConstructor, CSafeLoader):
    """ruamel's C safe loader with the bounded constructor (found first in the MRO)."""


class ExactLoader(Reader, Scanner, Parser, Composer, BoundedConstructor, VersionedResolver):
    """ruamel's pure safe loader (YAML 1.2) with the bounded constructor."""

    def __init__(self, stream: str) -> None:
        self.comment_handling = None
        # The composer's own depth guard: `check_shape` already holds the document to the
        # bound, so this only backs it up.
        self.max_depth = MAX_YAML_DEPTH + 1
        self.doc_infos = [DocInfo()]  # where the scanner notes a %YAML directive
        Reader.__init__(self, stream, loader=self)
        Scanner.__init__(self, loader=self)
        Parser.__init__(self, loader=self)
        Composer.__init__(self, loader=self)
        BoundedConstructor.__init__(self, loader=self)
        VersionedResolver.__init__(self, None, loader=self)


def fast_load(text: str) -> Any:
    """The document's data by the C parser. Raises YAMLError."""
    loader = FastLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def exact_load(text: str) -> Any:
    """The document's data by the pure parser. Raises YAMLError."""
    loader = ExactLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def fast_node(text: str) -> Any:
    """The document's node tree (with marks) by the C parser. Raises YAMLError."""
    loader = FastLoader(text)
    try:
        return loader.get_single_node()
    finally:
        loader.dispose()


def exact_node(text: str) -> Any:
    """The document's node tree (with marks) by the pure parser. Raises YAMLError."""
    loader = ExactLoader(text)
    try:
        return loader.get_single_node()
    finally:
        loader.dispose()


def fast_events(text: str) -> Iterator[Event]:
    """The document's parse events by the C parser. Raises YAMLError."""
    parser = FastLoader(text)
    try:
        while (event := parser.get_event()) is not None:
            yield event
            if isinstance(event, StreamEndEvent):
                return
    finally:
        parser.dispose()


def exact_events(text: str) -> Iterator[Event]:
    """The document's parse events by the pure parser. Raises YAMLError."""
    loader = ExactLoader(text)
    try:
        while True:
            event = loader.get_event()
            yield event
            if isinstance(event, StreamEndEvent):
                return
    finally:
        loader.dispose()
