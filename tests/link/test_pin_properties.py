"""The pin never leaks: in a room bound to one client, no block shows another client's rows.

Whatever a turn's links are — a run with a reach override naming keys, replies to messages
keyed to any client, code attaches, opens with or without a key, links kept from earlier
turns, tool bindings of any key in any thread — every row a client-keyed view renders
there belongs to the room's client, and so does every link kept for later turns. Views a
context carries whole are not scoped by the pin (by design), so only views filtered by
the client's key are checked.

The pipeline is the real one, pure: `link_turn`, then every block rendered with its
views read from a SQLite file holding the reference brain's state.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine

from keel.brain import Brain, ReachEntry, load_brain
from keel.errors import LinkError, UsageError
from keel.link import (
    Binding,
    Conversation,
    KeptLink,
    LinkResult,
    Origin,
    RunRef,
    Stored,
    TurnRequest,
    link_turn,
)
from keel.state.database import connect
from keel.turn.blocks import fit_links

REFERENCE = Path(__file__).resolve().parents[2] / "examples" / "brain"
NOW = datetime(2026, 11, 29, 19, 0, tzinfo=UTC)
TURN = 10
ROOMS = {
    "tg:chat:-1002000000101": "acme",
    "tg:chat:-1002000000102": "globex",
    "tg:chat:-1002000000103": "initech",
}
CLIENTS = ("acme", "globex", "initech")
# A role that admits every context and holds every capability: the widest door in.
ANYONE = "---\ncontexts: ['*']\ncapabilities: ['*']\n---\nYou help anyone.\n"
# The reference brain's views filtered by the client's key.
KEYED_VIEWS = ("agency_client_card",)
KEYED_VIEW = re.compile(rf'<view name="({"|".join(KEYED_VIEWS)})">\n(.*?)</view>', re.DOTALL)
MARKER = re.compile(r"^\(\d+ more rows? not shown\)$")


@pytest.fixture(scope="module")
def agency(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Brain, Engine]]:
    root = tmp_path_factory.mktemp("pin") / "brain"
    shutil.copytree(REFERENCE, root, ignore=shutil.ignore_patterns(".keel"))
    (root / "features" / "agency" / "anyone.agent.md").write_text(ANYONE, encoding="utf-8")
    brain = load_brain(root)
    assert brain.skips == ()
    by_client = {v.view for c in brain.contexts.values() for v in c.data if v.by == "client_slug"}
    assert by_client == set(KEYED_VIEWS), "KEYED_VIEWS names every client-keyed view"
    engine = connect(f"sqlite:///{(root.parent / 'state.db').as_posix()}", brain)
    yield brain, engine
    engine.dispose()


def foreign_rows(text: str, client: str) -> list[str]:
    """Rows of client-keyed views in a block that belong to a client other than `client`."""
    return [
        line
        for match in KEYED_VIEW.finditer(text)
        for line in match.group(2).strip("\n").split("\n")[1:]
        if not MARKER.match(line) and line.split(" | ")[0] != client
    ]


def render(brain: Brain, engine: Engine, result: LinkResult) -> list[str]:
    with engine.connect() as conn:
        fitted = fit_links(brain, brain.roles[result.role], result.links, conn)
    return [a.block.text for a in fitted.attached]


keys = st.one_of(
    st.none(),
    st.sampled_from(CLIENTS),
    st.sampled_from(("ACME", "acme ", "globex\n", "")),
    st.text(min_size=1, max_size=8),
)
contexts = st.sampled_from(
    ("client", "client", "client", "ticket", "prospect", "cashflow", "rating")
)
entries = st.builds(ReachEntry, context=contexts, entity=keys)
bots = st.sampled_from(("nova", "desk", "tutor"))


@st.composite
def turns(draw: st.DrawFn, brain: Brain) -> tuple[str, TurnRequest, Stored]:
    chat, client = draw(st.sampled_from(sorted(ROOMS.items())))
    bot = draw(bots)
    thread = draw(st.sampled_from((None, "77")))
    runs = [RunRef(kind=e.kind, id=e.id) for e in brain.entities.values()]
    run = draw(st.none() | st.sampled_from(runs))
    origins = tuple(
        Origin(
            bot=bot,
            chat=chat,
            message_id=f"m{n}",
            sent_at=NOW - timedelta(hours=n + 1),
            feature=draw(st.sampled_from(("agency", "coach", "outreach"))),
            run="scenario:first-touch",
            reach=tuple(draw(st.lists(entries, max_size=3))),
            pending_card=draw(st.booleans()),
        )
        for n in range(draw(st.integers(0, 3)))
    )
    kept = draw(
        st.lists(
            st.builds(
                KeptLink,
                context=contexts,
                entity=keys,
                kind=st.sampled_from(("reply", "code", "ask")),
                feature=st.just("agency"),
                until_turn=st.integers(TURN, TURN + 3),
            ),
            max_size=3,
        )
    )
    bindings = draw(
        st.lists(
            st.builds(
                Binding,
                context=contexts,
                entity=keys,
                chat=st.just(chat),
                thread=st.sampled_from((None, "77")),
                bot=st.none() | bots,
                source=st.just("tool"),
            ),
            max_size=3,
        )
    )
    request = TurnRequest(
        conversation=Conversation(bot=bot, chat=chat, thread=thread),
        now=NOW,
        role=draw(st.sampled_from((None, "client-desk", "anyone", "support", "coach"))),
        reply_to=tuple(o.message_id for o in origins),
        run=run,
        entity=draw(keys) if run is not None else None,
        reach=tuple(draw(st.lists(entries, max_size=3))) if run and draw(st.booleans()) else None,
        attach=tuple(draw(st.lists(entries, max_size=3))),
        open=tuple(draw(st.lists(entries, max_size=3))),
    )
    stored = Stored(turn=TURN, origins=origins, bindings=tuple(bindings), kept=tuple(kept))
    return client, request, stored


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_no_block_in_a_pinned_room_shows_another_clients_rows(
    agency: tuple[Brain, Engine], data: st.DataObject
) -> None:
    brain, engine = agency
    client, request, stored = data.draw(turns(brain))
    try:
        result = link_turn(brain, request, stored)
    except (LinkError, UsageError):
        # A refused turn renders nothing.
        return
    assert result.pins["client"] == client
    assert all(link.entity == client for link in result.links if link.context == "client")
    assert all(kept.entity == client for kept in result.keep if kept.context == "client")
    for text in render(brain, engine, result):
        if KEYED_VIEW.search(text):
            event("a client-keyed view rendered")
        assert foreign_rows(text, client) == [], text


def test_the_check_sees_another_clients_rows_where_no_pin_holds(
    agency: tuple[Brain, Engine],
) -> None:
    brain, engine = agency
    # The owner's own chat binds nothing: an open for globex shows globex's card.
    request = TurnRequest(
        conversation=Conversation(bot="nova", chat="tg:user:1"),
        now=NOW,
        role="anyone",
        open=(ReachEntry(context="client", entity="globex"),),
    )
    result = link_turn(brain, request, Stored(turn=1))
    (text,) = [t for t in render(brain, engine, result) if 'name="client"' in t]
    assert [row.split(" | ")[:2] for row in foreign_rows(text, "acme")] == [["globex", "Globex"]]
