"""A room's pin holds for what a run sends, as it holds for what a turn links: a message
about one key cannot go into a room bound to another. It is checked before a card is
posted (a call that would be refused asks nobody) and again when the send runs, so a room
bound while its card waited refuses the approved send: the step fails, nothing is sent."""

from __future__ import annotations

from typing import Any

import pytest

from tests.runs.brains import ROLE, RUNS_BRAIN
from tests.runs.conftest import Runs, runs_of

# A careful critic: its heartbeat reaches `rating` (a reply context keyed by film id) and
# its role waits for a person before any send.
CAREFUL_BRAIN = {
    **RUNS_BRAIN,
    "features/film/careful.agent.md": ROLE.format(
        description="Picks films, and asks before it posts.",
        extra='approvals: {"message:send": required, timeout: 1h}\n',
        persona="You pick one film a night.",
    ),
    "features/film/careful.heartbeat.md": (
        '---\ndescription: Tonight\'s film, asked first.\nschedule: "0 20 * * *"\n'
        "agent: careful\nbot: nova\nchat: tg:user:5\n---\nPick tonight's film and post it.\n"
    ),
}
PINNED = "tg:chat:film-club"  # bound to rating f-1 before the tests below send there


runs = runs_of(CAREFUL_BRAIN, "send-pins")


def bind(runs: Runs, chat: str, film: str) -> None:
    args = ("bind", "--context", "rating", "--entity", film, "--chat", chat, "--role", "critic")
    result = runs.invoke(*args)
    assert result.exit_code == 0, result.output


def post(runs: Runs, name: str, chat: str, film: str) -> dict[str, Any]:
    """Run the careful heartbeat with a model that posts about `film` into `chat`."""
    call = {
        "name": "send_message",
        "arguments": {"text": f"Tonight: {film}", "chat": chat, "about": {"entity": film}},
    }
    model = runs.script(name, [{"tool_calls": [call]}, {"text": ""}])
    record: dict[str, Any] = runs.json("run", "heartbeat:careful", "--model", model)
    return record


def sent(runs: Runs, chat: str) -> list[str]:
    with runs.engine.store.transaction() as tx:
        return [m.text for m in tx.sent_messages(chat=chat)]


def test_a_send_about_another_key_than_the_rooms_pin_asks_nobody(runs: Runs) -> None:
    bind(runs, PINNED, "f-1")
    record = post(runs, "other-key", PINNED, "f-2")
    assert (record["status"], record["cards"], record["messages"]) == ("done", [], [])
    assert [s["name"] for s in record["steps"]] == [
        "start", "prepare", "request", "check", "request", "finish",
    ]  # fmt: skip
    [check] = [s for s in record["steps"] if s["name"] == "check"]
    assert (check["status"], check["detail"].split(":")[0]) == (
        "failed",
        "send_message refused before its card",
    )
    assert sent(runs, PINNED) == []
    # The pinned key itself is asked about as any send is.
    same = post(runs, "same-key", PINNED, "f-1")
    assert same["status"] == "waiting"
    assert same["cards"][0]["arguments"]["about"] == {"entity": "f-1"}


def test_a_room_bound_while_its_card_waited_refuses_the_approved_send(runs: Runs) -> None:
    chat = "tg:chat:late-binding"
    record = post(runs, "bound-late", chat, "f-2")
    [card] = record["cards"]
    assert card["status"] == "pending"
    bind(runs, chat, "f-1")
    done = runs.json("approve", card["id"], "--yes")
    [tool] = [s for s in done["steps"] if s["name"] == "tool"]
    assert tool["status"] == "failed"
    assert f"but {chat} is bound to rating 'f-1'" in tool["detail"]
    assert "Tonight: f-2" in tool["detail"]  # the step names what was not sent
    assert sent(runs, chat) == []


def test_an_engine_send_is_held_to_the_pin_too(runs: Runs) -> None:
    from keel.errors import Refused
    from keel.link import Conversation
    from keel.link.values import RunRef

    bind(runs, "tg:chat:engine-send", "f-1")
    with pytest.raises(Refused, match="is bound to rating 'f-1'"):
        runs.engine.send(
            Conversation(bot="nova", chat="tg:chat:engine-send"),
            "Tonight: f-3",
            run=RunRef(kind="heartbeat", id="evening"),
            about_entity="f-3",
        )
    assert sent(runs, "tg:chat:engine-send") == []


def test_a_send_into_a_bound_thread_names_the_thread_not_the_chat(runs: Runs) -> None:
    from keel.errors import Refused
    from keel.link import Conversation
    from keel.link.values import RunRef

    args = ("--context", "rating", "--entity", "f-1", "--chat", "tg:chat:topics")
    result = runs.invoke("bind", *args, "--thread", "7", "--role", "critic")
    assert result.exit_code == 0, result.output
    with pytest.raises(Refused, match="but thread 7 of tg:chat:topics is bound to rating 'f-1'"):
        runs.engine.send(
            Conversation(bot="nova", chat="tg:chat:topics", thread="7"),
            "Tonight: f-3",
            run=RunRef(kind="heartbeat", id="evening"),
            about_entity="f-3",
        )
