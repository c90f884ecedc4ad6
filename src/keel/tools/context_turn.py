"""`context_turn(input, session?, compacted?)`: a coding agent's turn, as the contexts it adds.

A coding agent (Claude Code, Cursor, any MCP client) keeps its own conversation; what Keel
adds to it is the feature contexts a turn carries. This tool prepares and records one turn
of the conversation it is called in — the turn is counted, its links kept, its ledger
written, as any turn's — and answers with the text the agent reads (`turn_text`):

- for a role with `agent: cli` and a session, the session's delta: instructions once,
  views again only when they change, a withdrawal line for a context that left, and
  everything again when `compacted` says the agent lost what it was sent;
- for any other role, every attached block whole;
- then one line per context the budget stubbed and per link Keel refused.

A turn that adds nothing answers with one line saying so, never with an empty text: that
no context applies, or, in a session holding every context the turn attaches as it is now,
that nothing is new (those contexts stand until a withdrawal says otherwise).

The turn is recorded inside the tool call's own transaction (the registry runs every
call in one), so a call that fails — a turn that does not fit included — leaves nothing
behind, and the call and its turn commit together.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from keel.budget.fit import Stub
from keel.link.values import Refusal
from keel.store import Tx
from keel.store.store import Store
from keel.tokens import Estimator
from keel.tools.context_open import STRING
from keel.tools.registry import Tool, ToolContext
from keel.turn.prepare import prepare_and_assemble
from keel.turn.prepared import PreparedTurn, Session

NO_CONTEXT = "No feature context applies to this input; nothing to add."
NOTHING_NEW = "Nothing new: the contexts this session was sent stand as they were."


def _as_fitted(stub: Stub) -> str:
    return stub.text


def turn_text(prepared: PreparedTurn, *, stub_line: Callable[[Stub], str] = _as_fitted) -> str:
    """What a coding agent reads of a prepared turn; '' when there is nothing to add.

    The contexts (the session's delta, else the whole blocks), then one line per stub and
    per refused link, separated by a blank line. `stub_line` words a stub (by default as
    the budget did), for an agent that reads it somewhere other than a tool call.
    """
    if prepared.session_text is not None:
        contexts = prepared.session_text
    else:
        contexts = "\n\n".join(a.block.text for a in prepared.attached)
    stubs = [s for s in prepared.stubs if s.link.pair not in prepared.session_held]
    notes = [stub_line(s) for s in stubs] + [refusal_line(r) for r in prepared.refused]
    pieces = [contexts] if contexts else []
    if notes:
        pieces.append("\n".join(notes))
    return "\n\n".join(pieces)


def refusal_line(refusal: Refusal) -> str:
    """One refused link in a line: `refused: client=globex (ask link): <reason>`."""
    key = f"={refusal.entity}" if refusal.entity is not None else ""
    return f"refused: {refusal.context}{key} ({refusal.kind} link): {refusal.reason}"


class Joined(Store):
    """The store as seen from inside a transaction: every transaction it opens is that one.

    `prepare_and_assemble` records a turn in a transaction of its own; a tool already runs
    in one, and on SQLite a second would wait for the first's write lock until it gave up.
    A caller that writes more beside the turn (the prompt hook) joins them the same way.
    """

    __slots__ = ("_tx",)

    def __init__(self, tx: Tx) -> None:
        super().__init__(tx.connection.engine)
        self._tx = tx

    @contextmanager
    def transaction(self) -> Iterator[Tx]:
        yield self._tx


def _run(ctx: ToolContext, args: Mapping[str, Any]) -> str:
    # The registry this tool belongs to imports this module; the turn shows that registry's
    # tools, so it is looked up when the tool runs.
    from keel.tools import CODING_TOOLS

    request = replace(ctx.request, input=args["input"], role=ctx.role.id)
    session = None
    if "session" in args:
        session = Session(id=args["session"], compacted=bool(args.get("compacted", False)))
    prepared, _ = prepare_and_assemble(
        ctx.brain,
        Joined(ctx.tx),
        request,
        Estimator(),
        CODING_TOOLS.tools_for,
        session=session,
        code=ctx.code,
    )
    return turn_text(prepared) or (NOTHING_NEW if prepared.attached else NO_CONTEXT)


CONTEXT_TURN = Tool(
    name="context_turn",
    description=(
        "Start a turn for this input: returns the feature contexts it adds "
        "(in a session, only what changed since the last turn)."
    ),
    parameters={
        "type": "object",
        "properties": {
            "input": STRING,
            "session": {"type": "string", "minLength": 1},
            "compacted": {"type": "boolean"},
        },
        "required": ["input"],
    },
    capability="context:read",
    risk="safe",
    run=_run,
)
