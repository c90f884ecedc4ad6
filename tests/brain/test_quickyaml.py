"""The quick YAML reader gives the exact YAML 1.2 parser's value, or declines.

Declining costs only speed: the document is read by ruamel's loaders as before, so every
value and every error (message and line) is what it was. Each test of errors runs with
the quick reader and without it (`quick`), and must give the same answer both ways.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keel.brain import document, load_brain, quickyaml
from keel.brain.document import parse_yaml
from keel.brain.limits import MAX_EXACT_YAML_CHARS, MAX_YAML_NODES
from keel.brain.quickyaml import Unsure, quick_load
from keel.brain.yamlread import PARSER_SLIPS, exact_load, fast_load
from keel.errors import ContentError
from tests.brain.fuzzing import PROFILE
from tests.conftest import WriteBrain

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "brain"


def same(quick: object, exact: object) -> bool:
    """Equal, and of the same types all the way down (`True` is not `1`)."""
    return quick == exact and repr(quick) == repr(exact)


def exact_or_error(text: str) -> object:
    try:
        return exact_load(text)
    except (*document.YAML_PROBLEMS, *PARSER_SLIPS) as exc:
        return type(exc)


@pytest.fixture(params=["quick", "without"])
def quick(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test with the quick reader, and again as if PyYAML were not installed."""
    if request.param == "without":
        monkeypatch.setitem(sys.modules, "yaml._yaml", None)  # the import fails
        monkeypatch.setattr(quickyaml, "_libyaml", quickyaml._libyaml.__wrapped__)
    return str(request.param)


# -- the forms the docs and the reference brain write -------------------------------------

DOC_FORMS = [
    pytest.param("capabilities: [context:read, state:write]\n", id="flow-with-colons"),
    pytest.param(
        "capabilities: [context:read, context:bind, ledger:read, brain:check]\n", id="four-caps"
    ),
    pytest.param("capabilities:\n  - context:read\n  - notify:send\n", id="block-with-colons"),
    pytest.param("capabilities: [ context:* ]\n", id="wildcard-capability"),
    pytest.param("contexts: ['*']\nskills: []\n", id="quoted-star"),
    pytest.param("when: [chat, ask]\nentity: ticket id\nkeep: 2\nchars: 3000\n", id="context"),
    pytest.param(
        "data:\n  - support_sla_today\n  - { view: support_ticket_card, by: ticket_id }\n",
        id="data",
    ),
    pytest.param("schedule: '0 9 * * *'\nagent: helper\n", id="schedule-single-quoted"),
    pytest.param('schedule: "*/15 * * * *"\n', id="schedule-double-quoted"),
    pytest.param("sections: { history: 2000, render.queue: 600 }\n", id="sections"),
    pytest.param("contexts_budget: { maxActive: 2, turnChars: 12000 }\n", id="budget"),
    pytest.param(
        "approvals: { dangerous: required, context:bind: none, timeout: 2h }\n",
        id="approvals-flow",
    ),
    pytest.param("approvals:\n  moderate: none\n  context:bind: required\n", id="approvals"),
    pytest.param(
        "bots:\n  nova:\n    default: { role: helper }\n    chats:\n"
        "      'tg:chat:-1': { role: helper, contexts: { good: T-1 } }\n"
        '      "tg:chat:-2":\n        role: helper\n        title: Two\n',
        id="access",
    ),
    pytest.param("chat: tg:chat:-1001\nthread: 42\nbot: nova\n", id="room"),
    pytest.param("enabled: false\ndescription: Off.\ntitle: 'A: B'\n", id="feature"),
    pytest.param("description: >\n  Folded\n  text.\nnote: |\n  Kept\n  lines.\n", id="blocks"),
    pytest.param("# a comment\ndescription: A # not a comment\nb: c # a comment\n", id="comments"),
    pytest.param("a: b\r\nc: [d:e, f]\r\n", id="crlf"),
    pytest.param("a: ''\nb: \"\"\nc:\nd: ~\ne: null\n", id="empty-and-null"),
    pytest.param("a: \"caf\\u00e9 \\U0001F600 \\\"q\\\"\"\nb: 'it''s'\n", id="escapes"),
    pytest.param("a: é 😀\nb: -x\nc: ?x\nd: :x\ne: a#b\n", id="plain-oddities"),
    pytest.param("a: [http://x/y, a::b, a:b:c]\nb: {a:b}\n", id="colons"),
    pytest.param("a: [b,\n  c:d,\n  e]\n", id="flow-over-lines"),
    pytest.param("a: 017\nb: -0\nc: +5\nd: 123456789012345678\ne: TRUE\n", id="numbers"),
    pytest.param("", id="empty"),
    pytest.param("# only a comment\n", id="only-a-comment"),
]


