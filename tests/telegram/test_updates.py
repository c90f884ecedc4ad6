"""Telegram updates read as Keel's turns: ids, threads, replies, senders, and what is skipped."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from aiogram.types import Update

from keel.link.values import Conversation
from keel.telegram import BotUser, Incoming, Skipped, read_update, turn_request

NOW = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
GROUP = {"id": -1003000000001, "type": "supergroup", "title": "Desk", "is_forum": True}
PERSON = {"id": 5513001, "is_bot": False, "first_name": "Ana"}
DM = {"id": 5513001, "type": "private", "first_name": "Ana"}


def update(kind: str = "message", **message: Any) -> Update:
    body = {"message_id": 40, "date": 1_777_000_000, "chat": GROUP, "from": PERSON, **message}
    return Update.model_validate({"update_id": 7, kind: body}, context={})


def incoming(value: Incoming | Skipped) -> Incoming:
    assert isinstance(value, Incoming), value
    return value


def test_a_group_message_is_a_chat_turn_with_its_sender() -> None:
    read = incoming(read_update(update(text="where is my parcel?")))
    assert (read.chat, read.dm, read.thread, read.sender) == (
        "tg:chat:-1003000000001",
        False,
        None,
        "tg:user:5513001",
    )
    assert (read.chat_id, read.message_id, read.update_id) == (-1003000000001, 40, 7)
    request = turn_request(read, bot="desk", now=NOW)
    assert request.conversation == Conversation(bot="desk", chat="tg:chat:-1003000000001")
    assert (request.input, request.sender, request.dm) == (
        "where is my parcel?",
        "tg:user:5513001",
        False,
    )


def test_a_private_chat_is_a_direct_message_under_the_person_id() -> None:
    read = incoming(read_update(update(chat=DM, text="hi")))
    assert (read.chat, read.dm) == ("tg:user:5513001", True)
    assert turn_request(read, bot="desk", now=NOW).dm is True


def test_a_forum_topic_is_the_turn_thread_and_its_opening_message_is_no_reply() -> None:
    opening = {
        "message_id": 12,
        "date": 1,
        "chat": GROUP,
        "forum_topic_created": {"name": "T-481", "icon_color": 1},
    }
    read = incoming(
        read_update(
            update(
                text="any news?",
                message_thread_id=12,
                is_topic_message=True,
                reply_to_message=opening,
            )
        )
    )
    assert (read.thread, read.thread_id, read.reply_to) == ("12", 12, None)
    request = turn_request(read, bot="desk", now=NOW)
    assert request.conversation.thread == "12"


def test_a_thread_id_outside_a_topic_is_not_a_thread() -> None:
    read = incoming(read_update(update(text="hello", message_thread_id=33)))
    assert read.thread is None


def test_a_native_reply_names_the_telegram_message_and_the_turn_its_keel_id() -> None:
    bots = {
        "message_id": 90,
        "date": 1,
        "chat": GROUP,
        "from": {"id": 1, "is_bot": True, "first_name": "desk"},
        "text": "Ticket T-481 opened",
    }
    read = incoming(read_update(update(text="thanks", reply_to_message=bots)))
    assert read.reply_to == 90
    request = turn_request(read, bot="desk", now=NOW, reply_to=("run-1:post",))
    assert request.reply_to == ("run-1:post",)


def test_a_business_message_is_a_business_chat_answered_through_its_connection() -> None:
    read = incoming(
        read_update(
            update("business_message", chat=DM, text="open today?", business_connection_id="bc-1")
        )
    )
    assert (read.chat, read.dm, read.connection) == ("tg:business:5513001", True, "bc-1")


def test_a_channel_post_is_signed_by_the_channel() -> None:
    channel = {"id": -1009, "type": "channel", "title": "News"}
    read = incoming(
        read_update(
            update("channel_post", chat=channel, text="news", sender_chat=channel, **{"from": None})
        )
    )
    assert (read.chat, read.sender) == ("tg:chat:-1009", "tg:chat:-1009")


def test_a_caption_is_the_text_of_its_media() -> None:
    photo = [{"file_id": "p", "file_unique_id": "p", "width": 1, "height": 1}]
    read = incoming(read_update(update(photo=photo, caption="is this damage covered?")))
    assert read.text == "is this damage covered?"


@pytest.mark.parametrize(
    ("made", "reason"),
    [
        pytest.param(
            update(
                sticker={
                    "file_id": "s",
                    "file_unique_id": "s",
                    "type": "regular",
                    "width": 1,
                    "height": 1,
                    "is_animated": False,
                    "is_video": False,
                }
            ),
            "a sticker without text",
            id="sticker",
        ),
        pytest.param(
            update(voice={"file_id": "v", "file_unique_id": "v", "duration": 2}),
            "a voice without text",
            id="voice",
        ),
        pytest.param(
            update(new_chat_members=[PERSON]), "a service message without text", id="service"
        ),
        pytest.param(update(text="   "), "a service message without text", id="blank"),
        pytest.param(
            update("edited_message", text="where is it?", edit_date=1),
            "edited message: the answer to the first version stands",
            id="edited",
        ),
        pytest.param(
            Update.model_validate(
                {
                    "update_id": 7,
                    "poll_answer": {
                        "poll_id": "p",
                        "option_ids": [0],
                        "option_persistent_ids": ["a"],
                        "user": PERSON,
                    },
                }
            ),
            "a poll answer update",
            id="poll-answer",
        ),
    ],
)
def test_what_keel_does_not_answer_is_skipped_with_a_reason(made: Update, reason: str) -> None:
    assert read_update(made) == Skipped(update_id=7, reason=reason)


ME = BotUser(id=4242, username="desk_bot")


@pytest.mark.parametrize(
    ("made", "addressed"),
    [
        pytest.param(update(text="lovely weather"), False, id="chatter"),
        pytest.param(update(text="/status"), True, id="command"),
        pytest.param(update(text="hey @Desk_Bot, a question"), True, id="mention"),
        pytest.param(
            update(
                text="and?",
                reply_to_message={
                    "message_id": 9,
                    "date": 1,
                    "chat": GROUP,
                    "from": {"id": 4242, "is_bot": True, "first_name": "Desk"},
                    "text": "Hi",
                },
            ),
            True,
            id="reply-to-the-bot",
        ),
        pytest.param(
            update(
                text="agreed",
                reply_to_message={
                    "message_id": 9,
                    "date": 1,
                    "chat": GROUP,
                    "from": PERSON,
                    "text": "Hi",
                },
            ),
            False,
            id="reply-to-a-person",
        ),
        pytest.param(update(chat=DM, text="lovely weather"), True, id="direct-message"),
    ],
)
def test_a_group_message_is_addressed_to_the_bot_by_command_mention_or_reply(
    made: Update, addressed: bool
) -> None:
    assert incoming(read_update(made, ME)).addressed is addressed
