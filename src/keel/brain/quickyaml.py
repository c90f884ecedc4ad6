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

import contextlib
import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ruamel.yaml.resolver import Resolver

from keel.brain.limits import MAX_YAML_NODES
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


def quick_load(text: str, *, walk: bool = False, plain: bool = True) -> Any:
    """The document's data, equal to what the exact YAML 1.2 parser gives; else `Unsure`.

    The caller proves the document's shape first (`check_shape`), or asks for `walk`: then
    the shape is proved on libyaml's own events, and a `ShapeError` may be raised.
    `plain`: try `plain_load` first (False: the caller did).
    """
    if plain and not walk:
        with contextlib.suppress(Unsure):
            return plain_load(text)
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


# -- the plain reader ----------------------------------------------------------------------
#
# Most brain frontmatter is a handful of `key: value` lines: words, a flow list of words
# (`when: [chat, ask]`), a block list (`data:` then `  - view`), a one-line flow mapping
# (`- { view: v, by: id }`), a mapping of such under a key. For those a few string
# operations per line give the value; composing libyaml's node tree took most of a load.
# Anything else, or anything the reader is not sure of, is declined (`Unsure`), and the
# document is read by libyaml as before: so the value is always the exact parser's, every
# error comes from the parsers that always reported it, and no line is ever guessed.

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*\Z")
# A plain scalar starting with one of these is an indicator, or may be: declined.
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")
# A `:` that may start a value; in block context, a flow indicator as well (declined
# although YAML reads most of them as text).
_UNSURE_FLOW = re.compile(r": | :|:\Z")
_UNSURE_BLOCK = re.compile(r": | :|:\Z|[\[\]{}]")
_NESTED = re.compile(r"[\[\]{}]")
# A word holding none of these is text, whatever else it holds (one scan, in C).
_SPECIAL = re.compile(r"[\[\]{}:]")
# No document this reader accepts can reach the node bound: it holds fewer nodes than
# characters, and declines anything longer than this.
_PLAIN_MAX_CHARS = MAX_YAML_NODES // 2
# What YAML refuses (ruamel's reader: `NON_PRINTABLE`), a byte order mark, and where
# libyaml and YAML 1.2 part ways (a tab, a carriage return, NEL, LS, PS; `_parts_ways`):
# a document holding one is declined.
_UNPLAIN = re.compile(
    "[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]"
)
# Keys read before, each a plain word that resolves to text.
_KEYS: set[str] = set()
# Flow collections read before, by their text; their items are scalars, so a shallow copy
# is a copy.
_COLLECTIONS: dict[str, list[Any] | dict[str, Any]] = {}


def plain_load(text: str) -> Any:
    """The data of a plain document (see above), equal to the exact parser's; else `Unsure`.

    Its nesting stays within a few levels and its nodes under the bound, so the caller
    needs no `check_shape` for a document this reads.
    """
    if len(text) > _PLAIN_MAX_CHARS or _UNPLAIN.search(text):
        raise Unsure
    # A comment after a value, or a line that could end the document, is declined as a
    # whole: found once in the text, not line by line (an indented comment line goes too).
    if " #" in text or "\n---" in text or "\n..." in text or text.startswith(("---", "...")):
        raise Unsure
    lines: list[tuple[int, str]] = []
    for raw in text.split("\n"):
        content = raw.lstrip(" ")
        if content and content[0] != "#":
            lines.append((len(raw) - len(content), content.rstrip(" ")))
    if not lines:
        raise Unsure  # empty, or only comments: libyaml says what that is
    data, end = _plain_map(lines, 0, lines[0][0], depth=0)
    if end != len(lines):
        raise Unsure
    return data


def _plain_key(key: str) -> bool:
    """Whether `key` is a plain word that YAML 1.2 reads as text (its callers look in
    `_KEYS` first, inline: a key read before costs them no call)."""
    if not _PLAIN_KEY.match(key) or _resolve(key) is not TEXT:
        return False
    if len(_KEYS) < 4096:  # the brain's schema has a few dozen; a bound all the same
        _KEYS.add(key)
    return True


def _plain_map(
    lines: list[tuple[int, str]], pos: int, indent: int, *, depth: int
) -> tuple[dict[str, Any], int]:
    data: dict[str, Any] = {}
    words = _word_starts()
    count = len(lines)
    while pos < count:
        at, line = lines[pos]
        if at < indent:
            break
        key, colon, rest = line.partition(":")
        if at > indent or not colon or (rest and rest[0] != " "):
            raise Unsure
        if key in data or (key not in _KEYS and not _plain_key(key)):
            raise Unsure
        pos += 1
        if rest:
            rest = rest.lstrip(" ")  # the line is stripped: `rest` is not empty
            # Most values are words (`entity: ticket id`): no resolver takes one, so it
            # is text unless a `:` or a flow indicator makes it something else.
            if rest[0] in words and not _SPECIAL.search(rest):
                data[key] = rest
            else:
                data[key] = _plain_value(rest)
            continue
        if pos < count and lines[pos][0] > indent:
            if depth >= 3:
                raise Unsure
            inner, first = lines[pos]
            if first == "-" or first.startswith("- "):
                data[key], pos = _plain_list(lines, pos, inner)
            else:
                data[key], pos = _plain_map(lines, pos, inner, depth=depth + 1)
        else:
            data[key] = None
    return data, pos