@pytest.mark.parametrize("text", DOC_FORMS)
def test_the_docs_forms_are_read_quickly_with_the_exact_value(text: str) -> None:
    assert same(quick_load(text), exact_load(text))


def frontmatters(root: Path) -> list[tuple[str, str]]:
    found = []
    for path in sorted(root.rglob("*")):
        if path.suffix == ".yaml" and path.parent.name == "constitution":
            found.append((str(path), path.read_text(encoding="utf-8")))
        elif path.suffix == ".md" and path.read_text(encoding="utf-8").startswith("---\n"):
            found.append((str(path), path.read_text(encoding="utf-8").split("---\n")[1]))
    return found


def test_every_document_of_the_reference_brain_is_read_quickly() -> None:
    found = frontmatters(EXAMPLES / "features") + frontmatters(EXAMPLES / "constitution")
    assert len(found) > 20
    for path, text in found:
        assert same(quick_load(text), exact_load(text)), path


# -- what it declines --------------------------------------------------------------------

DECLINED = [
    pytest.param("a: \tb\n", id="tab"),
    pytest.param("a: b\x85c\n", id="nel"),
    pytest.param("a: b\u2028c\n", id="line-separator"),
    pytest.param("a: b\u2029c\n", id="paragraph-separator"),
    pytest.param("%YAML 1.1\n---\na: 1:30\n", id="directive"),
    pytest.param('a: ["b":c]\n', id="adjacent-value"),
    pytest.param("a: {'b':c}\n", id="adjacent-value-single"),
    pytest.param("a: [[b]:c]\n", id="adjacent-value-after-a-list"),
    pytest.param("a: &x 1\nb: *x\n", id="anchor"),
    pytest.param("a: 1.5\n", id="float"),
    pytest.param("a: 1e3\n", id="exponent"),
    pytest.param("a: .inf\n", id="infinity"),
    pytest.param("a: 2025-01-01\n", id="date"),
    pytest.param("a: 0x1F\n", id="hex"),
    pytest.param("a: 0o17\n", id="octal"),
    pytest.param("a: 1_000\n", id="underscores"),
    pytest.param("a: 1234567890123456789\n", id="nineteen-digits"),
    pytest.param("a: !!str 5\n", id="tag"),
    pytest.param("a: !!bool yes\n", id="bool-tag"),
    pytest.param("a: !keel/x b\n", id="local-tag"),
    pytest.param("a: !!seq [b]\n", id="collection-tag"),
    pytest.param("a: {b: 1}\n<<: {c: 2}\n", id="merge-key"),
    pytest.param("a: 1\na: 2\n", id="duplicate-key"),
    pytest.param("1: a\ntrue: b\n", id="keys-equal-in-python"),
    pytest.param("? [a]\n: b\n", id="list-key"),
    pytest.param("a: =\n", id="value-key"),
    pytest.param("a: [b:, c]\n", id="libyaml-refuses"),
    pytest.param("a: [\n", id="broken"),
    pytest.param("a: b\n---\nc: d\n", id="two-documents"),
]


