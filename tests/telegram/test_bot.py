"""`keel telegram --until-idle` against the Bot API double, on the reference brain's desk bot:
answers in the topic as native replies, links replies to the bot's messages, answers a
redelivered update once, retries a 429, and skips a sticker without a traceback."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from keel.cli import app
from keel.link.values import Conversation
from keel.runtime.engine import Engine
from keel.store.run_values import CardRow
from tests.telegram.double import BotAPIDouble, Failure

runner = CliRunner()
FORUM = -1003000000001
GROUP = {"id": FORUM, "type": "supergroup", "title": "Support", "is_forum": True}
ANA = {"id": 5513001, "is_bot": False, "first_name": "Ana"}
BOT = {"id": 4242, "is_bot": True, "first_name": "Desk"}
DB = "sqlite:///k.db"


def message(update_id: int, text: str | None = None, **more: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "message_id": 40 + update_id,
        "date": 1_777_000_000,
        "chat": GROUP,
        "from": ANA,
        "message_thread_id": 12,
        "is_topic_message": True,
        **more,
    }
    if text is not None:
        body["text"] = text
    return {"update_id": update_id, "message": body}


def scripted(folder: Path, *answers: str) -> str:
    path = folder / "model.json"
    path.write_text(json.dumps([{"text": a} for a in answers]), encoding="utf-8")
    return f"scripted:{path}"


def run_bot(double: BotAPIDouble, model: str) -> dict[str, Any]:
    result = runner.invoke(
        app,
        [
            "telegram",
            "brain",
            "--bot",
            "desk",
            "--api-url",
            double.url,
            "--until-idle",
            "--model",
            model,
            "--db",
            DB,
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def sent_in_forum() -> list[dict[str, Any]]:
    result = runner.invoke(
        app, ["messages", "brain", "--chat", f"tg:chat:{FORUM}", "--db", DB, "--json"]
    )
    assert result.exit_code == 0, result.output
    found: list[dict[str, Any]] = json.loads(result.stdout)["messages"]
    return found


def test_a_group_message_is_answered_in_its_topic_as_a_native_reply(
    here: Path, double: BotAPIDouble
) -> None:
    double.push(message(1, "Where is my parcel? Order 5512"))
    tally = run_bot(double, scripted(here, "It left the warehouse today."))
    assert (tally["updates"], tally["answered"], tally["delivered"]) == (1, 1, 1)
    (sent,) = double.sent()
    assert sent["chat_id"] == str(FORUM)
    assert sent["message_thread_id"] == "12"
    assert sent["text"] == "It left the warehouse today."
    assert sent["reply_parameters"] == {"message_id": 41, "allow_sending_without_reply": True}
    assert "parse_mode" not in sent  # plain text: a stray * cannot make the send fail
    (shown,) = sent_in_forum()
    assert shown["thread"] == "12"
    assert shown["delivery"] == {"state": "delivered", "attempts": 1, "reason": None}
    assert shown["surface_message_id"] == "1001"
    turns = runner.invoke(app, ["turns", "brain", "--db", DB, "--json"])
    assert turns.exit_code == 0, turns.output


def test_a_ticket_named_one_message_earlier_links_on_the_next(
    here: Path, double: BotAPIDouble
) -> None:
    # Brain code's `match` reads the room's last lines on Telegram as on every surface:
    # the ticket is linked afresh by code, not only kept from the earlier turn.
    double.push(message(1, "@desk_bot It's about T-481."))
    double.push(message(2, "@desk_bot any news?"))
    tally = run_bot(double, scripted(here, "Looking.", "It ships today."))
    assert tally["answered"] == 2
    turns = runner.invoke(app, ["turns", "brain", "--db", DB, "--json"])
    later = max(json.loads(turns.stdout)["turns"], key=lambda t: t["turn"])
    assert later["input"] == "@desk_bot any news?"
    shown = runner.invoke(app, ["explain", "brain", str(later["id"]), "--db", DB, "--json"])
    [ticket] = [c for c in json.loads(shown.stdout)["contexts"] if c["context"] == "ticket"]
    assert (ticket["entity"], ticket["link"], ticket["kept"]) == ("T-481", "code", None)


def test_a_reply_to_a_run_post_links_that_post_origin(here: Path, double: BotAPIDouble) -> None:
    posted = runner.invoke(
        app,
        [
            "send",
            "brain",
            "--bot",
            "desk",
            "--chat",
            "tg:user:5513001",
            "--text",
            "Hi Ana, saw your shop",
            "--run",
            "scenario:first-touch",
            "--about-entity",
            "p_913",
            "--message-id",
            "ft-913",
            "--db",
            DB,
        ],
    )
    assert posted.exit_code == 0, posted.output
    # The post waits in the outbox; the adapter delivers it before any update.
    run_bot(double, "none")
    (post,) = double.sent()
    assert (post["chat_id"], post["text"]) == ("5513001", "Hi Ana, saw your shop")
    assert "reply_parameters" not in post
    dm = {"id": 5513001, "type": "private", "first_name": "Ana"}
    bots_message = {"message_id": 1001, "date": 1, "chat": dm, "from": BOT, "text": "Hi"}
    double.push(
        {
            "update_id": 2,
            "message": {
                "message_id": 50,
                "date": 1_777_000_000,
                "chat": dm,
                "from": ANA,
                "text": "tell me more",
                "reply_to_message": bots_message,
            },
        }
    )
    run_bot(double, scripted(here, "Gladly."))
    turns = runner.invoke(app, ["turns", "brain", "--db", DB, "--json"])
    (turn,) = json.loads(turns.stdout)["turns"]
    assert (turn["chat"], turn["role"], turn["input"]) == ("tg:user:5513001", "sdr", "tell me more")
    assert [(c["context"], c["entity"], c["link"]) for c in turn["contexts"]] == [
        ("prospect", "p_913", "reply")
    ]
    answer = double.sent()[-1]
    assert answer["reply_parameters"] == {"message_id": 50, "allow_sending_without_reply": True}


def test_a_redelivered_update_is_answered_once(here: Path, double: BotAPIDouble) -> None:
    model = scripted(here, "On its way.", "Should never be said.")
    double.push(message(3, "my order is late"))
    run_bot(double, model)
    # Telegram hands the same update out again (the confirming getUpdates was lost).
    double.push(message(3, "my order is late"))
    tally = run_bot(double, model)
    assert tally["answered"] == 0
    assert tally["skipped"] == ["3: answered already"]
    assert [s["text"] for s in double.sent()] == ["On its way."]


def test_a_429_is_retried_after_the_time_telegram_names(here: Path, double: BotAPIDouble) -> None:
    double.fail_next(
        "sendMessage",
        Failure(429, "Too Many Requests: retry after 1", {"retry_after": 1}),
    )
    double.push(message(4, "help with my refund"))
    tally = run_bot(double, scripted(here, "Refund approved."))
    assert (tally["delivered"], tally["failed"]) == (1, 0)
    assert [s["text"] for s in double.sent()] == ["Refund approved.", "Refund approved."]
    (shown,) = sent_in_forum()
    assert shown["delivery"] == {"state": "delivered", "attempts": 2, "reason": None}


def test_a_refused_send_fails_with_the_reason(here: Path, double: BotAPIDouble) -> None:
    double.fail_next("sendMessage", Failure(400, "Bad Request: message thread not found"))
    double.push(message(5, "help"))
    tally = run_bot(double, scripted(here, "Hello."))
    assert (tally["delivered"], tally["failed"]) == (0, 1)
    (shown,) = sent_in_forum()
    assert shown["delivery"]["state"] == "failed"
    assert "message thread not found" in shown["delivery"]["reason"]


def test_a_sticker_is_skipped_without_a_traceback(
    here: Path, double: BotAPIDouble, caplog: pytest.LogCaptureFixture
) -> None:
    sticker = {
        "file_id": "s",
        "file_unique_id": "s",
        "type": "regular",
        "width": 1,
        "height": 1,
        "is_animated": False,
        "is_video": False,
    }
    double.push(message(6, sticker=sticker))
    with caplog.at_level(logging.INFO, logger="keel.telegram"):
        tally = run_bot(double, scripted(here))
    assert tally["skipped"] == ["6: a sticker without text"]
    assert double.sent() == []
    assert "update 6 skipped: a sticker without text" in caplog.text
    assert "Traceback" not in caplog.text


def test_without_a_token_it_says_where_to_put_one(
    here: Path, double: BotAPIDouble, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KEEL_TELEGRAM_TOKEN")
    result = runner.invoke(
        app, ["telegram", "brain", "--bot", "desk", "--api-url", double.url, "--until-idle"]
    )
    assert result.exit_code == 2
    assert "no Telegram bot token in $KEEL_TELEGRAM_TOKEN" in result.output
    assert here.exists()


@pytest.mark.usefixtures("here")
def test_a_bot_access_yaml_does_not_name_is_refused_before_connecting(
    double: BotAPIDouble,
) -> None:
    result = runner.invoke(
        app, ["telegram", "brain", "--bot", "deks", "--api-url", double.url, "--until-idle"]
    )
    assert result.exit_code == 2
    assert "no bot 'deks' in constitution/access.yaml — did you mean 'desk'?" in " ".join(
        result.output.split()
    )
    assert double.sent("getUpdates") == []


def test_a_server_error_is_retried_and_a_long_answer_goes_in_parts(
    here: Path, double: BotAPIDouble
) -> None:
    double.fail_next("sendMessage", Failure(502, "Bad Gateway"))
    long_answer = "\n\n".join(f"Step {n}: " + "check the label " * 60 for n in range(11))
    double.push(message(7, "my parcel is broken, help"))
    tally = run_bot(double, scripted(here, long_answer))
    assert (tally["delivered"], tally["failed"]) == (1, 0)
    parts = double.sent()[1:]  # the first try met the 502
    assert len(parts) == 3
    assert all(len(p["text"]) <= 4096 for p in parts)
    assert parts[0]["reply_parameters"]["message_id"] == 47
    assert all("reply_parameters" not in p for p in parts[1:])
    assert all(p["message_thread_id"] == "12" for p in parts)
    (shown,) = sent_in_forum()
    assert shown["surface_message_id"] == "1001"  # the first part's id


def pending_card(text: str) -> None:
    """A run's approval card, recorded as `keel run` records one, waiting for delivery."""
    at = datetime.now(UTC)
    with Engine(Path("brain"), DB) as engine:
        conversation = Conversation(bot="desk", chat=f"tg:chat:{FORUM}", thread="12")
        engine.send(conversation, text, message_id="run-1:3", card=True)
        with engine.store.transaction() as tx:
            tx.record_card(
                CardRow(
                    id="run-1:3",
                    run_id="run-1",
                    tool="refund_send",
                    arguments={"ticket": "T-481", "amount": 180},
                    risk="dangerous",
                    capability="billing:refund",
                    summary=text,
                    bot="desk",
                    chat=f"tg:chat:{FORUM}",
                    thread="12",
                    message_id="run-1:3",
                    status="pending",
                    asked_at=at,
                    timeout_at=at + timedelta(hours=1),
                )
            )


