"""`context_turn`: one recorded turn, answered with the contexts it adds for the agent."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from keel.budget.fit import Attached, Stub
from keel.budget.render import Block
from keel.errors import FitOverflow, Refused
from keel.link.values import Conversation, Link, Refusal, TurnRequest
from keel.runtime.engine import Engine
from keel.tools import CODING_TOOLS, TOOLS, turn_text
from keel.tools.context_turn import NO_CONTEXT
from keel.turn.prepared import PreparedTurn
from tests.mcp.brains import DEV_BRAIN, SENT_BEFORE, STYLE, TICKET, WITHDRAWN_T1

WriteBrain = Callable[[dict[str, str | bytes]], Path]
DEV = Conversation(bot="cli", chat="cli")
NOW = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)


def prepared(
    *,
    attached: tuple[Attached, ...] = (),
    stubs: tuple[Stub, ...] = (),
    refused: tuple[Refusal, ...] = (),
    session_text: str | None = None,
) -> PreparedTurn:
    return PreparedTurn(
        turn=1,
        role="dev",
        attached=attached,
        stubs=stubs,
        refused=refused,
        catalog=(),
        pins={},
        session_text=session_text,
    )


BLOCK = Attached(
    link=Link(context="style", entity=None, kind="always", feature="shop"),
    block=Block(text='<context name="style">\nbody\n</context>'),
)
STUB = Stub(
    link=Link(context="ticket", entity="T-2", kind="chat", feature="shop"),
    knob="chars",
    text='<context name="ticket" entity="T-2"/> not attached — budget',
)
REFUSAL = Refusal(context="client", entity="globex", kind="ask", reason="pinned to acme")


@pytest.mark.parametrize(
    ("turn_", "text"),
    [
        pytest.param(prepared(attached=(BLOCK,)), BLOCK.block.text, id="whole-without-session"),
        pytest.param(
            prepared(attached=(BLOCK,), session_text="<delta/>"), "<delta/>", id="session-delta"
        ),
        pytest.param(prepared(session_text=""), "", id="nothing-new"),
        pytest.param(
            prepared(session_text="<delta/>", stubs=(STUB,), refused=(REFUSAL,)),
            f"<delta/>\n\n{STUB.text}\nrefused: client=globex (ask link): pinned to acme",
            id="stubs-and-refusals-follow",
        ),
        pytest.param(prepared(session_text="", stubs=(STUB,)), STUB.text, id="a-stub-alone"),
    ],
)
def test_turn_text(turn_: PreparedTurn, text: str) -> None:
    assert turn_text(turn_) == text


def test_a_caller_may_word_the_stubs_its_own_way() -> None:
    turn_ = prepared(session_text="<delta/>", stubs=(STUB,))
    assert turn_text(turn_, stub_line=lambda s: f"stub {s.link.context}") == (
        "<delta/>\n\nstub ticket"
    )


def engine_on(root: Path, database_url: str | None = None) -> Engine:
    engine = Engine(root, database_url, tools=CODING_TOOLS, watch=False)
    engine.apply_state()
    return engine


@pytest.fixture
def dev(write_brain: WriteBrain, database_url: str) -> Iterator[Engine]:
    with engine_on(write_brain(DEV_BRAIN), database_url) as engine:
        yield engine


def turn(engine: Engine, text: str, **arguments: object) -> str:
    request = TurnRequest(conversation=DEV, now=NOW)
    return engine.call(request, "context_turn", {"input": text, **arguments})


def test_a_session_gets_instructions_once_then_a_withdrawal(dev: Engine) -> None:
    first = turn(dev, "Fix the checkout button", session="s1")
    dev.bind(context="ticket", entity="T-1", chat="cli")
    second = turn(dev, "Now the colour", session="s1")
    dev.unbind(context="ticket", chat="cli")
    third = turn(dev, "Done", session="s1")
    again = turn(dev, "After a compaction", session="s1", compacted=True)
    assert STYLE in first
    assert STYLE not in second, "the session holds the style as it is now"
    assert TICKET in second
    assert "T-1 | Checkout button is grey | open" in second
    assert third.startswith(WITHDRAWN_T1)
    assert STYLE not in third
    assert STYLE in again
    assert SENT_BEFORE not in again


def test_each_call_is_a_recorded_turn(dev: Engine) -> None:
    turn(dev, "one", session="s1")
    turn(dev, "two", session="s1")
    with dev.store.transaction() as tx:
        history = tx.history(DEV, before_turn=99, limit=10)
        ledger = tx.ledger(role="dev")
    assert [m.text for m in history] == ["one", "two"]
    assert sorted({(e.turn, e.context) for e in ledger}) == [(1, "style"), (2, "style")]


def test_without_a_session_the_blocks_come_whole_each_time(dev: Engine) -> None:
    texts = [turn(dev, "hi") for _ in range(2)]
    assert all(STYLE in t for t in texts)


def test_a_turn_that_adds_nothing_says_so_in_one_line(write_brain: WriteBrain) -> None:
    quiet = {**DEV_BRAIN, "features/shop/style.context.md": "---\nwhen: [ask]\n---\nSmall.\n"}
    with engine_on(write_brain(quiet)) as engine:
        first = turn(engine, "hi", session="s1")
        assert turn(engine, "hi again", session="s1") == first
        assert turn(engine, "hi") == first
    assert first == NO_CONTEXT == "No feature context applies to this input; nothing to add."
    assert "last turn" not in first, "a fresh session had no earlier turn to compare with"


def test_a_turn_that_does_not_fit_is_refused_and_records_nothing(
    write_brain: WriteBrain, database_url: str
) -> None:
    small = "name: shop-dev\nmodel: { window: 60, output_reserve: 10, input_allocation: 50 }\n"
    brain = write_brain({**DEV_BRAIN, "constitution/MANIFEST.yaml": small})
    with engine_on(brain, database_url) as engine:
        with pytest.raises(FitOverflow, match="over the input allocation of 50"):
            turn(engine, "a request far too long for a fifty-token input " * 5, session="s1")
        with engine.store.transaction() as tx:
            assert tx.current_turn(DEV) == 0
            assert tx.session_state("s1").contexts == ()


def test_only_the_coding_registry_has_it_and_it_needs_context_read() -> None:
    assert TOOLS.get("context_turn") is None
    tool = CODING_TOOLS.get("context_turn")
    assert tool is not None
    assert (tool.capability, tool.risk) == ("context:read", "safe")


def test_a_role_without_context_read_is_refused(dev: Engine) -> None:
    request = TurnRequest(conversation=DEV, now=NOW, role="auditor")
    with pytest.raises(Refused, match="role 'auditor' cannot call context_turn"):
        dev.call(request, "context_turn", {"input": "hi"})