def _plain_list(lines: list[tuple[int, str]], pos: int, indent: int) -> tuple[list[Any], int]:
    items: list[Any] = []
    words = _word_starts()
    while pos < len(lines):
        at, line = lines[pos]
        if at < indent:
            break
        if at > indent or not line.startswith("- "):
            raise Unsure
        item = line[2:].lstrip(" ")
        if item[0] in words and not _SPECIAL.search(item):
            items.append(item)
        else:
            items.append(_plain_value(item))
        pos += 1
    return items, pos


def _plain_value(text: str) -> Any:
    """A value on its key's line (or a list item's): a scalar or a flat flow collection."""
    first = text[0]
    if first == "[" or first == "{":
        # A brain repeats its flow collections (`when: [run, reply]`, a feature's views in
        # every context): each is read once, and every document gets a copy of its own.
        known = _COLLECTIONS.get(text)
        if known is None:
            known = _flow_list(text) if first == "[" else _flow_map(text)
            if len(_COLLECTIONS) < 4096:
                _COLLECTIONS[text] = known
        return known.copy()
    if first in "'\"":
        return _quoted(text)
    if first in _INDICATORS or _UNSURE_BLOCK.search(text):
        raise Unsure
    return _scalar(text)


def _flow_list(text: str) -> list[Any]:
    if not text.endswith("]"):
        raise Unsure
    inner = text[1:-1]
    if not inner.strip(" "):
        return []
    words = _word_starts()
    items = []
    for item in _flow_items(inner):
        item = item.strip(" ")
        if item and item[0] in words and ":" not in item:
            items.append(item)
        else:
            items.append(_flow_scalar(item))
    return items


def _flow_map(text: str) -> dict[str, Any]:
    if not text.endswith("}"):
        raise Unsure
    inner = text[1:-1]
    data: dict[str, Any] = {}
    if not inner.strip(" "):
        return data
    words = _word_starts()
    for pair in _flow_items(inner):
        key, colon, value = pair.strip(" ").partition(":")
        if not colon or not value.startswith(" "):
            raise Unsure
        if key in data or (key not in _KEYS and not _plain_key(key)):
            raise Unsure
        value = value.strip(" ")
        if value and value[0] in words and ":" not in value:
            data[key] = value
        else:
            data[key] = _flow_scalar(value)
    return data


def _flow_items(inner: str) -> list[str]:
    if _NESTED.search(inner):
        raise Unsure  # nested collections
    items = inner.split(",")
    if not items[-1].strip(" "):
        raise Unsure  # a trailing comma
    return items


def _flow_scalar(text: str) -> Any:
    if not text:
        raise Unsure
    if text[0] in "'\"":
        return _quoted(text)
    if text[0] in _INDICATORS or _UNSURE_FLOW.search(text):
        raise Unsure
    return _scalar(text)


def _quoted(text: str) -> str:
    """A one-line quoted scalar with no escapes but `''`."""
    quote = text[0]
    if len(text) < 2 or text[-1] != quote:
        raise Unsure
    inner = text[1:-1]
    if quote == "'":
        if "'" in inner.replace("''", ""):
            raise Unsure
        return inner.replace("''", "'")
    if '"' in inner or "\\" in inner:
        raise Unsure
    return inner


def _resolve(value: str) -> _Kind:
    """A plain scalar's YAML 1.2 type, as the composer's `resolve` finds it."""
    by_start, any_start = _resolvers()
    for found, match in by_start.get(value[:1], any_start):
        if match(value):
            return found
    return TEXT


@functools.cache
def _resolvers() -> tuple[dict[str, Matchers], Matchers]:
    return _matchers()


@functools.cache
def _word_starts() -> frozenset[str]:
    """The ASCII letters no resolver looks at and no indicator is: a plain scalar starting
    with one is text, unless a `:` or flow indicator in it says otherwise."""
    by_start, any_start = _resolvers()
    if any_start:
        return frozenset()
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
    return frozenset(c for c in letters if c not in by_start and c not in _INDICATORS)


def _scalar(text: str) -> Any:
    if text.isdigit() and text.isascii() and text[0] != "0" and len(text) <= _MAX_PLAIN_DIGITS:
        return int(text)  # what the resolver's table and `_plain_int` make of it, sooner
    by_start, any_start = _resolvers()
    if not any_start and text[0] not in by_start:
        return text  # no resolver takes a scalar starting so: text
    kind = _resolve(text)
    if kind is TEXT:
        return text
    if kind is NULL:
        return None
    if kind is BOOL:
        return _BOOLS[text.lower()]
    if kind is INT and _plain_int(text):
        return int(text)
    raise Unsure
