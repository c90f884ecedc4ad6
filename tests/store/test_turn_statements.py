"""How many SQL statements one turn sends to SQLite, for each kind of link it makes.

Every statement is a round trip through SQLAlchemy and the driver, and building one costs
more than SQLite takes to run it: a statement added to the turn's path is a cost every
turn pays. Each turn here runs twice (the first creates the conversation's rows), and the
second is counted at the driver (`keel.store.hot.traced`, SQLite's trace callback), which
sees every statement the store and the view reads send — transaction control included, and
brain code's `ctx.query` too. The
budgets are the counts the store reaches; a new statement must make its case by raising
one. Each counts the turn's COMMIT, which SQLAlchemy's cursor events (by which the targets
of a plain chat turn 8, a reply 10, a heartbeat 10 were set) never saw: against those
targets, a budget here is one more.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from keel.brain import Brain, ReachEntry
from keel.code.runner import CodeRunner
from keel.link.values import Conversation, LinkKind, RunRef, TurnRequest
from keel.state.database import connect, default_url
from keel.store import Store
from keel.store.hot import traced
from keel.tools.send import origin_of
from keel.turn.prepare import prepare_turn

NOW = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
FILM = RunRef(kind="heartbeat", id="evening-film")
COACH_DM = Conversation(bot="nova", chat="tg:user:1003")
ACME = Conversation(bot="nova", chat="tg:chat:-1002000000101")
FAMILY = Conversation(bot="nova", chat="tg:chat:-1001000000001")
FORUM = Conversation(bot="desk", chat="tg:chat:-1003000000001", thread="7")
SENT_ID = "film-pick-1"


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    """A turn of the reference brain that makes a link of `kind`, and its budget."""

    kind: LinkKind
    request: TurnRequest
    budget: int
    replies: bool = False  # records the origin of the message it replies to, first
    code: bool = False  # runs with brain code (a `match` makes the link)


CASES = [
    pytest.param(
        Case(
            kind="chat",
            request=TurnRequest(conversation=ACME, now=NOW, input="Where are we?"),
            budget=9,
        ),
        id="chat",
    ),
    pytest.param(
        Case(
            kind="reply",
            request=TurnRequest(
                conversation=COACH_DM, now=NOW, dm=True, input="8/10", reply_to=(SENT_ID,)
            ),
            budget=11,
            replies=True,
        ),
        id="reply",
    ),
    pytest.param(
        Case(
            kind="run",
            request=TurnRequest(
                conversation=Conversation(bot="nova", chat="tg:user:1001"),
                now=NOW,
                role="coach",
                run=FILM,
            ),
            budget=8,
        ),
        id="heartbeat",
    ),
    pytest.param(
        Case(
            kind="ask",
            request=TurnRequest(
                conversation=FORUM,
                now=NOW,
                input="How do refunds work?",
                open=(ReachEntry(context="kb"),),
            ),
            budget=10,
        ),
        id="ask",
    ),
    pytest.param(
        Case(
            kind="always",
            request=TurnRequest(conversation=FAMILY, now=NOW, input="Add oat milk"),
            budget=8,
        ),
        id="always",
    ),
    pytest.param(
        Case(
            kind="code",
            request=TurnRequest(conversation=FORUM, now=NOW, input="Any news on T-481?"),
            # Three of them are the read of the room's last lines that `match` sees, before
            # the turn's transaction (BEGIN, SELECT, ROLLBACK; it takes no lock), and one
            # is brain code's own `ctx.query` (a `render` of the ticket's SLA).
            budget=15,
            code=True,
        ),
        id="code",
    ),
]


@pytest.fixture
def sqlite_store(reference_brain: Brain) -> Iterator[Store]:
    """The reference brain's embedded database, opened as Keel opens it."""
    engine = connect(default_url(reference_brain.root), reference_brain)
    yield Store(engine)
    engine.dispose()


@pytest.mark.parametrize("case", CASES)
def test_a_turn_sends_no_more_statements_than_its_budget(
    case: Case, reference_brain: Brain, sqlite_store: Store
) -> None:
    if case.replies:
        with sqlite_store.transaction() as tx:
            tx.record_origin(
                origin_of(
                    reference_brain,
                    conversation=case.request.conversation,
                    message_id=SENT_ID,
                    sent_at=NOW - timedelta(hours=1),
                    run=FILM,
                    about_entity="tt1375666",
                )
            )

    def turn(runner: CodeRunner | None) -> None:
        prepared = prepare_turn(reference_brain, sqlite_store, case.request, code=runner)
        kinds = {a.link.kind for a in prepared.attached}
        assert case.kind in kinds, f"the turn made no {case.kind} link: {sorted(kinds)}"

    runner = CodeRunner(reference_brain.root, access=reference_brain.manifest.code, workers=1)
    with runner if case.code else nullcontext(None):
        turn(runner if case.code else None)
        with traced(sqlite_store.engine) as statements:
            turn(runner if case.code else None)
    shown = "\n".join(statements)
    assert len(statements) <= case.budget, f"{len(statements)} statements:\n{shown}"
