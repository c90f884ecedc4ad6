"""The turn journal's table: what its migration builds, rows read back exactly, filters."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine, inspect, update

from keel.assemble.values import Fit, Speaker
from keel.brain.knobs import TurnKnobs
from keel.brain.specs import ReachEntry
from keel.budget.rows import ViewRows
from keel.errors import StoreError
from keel.link.values import (
    Binding,
    Conversation,
    KeptLink,
    Link,
    Origin,
    Refusal,
    RunRef,
    Stored,
    TurnRequest,
)
from keel.store import Store
from keel.store.journal_values import (
    Candidate,
    CodeAnswer,
    Decision,
    JournalReplay,
    SectionSize,
    TurnJournal,
)
from keel.store.schema import turn_journal

T0 = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
ROOM = Conversation(bot="nova", chat="tg:chat:1", thread="7")
TICKET = Link(context="ticket", entity="T-1", kind="chat", feature="support")
KB = Link(context="kb", entity=None, kind="ask", feature="support")


@pytest.fixture
def store(engine: Engine) -> Store:
    made = Store(engine)
    made.migrate()
    return made


def journal(turn: int = 1, **fields: object) -> TurnJournal:
    """A journal with every part filled in."""
    conversation = fields.pop("conversation", ROOM)
    assert isinstance(conversation, Conversation)
    request = TurnRequest(
        conversation=conversation,
        now=T0 + timedelta(minutes=turn),
        role="desk",
        dm=True,
        input="where is my refund?",
        reply_to=("m1",),
        run=RunRef(kind="hook", id="ticket-opened"),
        entity="T-1",
        reach=(ReachEntry(context="ticket", entity="T-1"),),
        attach=(ReachEntry(context="kb"),),
        open=(ReachEntry(context="kb"),),
    )
    card = ViewRows(
        view="support_ticket_card",
        by="ticket_id",
        columns=("ticket_id", "opened", "note"),
        rows=(("T-1", "2026-11-01", None), ("T-1", "2026-11-02", "a | b\nc")),
        total=5,
    )
    values: dict[str, object] = {
        "id": None,
        "request": request,
        "turn": turn,
        "role": "desk",
        "decisions": (
            Decision(link=TICKET, chars=812),
            Decision(link=KB, knob="contexts.maxActive"),
        ),
        "refused": (
            Refusal(context="client", entity="globex", kind="ask", reason="pinned to acme"),
        ),
        "pins": {"client": "acme", "prospect": None},
        "reach": (ReachEntry(context="ticket", entity="T-1"),),
        "knobs": TurnKnobs(max_active=1, turn_chars=12000, rows=20, code_timeout_ms=2000),
        "catalog": ("kb", "policy"),
        "log": ("a note",),
        "code": (
            CodeAnswer(context="ticket", answer="yes"),
            CodeAnswer(context="kb", failure="boom"),
        ),
        "session": "s-1",
        "sections": (SectionSize(id="history", budget=4000, used=12, clipped=True),),
        "fit": Fit(
            ok=True, estimate=900, window=200000, output_reserve=8000, input_allocation=150000
        ),
        "counter": "estimate",
        "replay": JournalReplay(
            stored=Stored(
                turn=turn,
                origins=(
                    Origin(
                        bot="nova",
                        chat="tg:chat:1",
                        message_id="m1",
                        sent_at=T0,
                        thread="7",
                        feature="support",
                        run="hook:ticket-opened",
                        reach=(ReachEntry(context="ticket", entity="T-1"),),
                        pending_card=True,
                    ),
                ),
                bindings=(
                    Binding(context="ticket", entity="T-1", chat="tg:chat:1", thread="7"),
                    Binding(
                        context="client",
                        entity="acme",
                        chat="tg:chat:1",
                        bot="nova",
                        source="access",
                    ),
                ),
                kept=(
                    KeptLink(
                        context="kb", entity=None, kind="ask", feature="support", until_turn=4
                    ),
                ),
            ),
            candidates=(
                Candidate(
                    link=TICKET,
                    chars=3000,
                    instructions_chars=120,
                    instructions_sha="abc",
                    views=(card,),
                ),
                Candidate(link=KB, chars=3000, instructions_chars=40, instructions_sha="def"),
            ),
            renders=(ViewRows(view="support_queue", problem="could not be read: no such table"),),
        ),
    }
    values.update(fields)
    return TurnJournal(**values)  # type: ignore[arg-type]


def test_the_migration_builds_exactly_the_table_the_queries_use(engine: Engine) -> None:
    Store(engine).migrate()
    inspector = inspect(engine)
    name = turn_journal.name
    columns = {c["name"]: c["nullable"] for c in inspector.get_columns(name)}
    assert columns == {c.name: c.nullable for c in turn_journal.columns}
    primary = inspector.get_pk_constraint(name)["constrained_columns"]
    assert primary == [c.name for c in turn_journal.primary_key.columns]
    indexes = {
        (i["name"], tuple(i["column_names"]), bool(i["unique"]))
        for i in inspector.get_indexes(name)
    }
    assert indexes == {
        (i.name, tuple(c.name for c in i.columns), bool(i.unique)) for i in turn_journal.indexes
    }


def test_a_turn_is_read_back_exactly_with_its_replay_part(store: Store) -> None:
    written = journal()
    with store.transaction() as tx:
        first = tx.record_journal(written)
        second = tx.record_journal(journal(2))
    assert second > first
    with store.transaction() as tx:
        assert tx.journal(first) == replace(written, id=first)
        assert tx.journal(second + 1000) is None


def test_listing_reads_summaries_newest_first_with_every_filter(store: Store) -> None:
    elsewhere = Conversation(bot="largo", chat="tg:chat:2")
    with store.transaction() as tx:
        ids = [
            tx.record_journal(journal(1)),
            tx.record_journal(journal(2, role="sdr")),
            tx.record_journal(journal(3, conversation=elsewhere)),
            tx.record_journal(journal(4, conversation=replace(ROOM, thread=None))),
        ]
    with store.transaction() as tx:
        listed = tx.journals()
        assert [j.id for j in listed] == ids[::-1]
        assert all(j.replay is None for j in listed)
        assert listed[-1] == replace(journal(1), id=ids[0], replay=None)
        assert [j.id for j in tx.journals(newest_first=False)] == ids
        assert [j.id for j in tx.journals(role="sdr")] == [ids[1]]
        assert [j.id for j in tx.journals(bot="largo")] == [ids[2]]
        assert [j.id for j in tx.journals(chat="tg:chat:1")] == [ids[3], ids[1], ids[0]]
        assert [j.id for j in tx.journals(chat="tg:chat:1", thread="7")] == [ids[1], ids[0]]
        assert [j.id for j in tx.journals(since=T0 + timedelta(minutes=2))] == ids[:0:-1]
        assert [j.id for j in tx.journals(limit=2, newest_first=False)] == ids[2:]
        (full,) = tx.journals(role="sdr", replay=True)
        assert full == replace(journal(2, role="sdr"), id=ids[1])
        with pytest.raises(StoreError, match=r"a limit of -1 turns is negative"):
            tx.journals(limit=-1)


@pytest.mark.parametrize(
    ("column", "text", "problem"),
    [
        pytest.param("data", "{}", r"journal version None, expected 1", id="no-version"),
        pytest.param("data", "not json", r"JSONDecodeError", id="not-json"),
        pytest.param("replay", '{"v": 1}', r"KeyError: 'stored'", id="replay-without-parts"),
    ],
)
def test_a_row_that_does_not_hold_a_journal_says_which_and_what_to_do(
    store: Store, column: str, text: str, problem: str
) -> None:
    with store.transaction() as tx:
        ident = tx.record_journal(journal())
        tx.connection.execute(update(turn_journal).values({column: text}))
    with (
        store.transaction() as tx,
        pytest.raises(
            StoreError,
            match=rf"turn {ident} of keel_turn_journal cannot be read \(.*{problem}.*delete the row",
        ),
    ):
        tx.journal(ident)


def test_a_chats_messages_list_oldest_first_by_bot_and_thread(store: Store) -> None:
    said: list[tuple[Conversation, int, Speaker, str]] = [
        (ROOM, 1, "user", "one"),
        (ROOM, 1, "assistant", "two"),
        (replace(ROOM, bot="largo"), 1, "user", "three"),
        (replace(ROOM, thread=None), 2, "user", "four"),
        (Conversation(bot="nova", chat="tg:chat:9"), 1, "user", "elsewhere"),
    ]
    with store.transaction() as tx:
        for n, (where, turn, speaker, text) in enumerate(said):
            tx.record_message(
                where, turn=turn, at=T0 + timedelta(seconds=n), speaker=speaker, text=text
            )
    with store.transaction() as tx:
        assert [m.text for m in tx.chat_messages("tg:chat:1")] == ["one", "two", "three", "four"]
        assert [m.text for m in tx.chat_messages("tg:chat:1", limit=2)] == ["three", "four"]
        assert [m.text for m in tx.chat_messages("tg:chat:1", bot="largo")] == ["three"]
        assert [m.text for m in tx.chat_messages("tg:chat:1", thread="7")] == [
            "one",
            "two",
            "three",
        ]
        (first, *_) = tx.chat_messages("tg:chat:1")
        assert (first.bot, first.thread, first.turn, first.speaker, first.at) == (
            "nova",
            "7",
            1,
            "user",
            T0,
        )
        with pytest.raises(StoreError, match=r"a limit of -3 messages is negative"):
            tx.chat_messages("tg:chat:1", limit=-3)


def test_every_stored_binding_lists_by_chat(store: Store) -> None:
    made = [
        Binding(context="ticket", entity="T-2", chat="tg:chat:b", thread="9"),
        Binding(context="prospect", entity="p_1", chat="tg:chat:a", bot="desk"),
    ]
    with store.transaction() as tx:
        for binding in made:
            tx.bind(binding)
    with store.transaction() as tx:
        assert tx.all_bindings() == (made[1], made[0])
