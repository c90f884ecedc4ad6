"""Hypothesis strategies for mangled brain files, and a small valid brain to put them in.

Structure-aware: each strategy starts from a valid file of its kind (a context, a role,
an entity, MANIFEST.yaml, access.yaml) as data, changes one thing in it — a value
replaced by one of the wrong type or size, a key dropped, renamed or added, raw YAML
spliced in (deep nesting, aliases, tags, escapes, huge numbers) — renders it, and may then
damage the bytes (truncated, spliced, made binary, re-encoded). The profile comes from
`KEEL_FUZZ`: "ci" (the default, a bounded, reproducible run) or "long" (`scripts/fuzz`).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import Any, cast

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

settings.register_profile(
    "ci",
    max_examples=50,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "long",
    max_examples=int(os.environ.get("KEEL_FUZZ_EXAMPLES", "5000")),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
PROFILE = os.environ.get("KEEL_FUZZ", "ci")

GOOD_FILES: dict[str, str] = {
    "features/good/good.context.md": (
        "---\ndescription: A ticket.\nentity: ticket id\nwhen: [chat, ask, run]\n---\nBe kind.\n"
    ),
    "features/good/helper.agent.md": (
        "---\ncontexts: [good]\ncapabilities: [context:read]\n---\nYou help.\n"
    ),
    "features/good/beat.heartbeat.md": "---\nschedule: '0 9 * * *'\nagent: helper\n---\nGo.\n",
    "constitution/MANIFEST.yaml": "name: fuzz\ncontexts: { chars: 3000 }\n",
    "constitution/access.yaml": (
        "bots:\n  nova:\n    default: { role: helper }\n    chats:\n"
        "      'tg:chat:-1': { role: helper, contexts: { good: T-1 } }\n"
    ),
}


@dataclass(frozen=True, slots=True)
class Raw:
    """YAML text spliced in as it is, where a value belongs."""

    text: str


# -- valid files, as data ---------------------------------------------------------------

CONTEXT: dict[str, Any] = {
    "description": "The ticket card.",
    "entity": "ticket id",
    "when": ["chat", "ask"],
    "data": ["queue", {"view": "card", "by": "ticket_id"}],
    "chars": 3000,
    "keep": 2,
}
ROLE: dict[str, Any] = {
    "description": "The desk.",
    "contexts": ["good", "fuzzed"],
    "capabilities": ["context:read", "context:bind"],
    "skills": ["tone"],
    "state": ["queue"],
    "agent": "api",
    "contexts_budget": {
        "chars": 3000,
        "maxActive": 3,
        "turnChars": 12000,
        "keep": 3,
        "codeTimeoutMs": 2000,
    },
    "model": {"name": "m", "window": 200000, "output_reserve": 8000, "input_allocation": 150000},
    "sections": {"history": 4000, "render.queue": 600},
    "approvals": {"moderate": "required", "context:bind": "none", "timeout": "4h"},
}
HEARTBEAT: dict[str, Any] = {
    "description": "The beat.",
    "schedule": "0 19 * * *",
    "agent": "helper",
    "reach": ["good", {"context": "good", "entity": "T-1"}],
    "bot": "nova",
    "chat": "tg:chat:-1",
    "thread": "t-1",
}
MANIFEST: dict[str, Any] = {
    "name": "fuzz",
    "contexts": {
        "chars": 3000,
        "maxActive": 3,
        "turnChars": 12000,
        "keep": 3,
        "codeTimeoutMs": 2000,
    },
    "state": {"rows": 20},
    "messageOrigins": {"retentionDays": 365},
    "contentProbe": {"context": 2},
    "model": {"name": "m", "window": 200000, "output_reserve": 8000, "input_allocation": 150000},
    "sections": {"history": 4000},
    "approvals": {"dangerous": "required", "message:send": "none", "timeout": "2d"},
}
ACCESS: dict[str, Any] = {
    "bots": {
        "nova": {
            "default": {"role": "helper"},
            "dm": {"role": "helper", "title": "DM"},
            "chats": {
                "tg:chat:-1": {"role": "helper", "title": "Acme", "contexts": {"good": "acme"}},
                "tg:chat:-2": {"role": "helper", "title": "Globex", "contexts": {"good": "globex"}},
                "tg:chat:-3": {"role": "helper", "contexts": {"good": None}},
            },
        },
        "desk": {"default": {"role": "helper"}, "chats": {"tg:chat:-1": {"role": "helper"}}},
    }
}


@dataclass(frozen=True, slots=True)
class Kind:
    """A kind of brain file to fuzz: where it goes, its valid data, how it is written."""

    name: str
    path: str
    data: dict[str, Any]
    frontmatter: bool


KINDS = (
    Kind("context", "features/fuzz/fuzzed.context.md", CONTEXT, True),
    Kind("role", "features/fuzz/fuzzed.agent.md", ROLE, True),
    Kind("heartbeat", "features/fuzz/fuzzed.heartbeat.md", HEARTBEAT, True),
    Kind("manifest", "constitution/MANIFEST.yaml", MANIFEST, False),
    Kind("access", "constitution/access.yaml", ACCESS, False),
)

# -- values of every wrong kind ---------------------------------------------------------

NEAR_LIMITS = (
    0,
    1,
    -1,
    200,
    1_000,
    1_001,
    3_600,
    10_000,
    10_001,
    36_500,
    36_501,
    600_000,
    600_001,
    1_000_000,
    1_000_001,
    10_000_000,
    10_000_001,
    2**31,
    2**63 - 1,
    2**63,
    2**64,
    99_999_999_999,
)


def _deep(depth: int, opener: str = "[", closer: str = "]") -> Raw:
    return Raw(opener * depth + closer * depth)


def _laughs(levels: int, width: int) -> Raw:
    """An anchored value and `levels` lists of `width` aliases of the level below it."""
    lines = ["&l0 x"]
    for level in range(1, levels + 1):
        aliases = ", ".join([f"*l{level - 1}"] * width)
        lines.append(f"&l{level} [{aliases}]")
    return Raw("[" + ", ".join(lines) + "]")


RAW_SNIPPETS = st.one_of(
    st.integers(1, 200).map(_deep),
    st.integers(1, 200).map(lambda n: _deep(n, "{a: ", "}")),
    st.integers(1, 100).map(lambda n: Raw("[a: " * n + "]" * n)),
    st.tuples(st.integers(1, 12), st.integers(1, 12)).map(lambda t: _laughs(*t)),
    st.integers(1, 6000).map(lambda n: Raw("9" * n)),
    st.integers(1, 6000).map(lambda n: Raw("0x" + "f" * n)),
    st.integers(1, 6000).map(lambda n: Raw("-0o" + "7" * n)),
    st.integers(1, 400).map(lambda n: Raw("1e" + "9" * n)),
    st.sampled_from(
        [
            Raw("&a [*a]"),
            Raw("*nowhere"),
            Raw("&a x"),
            Raw("{<<: 5}"),
            Raw("{<<: [1]}"),
            Raw("!!int abc"),
            Raw("!!int ''"),
            Raw("!!float abc"),
            Raw("!!bool maybe"),
            Raw("!!timestamp 99"),
            Raw("2025-02-30"),
            Raw("2025-13-01"),
            Raw("2025-01-01 25:00:00"),
            Raw("!!binary xx"),
            Raw("!!binary aGVsbG8="),
            Raw("!!set {a, b}"),
            Raw("!!omap [a, b]"),
            Raw("!!pairs [[a, b]]"),
            Raw("!!python/object:os.system x"),
            Raw("!!python/name:os.system"),
            Raw("!<tag:yaml.org,2002:str> 5"),
            Raw("!!merge 5"),
            Raw("!!null x"),
            Raw('"\\ud800"'),
            Raw('"\\ud83d\\ude00"'),
            Raw('"\\U00110000"'),
            Raw('"\\UFFFFFFFF"'),
            Raw('"\\0"'),
            Raw('"\\x00"'),
            Raw('"\\N\\_\\L\\P"'),
            Raw("[context:read, a:b]"),
            Raw("1e3"),
            Raw(".inf"),
            Raw("-.inf"),
            Raw(".nan"),
            Raw("0777"),
            Raw("190:20:30"),
            Raw("yes"),
            Raw("~"),
            Raw("''"),
            Raw("|\n  literal\n"),
            Raw(">-\n  folded\n"),
            Raw("? [a, b]\n: c"),
            Raw("{[a]: 1}"),
            Raw("{? {a: b}: c}"),
            Raw("- a\n- b"),
            Raw("\t"),
            Raw("\u2028x"),
            Raw("\x85"),
            Raw("\ufeff"),
            Raw("a\u202e\u200bb"),
        ]
    ),
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from(NEAR_LIMITS),
    st.sampled_from(NEAR_LIMITS).map(lambda n: -n),
    st.floats(),
    st.text(max_size=40),
    st.text(st.characters(codec="utf-8"), min_size=200, max_size=400),
    st.sampled_from(["default", "dm", "", "*", "run", "chat", "instructions", "x" * 300]),
)
VALUES = st.recursive(
    st.one_of(SCALARS, RAW_SNIPPETS),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=8), st.integers()), inner, max_size=4),
    ),
    max_leaves=8,
)
KEYS = st.one_of(
    st.text(max_size=12),
    st.integers(),
    st.sampled_from(["default", "dm", "chats", "bots", "contexts", "whne", "chars", "", "<<"]),
)

# -- rendering --------------------------------------------------------------------------


def render(value: Any) -> str:
    """A value as flow YAML (JSON's strings are YAML's double-quoted ones)."""
    if isinstance(value, Raw):
        return value.text
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(render(v) for v in value) + "]"
    items = ", ".join(f"{render(k)}: {render(v)}" for k, v in value.items())
    return "{" + items + "}"


def document(data: dict[Any, Any], *, frontmatter: bool) -> str:
    """Top-level keys one per line, values in flow style; fenced for frontmatter."""
    lines = "".join(f"{render(k)}: {render(v)}\n" for k, v in data.items())
    return f"---\n{lines}---\nThe body.\n" if frontmatter else lines


# -- mutation ---------------------------------------------------------------------------


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(_paths(item, (*prefix, index)))
    return found


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


@st.composite
def mutated(draw: st.DrawFn, kind: Kind) -> dict[Any, Any]:
    """The kind's valid data with one thing changed."""
    data = _copy(kind.data)
    path = draw(st.sampled_from(_paths(data)))
    parent: Any = data
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    action = draw(st.sampled_from(["replace", "replace", "drop", "rename", "add"]))
    if action == "replace" or isinstance(parent, list):
        parent[last] = draw(VALUES)
    elif action == "drop":
        del parent[last]
    elif action == "rename":
        parent[draw(KEYS)] = parent.pop(last)
    else:
        parent[draw(KEYS)] = draw(VALUES)
    return cast(dict[Any, Any], data)


@st.composite
def damaged(draw: st.DrawFn, text: str) -> bytes:
    """The file's bytes, as written or damaged."""
    raw = text.encode("utf-8", "surrogatepass")
    how = draw(
        st.sampled_from(["none", "none", "none", "cut", "splice", "bytes", "bom", "crlf", "cr"])
    )
    if how == "cut":
        return raw[: draw(st.integers(0, len(raw)))]
    if how == "splice":
        at = draw(st.integers(0, len(raw)))
        return raw[:at] + draw(st.binary(max_size=16)) + raw[at:]
    if how == "bytes":
        return draw(st.binary(max_size=200))
    if how == "bom":
        return b"\xef\xbb\xbf" + raw
    if how == "crlf":
        return raw.replace(b"\n", b"\r\n")
    if how == "cr":
        return raw.replace(b"\n", b"\r")
    return raw


@st.composite
def fuzzed_file(draw: st.DrawFn, kind: Kind) -> bytes:
    """One mangled file of `kind`."""
    data = draw(mutated(kind))
    return draw(damaged(document(data, frontmatter=kind.frontmatter)))
