"""The quick YAML reader: libyaml composes the nodes in C, a few lines of Python build values.

Nearly every brain document is plain: mappings, lists, words, quoted text, whole numbers,
`true`/`false` and null. ruamel's C loader (`keel.brain.yamlread.fast_load`) parses such a
document in C but builds its values in ruamel's general constructor, which costs several
times the parse; and its libyaml (0.1) refuses `[context:read, state:write]`, the form
every role writes, which then went to the pure-Python parser at ten times the cost.
PyYAML's libyaml (0.2) reads that form as YAML 1.2 does and composes the node tree in C;
the constructor here builds the plain values directly.

The value is always the one ruamel's exact YAML 1.2 parser gives; where that cannot be
vouched for, `quick_load` raises `Unsure` and the caller reads the document as before:

- scalars are resolved by ruamel's own YAML 1.2 table (`Resolver`); only text, null,
  yes/no (`true`, `false`) and whole numbers of up to 18 digits are built here. Any other
  type (a float, a date, a merge key), an explicit tag, a key that is not a scalar or a
  key given twice is Unsure, and so is a document that defines an anchor;
- a document holding a tab, the Unicode line breaks NEL, LS or PS, a `%` directive, or a
  value written right after a quoted key or a closing bracket (`"a":b`) is Unsure before
  it is parsed: there libyaml and the YAML 1.2 parser part ways;
- whatever libyaml refuses is Unsure too, so every error is reported by the parsers that
  always reported it, with the same message and line.

tests/brain/test_quickyaml.py holds the quick reader to the exact parser on many forms.
PyYAML is imported on the first document, so a process that never parses one (the prompt
hook on a warm snapshot cache) never loads it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ruamel.yaml.resolver import Resolver

from keel.brain.yamlread import PARSER_SLIPS, check_shape, has_anchor


class Unsure(Exception):
    """The quick reader cannot vouch for this document's value: read it another way."""


class _Kind:
    """What `resolve` answers instead of a tag: no document can spell one of these, so a
    node that carries anything else had an explicit tag."""


TEXT, LIST, MAP, NULL, BOOL, INT, OTHER = (_Kind() for _ in range(7))
# The YAML 1.2 types built here; any other resolves to OTHER.
_KINDS = {
    "tag:yaml.org,2002:null": NULL,
    "tag:yaml.org,2002:bool": BOOL,
    "tag:yaml.org,2002:int": INT,
}
_BOOLS = {"true": True, "false": False}
# A whole number as `int()` reads it and YAML 1.2 means it: digits, an optional sign.
_MAX_PLAIN_DIGITS = 18
# Characters where libyaml 0.2 and YAML 1.2 read the same text differently.
_PARTING_CHARS = ("\t", "\x85", "\u2028", "\u2029")
_ADJACENT = ('":', "':", "]:", "}:")


def quick_load(text: str, *, walk: bool = False) -> Any:
    """The document's data, equal to what the exact YAML 1.2 parser gives; else `Unsure`.

    The caller proves the document's shape first (`check_shape`), or asks for `walk`: then
    the shape is proved on libyaml's own events, and a `ShapeError` may be raised.
    """
    if _parts_ways(text) or has_anchor(text):
        raise Unsure
    reader = _libyaml()
    if walk:
        check_shape(text, reader.events)
    node = reader.node(text)
    return None if node is None else _build(node)


def _parts_ways(text: str) -> bool:
    """Whether the text holds a spelling libyaml reads otherwise than YAML 1.2."""
    if any(char in text for char in _PARTING_CHARS):
        return True
    if text.startswith("%") or "\n%" in text or "\r%" in text:
        return True
    for pair in _ADJACENT:
        start = text.find(pair)
        while start >= 0:
            if text[start + 2 : start + 3] not in ("", " ", "\n", "\r"):
                return True
            start = text.find(pair, start + 1)
    return False


def _build(node: Any) -> Any:
    kind = node.tag
    if kind is TEXT:
        return node.value
    if kind is MAP:
        data: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = _build(key_node)
            if isinstance(key, (dict, list)) or key in data:
                raise Unsure
            data[key] = _build(value_node)
        return data
    if kind is LIST:
        return [_build(item) for item in node.value]
    if kind is NULL:
        return None
    if kind is BOOL:
        return _BOOLS[node.value.lower()]
    if kind is INT and _plain_int(node.value):
        return int(node.value)
    raise Unsure


def _plain_int(value: str) -> bool:
    digits = value[1:] if value[:1] in "+-" else value
    return 0 < len(digits) <= _MAX_PLAIN_DIGITS and digits.isascii() and digits.isdigit()


Matchers = tuple[tuple[_Kind, Callable[[str], Any]], ...]


def _matchers() -> tuple[dict[str, Matchers], Matchers]:
    """ruamel's YAML 1.2 implicit resolvers by a scalar's first character ("" for empty),
    each list followed by those for any first character, as `Resolver.resolve` tries them."""
    table = Resolver.yaml_implicit_resolvers

    def kinds(found: Any) -> Matchers:
        return tuple((_KINDS.get(tag, OTHER), pattern.match) for tag, pattern in found)

    any_start = kinds(table.get(None, ()))
    by_start = {start: (*kinds(found), *any_start) for start, found in table.items() if start}
    if "" in table:
        by_start[""] = (*kinds(table[""]), *any_start)
    return by_start, any_start


@dataclass(frozen=True, slots=True)
class _Libyaml:
    node: Callable[[str], Any]
    events: Callable[[str], Iterator[Any]]


@functools.cache
def _libyaml() -> _Libyaml:
    """PyYAML's libyaml binding, imported on first use; without it all is Unsure."""
    try:
        from yaml import YAMLError
        from yaml._yaml import CParser
        from yaml.events import StreamEndEvent
        from yaml.nodes import ScalarNode, SequenceNode
    except ImportError:
        return _Libyaml(node=_unsure, events=_unsure)
    composer = _composer(CParser, ScalarNode, SequenceNode)
    failures = (YAMLError, *PARSER_SLIPS)
    return _Libyaml(
        node=functools.partial(_node, composer, failures),
        events=functools.partial(_events, composer, failures, StreamEndEvent),
    )


def _composer(parser: Any, scalar: type, sequence: type) -> Any:
    """libyaml's parser and composer, with types resolved from ruamel's YAML 1.2 table."""
    by_start, any_start = _matchers()

    class Composer(parser):  # type: ignore[misc]  # PyYAML ships no type hints
        def resolve(self, kind: type, value: str, implicit: tuple[bool, bool]) -> _Kind:
            if kind is scalar:
                if implicit[0]:
                    for found, match in by_start.get(value[:1], any_start):
                        if match(value):
                            return found
                return TEXT
            return LIST if kind is sequence else MAP

        def descend_resolver(self, parent: Any, index: Any) -> None:
            """No path resolvers."""

        def ascend_resolver(self) -> None:
            """No path resolvers."""

    return Composer


def _node(composer: Any, failures: tuple[type[Exception], ...], text: str) -> Any:
    parser = composer(text)
    try:
        return parser.get_single_node()
    except failures:
        raise Unsure from None
    finally:
        parser.dispose()


def _events(
    composer: Any, failures: tuple[type[Exception], ...], end: type, text: str
) -> Iterator[Any]:
    parser = composer(text)
    try:
        while (event := parser.get_event()) is not None:
            yield event
            if isinstance(event, end):
                return
    except failures:
        raise Unsure from None
    finally:
        parser.dispose()


def _unsure(_text: str) -> Any:
    raise Unsure