@pytest.mark.parametrize("text", DECLINED)
def test_what_the_quick_reader_declines_reads_as_before(text: str) -> None:
    with pytest.raises(Unsure):
        quick_load(text)
    try:
        before: object = fast_load(text)
    except document.YAML_PROBLEMS:
        before = exact_or_error(text)
    try:
        assert same(parse_yaml("f.yaml", text), before)
    except ContentError:
        assert isinstance(before, type)


# -- many forms, against the exact parser ---------------------------------------------------

SCALARS = [
    "a", "b c", "context:read", "x:y:z", "a::b", "a:", ":a", "-a", "?a", "a#b", "a #b",
    "true", "False", "TRUE", "null", "Null", "~", "", "0", "017", "-3", "+4", "12", "0x1F",
    "1e3", "1.5", ".inf", "2025-01-01", "1:30", "yes", "no", "on",
    "'q'", "'q''s'", "'a: b'", '"d"', '"e\\tx"', '"\\/"', '"\\x41"', '"\\u00e9"', '"\\N"',
    '"a\\\n  b"', "'a\n  b'", '"a\n\n  b"', "é", "😀", "a\tb", "! 5", '! "5"', "!!str 5",
    "!!int 3", "!x y", "&a x", "*a", "<<", "=", "http://u/v", "a,b", "a]", "@a", "`a", "%a",
    "|\n  t\n", ">-\n  t\n  u\n", "|2\n   t\n", "a\x85b", "a\u2028b", "\u00a0a",
]  # fmt: skip
FLOW_ITEMS = [*SCALARS[:40], "[a:b]", '["a":b]', "{a:b}", "{a: b}", "[]", "{}", "[a,]", "[? x : y]"]
KEYS = ["k", "key", "a:b", '"q"', "'q'", "1", "true", "null", "k k", "-k", "<<", "[a]", "&x k"]
SEPARATORS = [": ", ": ", ": ", ":  ", ":\t", " : ", ":\n  "]
ENDS = ["\n", "\n", "\n", "\r\n", " # c\n", "  \n", "\n\n", "\n# c\n", "\r"]


@st.composite
def values(draw: st.DrawFn) -> str:
    shape = draw(st.sampled_from(["scalar", "scalar", "list", "map", "block"]))
    if shape == "list":
        return "[" + ", ".join(draw(st.lists(st.sampled_from(FLOW_ITEMS), max_size=4))) + "]"
    if shape == "map":
        pairs = draw(st.lists(st.tuples(st.sampled_from(KEYS[:5]), st.sampled_from(FLOW_ITEMS))))
        return "{" + ", ".join(f"{k}: {v}" for k, v in pairs[:3]) + "}"
    if shape == "block":
        items = draw(st.lists(st.sampled_from(FLOW_ITEMS), min_size=1, max_size=3))
        return "\n" + "".join(f"  - {item}\n" for item in items)
    return draw(st.sampled_from(SCALARS))


@st.composite
def documents(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(1, 5))):
        indent = draw(st.sampled_from(["", "", "", " "]))
        key, sep = draw(st.sampled_from(KEYS)), draw(st.sampled_from(SEPARATORS))
        lines.append(indent + key + sep + draw(values()) + draw(st.sampled_from(ENDS)))
    return "".join(lines)


@settings(
    settings.get_profile(PROFILE),
    max_examples=600 if PROFILE == "ci" else settings.get_profile(PROFILE).max_examples,
)
@given(documents())
def test_the_quick_reader_gives_the_exact_parsers_value_or_declines(text: str) -> None:
    try:
        quick = quick_load(text)
    except Unsure:
        return
    assert same(quick, exact_load(text))
    with contextlib.suppress(*document.YAML_PROBLEMS):
        assert same(quick, fast_load(text))  # so no value changes from before either


# -- every error the same, with it or without -------------------------------------------

