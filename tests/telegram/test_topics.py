"""Forum topics end to end: the reference brain's ticket-opened hook opens a topic for the
ticket (`keel fire`), `keel telegram --until-idle` opens it with createForumTopic against
the Bot API double and posts the hook's message there, and a message in the topic is a
turn that carries the ticket."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from keel.cli import app
from tests.telegram.double import BotAPIDouble, Failure
from tests.telegram.test_bot import ANA, DB, FORUM, GROUP, run_bot, runner, sent_in_forum

pytestmark = pytest.mark.usefixtures("here")

TICKET = {"ticket": "T-480", "subject": "Wrong size sent", "customer": "Tom Becker"}
TITLE = "T-480 · Wrong size sent"
HELLO = "Hi Tom, this topic is for T-480 (wrong size sent). Your return label is on its way."


def fire_ticket(event_id: str = "evt-480") -> dict[str, Any]:
    """Fire ticket.opened as the seed does, answered by the brain's scripted model."""
    fired = runner.invoke(
        app,
        [
            "fire",
            "brain",
            "ticket.opened",
            "--payload",
            json.dumps(TICKET),
            "--event-id",
            event_id,
            "--model",
            "scripted:brain/seed/ticket-opened.json",
            "--db",
            DB,
            "--json",
        ],
    )
    assert fired.exit_code == 0, fired.output
    [found] = json.loads(fired.stdout)["runs"]
    assert isinstance(found, dict)
    return found


def in_topic(update_id: int, thread_id: int, text: str) -> dict[str, Any]:
    return {
        "update_id": update_id,
        "message": {
            "message_id": 60 + update_id,
            "date": 1_777_000_000,
            "chat": GROUP,
            "from": ANA,
            "message_thread_id": thread_id,
            "is_topic_message": True,
            "text": text,
        },
    }


def turns() -> list[dict[str, Any]]:
    shown = runner.invoke(app, ["turns", "brain", "--db", DB, "--json"])
    assert shown.exit_code == 0, shown.output
    found: list[dict[str, Any]] = json.loads(shown.stdout)["turns"]
    return found


def test_a_new_ticket_opens_its_topic_and_a_message_there_carries_the_ticket(
    double: BotAPIDouble,
) -> None:
    fired = fire_ticket()
    assert fired["status"] == "done", fired
    [posted] = fired["messages"]
    thread = posted["thread"]
    assert thread.startswith("topic-")  # Keel's id, the run's at once
    assert (posted["chat"], posted["text"]) == (f"tg:chat:{FORUM}", HELLO)

    tally = run_bot(double, "none")
    assert (tally["delivered"], tally["failed"]) == (1, 0)
    [made] = double.sent("createForumTopic")
    assert (made["chat_id"], made["name"]) == (str(FORUM), TITLE)
    # The double answered a ForumTopic; its id is the topic's in Telegram.
    [sent] = double.sent()
    topic_id = int(sent["message_thread_id"])
    assert topic_id > 1000
    assert sent["text"] == HELLO
    [shown] = sent_in_forum()
    assert shown["thread"] == thread
    assert shown["delivery"]["state"] == "delivered"

    # A customer writes in the topic: a turn of Keel's thread, carrying the ticket.
    double.push(in_topic(1, topic_id, "Any news?"))
    tally = run_bot(double, "none")
    assert tally["updates"] == 1
    assert double.sent("createForumTopic") == [made]  # opened once, not again
    [turn] = [t for t in turns() if t["input"] == "Any news?"]
    assert (turn["chat"], turn["thread"], turn["role"]) == (f"tg:chat:{FORUM}", thread, "support")
    assert ("ticket", "T-480", "chat") in [
        (c["context"], c["entity"], c["link"]) for c in turn["contexts"]
    ]


def test_an_answer_in_the_topic_goes_back_into_it(here: Path, double: BotAPIDouble) -> None:
    fire_ticket()
    run_bot(double, "none")
    topic_id = int(double.sent()[0]["message_thread_id"])
    double.push(in_topic(2, topic_id, "@desk_bot when does the label come?"))
    model = here / "answer.json"
    model.write_text(json.dumps([{"text": "Within the hour."}]), encoding="utf-8")
    tally = run_bot(double, f"scripted:{model}")
    assert (tally["answered"], tally["delivered"]) == (1, 1)
    answer = double.sent()[-1]
    assert (answer["text"], answer["message_thread_id"]) == ("Within the hour.", str(topic_id))


def test_a_topic_telegram_refuses_fails_the_messages_to_it_with_the_reason(
    double: BotAPIDouble,
) -> None:
    double.fail_next("createForumTopic", Failure(400, "Bad Request: not enough rights"))
    fire_ticket()
    tally = run_bot(double, "none")
    assert (tally["delivered"], tally["failed"]) == (0, 1)
    assert double.sent() == []  # nothing went to the whole forum instead
    [shown] = sent_in_forum()
    assert shown["delivery"]["state"] == "failed"
    assert shown["delivery"]["reason"] == (
        f"the forum topic {TITLE!r} ({shown['thread']}) could not be opened: "
        "Bad Request: not enough rights"
    )
    # Failed for good: a later run of the bot does not ask again.
    run_bot(double, "none")
    assert len(double.sent("createForumTopic")) == 1


def test_a_429_on_opening_a_topic_is_retried(double: BotAPIDouble) -> None:
    double.fail_next(
        "createForumTopic", Failure(429, "Too Many Requests: retry after 1", {"retry_after": 1})
    )
    fire_ticket()
    tally = run_bot(double, "none")
    assert (tally["delivered"], tally["failed"]) == (1, 0)
    assert len(double.sent("createForumTopic")) == 2
    with sqlite3.connect("k.db") as db:
        rows = db.execute("SELECT state, attempts, reason FROM keel_topics").fetchall()
    assert rows == [("opened", 2, None)]


def test_the_same_event_fired_again_opens_no_second_topic(double: BotAPIDouble) -> None:
    first = fire_ticket("evt-1")
    again = fire_ticket("evt-1")  # the same event id: the same run, nothing new
    assert first["id"] == again["id"]
    run_bot(double, "none")
    assert len(double.sent("createForumTopic")) == 1
    assert len(double.sent()) == 1