def card_status() -> tuple[str, str | None]:
    with Engine(Path("brain"), DB) as engine, engine.store.transaction() as tx:
        card = tx.card("run-1:3")
    assert card is not None
    return card.status, card.decided_by


def pressed(update_id: int, data: str) -> dict[str, Any]:
    shown = {"message_id": 1001, "date": 1, "chat": GROUP, "from": BOT, "text": "Refund?"}
    query = {"id": f"q{update_id}", "from": ANA, "chat_instance": "c", "data": data}
    return {"update_id": update_id, "callback_query": {**query, "message": shown}}


@pytest.mark.usefixtures("here")
def test_a_card_goes_with_buttons_and_a_press_decides_it_once(double: BotAPIDouble) -> None:
    pending_card("Refund $180 on T-481? [card run-1:3]")
    run_bot(double, "none")
    (card,) = double.sent()
    assert card["text"] == "Refund $180 on T-481?", "the buttons decide it: no card id shown"
    assert card["reply_markup"] == {
        "inline_keyboard": [
            [
                {"text": "Approve", "callback_data": "keel:approve"},
                {"text": "Deny", "callback_data": "keel:deny"},
            ]
        ]
    }
    double.push(pressed(9, "keel:approve"))
    tally = run_bot(double, "none")
    assert tally["decided"] == 1
    assert card_status() == ("approved", "tg:user:5513001")
    (answered,) = double.sent("answerCallbackQuery")
    assert answered["text"].startswith("Approved by tg:user:5513001 at ")
    (edited,) = double.sent("editMessageText")
    assert edited["text"].startswith("Refund?\n\nApproved by tg:user:5513001")
    double.push(pressed(10, "keel:deny"))
    tally = run_bot(double, "none")
    assert tally["decided"] == 0
    assert double.sent("answerCallbackQuery")[-1]["text"] == (
        "This card was approved already by tg:user:5513001."
    )
    assert len(double.sent("editMessageText")) == 1
    assert card_status() == ("approved", "tg:user:5513001")