BROKEN = [
    pytest.param("caps: [context:read]\nb: [\n", 3, "expected the node content", id="unclosed"),
    pytest.param("caps: [context:read]\nb: c: d\n", 2, "mapping values", id="colon-in-plain"),
    pytest.param("a: b\n  c: d\n", 2, "mapping values", id="indent"),
    pytest.param("caps: [context:read]\nn: " + "9" * 101 + "\n", 2, "101 digits", id="number"),
    pytest.param("caps: [context:read]\nd: 2025-02-30\n", 2, "not a date", id="date"),
    pytest.param("caps: [context:read]\na: 1\na: 2\n", 3, "duplicate key", id="duplicate"),
    pytest.param('caps: [context:read]\nb: ["\\0"]\n', 2, "an escape makes a NUL", id="nul"),
]


@pytest.mark.usefixtures("quick")
@pytest.mark.parametrize(("text", "line", "message"), BROKEN)
def test_a_broken_document_names_the_same_line_either_way(
    text: str, line: int, message: str
) -> None:
    with pytest.raises(ContentError, match=message) as caught:
        parse_yaml("f.yaml", text, first_line=2)
    assert caught.value.line == line + 1


ROLE_WITH_A_BAD_KEY = (
    "---\ndescription: Desk.\ncontexts: [ticket]\ncapabilities: [context:read, state:read]\n"
    "state: [queue]\nagnet: api\n---\nYou help.\n"
)


@pytest.mark.usefixtures("quick")
def test_a_role_that_fails_names_the_same_line_either_way(write_brain: WriteBrain) -> None:
    root = write_brain({"features/support/desk.agent.md": ROLE_WITH_A_BAD_KEY})
    (skip,) = load_brain(root).skips
    assert (skip.path, skip.line) == ("features/support/desk.agent.md", 6)
    assert "unknown key 'agnet'" in skip.reason


def test_without_pyyaml_only_what_the_plain_reader_reads_is_read_quickly(quick: str) -> None:
    assert quick_load("a: [b:c]\n") == {"a": ["b:c"]}  # the plain reader needs no PyYAML
    if quick == "quick":
        assert quick_load("a: [[b:c]]\n") == {"a": [["b:c"]]}
    else:
        with pytest.raises(Unsure):
            quick_load("a: [[b:c]]\n")
    assert parse_yaml("f.yaml", "a: [[b:c]]\n") == {"a": [["b:c"]]}


# -- long documents -------------------------------------------------------------------


