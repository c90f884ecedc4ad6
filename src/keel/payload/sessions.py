"""CLI-agent sessions: send a long-lived session only what changed in its attached contexts.

An API agent gets every attached block whole on every turn. A CLI agent keeps its own
session, so what it was sent stays in front of it: sending the same instructions and rows
again only spends its window. `session_delta` compares the turn's attached blocks with
what the session was last sent (a `SessionState`, kept as hashes) and returns the tail
text to send:

- a context the session has not been sent: its whole block;
- one it has, exactly as it was sent: nothing — it stands until a withdrawal says
  otherwise, and repeating it only spends the window;
- one it has, changed: the opening tag, `(instructions as sent before)` in place of
  instructions that are as before, only the views whose text changed, one line naming the
  views left out as unchanged, and the closing tag;
- one it was sent that the turn no longer attaches: a one-line withdrawal, and the state
  forgets it (attached again later, it arrives whole);
- after the agent compacted its context, nothing it was sent can be relied on: the state
  is dropped and every attached block is sent whole.

Withdrawals come first, sorted by context and entity, then the blocks in the order they
are attached; pieces are separated by a blank line. A turn that attaches nothing and
withdraws nothing, or whose contexts are all as they were sent, gets '' — send no message
for it. The sizes the ledger records stay the
rendered blocks' — the delta is what the session is billed, not what the context costs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from keel.budget.fit import Attached
from keel.budget.render import Block, attr
from keel.errors import UsageError

INSTRUCTIONS = "instructions"
UNCHANGED_INSTRUCTIONS = "(instructions as sent before)\n"


@dataclass(frozen=True, slots=True, kw_only=True)
class SentContext:
    """What a session was last sent of one (context, entity), as SHA-256 hex digests.

    `instructions_sent` False means the session has not seen the instructions (a caller
    may record views alone); the next delta then sends them whatever their hash.
    """

    context: str
    entity: str | None
    instructions: str
    views: tuple[tuple[str, str], ...] = ()
    instructions_sent: bool = True

    @property
    def pair(self) -> tuple[str, str | None]:
        return (self.context, self.entity)


def _order(pair: tuple[str, str | None]) -> tuple[str, bool, str]:
    context, entity = pair
    return (context, entity is not None, entity or "")


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionState:
    """Everything a session holds: one `SentContext` per (context, entity), in key order."""

    contexts: tuple[SentContext, ...] = ()

    def __post_init__(self) -> None:
        ordered = tuple(sorted(self.contexts, key=lambda c: _order(c.pair)))
        for first, second in pairwise(ordered):
            if first.pair == second.pair:
                raise UsageError(
                    f"a session state holds {_name(first.pair)} twice — "
                    "keep one entry per context and entity"
                )
        object.__setattr__(self, "contexts", ordered)

    def sent(self, context: str, entity: str | None = None) -> SentContext | None:
        """What the session was last sent of this context and entity, if anything."""
        for entry in self.contexts:
            if entry.pair == (context, entity):
                return entry
        return None


def digest(text: str) -> str:
    """The SHA-256 hex digest of `text` (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def session_delta(
    state: SessionState,
    attached: Sequence[Attached],
    *,
    compacted: bool,
    stubbed: Iterable[tuple[str, str | None]] = (),
) -> tuple[str, SessionState]:
    """The tail text this turn sends the session, and what the session then holds.

    A context the turn stubbed (left out for room) that the session holds still applies
    and is still in front of the agent: it is neither withdrawn nor stubbed (`held`), and
    the session keeps it as it was sent.
    """
    before = {} if compacted else {entry.pair: entry for entry in state.contexts}
    blocks: list[str] = []
    now: dict[tuple[str, str | None], SentContext] = {}
    for item in attached:
        pair = item.link.pair
        if pair in now:
            raise UsageError(
                f"{_name(pair)} is attached twice in one turn — pass each context and "
                "entity once (fit_turn does)"
            )
        entry = _sent(item)
        prior = before.get(pair)
        if prior is None:
            blocks.append(item.block.text)
        elif entry != prior or not prior.instructions_sent:
            blocks.append(_changes(item.block, prior))
        # else: the session holds it as it is; it stands until a withdrawal says otherwise
        now[pair] = entry
    for pair in stubbed:  # held: the session has it, so it stands as sent
        if pair in before:
            now.setdefault(pair, before[pair])
    gone = sorted((pair for pair in before if pair not in now), key=_order)
    pieces = ["\n".join(_withdrawal(pair) for pair in gone)] if gone else []
    pieces += blocks
    return "\n\n".join(pieces), SessionState(contexts=tuple(now.values()))


def held(
    state: SessionState, stubbed: Iterable[tuple[str, str | None]]
) -> frozenset[tuple[str, str | None]]:
    """The stubbed contexts a session holds: they stand as sent, with no stub line."""
    have = {entry.pair for entry in state.contexts}
    return frozenset(pair for pair in stubbed if pair in have)


def _sent(item: Attached) -> SentContext:
    block = item.block
    if not block.parts:
        return SentContext(
            context=item.link.context, entity=item.link.entity, instructions=digest(block.text)
        )
    return SentContext(
        context=item.link.context,
        entity=item.link.entity,
        instructions=digest(_instructions(block)),
        views=tuple((name, digest(text)) for name, text in block.parts if name != INSTRUCTIONS),
    )


def _instructions(block: Block) -> str:
    return "".join(text for name, text in block.parts if name == INSTRUCTIONS)


def _changes(block: Block, prior: SentContext) -> str:
    """The block with what the session already holds replaced by one-line notes."""
    if not block.parts:
        # A block without its pieces cannot be compared part by part: send it whole.
        return block.text
    sent_views = dict(prior.views)
    out = [block.head]
    unchanged: list[str] = []
    for name, text in block.parts:
        if name == INSTRUCTIONS:
            same = prior.instructions_sent and prior.instructions == digest(text)
            out.append(UNCHANGED_INSTRUCTIONS if same else text)
        elif sent_views.get(name) == digest(text):
            unchanged.append(name)
        else:
            out.append(text)
    if unchanged:
        names = ", ".join(attr(name) for name in unchanged)
        out.append(f"(unchanged views: {names})\n")
    out.append(block.tail)
    return "".join(out)


def _withdrawal(pair: tuple[str, str | None]) -> str:
    context, entity = pair
    key = f' entity="{attr(entity)}"' if entity is not None else ""
    return f'<context-withdrawn name="{attr(context)}"{key}/>'


def _name(pair: tuple[str, str | None]) -> str:
    context, entity = pair
    return f"{context!r}" if entity is None else f"{context!r} for {entity!r}"