def test_a_press_by_someone_not_named_an_approver_is_refused_and_the_card_waits(
    here: Path, double: BotAPIDouble
) -> None:
    manifest = here / "brain" / "constitution" / "MANIFEST.yaml"
    people = '\npeople:\n  owners: ["tg:user:1"]\n  approvers: {"*": [owners]}\n'
    manifest.write_text(manifest.read_text(encoding="utf-8") + people, encoding="utf-8")
    pending_card("Refund $180 on T-481?")
    run_bot(double, "none")
    double.push(pressed(9, "keel:approve"))
    tally = run_bot(double, "none")
    assert tally["decided"] == 0
    assert card_status() == ("pending", None)
    (answered,) = double.sent("answerCallbackQuery")
    assert "tg:user:5513001" in answered["text"]
    assert double.sent("editMessageText") == []


@pytest.mark.usefixtures("here")
def test_a_yes_in_reply_to_a_card_decides_it_and_is_no_turn(double: BotAPIDouble) -> None:
    pending_card("Refund $180 on T-481?")
    run_bot(double, "none")
    card = {"message_id": 1001, "date": 1, "chat": GROUP, "from": BOT, "text": "Refund?"}
    double.push(message(11, "yes, go ahead", reply_to_message=card))
    tally = run_bot(double, "none")
    assert (tally["decided"], tally["answered"]) == (1, 0)
    assert card_status()[0] == "approved"
    turns = runner.invoke(app, ["turns", "brain", "--db", DB, "--json"])
    assert json.loads(turns.stdout)["turns"] == []
    # Handed out again, the same update decides nothing more and makes no turn.
    double.push(message(11, "yes, go ahead", reply_to_message=card))
    assert run_bot(double, "none")["skipped"] == ["11: answered already"]


