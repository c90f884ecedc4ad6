"""Fitting a turn's linked contexts into its budgets: attached blocks, or one-line stubs.

Links arrive strongest first. Each is attached whole (its block within its own `chars`)
while the turn has room — at most `maxActive` blocks, at most `turnChars` characters in
all — and otherwise arrives as a stub naming the knob that kept it out and how to get it.
Nothing is dropped silently.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from keel.brain.knobs import TurnKnobs
from keel.budget.render import Block, inline, open_tag
from keel.link.values import Link

Knob = Literal["chars", "contexts.maxActive", "contexts.turnChars"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Attached:
    """A context the turn carries, with its rendered block."""

    link: Link
    block: Block


@dataclass(frozen=True, slots=True, kw_only=True)
class Stub:
    """A linked context the budget kept out, as the one line the agent sees instead."""

    link: Link
    knob: Knob
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Fitted:
    attached: tuple[Attached, ...]
    stubs: tuple[Stub, ...]

    @property
    def chars(self) -> int:
        return sum(a.block.chars for a in self.attached)


def opened_by_name(link: Link) -> bool:
    """Whether the agent asked for this context by name (`context_open`, a turn's `open`),
    so it is delivered even when its instructions alone pass its `chars`: a stub that
    offered it must not be refused. An open stays an ask while it is kept, and counts
    when a stronger link carries the same context (`asked`)."""
    return link.kind == "ask" or link.asked


def stub_line(link: Link, knob: Knob, *, can_open: bool, where: str | None = None) -> str:
    """What the model reads instead of a context a budget kept out.

    It says the context exists and how to read it; which knob kept it out is for the
    operator (the stub's `knob`, the ledger, `--json`), not for the model. A context too
    large for its own `chars` is still delivered when opened by name (`opened_by_name`),
    so its stub offers `context_open` too. `where` says where that tool is, for an agent
    that does not have it among its own.
    """
    head = open_tag("context-stub", link.context, link.entity)
    why = "left out: too large to attach" if knob == "chars" else "left out for room"
    if can_open:
        args = ", ".join(json.dumps(a) for a in (link.context, link.entity) if a is not None)
        whole = " whole" if knob == "chars" else ""
        why += f"; context_open({inline(args)}) reads it{whole}"
        if where is not None:
            why += f" — {where}"
    return f"{head}{why}</context-stub>"


def fit_turn(
    links: Sequence[Link],
    render: Callable[[Link], Block | None],
    knobs: TurnKnobs,
    *,
    can_open: bool,
) -> Fitted:
    """Attach strongest first within `maxActive` and `turnChars`; stub the rest.

    `render` is called only for links that may still attach, so a turn past `maxActive`
    reads no views for the contexts it stubs. A turn's `render` gives a link the agent
    opened by name (`opened_by_name`) a block whatever its `chars`, as `context_open` does,
    so such a link is stubbed only for the turn's room.
    """
    attached: list[Attached] = []
    stubs: list[Stub] = []
    used = 0
    for link in links:
        full = len(attached) >= knobs.max_active
        block = None if full else render(link)
        knob = "contexts.maxActive" if full else _knob(block, len(attached), used, knobs)
        if block is None or knob is not None:
            knob = knob or "chars"
            text = stub_line(link, knob, can_open=can_open)
            stubs.append(Stub(link=link, knob=knob, text=text))
            continue
        attached.append(Attached(link=link, block=block))
        used += block.chars
    return Fitted(attached=tuple(attached), stubs=tuple(stubs))


def _knob(block: Block | None, count: int, used: int, knobs: TurnKnobs) -> Knob | None:
    """The knob that keeps this block out, or None when it fits."""
    if block is None:
        return "chars"
    if count >= knobs.max_active:
        return "contexts.maxActive"
    if used + block.chars > knobs.turn_chars:
        return "contexts.turnChars"
    return None
