"""Scenarios through `keel scenario`: the pipeline's ctx calls are the run's steps."""

from __future__ import annotations

from tests.runs.conftest import Runs

VARS = '{"prospect": "p_1", "chat": "tg:user:501"}'


def test_a_pipeline_drafts_asks_sends_keyed_and_binds(runs: Runs) -> None:
    model = runs.script("draft", [{"text": "Hello p_1, a short note."}])
    record = runs.json("scenario", "first-touch", "--vars", VARS, "--model", model)
    assert record["status"] == "waiting"
    [card] = record["cards"]
    assert card["tool"] == "request_approval"
    assert card["summary"] == "Send this? Hello p_1, a short note."
    # The card is about the prospect: the owner's reply to it comes back with their key.
    [asked] = [m for m in record["messages"] if m["message_id"] == card["id"]]
    assert asked["origin"]["reach"] == [{"context": "prospect", "entity": "p_1"}]
    [turn] = record["turns"]
    assert (turn["role"], [(a["context"], a["entity"]) for a in turn["attached"]]) == (
        "sdr",
        [("prospect", "p_1")],
    )
    done = runs.json("approve", card["id"], "--yes")
    assert done["status"] == "done"
    assert [s["name"] for s in done["steps"]] == [
        "start", "prepare", "request", "card", "decision", "send", "bind", "finish",
    ]  # fmt: skip
    sent = [m for m in done["messages"] if m["chat"] == "tg:user:501"]
    assert [m["text"] for m in sent] == ["Hello p_1, a short note."]
    assert sent[0]["origin"]["reach"] == [{"context": "prospect", "entity": "p_1"}]
    bound = runs.engine.bindings("tg:user:501")
    assert [(b.context, b.entity) for b in bound] == [("prospect", "p_1")]
    # The agent's prompt was the pipeline's, not the owner's: the owner's chat never saw it.
    said = [m.text for m in runs.engine.history("tg:user:1")]
    assert "Draft the first touch." not in said
    assert "Send this? Hello p_1, a short note." in " ".join(said)


def test_a_denied_draft_is_not_sent(runs: Runs) -> None:
    model = runs.script("draft-no", [{"text": "Hello p_2."}])
    vars_ = '{"prospect": "p_2", "chat": "tg:user:502"}'
    record = runs.json("scenario", "first-touch", "--vars", vars_, "--model", model)
    done = runs.json("approve", record["cards"][0]["id"], "--no")
    assert done["status"] == "done"
    assert [m for m in done["messages"] if m["chat"] == "tg:user:502"] == []
    assert runs.engine.bindings("tg:user:502") == ()


def test_a_terminal_error_fails_the_run_with_its_message(runs: Runs) -> None:
    record = runs.json("scenario", "first-touch", "--vars", "{}", "--model", "none", exit_code=1)
    assert record["status"] == "failed"
    assert "first-touch needs vars prospect and chat" in record["error"]


def test_a_failed_run_ends_on_a_failed_finish_step(runs: Runs) -> None:
    """The record's last row says what happened, in `--json` and in `keel runs show`."""
    record = runs.json("scenario", "first-touch", "--vars", "{}", "--model", "none", exit_code=1)
    finish = record["steps"][-1]
    assert (finish["name"], finish["status"]) == ("finish", "failed")
    assert "first-touch needs vars prospect and chat" in finish["detail"]
    shown = runs.invoke("runs", "show", record["id"])
    assert shown.exit_code == 0, shown.output
    (row,) = [line for line in shown.stdout.splitlines() if " finish " in line]
    assert row.split()[1:3] == ["finish", "failed"], shown.stdout
    # A run that succeeds still ends on a done one.
    model = runs.script("draft-ok", [{"text": "Hello p_3."}])
    vars_ = '{"prospect": "p_3", "chat": "tg:user:503"}'
    waiting = runs.json("scenario", "first-touch", "--vars", vars_, "--model", model)
    done = runs.json("approve", waiting["cards"][0]["id"], "--no")
    assert (done["steps"][-1]["name"], done["steps"][-1]["status"]) == ("finish", "done")


def test_a_refusal_the_pipeline_does_not_catch_is_the_runs_refusal(runs: Runs) -> None:
    record = runs.json("scenario", "blurt", "--model", "none", exit_code=3)
    assert (record["status"], record["refused"]) == ("failed", True)
    assert "the message would lose its origin" in record["error"]
    assert record["messages"] == []