def test_a_long_document_with_colons_in_flow_items_is_read_by_a_c_parser(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Past MAX_YAML_NODES / 2 characters the shape is walked event by event; ruamel's
    # libyaml refuses `[context:read]` there, libyaml 0.2 walks it. Past the exact
    # parser's size, only a C parser may read it at all.
    rule = "  - [context:read, state:write]\n"
    text = "caps:\n" + rule * (MAX_EXACT_YAML_CHARS // len(rule) + 1)
    assert len(text) > MAX_EXACT_YAML_CHARS > MAX_YAML_NODES // 2
    monkeypatch.setattr(document, "exact_load", _never)
    data = parse_yaml("f.yaml", text)
    assert data["caps"][-1] == ["context:read", "state:write"]


def test_a_long_document_too_deep_for_libyaml_goes_to_the_exact_parser() -> None:
    deep = "a:\n" + " [\n" * 70 + "]" * 70 + "\n"
    text = "caps: [context:read]\n" + "# " + "x" * MAX_YAML_NODES + "\n" + deep
    with pytest.raises(ContentError, match=r"f\.yaml:67: the YAML nests more than 64"):
        parse_yaml("f.yaml", text)


def _never(_text: str) -> object:
    raise AssertionError("the exact parser read a document a C parser reads")


# -- the plain reader --------------------------------------------------------------------

PLAIN_FORMS = [
    pytest.param(
        "description: Due. Chase, politely.\nentity: invoice id\nwhen: [chat, ask]\n"
        "data:\n  - billing_overdue\n  - { view: billing_card, by: invoice_id }\nchars: 1500\n",
        id="context",
    ),
    pytest.param("enabled: true\ntitle: Legal 089\ndescription: Batch, lesson.\n", id="feature"),
    pytest.param("capabilities: [context:read, state:write]\nmodel:\n  name: gpt\n", id="role"),
    pytest.param("a:\n  b:\n    c: [d]\n    e: ~\n  f: 'it''s'\ng: \"q\"\n", id="nested"),
    pytest.param("a: 5\nb: 0\nc: TRUE\nd: null\ne:\nf: []\ng: {}\n", id="scalars"),
]


@pytest.mark.parametrize("text", PLAIN_FORMS)
def test_the_plain_reader_reads_the_generated_forms_with_the_exact_value(text: str) -> None:
    assert same(quickyaml.plain_load(text), exact_load(text))


@pytest.mark.parametrize("text", [*DOC_FORMS, *DECLINED])
def test_the_plain_reader_gives_the_exact_value_or_declines_every_form(text: str) -> None:
    try:
        plain = quickyaml.plain_load(text)
    except Unsure:
        return
    assert same(plain, exact_load(text))


@settings(
    settings.get_profile(PROFILE),
    max_examples=600 if PROFILE == "ci" else settings.get_profile(PROFILE).max_examples,
)
@given(documents())
def test_the_plain_reader_gives_the_exact_parsers_value_or_declines(text: str) -> None:
    try:
        plain = quickyaml.plain_load(text)
    except Unsure:
        return
    assert same(plain, exact_load(text))


def test_a_flow_collection_read_twice_is_two_values() -> None:
    # The plain reader keeps the collections it has read; no document may share one.
    text = "when: [run, reply]\ndata: { view: queue, by: entity_id }\n"
    first, second = quickyaml.plain_load(text), quickyaml.plain_load(text)
    first["when"].append("ask")
    first["data"]["by"] = "other"
    assert second == {"when": ["run", "reply"], "data": {"view": "queue", "by": "entity_id"}}
    assert quickyaml.plain_load(text) == second


PLAIN_DECLINED = [
    pytest.param("a:\n  b:\n    c:\n      d:\n        e: 1\n", id="nested-deeper-than-three"),
    pytest.param("a:\n  - b\n  -\n", id="a-bare-dash-item"),
    pytest.param("a: {b: c\n", id="flow-map-unclosed"),
    pytest.param("a: {b: 1, b: 2}\n", id="flow-map-duplicate-key"),
    pytest.param("a: [b, c,]\n", id="flow-list-trailing-comma"),
    pytest.param("a: [b, , c]\n", id="flow-list-empty-item"),
    pytest.param("a: 'it's'\n", id="single-quote-inside-single-quotes"),
]


@pytest.mark.parametrize("text", PLAIN_DECLINED)
def test_what_the_plain_reader_declines_is_read_as_the_exact_parser_reads_it(text: str) -> None:
    with pytest.raises(Unsure):
        quickyaml.plain_load(text)
    try:
        read: object = parse_yaml("f.yaml", text)
    except ContentError:
        read = ContentError
    expected = exact_or_error(text)
    assert same(read, expected) or (read is ContentError and isinstance(expected, type))


def test_a_long_document_libyaml_refuses_while_its_shape_is_walked_is_unsure() -> None:
    # Past MAX_YAML_NODES / 2 characters the shape is walked on libyaml's events.
    long = "caps: [context:read]\n# " + "x" * MAX_YAML_NODES + "\n"
    with pytest.raises(Unsure):
        quick_load(long + "b: [\n", walk=True)
    assert quick_load(long, walk=True) == {"caps": ["context:read"]}
    with pytest.raises(ContentError, match=r"f\.yaml:4: "):
        parse_yaml("f.yaml", long + "b: [\n", first_line=1)


def test_the_plain_readers_memory_of_keys_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    full = {f"key{n}" for n in range(4096)}
    monkeypatch.setattr(quickyaml, "_KEYS", full)
    assert quickyaml.plain_load("fresh: 1\n") == {"fresh": 1}
    assert "fresh" not in full
    assert len(full) == 4096
