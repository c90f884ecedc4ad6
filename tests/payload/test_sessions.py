"""CLI-agent sessions: a turn sends only what the session has not been sent as it is now."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keel.budget.fit import Attached
from keel.budget.render import Block, render_block
from keel.budget.rows import ViewRows
from keel.errors import UsageError
from keel.link.values import Link
from keel.payload.sessions import SentContext, SessionState, digest, held, session_delta

RULES = "Quote the SLA from the card."
EMPTY = SessionState()


def attached(
    context: str = "ticket",
    entity: str | None = "T-1",
    *,
    rules: str = RULES,
    views: dict[str, list[str]] | None = None,
) -> Attached:
    """A context rendered for real; each view shows one `note` column of the rows given."""
    shown = {"card": ["open"], "log": ["called"]} if views is None else views
    block = render_block(
        context=context,
        entity=entity,
        instructions=rules,
        views=[
            ViewRows(view=name, columns=("note",), rows=tuple((r,) for r in rs), total=len(rs))
            for name, rs in shown.items()
        ],
        chars=3000,
    )
    assert block is not None
    link = Link(context=context, entity=entity, kind="chat", feature="support")
    return Attached(link=link, block=block)


def part(item: Attached, name: str) -> str:
    return dict(item.block.parts)[name]


def test_a_context_new_to_the_session_arrives_whole() -> None:
    item = attached()
    text, state = session_delta(EMPTY, [item], compacted=False)
    assert text == item.block.text
    assert state == SessionState(
        contexts=(
            SentContext(
                context="ticket",
                entity="T-1",
                instructions=digest(part(item, "instructions")),
                views=(("card", digest(part(item, "card"))), ("log", digest(part(item, "log")))),
            ),
        )
    )


def test_a_context_sent_as_it_is_now_is_not_sent_again() -> None:
    item = attached()
    _, state = session_delta(EMPTY, [item], compacted=False)
    text, again = session_delta(state, [item], compacted=False)
    assert text == ""
    assert again == state


def test_only_the_view_that_changed_is_sent_again() -> None:
    _, state = session_delta(EMPTY, [attached()], compacted=False)
    changed = attached(views={"card": ["closed"], "log": ["called"]})
    text, state = session_delta(state, [changed], compacted=False)
    assert text == (
        changed.block.head
        + "(instructions as sent before)\n"
        + part(changed, "card")
        + "(unchanged views: log)\n"
        + "</context>"
    )
    assert "closed" in text
    assert "called" not in text
    assert state.contexts[0].views[0] == ("card", digest(part(changed, "card")))


def test_instructions_edited_since_they_were_sent_are_sent_again() -> None:
    _, state = session_delta(EMPTY, [attached()], compacted=False)
    edited = attached(rules="Quote the SLA, then the owner.")
    text, _ = session_delta(state, [edited], compacted=False)
    assert part(edited, "instructions") in text
    assert "(instructions as sent before)" not in text


def test_instructions_the_session_has_not_seen_are_sent_whatever_their_hash() -> None:
    item = attached()
    seen_views_only = SessionState(
        contexts=(
            SentContext(
                context="ticket",
                entity="T-1",
                instructions=digest(part(item, "instructions")),
                views=(("card", digest(part(item, "card"))), ("log", digest(part(item, "log")))),
                instructions_sent=False,
            ),
        )
    )
    text, state = session_delta(seen_views_only, [item], compacted=False)
    assert RULES in text
    assert "(unchanged views: card, log)" in text
    assert state.contexts[0].instructions_sent


def test_a_view_new_to_the_context_is_sent_and_one_gone_is_forgotten() -> None:
    _, state = session_delta(EMPTY, [attached()], compacted=False)
    item = attached(views={"card": ["open"], "queue": ["3 waiting"]})
    text, state = session_delta(state, [item], compacted=False)
    assert part(item, "queue") in text
    assert "(unchanged views: card)" in text
    assert [name for name, _ in state.contexts[0].views] == ["card", "queue"]


def test_a_context_no_longer_attached_is_withdrawn_in_one_line_and_forgotten() -> None:
    kb = attached("kb", None)
    _, state = session_delta(EMPTY, [attached(), kb], compacted=False)
    text, state = session_delta(state, [kb], compacted=False)
    assert text == '<context-withdrawn name="ticket" entity="T-1"/>'
    assert [c.pair for c in state.contexts] == [("kb", None)]
    text, state = session_delta(state, [], compacted=False)
    assert text == '<context-withdrawn name="kb"/>'
    assert state == EMPTY


def test_withdrawals_come_first_sorted_then_blocks_in_the_order_attached() -> None:
    old = [attached("zeta", None), attached("alpha", 'x"y'), attached("alpha", None)]
    _, state = session_delta(EMPTY, old, compacted=False)
    second, first = attached("b", None), attached("a", None)
    text, state = session_delta(state, [second, first], compacted=False)
    assert text.split("\n\n") == [
        '<context-withdrawn name="alpha"/>\n'
        '<context-withdrawn name="alpha" entity="x&quot;y"/>\n'
        '<context-withdrawn name="zeta"/>',
        second.block.text,
        first.block.text,
    ]
    assert [c.context for c in state.contexts] == ["a", "b"]


def test_a_context_attached_again_after_its_withdrawal_arrives_whole() -> None:
    item = attached()
    _, state = session_delta(EMPTY, [item], compacted=False)
    _, state = session_delta(state, [], compacted=False)
    text, _ = session_delta(state, [item], compacted=False)
    assert text == item.block.text


def test_after_a_compaction_everything_attached_is_sent_whole_and_nothing_withdrawn() -> None:
    ticket, kb = attached(), attached("kb", None)
    _, state = session_delta(EMPTY, [ticket, attached("gone", None)], compacted=False)
    text, after = session_delta(state, [ticket, kb], compacted=True)
    assert text == f"{ticket.block.text}\n\n{kb.block.text}"
    assert after == session_delta(EMPTY, [ticket, kb], compacted=False)[1]


def test_nothing_attached_and_nothing_to_withdraw_sends_nothing() -> None:
    assert session_delta(EMPTY, [], compacted=False) == ("", EMPTY)
    _, state = session_delta(EMPTY, [attached()], compacted=False)
    assert session_delta(state, [], compacted=True) == ("", EMPTY)


def test_a_block_without_its_pieces_is_sent_whole_when_it_changed() -> None:
    link = Link(context="note", entity=None, kind="code", feature="support")
    item = Attached(link=link, block=Block(text="<context>x</context>"))
    _, state = session_delta(EMPTY, [item], compacted=False)
    assert session_delta(state, [item], compacted=False)[0] == ""
    changed = Attached(link=link, block=Block(text="<context>y</context>"))
    assert session_delta(state, [changed], compacted=False)[0] == changed.block.text


def test_the_same_context_and_entity_twice_is_refused() -> None:
    with pytest.raises(UsageError, match=r"'ticket' for 'T-1' is attached twice"):
        session_delta(EMPTY, [attached(), attached()], compacted=False)
    entry = SentContext(context="kb", entity=None, instructions="0")
    with pytest.raises(UsageError, match=r"holds 'kb' twice"):
        SessionState(contexts=(entry, entry))


def test_a_state_keeps_its_entries_in_key_order() -> None:
    b, a_none, a_key = (
        SentContext(context="b", entity=None, instructions="0"),
        SentContext(context="a", entity=None, instructions="0"),
        SentContext(context="a", entity="k", instructions="0"),
    )
    state = SessionState(contexts=(b, a_key, a_none))
    assert state.contexts == (a_none, a_key, b)
    assert state.sent("a", "k") == a_key
    assert state.sent("a") == a_none
    assert state.sent("c") is None


NAMES = st.sampled_from(["ticket", "kb", "client"])
TURN = st.lists(
    st.tuples(
        NAMES,
        st.sampled_from([None, "T-1"]),
        st.dictionaries(
            st.sampled_from(["card", "log"]), st.lists(st.sampled_from(["a", "b"]), max_size=2)
        ),
    ),
    max_size=3,
    unique_by=lambda t: (t[0], t[1]),
)


@given(st.lists(st.tuples(TURN, st.booleans()), min_size=1, max_size=6))
def test_the_state_after_a_turn_depends_only_on_what_it_attached(
    turns: list[tuple[list[tuple[str, str | None, dict[str, list[str]]]], bool]],
) -> None:
    state = EMPTY
    for contexts, compacted in turns:
        items = [attached(c, e, views=v) for c, e, v in contexts]
        text, state = session_delta(state, items, compacted=compacted)
        assert state == session_delta(EMPTY, items, compacted=True)[1]
        assert session_delta(state, items, compacted=False)[0].count(RULES) == 0
        if compacted:
            assert text == "\n\n".join(i.block.text for i in items)


def test_a_context_the_session_holds_and_the_turn_stubbed_stands_as_sent() -> None:
    kb = attached("kb", None)
    _, state = session_delta(EMPTY, [attached(), kb], compacted=False)
    text, after = session_delta(state, [kb], compacted=False, stubbed=[("ticket", "T-1")])
    assert text == "", "neither withdrawn nor sent again: the agent still holds it"
    assert after == state
    assert held(state, [("ticket", "T-1"), ("other", None)]) == {("ticket", "T-1")}


def test_after_a_compaction_nothing_is_held() -> None:
    _, state = session_delta(EMPTY, [attached()], compacted=False)
    text, after = session_delta(state, [], compacted=True, stubbed=[("ticket", "T-1")])
    assert (text, after) == ("", EMPTY)
