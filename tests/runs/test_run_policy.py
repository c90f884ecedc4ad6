"""Everything a run says is under `message:send`'s policy, and a call is checked before a
person is asked: the final answer and a pipeline's send wait on a card like a
`send_message` call; a card shows the message as it will be sent; a call that would be
refused is refused without a card, and a refused step is failed, never done."""

from __future__ import annotations

from typing import Any

from tests.runs.conftest import Runs

BOARD = "tg:chat:board"


def sent(runs: Runs, chat: str) -> list[str]:
    with runs.engine.store.transaction() as tx:
        return [m.text for m in tx.sent_messages(chat=chat)]


def answering(runs: Runs, name: str, text: str) -> dict[str, Any]:
    """A guarded heartbeat whose model only answers `text`: it waits on the answer's card."""
    model = runs.script(name, [{"text": text}])
    record: dict[str, Any] = runs.json("run", "heartbeat:guarded", "--model", model)
    assert record["status"] == "waiting"
    return record


def test_a_final_answer_the_policy_holds_waits_on_a_card_and_approved_sends_exactly_it(
    runs: Runs,
) -> None:
    text = "Answer: the lift is out until noon."
    record = answering(runs, "answer-yes", text)
    [card] = record["cards"]
    assert (card["status"], card["tool"], card["capability"]) == (
        "pending",
        "answer",
        "message:send",
    )
    # Only the card is in the room, not the answer.
    [asked] = record["messages"]
    assert asked["message_id"] == card["id"]
    assert text not in [m["text"] for m in record["messages"]]
    done = runs.json("approve", card["id"], "--yes")
    assert done["status"] == "done"
    assert [s["name"] for s in done["steps"]][-3:] == ["decision", "send", "finish"]
    assert [m["text"] for m in done["messages"]][1:] == [text]


def test_a_denied_final_answer_is_not_sent_and_the_run_says_so(runs: Runs) -> None:
    text = "Answer: nobody should read this."
    record = answering(runs, "answer-no", text)
    card = record["cards"][0]["id"]
    done = runs.json("approve", card, "--no", "--by", "ana")
    assert done["status"] == "done"
    assert text not in sent(runs, BOARD)
    [unsent] = [s for s in done["steps"] if s["name"] == "unsent"]
    assert "a person denied this call" in unsent["detail"]
    assert text in unsent["detail"]


def test_a_pipeline_send_the_policy_holds_waits_on_a_card(runs: Runs) -> None:
    record = runs.json("run", "scenario:announce", "--model", "none")
    assert record["status"] == "waiting"
    [card] = record["cards"]
    assert (card["tool"], card["arguments"]["text"]) == ("send", "The lift is back.")
    assert "The lift is back." not in [m["text"] for m in record["messages"]]
    done = runs.json("approve", card["id"], "--yes")
    assert done["status"] == "done"
    assert [m["text"] for m in done["messages"]][1:] == ["The lift is back."]


def test_a_denied_pipeline_send_is_refused_to_the_pipeline_and_not_sent(runs: Runs) -> None:
    record = runs.json("run", "scenario:announce", "--model", "none")
    card = record["cards"][0]["id"]
    done = runs.json("approve", card, "--no", exit_code=3)
    assert (done["status"], done["refused"]) == ("failed", True)
    assert [m["text"] for m in done["messages"]] == [record["messages"][0]["text"]]
    assert [s["name"] for s in done["steps"]][-2:] == ["unsent", "finish"]


def test_a_send_card_shows_the_message_as_it_will_be_sent(runs: Runs) -> None:
    notice = {"name": "send_message", "arguments": {"text": "The lift is out today."}}
    model = runs.script("shown", [{"tool_calls": [notice]}, {"text": "Done."}])
    record = runs.json("run", "heartbeat:guarded", "--model", model)
    [card] = record["cards"]
    assert card["summary"] == "Send to tg:chat:board, risk moderate:\nThe lift is out today."
    [asked] = record["messages"]
    assert asked["text"] == (
        "Approve? Send to tg:chat:board, risk moderate:\nThe lift is out today.\n"
        f"Reply yes or no. [card {card['id']}]"
    )
    assert "{" not in asked["text"]  # no arguments as JSON


def test_an_answer_card_shows_the_answer_as_it_will_be_sent(runs: Runs) -> None:
    record = answering(runs, "answer-shown", "All clear.")
    assert record["cards"][0]["summary"] == "Send to tg:chat:board, risk moderate:\nAll clear."


def test_a_call_the_origin_rules_refuse_is_refused_without_a_card(runs: Runs) -> None:
    keyed = {
        "name": "send_message",
        "arguments": {"text": "About x.", "about": {"entity": "x-1"}},
    }
    model = runs.script("refused-first", [{"tool_calls": [keyed]}, {"text": ""}])
    record = runs.json("run", "heartbeat:guarded", "--model", model)
    assert (record["status"], record["cards"], record["messages"]) == ("done", [], [])
    # Nobody was asked and nothing ran: the model got the refusal as the call's result.
    assert [s["name"] for s in record["steps"]] == [
        "start", "prepare", "request", "check", "request", "finish",
    ]  # fmt: skip


def test_a_refused_tool_step_is_failed_and_says_what_was_not_sent(runs: Runs) -> None:
    unkeyed = {"name": "send_message", "arguments": {"text": "Tonight: Heat"}}
    model = runs.script("refused-step", [{"tool_calls": [unkeyed]}, {"text": ""}])
    record = runs.json("run", "heartbeat:evening", "--model", model)
    [tool] = [s for s in record["steps"] if s["name"] == "tool"]
    assert tool["status"] == "failed"
    assert "the message would lose its origin" in tool["detail"]
    assert tool["detail"].endswith("not sent: Tonight: Heat")
    assert record["messages"] == []