def test_in_a_group_chatter_the_policy_leaves_alone_is_answered_only_when_said_to_the_bot(
    here: Path, double: BotAPIDouble
) -> None:
    double.push(message(12, "lovely weather today"))
    double.push(message(13, "@desk_bot lovely weather today"))
    tally = run_bot(double, scripted(here, "It is."))
    assert (tally["updates"], tally["answered"]) == (2, 1)
    (sent,) = double.sent()
    assert sent["reply_parameters"]["message_id"] == 53


def test_context_and_help_are_answered_by_keel_never_by_the_model(
    here: Path, double: BotAPIDouble
) -> None:
    double.push(message(14, "help, my parcel is broken"))
    run_bot(double, scripted(here, "Sorry to hear that."))
    double.push(message(15, "/context@desk_bot"))
    double.push(message(16, "/help"))
    tally = run_bot(double, scripted(here))  # a model asked anything would fail: no steps
    assert tally["answered"] == 0
    context, helped = double.sent()[1:]
    assert context["text"].startswith("Turn 1, as support:")
    assert "entities" not in context  # Keel's own text: context names like a_b stay as written
    assert "Window: " in context["text"]
    assert (context["message_thread_id"], context["reply_parameters"]["message_id"]) == ("12", 55)
    assert helped["text"].startswith("I am desk (as support)")
    assert "/context" in helped["text"]
    # Handed out again, a command is not answered twice.
    double.push(message(16, "/help"))
    assert run_bot(double, scripted(here))["skipped"] == ["16: answered already"]
    assert len(double.sent()) == 3


def test_a_markdown_answer_goes_as_entities_with_no_parse_mode(
    here: Path, double: BotAPIDouble
) -> None:
    answer = "**Shipped** today — track it at [the tracker](https://example.com/t/55):\n\n- `TR-55`"
    double.push(message(20, "@desk_bot where is my parcel?"))
    tally = run_bot(double, scripted(here, answer))
    assert (tally["delivered"], tally["failed"]) == (1, 0)
    (sent,) = double.sent()
    assert "parse_mode" not in sent
    assert sent["text"] == "Shipped today — track it at the tracker:\n\n• TR-55"
    assert sent["entities"] == [
        {"type": "bold", "offset": 0, "length": 7},
        {"type": "text_link", "offset": 28, "length": 11, "url": "https://example.com/t/55"},
        {"type": "code", "offset": 44, "length": 5},
    ]
    (shown,) = sent_in_forum()
    assert shown["text"] == answer  # the history keeps what the model wrote


