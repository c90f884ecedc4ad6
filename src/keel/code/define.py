"""What brain code defines: the code half of a context, and a hook's gate.

Brain code lives beside its spec — `<id>.context.py` beside `<id>.context.md`,
`<id>.hook.py` beside `<id>.hook.md` — and exports one value made by these functions::

    # features/support/ticket.context.py
    import re
    from keel.code import define_context

    def match(turn):
        found = re.search(r"\\bT-\\d+\\b", turn.input)
        return {"entity": found.group(0)} if found else None

    context = define_context(match=match)

    # features/dutch/skip.hook.py
    from keel.code import define_gate

    hook = define_gate(lambda event, ctx: {"reach": [{"context": event["skill"]}]})
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Match = Callable[..., Any]
Render = Callable[..., Any]
Gate = Callable[..., Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextCode:
    """The code half of a context: `match` links a turn, `render` adds sections."""

    match: Match | None = None
    render: Render | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class HookGate:
    """A hook's gate: decides what one fire is a run of (its reach, its entity)."""

    gate: Gate


def define_context(*, match: Match | None = None, render: Render | None = None) -> ContextCode:
    """Declare a context's code; export the result as `context` from `<id>.context.py`."""
    if match is None and render is None:
        raise TypeError("define_context needs match=, render= or both")
    for name, fn in (("match", match), ("render", render)):
        if fn is not None and not callable(fn):
            raise TypeError(f"define_context: {name} must be a function, got {type(fn).__name__}")
    return ContextCode(match=match, render=render)


def define_gate(gate: Gate) -> HookGate:
    """Declare a hook's gate; export the result as `hook` from `<id>.hook.py`."""
    if not callable(gate):
        raise TypeError(f"define_gate needs a function, got {type(gate).__name__}")
    return HookGate(gate=gate)
