"""Who decides a card: with `people:`, a decision is checked against the person who makes
it, and cards go to the operators' chat (`approvals: {chat:}`), naming the room they are
about. A refused decision is recorded on the card, which stays pending."""

from __future__ import annotations

from typing import Any

from tests.runs.brains import RUNS_BRAIN
from tests.runs.conftest import Runs, runs_of

OPS = "tg:chat:ops"
BOARD = "tg:chat:board"
NOTICE = {"name": "send_message", "arguments": {"text": "The lift is out today."}}
MANIFEST = """contexts:
  codeTimeoutMs: 5000
people:
  owners: [tg:user:1]
  approvers:
    "message:send": [tg:user:7]
    "*": [owners]
approvals:
  chat: tg:chat:ops
"""


runs = runs_of({**RUNS_BRAIN, "constitution/MANIFEST.yaml": MANIFEST}, "people")


def waiting_run(runs: Runs, name: str) -> dict[str, Any]:
    # No closing line: denied, the agent says nothing more (a line would wait on a card).
    model = runs.script(name, [{"tool_calls": [NOTICE]}, {"text": ""}])
    record: dict[str, Any] = runs.json("run", "heartbeat:guarded", "--model", model)
    assert record["status"] == "waiting"
    return record


def reply(runs: Runs, card: str, text: str, *, sender: str | None, exit_code: int = 0) -> Any:
    flags = ["--bot", "nova", "--chat", OPS, "--role", "guarded", "--reply-to", card]
    if sender is not None:
        flags += ["--from", sender]
    return runs.json("turn", *flags, "--input", text, exit_code=exit_code)


def test_the_card_goes_to_the_operators_chat_naming_the_room_it_is_about(runs: Runs) -> None:
    record = waiting_run(runs, "ops-chat")
    [card] = record["cards"]
    assert (card["bot"], card["chat"], card["thread"]) == ("nova", OPS, None)
    assert f"for {BOARD} (run heartbeat:guarded)" in card["summary"]
    [asked] = record["messages"]
    assert asked["chat"] == OPS
    assert f"for {BOARD}" in asked["text"]
    # A reply in the operators' chat never brings the client's contexts into it.
    assert asked["origin"]["reach"] == []
    assert asked["origin"]["pending_card"] is True


def test_a_reply_from_someone_not_allowed_is_refused_recorded_and_leaves_the_card_pending(
    runs: Runs,
) -> None:
    record = waiting_run(runs, "refused-reply")
    card = record["cards"][0]["id"]
    refused = reply(runs, card, "yes, post it", sender="tg:user:5", exit_code=3)
    assert "tg:user:5 may not decide message:send cards" in refused["refused"]
    assert "only tg:user:7 may" in refused["refused"]
    nobody = reply(runs, card, "yes", sender=None, exit_code=3)
    assert "names no person" in nobody["refused"]
    shown = runs.json("runs", "show", record["id"])
    assert shown["status"] == "waiting"
    [after] = shown["cards"]
    assert after["status"] == "pending"
    assert [r["by"] for r in after["refused"]] == ["tg:user:5", None]
    assert "may not decide" in after["refused"][0]["reason"]
    # The approver's yes decides it, recorded by their id, and the notice goes out.
    decided = reply(runs, card, "yes, post it", sender="tg:user:7")
    assert decided["card"] == {"id": card, "status": "approved"}
    assert decided["run"]["status"] == "done"
    assert decided["run"]["cards"][0]["decided_by"] == "tg:user:7"
    sent = [m["text"] for m in decided["run"]["messages"]]
    assert sent[-1] == "The lift is out today."


def test_keel_approve_decides_as_the_first_owner_unless_told_otherwise(runs: Runs) -> None:
    record = waiting_run(runs, "approve-as")
    card = record["cards"][0]["id"]
    # tg:user:1 owns the brain, but only tg:user:7 approves message:send.
    default = runs.json("approve", card, "--yes", exit_code=3)
    assert "tg:user:1 may not decide message:send cards" in default["refused"]
    other = runs.json("approve", card, "--yes", "--as", "tg:user:5", exit_code=3)
    assert "tg:user:5 may not decide" in other["refused"]
    shown = runs.json("runs", "show", record["id"])
    assert shown["cards"][0]["status"] == "pending"
    assert [r["by"] for r in shown["cards"][0]["refused"]] == ["tg:user:1", "tg:user:5"]
    table = runs.invoke("runs", "show", record["id"])
    assert table.exit_code == 0, table.output
    assert "refused tg:user:5: tg:user:5 may not decide message:send cards" in " ".join(
        table.stdout.split()
    )
    # The hint it prints decides as someone who may: keel approve's default owner may not.
    assert f"{card} --yes --as tg:user:7" in table.stdout
    done = runs.json("approve", card, "--no", "--as", "tg:user:7", "--note", "not today")
    assert done["status"] == "done"
    assert (done["cards"][0]["status"], done["cards"][0]["decided_by"]) == (
        "denied",
        "tg:user:7",
    )
    assert "The lift is out today." not in [m["text"] for m in done["messages"]]


def test_a_decision_never_rests_on_an_id_that_is_not_a_persons(runs: Runs) -> None:
    record = waiting_run(runs, "bad-ids")
    card = record["cards"][0]["id"]
    for bad in ("", "bob", "tg:user:7 "):
        refused = runs.invoke("approve", card, "--yes", "--as", bad)
        assert refused.exit_code == 2, refused.output
        said = " ".join(refused.output.split())
        assert "the person" in said
        assert "is empty" in said or "not a person's id" in said
    both = runs.invoke("approve", card, "--yes", "--as", "tg:user:7", "--by", "ana")
    assert both.exit_code == 2
    assert "not both" in both.output
    turn = runs.invoke("turn", "--bot", "nova", "--chat", OPS, "--from", "bob", "--input", "yes")
    assert turn.exit_code == 2
    assert "not a person's id" in " ".join(turn.output.split())
    assert runs.json("runs", "show", record["id"])["cards"][0]["status"] == "pending"


def test_a_yes_through_another_bot_says_which_bot_posted_the_card(runs: Runs) -> None:
    record = waiting_run(runs, "other-bot")
    card = record["cards"][0]["id"]
    flags = ["--bot", "desk", "--chat", OPS, "--role", "guarded", "--reply-to", card]
    said = runs.json("turn", *flags, "--from", "tg:user:7", "--input", "yes", exit_code=3)
    assert f"card {card} was posted by bot 'nova'" in said["refused"]
    assert "--bot nova" in said["refused"]
    assert runs.json("runs", "show", record["id"])["cards"][0]["status"] == "pending"
