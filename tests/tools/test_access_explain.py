"""`access_explain`: the room's role, and its bindings strongest first with their source."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine

from keel.brain import Brain, load_brain
from keel.errors import Refused, UsageError
from keel.link.values import Binding, Conversation, TurnRequest
from keel.runtime.engine import Engine as KeelEngine
from keel.store import Store
from keel.tools import ACCESS_EXPLAIN, explain_access
from tests.mcp.brains import DEV_BRAIN

NOW = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
ACME = Conversation(bot="nova", chat="tg:chat:-1002000000101")
FORUM = "tg:chat:-1003000000001"


def explain(brain: Brain, store: Store, request: TurnRequest) -> str:
    with store.transaction() as tx:
        return explain_access(brain, tx, request)


def test_the_acme_room_is_pinned_by_its_access_rule(
    reference_brain: Brain, reference_store: Store
) -> None:
    text = explain(reference_brain, reference_store, TurnRequest(conversation=ACME, now=NOW))
    assert text.splitlines() == [
        "Bot nova in tg:chat:-1002000000101: role client-desk, from access.yaml "
        "(this chat's rule for bot nova).",
        "Bindings, strongest first (the first of each context holds):",
        "- client=acme: access.yaml, bot nova's rule for this chat — holds: pins client to "
        "'acme'; attaches on this bot's turns",
    ]


def test_thread_bindings_come_before_the_chats_and_shadow_them(
    reference_brain: Brain, reference_store: Store
) -> None:
    with reference_store.transaction() as tx:
        tx.bind(Binding(context="ticket", entity="T-100", chat=FORUM, bot="desk"))
        tx.bind(Binding(context="ticket", entity="T-481", chat=FORUM, thread="7"))
        tx.bind(Binding(context="ticket", entity="T-9", chat=FORUM, thread="8"))
    topic = Conversation(bot="desk", chat=FORUM, thread="7")
    text = explain(reference_brain, reference_store, TurnRequest(conversation=topic, now=NOW))
    assert text.splitlines()[1:] == [
        "Bindings, strongest first (the first of each context holds):",
        "- ticket=T-481: context_bind for thread 7, any bot — holds: pins ticket to 'T-481'; "
        "attaches on this bot's turns",
        "- ticket=T-100: context_bind for the whole chat, bot desk — shadowed by ticket=T-481 "
        "(context_bind for thread 7, any bot)",
    ]


def test_a_binding_of_another_bot_pins_but_does_not_attach(
    reference_brain: Brain, reference_store: Store
) -> None:
    with reference_store.transaction() as tx:
        tx.bind(Binding(context="ticket", entity="T-5", chat=FORUM, bot="other"))
    desk = Conversation(bot="desk", chat=FORUM)
    text = explain(reference_brain, reference_store, TurnRequest(conversation=desk, now=NOW))
    assert text.endswith(
        "- ticket=T-5: context_bind for the whole chat, bot other — holds: pins ticket to "
        "'T-5'; does not attach on this bot's turns"
    )


def test_a_room_without_bindings_says_so_and_names_the_role_given(
    reference_brain: Brain, reference_store: Store
) -> None:
    request = TurnRequest(conversation=Conversation(bot="x", chat="y"), now=NOW, role="support")
    assert explain(reference_brain, reference_store, request).splitlines() == [
        "Bot x in y: role support, named by the caller.",
        "No binding holds here: nothing pins this room or attaches on a chat link.",
    ]


def test_a_dm_rule_is_named(reference_brain: Brain, reference_store: Store) -> None:
    request = TurnRequest(conversation=Conversation(bot="nova", chat="tg:user:1"), now=NOW, dm=True)
    first = explain(reference_brain, reference_store, request).splitlines()[0]
    assert (
        first == "Bot nova in tg:user:1: role coach, from access.yaml (its dm rule for bot nova)."
    )


def test_a_room_without_a_role_is_answered_with_why(
    reference_brain: Brain, reference_store: Store
) -> None:
    request = TurnRequest(conversation=Conversation(bot="nobody", chat="z"), now=NOW)
    with pytest.raises(UsageError, match=r"no role given and access\.yaml has no rule"):
        explain(reference_brain, reference_store, request)


def test_a_room_whose_access_rule_failed_is_refused(
    write_brain: Callable[[dict[str, str | bytes]], Path], engine: Engine
) -> None:
    brain = load_brain(
        write_brain(
            {
                "constitution/access.yaml": (
                    "bots:\n  nova:\n    chats:\n      'tg:chat:1': { role: 7, contexts: x }\n"
                ),
                "features/f/r.agent.md": "---\ncontexts: []\n---\nR.\n",
            }
        )
    )
    store = Store(engine)
    store.migrate()
    request = TurnRequest(conversation=Conversation(bot="nova", chat="tg:chat:1"), now=NOW)
    with pytest.raises(Refused, match=r"^constitution/access\.yaml"):
        explain(brain, store, request)


def test_it_needs_access_read_and_takes_no_arguments() -> None:
    assert (ACCESS_EXPLAIN.capability, ACCESS_EXPLAIN.risk) == ("access:read", "safe")
    assert ACCESS_EXPLAIN.parameters == {"type": "object", "properties": {}}


def test_an_unkeyed_binding_pins_nothing(
    write_brain: Callable[[dict[str, str | bytes]], Path], database_url: str
) -> None:
    with KeelEngine(write_brain(DEV_BRAIN), database_url, watch=False) as keel:
        keel.apply_state()
        keel.bind(context="style", chat="cli")
        request = TurnRequest(conversation=Conversation(bot="cli", chat="cli"), now=NOW)
        with keel.store.transaction() as tx:
            text = explain_access(keel.brain, tx, request)
    assert text.splitlines()[-1] == (
        "- style: context_bind for the whole chat, any bot — holds: does not attach on this "
        "bot's turns"
    )
