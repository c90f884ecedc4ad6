"""Runs end to end through `keel run` and `keel fire`: each piece of work a durable step,
messages with their origin, the record `--json` prints."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from keel.link.values import Conversation, TurnRequest
from keel.runs.service import order_for, start, wait
from keel.runs.values import RunOrder
from tests.runs.conftest import Runs


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
    fired = runs.json("fire", "ticket.opened", "--payload", payload, "--model", model,
                      "--event-id", "evt-7")  # fmt: skip
    assert fired["status"] == "done"
    assert fired["id"] == "hook-ticket-opened-evt-7"
    assert fired["reach"] == [{"context": "ticket", "entity": "T-7"}]
    [message] = fired["messages"]
    assert message["origin"]["reach"] == [{"context": "ticket", "entity": "T-7"}]
    assert "T-7" in fired["turns"][0]["blocks"][0]["text"] or fired["turns"][0]["attached"]
    again = runs.json("fire", "ticket.opened", "--payload", payload, "--model", model,
                      "--event-id", "evt-7")  # fmt: skip
    assert again["messages"] == fired["messages"]


def test_an_event_no_hook_listens_to_runs_nothing(runs: Runs) -> None:
    assert runs.json("fire", "nothing.happened") == {"runs": []}


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