def test_markdown_hostile_text_is_delivered_as_written(here: Path, double: BotAPIDouble) -> None:
    answer = (
        "Use *args and __init__ with List<String>; <b>not html</b> ``` "
        "[Ana](tg://user?id=5513001) [x](javascript:alert(1)) 2 * 3 _ 4 ~5"
    )
    double.push(message(21, "@desk_bot how?"))
    tally = run_bot(double, scripted(here, answer))
    assert (tally["delivered"], tally["failed"]) == (1, 0)
    (sent,) = double.sent()  # the double refuses what Telegram refuses: one send took it
    assert "List<String>" in sent["text"]
    assert "<b>not html</b>" in sent["text"]
    assert "parse_mode" not in sent
    assert all(e["type"] != "text_link" for e in sent.get("entities", []))


def test_formatting_telegram_refuses_goes_again_as_plain_text(
    here: Path, double: BotAPIDouble
) -> None:
    refused = "Bad Request: can't parse entities: Can't find end of the entity starting at 0"
    double.fail_next("sendMessage", Failure(400, refused))
    double.push(message(22, "@desk_bot status?"))
    tally = run_bot(double, scripted(here, "**All** good."))
    assert (tally["delivered"], tally["failed"]) == (1, 0)
    formatted, fallback = double.sent()
    assert formatted["entities"] == [{"type": "bold", "offset": 0, "length": 3}]
    assert fallback["text"] == "All good."
    assert "entities" not in fallback
    assert "parse_mode" not in fallback
    assert fallback["reply_parameters"]["message_id"] == 62  # still the native reply
    (shown,) = sent_in_forum()
    assert shown["delivery"]["state"] == "delivered"
    assert shown["surface_message_id"] == "1001"  # the refused send made no message


def test_a_bad_request_about_anything_else_still_fails_the_message(
    here: Path, double: BotAPIDouble
) -> None:
    double.fail_next("sendMessage", Failure(400, "Bad Request: chat not found"))
    double.push(message(23, "@desk_bot status?"))
    tally = run_bot(double, scripted(here, "**All** good."))
    assert (tally["delivered"], tally["failed"]) == (0, 1)
    assert len(double.sent()) == 1
    (shown,) = sent_in_forum()
    assert shown["delivery"]["reason"] == "Bad Request: chat not found"


def test_a_long_formatted_answer_is_split_with_valid_entities_in_each_part(
    here: Path, double: BotAPIDouble
) -> None:
    step = "**Step {n}** 📦 check the `label` and the box " + "again and " * 90
    answer = "\n\n".join(step.format(n=n) for n in range(11))
    assert len(answer) > 10_000
    double.push(message(24, "my parcel is broken, help"))
    tally = run_bot(double, scripted(here, answer))
    assert (tally["delivered"], tally["failed"]) == (1, 0)
    parts = double.sent()
    assert len(parts) == 3  # and the double took each: in bounds, at most 4,096 units
    assert all(len(p["text"].encode("utf-16-le")) // 2 <= 4096 for p in parts)
    for part in parts:
        assert part["text"].startswith("Step ")
        assert part["entities"][0]["type"] == "bold"
        assert {"type": "code"}.items() <= part["entities"][1].items()
    assert parts[0]["reply_parameters"]["message_id"] == 64
    assert all("reply_parameters" not in p for p in parts[1:])


@pytest.mark.usefixtures("here")
def test_a_card_and_keels_commands_go_as_written(double: BotAPIDouble) -> None:
    pending_card("Refund **$180** on T_481_x? `rm *`")
    double.push(message(25, "/help"))
    run_bot(double, "none")
    card, helped = double.sent()
    assert card["text"] == "Refund **$180** on T_481_x? `rm *`"
    assert "entities" not in card
    assert "reply_markup" in card
    assert helped["text"].startswith("I am desk (as support)")
    assert "entities" not in helped


@pytest.mark.usefixtures("here")
def test_a_bot_no_model_answers_says_so_when_it_starts(
    double: BotAPIDouble, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    result = runner.invoke(
        app, ["telegram", "brain", "--bot", "desk", "--api-url", double.url, "--until-idle"]
    )
    assert result.exit_code == 0, result.output
    said = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any(m.startswith("no model answers: each message is recorded") for m in said), said
