"""Runs end to end through `keel run` and `keel fire`: each piece of work a durable step,
messages with their origin, the record `--json` prints, where a run speaks, the model that
finishes a run `keel approve` resumes."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from dbos import SetWorkflowID
from sqlalchemy import event

from keel.link.reach import find_run, run_reach
from keel.link.values import Conversation, RunRef, TurnRequest
from keel.runs.service import order_for, start, wait
from keel.runs.values import RunOrder
from keel.runs.workflows import register
from keel.store.hot import traced
from tests.runs.conftest import Runs
from tests.runs.processes import finish, keel


def code_calls(runs: Runs) -> int:
    log = runs.brain / "code-calls.log"
    return len(log.read_text(encoding="utf-8").splitlines()) if log.exists() else 0


def names(record: dict[str, Any]) -> list[str]:
    return [s["name"] for s in record["steps"]]


def test_a_heartbeat_runs_its_turn_as_durable_steps_and_posts_its_answer(runs: Runs) -> None:
    before = code_calls(runs)
    model = runs.script("daily", [{"text": "Rivers rise today."}])
    record = runs.json("run", "heartbeat:daily", "--model", model)
    assert {"id", "kind", "status", "turns", "messages", "cards", "error"} <= set(record)
    assert (record["kind"], record["status"], record["error"]) == ("heartbeat", "done", None)
    assert names(record) == ["start", "prepare", "request", "send", "finish"]
    assert all(s["status"] == "done" and s["ms"] is not None for s in record["steps"])
    [turn] = record["turns"]
    assert turn["role"] == "news"
    assert [(a["context"], a["link"]) for a in turn["attached"]] == [("topic", "run")]
    assert "The river is high." in turn["blocks"][0]["text"]  # the render ran in preparation
    [message] = record["messages"]
    assert (message["chat"], message["text"]) == ("tg:chat:news", "Rivers rise today.")
    assert message["message_id"] == f"{record['id']}:4"
    assert message["origin"]["feature"] == "news"
    assert message["origin"]["reach"] == [{"context": "topic", "entity": None}]
    assert record["usage"]["requests"] == 1
    assert record["usage"]["input_tokens"] > 0
    assert code_calls(runs) == before + 1
    with runs.engine.store.transaction() as tx:
        ledger = [e for e in tx.ledger(role="news") if e.turn == turn["turn"]]
        usage = tx.usage(run_id=record["id"])
    assert [(e.context, e.link) for e in ledger] == [("topic", "run")]
    assert [u.turn_id for u in usage] == [turn["id"]]


def test_starting_a_run_again_under_its_id_does_nothing_again(runs: Runs) -> None:
    model = runs.script("again", [{"text": "Once."}])
    order = order_for(
        runs.engine.brain,
        RunOrder.from_json({"id": "x", "kind": "heartbeat", "entity_id": "daily", "at": "x"}).ref,
        model=model,
    )
    start(order)
    assert wait(runs.runtime, order.id) == "done"
    first = runs.json("runs", "show", order.id)
    start(order)
    assert wait(runs.runtime, order.id) == "done"
    again = runs.json("runs", "show", order.id)
    assert again["steps"] == first["steps"]
    assert again["messages"] == first["messages"]
    assert len(again["messages"]) == 1


def test_model_none_prepares_and_records_the_turn_only(runs: Runs) -> None:
    record = runs.json("run", "heartbeat:daily", "--model", "none")
    assert (record["status"], names(record)) == ("done", ["start", "prepare", "finish"])
    assert record["messages"] == []
    assert record["turns"][0]["role"] == "news"


def counted(database: Any, action: Callable[[], Any]) -> tuple[int, int | None]:
    """The commits and the statements (BEGIN and COMMIT included, as SQLite runs them)
    `action` runs — in this thread: the process's own workers (an executor's heartbeat)
    share the engine. Statements are counted on SQLite only (None on PostgreSQL), whose
    driver reports each one it runs."""
    commits: list[None] = []
    here = threading.get_ident()

    def commit(_: Any) -> None:
        if threading.get_ident() == here:
            commits.append(None)

    event.listen(database, "commit", commit)
    try:
        if database.dialect.name != "sqlite":
            action()
            return len(commits), None
        with traced(database, this_thread=True) as statements:
            action()
    finally:
        event.remove(database, "commit", commit)
    return len(commits), len(statements)


def test_a_run_that_asks_no_model_finishes_in_the_commit_of_its_turn(runs: Runs) -> None:
    engine = runs.engine
    ref = RunRef(kind="heartbeat", id="daily")
    entity = find_run(engine.brain, ref)
    reach = run_reach(engine.brain, entity)
    bot = entity.bot or "cli"
    order = order_for(
        engine.brain, ref, conversation=Conversation(bot=bot, chat="in-a-run"), model="none"
    )

    def run() -> None:
        with SetWorkflowID(order.id):  # in this thread, as a worker runs it
            assert register().run(order.to_json())["status"] == "done"

    def turn() -> None:  # the same turn, prepared without the runs engine
        alone = Conversation(bot=bot, chat="alone")
        engine.prepare(TurnRequest(conversation=alone, now=datetime.now(UTC), run=ref, reach=reach))

    run()  # once first: what is made on first use is not counted
    order = order_for(
        engine.brain, ref, conversation=Conversation(bot=bot, chat="in-a-run-2"), model="none"
    )
    turn_commits, turn_statements = counted(engine.database, turn)
    run_commits, run_statements = counted(engine.database, run)
    # `start` looks for its row and writes nothing: its rows, the turn, its `prepare` row
    # and `finish` commit as one — the turn's own commit.
    assert (turn_commits, run_commits) == (1, 1)
    # Above the turn: the run's row and every step's row in one INSERT. The run's id is
    # new, so `start` does not look for its row.
    if run_statements is not None and turn_statements is not None:
        assert run_statements - turn_statements <= 2
    record = runs.json("runs", "show", order.id)
    assert [(s["name"], s["status"]) for s in record["steps"]] == [
        ("start", "done"),
        ("prepare", "done"),
        ("finish", "done"),
    ]
    assert record["status"] == "done"


def test_a_post_that_could_only_come_back_keyed_fails_the_run_as_refused(runs: Runs) -> None:
    model = runs.script("unkeyed", [{"text": "Tonight: Whiplash"}])
    record = runs.json("run", "heartbeat:evening", "--model", model, exit_code=3)
    assert (record["status"], record["refused"]) == ("failed", True)
    assert "the message would lose its origin" in record["error"]
    assert '"rating" (keyed by film id)' in record["error"]
    assert record["messages"] == []


def test_the_agent_keys_its_post_and_a_reply_brings_the_film_back(runs: Runs) -> None:
    post = {
        "name": "send_message",
        "arguments": {"text": "Tonight: Whiplash", "about": {"entity": "tt2582802"}},
    }
    model = runs.script("keyed", [{"tool_calls": [post]}, {"text": "Posted."}])
    record = runs.json("run", "heartbeat:evening", "--model", model)
    assert record["status"] == "done"
    assert names(record) == ["start", "prepare", "request", "tool", "request", "finish"]
    [message] = record["messages"]  # the closing "Posted." is not sent: the agent spoke
    assert message["text"] == "Tonight: Whiplash"
    assert message["origin"]["reach"] == [{"context": "rating", "entity": "tt2582802"}]
    reply = TurnRequest(
        conversation=Conversation(bot="nova", chat="tg:user:1"),
        now=datetime.now(UTC),
        role="critic",
        input="8/10",
        reply_to=(message["message_id"],),
    )
    prepared, _ = runs.engine.prepare(reply, dry_run=True)
    assert [(a.link.context, a.link.entity, a.link.kind) for a in prepared.attached] == [
        ("rating", "tt2582802", "reply")
    ]


def test_a_hook_fires_with_the_reach_its_gate_keys_and_an_event_id_fires_once(
    runs: Runs,
) -> None:
    model = runs.script("ack", [{"text": "Ticket T-7 received."}])
    payload = '{"ticket": "T-7", "subject": "Broken kettle"}'
    [fired] = runs.json("fire", "ticket.opened", "--payload", payload, "--model", model,
                        "--event-id", "evt-7")["runs"]  # fmt: skip
    assert fired["status"] == "done"
    assert fired["id"] == "hook-ticket-opened-evt-7"
    assert fired["reach"] == [{"context": "ticket", "entity": "T-7"}]
    [message] = fired["messages"]
    assert message["origin"]["reach"] == [{"context": "ticket", "entity": "T-7"}]
    assert "T-7" in fired["turns"][0]["blocks"][0]["text"] or fired["turns"][0]["attached"]
    [again] = runs.json("fire", "ticket.opened", "--payload", payload, "--model", model,
                        "--event-id", "evt-7")["runs"]  # fmt: skip
    assert again["messages"] == fired["messages"]


def test_a_scenarios_inline_hook_fires_with_the_scenarios_reach(runs: Runs) -> None:
    [fired] = runs.json("fire", "prospect.replied", "--model", "none")["runs"]
    assert fired["status"] == "done"
    assert (fired["kind"], fired["entity_id"]) == ("hook", "first-touch-prospect-replied")
    assert fired["reach"] == [{"context": "prospect", "entity": None}]
    assert fired["turns"][0]["role"] == "owner"


def test_runs_lists_and_shows_runs_and_messages_lists_a_chat(runs: Runs) -> None:
    model = runs.script("listed", [{"text": "Listed."}])
    record = runs.json("run", "heartbeat:daily", "--model", model)
    listed = runs.json("runs")["runs"]
    assert record["id"] in [r["id"] for r in listed]
    assert runs.json("runs", "show", record["id"]) == record
    done = runs.json("runs", "--status", "done")["runs"]
    assert all(r["status"] == "done" for r in done)
    sent = runs.json("messages", "--chat", "tg:chat:news")
    mine = [m for m in sent["messages"] if m["message_id"].startswith(record["id"])]
    assert [m["text"] for m in mine] == ["Listed."]
    assert mine[0]["origin"]["run"] == "heartbeat:daily"


def test_what_cannot_be_run_is_a_usage_error(runs: Runs) -> None:
    assert runs.invoke("run", "heartbeat:nope").exit_code == 2
    assert runs.invoke("run", "nonsense").exit_code == 2
    assert runs.invoke("runs", "show", "no-such-run").exit_code == 2
    assert runs.invoke("fire", "x", "--payload", "[1]").exit_code == 2
    assert runs.invoke("run", "heartbeat:daily", "--model", "scripted:/no/such.json").exit_code == 2


@pytest.mark.parametrize(
    ("command", "flags", "bot", "chat", "thread"),
    [
        pytest.param(
            ("fire", "ticket.opened", "--payload", '{"ticket": "T-9"}'),
            ("--chat", "tg:chat:elsewhere", "--thread", "77"),
            "nova", "tg:chat:elsewhere", "77",
            id="fire-chat-thread",
        ),
        pytest.param(
            ("fire", "ticket.opened", "--payload", '{"ticket": "T-10"}'),
            ("--thread", "78"),
            "nova", "tg:chat:desk", "78",
            id="fire-thread-alone",
        ),
        pytest.param(
            ("run", "heartbeat:daily"), ("--chat", "tg:chat:other"),
            "nova", "tg:chat:other", None,
            id="run-chat",
        ),
        pytest.param(
            ("run", "heartbeat:daily"), ("--bot", "desk"),
            "desk", "tg:chat:news", None,
            id="run-bot-alone",
        ),
        pytest.param(
            ("scenario", "first-touch"), ("--chat", "tg:user:9"),
            "nova", "tg:user:9", None,
            id="scenario-chat",
        ),
    ],
)  # fmt: skip
def test_a_flag_not_given_leaves_where_the_run_speaks_to_its_file(
    runs: Runs,
    command: tuple[str, ...],
    flags: tuple[str, ...],
    bot: str,
    chat: str,
    thread: str | None,
) -> None:
    model = runs.script(f"where-{command[1]}", [{"text": "Here."}])
    # The scenario fails without its vars, after it decided where it speaks.
    code = 1 if command[0] == "scenario" else 0
    record = runs.json(*command, *flags, "--model", model, exit_code=code)
    if command[0] == "fire":
        assert record["event"] == command[1]
        [record] = record["runs"]
    assert (record["bot"], record["chat"], record["thread"]) == (bot, chat, thread)
    assert [(m["bot"], m["chat"], m["thread"]) for m in record["messages"]] == (
        [] if code else [(bot, chat, thread)]
    )


def test_approve_model_answers_the_rest_of_a_run_it_resumes_and_asks_nothing_twice(
    runs: Runs,
) -> None:
    notice = {"name": "send_message", "arguments": {"text": "The lift is back."}}
    first = runs.script("first-model", [{"tool_calls": [notice]}, {"text": "From the first."}])
    # The `keel run` process ends while its run waits: `keel approve` takes the run over,
    # and its replay reads the first request back from the journal.
    started = keel("run", str(runs.brain), "heartbeat:guarded", "--model", first,
                   "--db", runs.db, "--json")  # fmt: skip
    status, out, err = finish(started)
    assert status == 0, err
    waiting = json.loads(out)
    assert waiting["status"] == "waiting"
    second = runs.script("second-model", [{"text": "From the second."}])
    card = waiting["cards"][0]["id"]
    record = runs.json("approve", card, "--yes", "--model", second)
    assert record["status"] == "done"
    assert [s["name"] for s in record["steps"]] == [
        "start", "prepare", "request", "card", "decision", "tool", "request", "finish",
    ]  # fmt: skip
    with runs.engine.store.transaction() as tx:
        steps = tx.steps(record["id"])
        usage = tx.usage(run_id=record["id"])
    answers = [s.output["text"] for s in steps if s.name == "request"]
    assert answers == ["", "From the second."]
    assert len(usage) == 2  # the first request was read back, not asked again
    assert [m["text"] for m in record["messages"]][1:] == ["The lift is back."]


def test_approve_model_is_checked_before_the_card_is_decided(runs: Runs) -> None:
    result = runs.invoke("approve", "no-such-card", "--yes", "--model", "scripted:/no/such.json")
    assert result.exit_code == 2
    assert "no/such.json" in result.output


def test_a_hook_that_asks_for_a_notice_posts_its_outcome_in_one_line(runs: Runs) -> None:
    model = runs.script("noticed", [{"text": "Thanks for your patience."}])
    [fired] = runs.json("fire", "ticket.closed", "--model", model, "--event-id", "closed-1")["runs"]
    assert fired["status"] == "done"
    answer, notice = fired["messages"]
    assert answer["text"] == "Thanks for your patience."
    assert notice["text"] == "ticket-closed: done"
    assert notice["chat"] == "tg:chat:desk"
    assert notice["origin"]["run"] == "hook:ticket-closed"
    assert names(fired)[-1] == "finish"
    [again] = runs.json("fire", "ticket.closed", "--model", model, "--event-id", "closed-1")["runs"]
    assert again["messages"] == fired["messages"], "a replay posts no second notice"
    # A run that asks no model ends in its work's last transaction: the notice comes too.
    [quiet] = runs.json("fire", "ticket.closed", "--model", "none")["runs"][0]["messages"]
    assert quiet["text"] == "ticket-closed: done"


def test_a_notice_is_one_line_and_says_why_a_run_failed() -> None:
    from keel.runs.notice import LONGEST, notice_text

    assert notice_text("h", "the model\nwas down") == "h: failed — the model was down"
    assert notice_text("h", None, {"sent": 3}) == 'h: done — {"sent": 3}'
    long = notice_text("h", None, "x" * 1000)
    assert len(long) == LONGEST
    assert long.endswith("…")
