"""YAML within bounds: depth, aliases, numbers, escapes and size, on every parser.

The quick reader (libyaml 0.2) reads first; a document it declines goes to ruamel's C
loader, and one that refuses to the exact parser. Every bound is checked on each path:
`FAST` is a line the quick reader declines and ruamel's C loader reads (a float), `EXACT`
a line that only the exact parser accepts; each is added to force its path.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML
from ruamel.yaml.compat import StringIO
from ruamel.yaml.error import YAMLError
from ruamel.yaml.events import AliasEvent, CollectionEndEvent, CollectionStartEvent, ScalarEvent

from keel.brain.document import Locator, locate, parse_yaml
from keel.brain.limits import (
    MAX_EXACT_YAML_CHARS,
    MAX_INT_DIGITS,
    MAX_YAML_CHARS,
    MAX_YAML_DEPTH,
    MAX_YAML_NODES,
)
from keel.brain.yamlread import depth_bound, exact_events, fast_events
from keel.errors import ContentError
from tests.brain.fuzzing import PROFILE

FAST = "f: 1.5\n"
EXACT = "caps: [context:]\n"
PATHS = [
    pytest.param("", id="quick"),
    pytest.param(FAST, id="fast"),
    pytest.param(EXACT, id="exact"),
]


def nested(depth: int) -> str:
    """A document `depth` collections deep: a mapping holding depth - 1 nested lists."""
    inner = depth - 1
    return "a: " + "[" * inner + "]" * inner + "\n"


@pytest.mark.parametrize("extra", PATHS)
def test_a_document_may_nest_up_to_the_bound(extra: str) -> None:
    data = parse_yaml("f.yaml", extra + nested(MAX_YAML_DEPTH))
    assert isinstance(data["a"], list)


DEEP = [
    pytest.param(nested(MAX_YAML_DEPTH + 1), id="one-past"),
    pytest.param("a:\n" + " [\n" * 1_000 + "]" * 1_000 + "\n", id="1000-lines"),
    pytest.param("a:\n" + "- " * 20_000 + "x\n", id="block-20000"),
    pytest.param("a:\n" + " {a:\n" * 1_000 + "}" * 1_000 + "\n", id="mappings-1000-lines"),
    pytest.param(
        "a: &deep " + "[" * 40 + "]" * 40 + "\nb: " + "[" * 30 + "*deep" + "]" * 30 + "\n",
        id="through-an-alias",
    ),
]
# On one line, or past the exact parser's size: only the fast parser can walk them.
DEEP_FAST_ONLY = [
    pytest.param(nested(1_000), id="1000"),
    pytest.param(nested(100_000), id="100000"),
    pytest.param("a:\n" + "- " * 100_000 + "x\n", id="block-100000"),
    pytest.param("a: " + "{a: " * 1_000 + "}" * 1_000 + "\n", id="mappings-1000"),
]


@pytest.mark.parametrize("extra", PATHS)
@pytest.mark.parametrize("text", DEEP)
def test_a_deeper_document_is_refused_with_its_line(extra: str, text: str) -> None:
    with pytest.raises(ContentError, match=r"f\.yaml:\d+: .*nests more than 64 levels deep"):
        parse_yaml("f.yaml", extra + text)


@pytest.mark.parametrize("text", DEEP_FAST_ONLY)
def test_a_very_deep_document_costs_the_fast_parser_a_few_levels(text: str) -> None:
    with pytest.raises(ContentError, match=r"f\.yaml:\d+: .*nests more than 64 levels deep"):
        parse_yaml("f.yaml", text)
    # What the fast parser refuses goes to the exact one only if it is small and has no
    # crowded line, so the same text there is refused before the exact parser walks it.
    with pytest.raises(ContentError, match=r"a line opens more than 64|broken YAML"):
        parse_yaml("f.yaml", EXACT + text)


def test_a_crowded_line_is_refused_before_the_exact_parser_reads_it() -> None:
    text = EXACT + "a: " + "[" * 30_000 + "]" * 30_000 + "\n"
    with pytest.raises(ContentError, match=r"f\.yaml:2: a line opens more than 64 '\['"):
        parse_yaml("f.yaml", text)


def laughs(levels: int, width: int = 9) -> str:
    lines = ['l0: &l0 "lol"']
    for level in range(1, levels + 1):
        aliases = ", ".join([f"*l{level - 1}"] * width)
        lines.append(f"l{level}: &l{level} [{aliases}]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("extra", PATHS)
def test_billion_laughs_is_refused(extra: str) -> None:
    with pytest.raises(ContentError, match=r"f\.yaml:\d+: the aliases expand this document past"):
        parse_yaml("f.yaml", extra + laughs(9))


def test_aliases_that_expand_modestly_load() -> None:
    assert len(parse_yaml("f.yaml", laughs(3))["l3"]) == 9
    assert 9**4 < MAX_YAML_NODES < 9**6
    data = parse_yaml("f.yaml", "base: &base {role: a, title: b}\nrule:\n  <<: *base\n  title: c\n")
    assert data["rule"] == {"role": "a", "title": "c"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "a: &a [1, *a]\n", "the alias \\*a stands inside the node it names", id="self"
        ),
        pytest.param("a: &x 1\nb: &x 2\n", "the anchor &x is defined twice", id="twice"),
    ],
)
def test_aliases_that_never_end_or_rebind_are_refused(text: str, message: str) -> None:
    with pytest.raises(ContentError, match=message):
        parse_yaml("f.yaml", text)


@pytest.mark.parametrize("extra", PATHS)
@pytest.mark.parametrize(
    ("value", "digits"),
    [
        pytest.param("9" * 101, 101, id="decimal"),
        pytest.param("-" + "9" * 5000, 5000, id="over-python-limit"),
        pytest.param("0x" + "f" * 5000, 5000, id="hex"),
        pytest.param("!!int " + "1" * 200, 200, id="tagged"),
    ],
)
def test_a_number_longer_than_the_bound_is_refused_with_its_line(
    extra: str, value: str, digits: int
) -> None:
    text = extra + f"x: 1\nn: {value}\n"
    line = 3 if extra else 2
    with pytest.raises(ContentError, match=rf"f\.yaml:{line}: .*a number of {digits:,} digits"):
        parse_yaml("f.yaml", text)


def test_numbers_up_to_the_bound_load_whatever_their_spelling() -> None:
    assert parse_yaml("f.yaml", "n: " + "9" * MAX_INT_DIGITS)["n"] == int("9" * MAX_INT_DIGITS)
    assert parse_yaml("f.yaml", "n: 0x" + "f" * MAX_INT_DIGITS)["n"] == 16**MAX_INT_DIGITS - 1
    assert parse_yaml("f.yaml", "n: 1_000_000")["n"] == 1_000_000


@pytest.mark.parametrize("extra", PATHS)
@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param("2025-02-30", "'2025-02-30' is not a date or time", id="no-such-day"),
        pytest.param("2025-01-01 25:00:00", "is not a date or time", id="no-such-hour"),
        pytest.param("!!bool maybe", "'maybe' is not a yes/no value", id="bool"),
        pytest.param("!!float abc", "'abc' is not a number", id="float"),
        pytest.param("!!int abc", "'abc' is not a whole number", id="int"),
        pytest.param("!!int ''", "'' is not a whole number", id="empty-int"),
        pytest.param('"\\U00110000"', "the parser cannot read it", id="beyond-unicode"),
        pytest.param('"\\UFFFFFFFF"', "the parser cannot read it", id="huge-escape"),
    ],
)
def test_a_value_no_python_value_can_be_is_refused(extra: str, value: str, message: str) -> None:
    with pytest.raises(ContentError, match=re.escape(message)):
        parse_yaml("f.yaml", f"{extra}v: {value}\n")


def test_exponents_without_a_dot_load_without_a_warning() -> None:
    # pytest turns warnings into errors: ruamel warns on `1e3` under YAML 1.1.
    assert parse_yaml("f.yaml", "a: 1e3\nb: .inf\nc: -1.5e-3\n") == {
        "a": 1000.0,
        "b": float("inf"),
        "c": -0.0015,
    }
    assert parse_yaml("f.yaml", "%YAML 1.1\n---\na: 1e3\n") == {"a": 1000.0}


@pytest.mark.parametrize(
    "value",
    [
        pytest.param('"\\0"', id="nul"),
        pytest.param('"a\\x00b"', id="hex-nul"),
        pytest.param('"\\ud800"', id="lone-surrogate"),
        pytest.param('"\\ud83d\\ude00"', id="surrogate-pair"),
    ],
)
def test_an_escape_text_cannot_hold_is_refused_with_its_line(value: str) -> None:
    with pytest.raises(ContentError, match=r"f\.yaml:2: an escape makes a NUL or half"):
        parse_yaml("f.yaml", f"a: 1\nb: [{value}]\n")


def test_escapes_of_real_characters_load() -> None:
    data = parse_yaml("f.yaml", 'a: "\\U0001F600 \\u00e9 \\\\0"\n')
    assert data == {"a": "\U0001f600 \u00e9 \\0"}


def test_a_document_over_the_size_bound_is_refused() -> None:
    text = "a: " + "x" * MAX_YAML_CHARS + "\n"
    with pytest.raises(ContentError, match=r"over the limit of 262,144"):
        parse_yaml("f.yaml", text)


def test_past_the_exact_size_the_fast_parsers_verdict_stands() -> None:
    padding = "# " + "x" * 100 + "\n"
    text = padding * (MAX_EXACT_YAML_CHARS // len(padding) + 1) + EXACT
    with pytest.raises(ContentError, match=r"broken YAML: .*:"):
        parse_yaml("f.yaml", text)
    assert parse_yaml("f.yaml", padding * 10 + EXACT) == {"caps": ["context:"]}


@pytest.mark.parametrize(
    ("loc", "line"),
    [
        pytest.param(("bots", "nova", "chats", "g1", "role"), 5, id="key"),
        pytest.param(("bots", "nova", "chats", -100), 6, id="int-key"),
        pytest.param(("list", 1), 9, id="item"),
        pytest.param(("list", 7), 7, id="past-the-end"),
        pytest.param(("nowhere",), None, id="absent"),
    ],
)
def test_the_locator_finds_lines_of_keys_and_items(
    loc: tuple[str | int, ...], line: int | None
) -> None:
    text = (
        "bots:\n  nova:\n    chats:\n      g1:\n        role: r\n      -100: {}\n"
        "list:\n  - a\n  - b\n"
    )
    assert Locator(text, first_line=0).line(loc) == (None if line is None else line - 1)
    assert locate(text, loc) == line


def test_the_locator_reads_what_only_the_exact_parser_reads() -> None:
    assert locate(EXACT + "b:\n  c: 1\n", ("b", "c")) == 3


# -- the character count is a bound, never an underestimate ---------------------------

LEAVES = st.one_of(st.integers(-5, 5), st.sampled_from(["a", "b c", "[x]", "- y", "k: v", ""]))
DATA = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from("abcd"), inner, max_size=3)
    ),
    max_leaves=40,
)


def true_depth(text: str) -> int:
    depth = deepest = 0
    for event in fast_events(text):
        if isinstance(event, CollectionStartEvent):
            depth += 1
            deepest = max(deepest, depth)
        elif isinstance(event, CollectionEndEvent):
            depth -= 1
    return deepest


@settings(
    settings.get_profile(PROFILE),
    max_examples=200 if PROFILE == "ci" else settings.get_profile(PROFILE).max_examples,
)
@given(
    data=DATA,
    flow=st.sampled_from([None, True, False]),
    indent=st.tuples(st.integers(2, 6), st.integers(2, 6), st.integers(0, 4)),
)
def test_the_depth_bound_never_underestimates(
    data: object, flow: bool | None, indent: tuple[int, int, int]
) -> None:
    mapping, sequence, offset = indent
    if offset > sequence - 2:
        offset = sequence - 2
    dumper = YAML(typ="safe", pure=True)
    dumper.default_flow_style = flow
    dumper.indent(mapping=mapping, sequence=sequence, offset=offset)
    out = StringIO()
    dumper.dump({"root": data}, out)
    text = out.getvalue()
    assert true_depth(text) <= depth_bound(text), text


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("- - - - - x\n", id="compact-sequences"),
        pytest.param("a:\n- b:\n  - c:\n    - d\n", id="indentless"),
        pytest.param("? - - a\n: - - b\n", id="explicit-keys"),
        pytest.param("a: [b: [c: [d: e]]]\n", id="implicit-pairs"),
        pytest.param("- &x - y\n", id="anchor-before-sequence"),
        pytest.param("--- - - a\n", id="document-start"),
        pytest.param("a:\r  - - - b\r", id="carriage-returns"),
        pytest.param("a:\u2028  - - - b\u2028", id="line-separators"),
        pytest.param("a:\t- - b\n", id="tab"),
    ],
)
def test_the_depth_bound_holds_for_odd_layouts(text: str) -> None:
    try:
        depth = true_depth(text)
    except Exception:  # noqa: BLE001 - a layout libyaml refuses has no depth to bound
        return
    assert depth <= depth_bound(text)


def test_the_events_walk_the_same_on_both_parsers() -> None:
    text = "a: [1, {b: [2]}]\n"
    fast = [type(e).__name__ for e in fast_events(text)]
    exact = [type(e).__name__ for e in exact_events(text)]
    assert fast == exact


def values(text: str) -> int:
    kinds = (CollectionStartEvent, ScalarEvent, AliasEvent)
    try:
        return sum(1 for event in fast_events(text) if isinstance(event, kinds))
    except YAMLError:  # a YAML 1.2 spelling: the exact parser reads it
        return sum(1 for event in exact_events(text) if isinstance(event, kinds))


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("[" + "?," * 500 + "]", id="explicit-keys-in-a-list"),
        pytest.param("[" + ":," * 500 + "]", id="empty-pairs-in-a-list"),
        pytest.param("{" + "?," * 500 + "}", id="explicit-keys"),
        pytest.param("{" + "a," * 500 + "}", id="keys-without-values"),
        pytest.param("[" + "1," * 500 + "]", id="short-items"),
        pytest.param("-\n" * 500, id="empty-items"),
        pytest.param("[" + "[]," * 500 + "]", id="empty-lists"),
    ],
)
def test_no_spelling_gets_more_than_two_values_out_of_one_character(text: str) -> None:
    # check_shape skips counting documents of at most MAX_YAML_NODES / 2 characters.
    assert values(text) <= 2 * len(text)


def test_a_document_with_more_values_than_the_bound_is_refused() -> None:
    items = MAX_YAML_NODES + 10
    with pytest.raises(ContentError, match=r"f\.yaml:\d+: the document holds more than 25,000"):
        parse_yaml("f.yaml", "a: [" + ", ".join(["1"] * items) + "]\n")
    assert len(parse_yaml("f.yaml", "a: [" + ", ".join(["1"] * 20_000) + "]\n")["a"]) == 20_000
