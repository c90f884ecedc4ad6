"""Approval cards: a call that needs a person waits durably; a reply, `keel approve` or the
card's timeout decides it, and the run ends as it should with nothing done twice."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from keel.assemble.values import ToolCall
from keel.link.values import Conversation, TurnRequest
from keel.runs.approvals import wake
from keel.runs.service import wait
from keel.runtime.cards import answer_reply, decide, reply_verdict
from keel.runtime.models import OpenAIChatModel
from keel.testing import ScriptedModel, ScriptedStep
from tests.runs.conftest import Runs

BOARD = Conversation(bot="nova", chat="tg:chat:board")
NOTICE = {"name": "send_message", "arguments": {"text": "The lift is out today."}}


def posted(runs: Runs, run_id: str) -> list[str]:
    return [m["text"] for m in runs.json("runs", "show", run_id)["messages"]]


def waiting_run(
    runs: Runs, name: str, heartbeat: str = "guarded", closing: str = "Done."
) -> dict[str, Any]:
    """A run waiting on the card of its notice; `closing`, its last word (sent, under the
    policy, only when the agent sent nothing itself; empty: none)."""
    model = runs.script(name, [{"tool_calls": [NOTICE]}, {"text": closing}])
    record: dict[str, Any] = runs.json("run", f"heartbeat:{heartbeat}", "--model", model)
    assert record["status"] == "waiting"
    return record


def test_a_call_that_needs_approval_waits_on_a_card_and_a_yes_reply_lets_it_run(
    runs: Runs,
) -> None:
    record = waiting_run(runs, "reply-yes")
    [card] = record["cards"]
    assert (card["status"], card["tool"], card["risk"]) == ("pending", "send_message", "moderate")
    assert [s["name"] for s in record["steps"]][-1] == "card"
    [asked] = record["messages"]  # the card is a message of the run, kept while pending
    assert asked["message_id"] == card["id"]
    assert asked["origin"]["pending_card"] is True
    assert asked["origin"]["reach"] == [{"context": "notice", "entity": None}]
    not_an_answer = answer_reply(runs.engine.store, BOARD, (card["id"],), "what is this?")
    assert not_an_answer is None
    decided = answer_reply(runs.engine.store, BOARD, (card["id"],), "Yes, post it")
    assert decided is not None
    assert decided.status == "approved"
    wake(decided)
    assert wait(runs.runtime, record["id"], waiting_done=True) == "done"
    after = runs.json("runs", "show", record["id"])
    assert [s["name"] for s in after["steps"]][-5:] == [
        "card", "decision", "tool", "request", "finish",
    ]  # fmt: skip
    assert after["cards"][0]["status"] == "approved"
    assert after["cards"][0]["decided_by"] == "reply in nova/tg:chat:board"
    assert posted(runs, record["id"]) == [asked["text"], "The lift is out today."]
    with runs.engine.store.transaction() as tx:
        [origin] = tx.origins("nova", "tg:chat:board", [card["id"]])
    assert origin.pending_card is False


def test_a_no_replied_with_keel_turn_decides_the_card_and_finishes_the_run(runs: Runs) -> None:
    record = waiting_run(runs, "turn-no", closing="")
    [card] = record["cards"]
    flags = (
        "--bot",
        "nova",
        "--chat",
        "tg:chat:board",
        "--role",
        "guarded",
        "--reply-to",
        card["id"],
    )
    decided = runs.json("turn", *flags, "--input", "No, not today")
    assert decided["card"] == {"id": card["id"], "status": "denied"}
    assert decided["run"]["status"] == "done"
    assert "The lift is out today." not in posted(runs, record["id"])  # the denied call
    # The card is decided: the same reply again is an ordinary turn.
    again = runs.json("turn", *flags, "--input", "No, not today")
    assert "card" not in again
    assert again["turn"] >= 1


def test_keel_approve_no_denies_the_call_and_the_agent_is_told(runs: Runs) -> None:
    record = waiting_run(runs, "deny")
    card = record["cards"][0]["id"]
    result = runs.json("approve", card, "--no", "--by", "ana", "--note", "not today")
    assert result["cards"][0]["status"] == "denied"
    assert (result["cards"][0]["decided_by"], result["cards"][0]["note"]) == ("ana", "not today")
    # The notice was never posted; the agent's closing line, as it sent nothing itself, is
    # a send of the run's too: the role's policy holds it on a card of its own.
    assert result["status"] == "waiting"
    assert [c["tool"] for c in result["cards"]] == ["send_message", "answer"]
    assert "The lift is out today." not in posted(runs, record["id"])
    with runs.engine.store.transaction() as tx:
        steps = tx.steps(record["id"])
    request = [s for s in steps if s.name == "request"][-1]
    assert request.output["text"] == "Done."
    again = runs.json("approve", card, "--yes", exit_code=3)
    assert "was denied already" in again["refused"]


def test_a_card_nobody_answers_times_out_and_denies(runs: Runs) -> None:
    record = waiting_run(runs, "timeout", heartbeat="hasty")
    # It waits on the call's card, then on its closing line's: each times out.
    first = wait(runs.runtime, record["id"], waiting_done=True, timeout_s=30)
    if first == "waiting":
        first = wait(runs.runtime, record["id"], waiting_done=True, timeout_s=30)
    assert first == "done"
    after = runs.json("runs", "show", record["id"])
    # The call's card timed out, and so did its closing line's: nothing was sent.
    assert [c["status"] for c in after["cards"]] == ["timed-out", "timed-out"]
    assert [s["name"] for s in after["steps"]][-2:] == ["unsent", "finish"]
    assert len(posted(runs, record["id"])) == 2  # the two cards


def test_an_unknown_card_and_a_missing_verdict_are_usage_errors(runs: Runs) -> None:
    assert runs.invoke("approve", "no-such-card", "--yes").exit_code == 2
    assert runs.invoke("approve", "no-such-card").exit_code == 2


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        pytest.param("yes", True, id="yes"),
        pytest.param("OK, go ahead", True, id="ok"),
        pytest.param("No.", False, id="no"),
        pytest.param("deny it", False, id="deny"),
        pytest.param("maybe later", None, id="neither"),
        pytest.param("", None, id="empty"),
    ],
)
def test_a_reply_says_yes_no_or_neither_by_its_first_word(text: str, verdict: bool | None) -> None:
    assert reply_verdict(text) is verdict


def test_outside_a_run_a_call_that_needs_approval_is_refused(runs: Runs) -> None:
    scripted = ScriptedModel(
        [
            ScriptedStep(calls=(ToolCall(id="c1", name="send_message", arguments={"text": "Hi"}),)),
            ScriptedStep(text="I could not."),
        ]
    )
    request = TurnRequest(
        conversation=Conversation(bot="nova", chat="tg:chat:plain"),
        now=datetime.now(UTC),
        role="guarded",
        input="Post hi.",
    )
    outcome = runs.engine.run(request, OpenAIChatModel(client=scripted.openai_client()))
    result = outcome.transcript.items[1]
    assert getattr(result, "is_error", False) is True
    assert "only a run can wait for one" in getattr(result, "content", "")
    with runs.engine.store.transaction() as tx:
        # Only the turn's answer: the refused send sent nothing.
        assert [m.text for m in tx.sent_messages(chat="tg:chat:plain")] == ["I could not."]


def test_deciding_again_the_same_way_wakes_a_run_whose_wake_was_lost(runs: Runs) -> None:
    record = waiting_run(runs, "lost-wake")
    card = record["cards"][0]["id"]
    decide(runs.engine.store, card, approve=True, by="ana")  # saved; the wake never sent
    assert runs.json("runs", "show", record["id"])["status"] == "waiting"
    other = runs.json("approve", card, "--no", exit_code=3)
    assert "was approved already" in other["refused"]
    woken = runs.json("approve", card, "--yes")
    assert woken["status"] == "done"
    assert posted(runs, record["id"])[1:] == ["The lift is out today."]
    again = runs.json("approve", card, "--yes", exit_code=3)
    assert "was approved already" in again["refused"]


def test_a_wake_while_the_card_is_pending_waits_again_and_never_times_it_out(
    runs: Runs,
) -> None:
    record = waiting_run(runs, "stray-wake")
    [asked] = record["cards"]
    with runs.engine.store.transaction() as tx:
        pending = tx.card(asked["id"])
    assert pending is not None
    wake(pending)  # a wake with no decision behind it: the card is still pending
    assert wait(runs.runtime, record["id"], waiting_done=True, timeout_s=1.5) == "waiting"
    shown = runs.json("runs", "show", record["id"])
    assert shown["cards"][0]["status"] == "pending"
    assert shown["steps"][-1]["name"] == "decision"
    assert "still pending" in shown["steps"][-1]["detail"]
    done = runs.json("approve", asked["id"], "--yes")
    assert (done["status"], done["cards"][0]["status"]) == ("done", "approved")
    assert posted(runs, record["id"])[1:] == ["The lift is out today."]
