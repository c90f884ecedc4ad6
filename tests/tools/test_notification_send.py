"""`notification_send`: a post to another chat, only one access.yaml gives the role."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from keel.errors import Refused
from keel.link.values import Conversation, TurnRequest
from keel.runtime.engine import Engine
from tests.runtime.driver import copy_reference

FORUM = "tg:chat:-1003000000001"


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    brain = copy_reference(tmp_path / "brain")
    role = brain / "features" / "support" / "support.agent.md"
    text = role.read_text(encoding="utf-8")
    role.write_text(text.replace("chat:topic]", "chat:topic, message:notify]"), encoding="utf-8")
    with Engine(brain, watch=False) as made:
        yield made


def from_a_dm() -> TurnRequest:
    room = Conversation(bot="desk", chat="tg:user:5513001")
    return TurnRequest(conversation=room, now=datetime.now(UTC), role="support")


def test_a_notification_goes_to_a_chat_whose_group_rule_names_the_role(engine: Engine) -> None:
    said = engine.call(from_a_dm(), "notification_send", {"chat": FORUM, "text": "T-9 is urgent."})
    assert re.fullmatch(rf"notified {FORUM} \([0-9a-f]{{32}}\)", said), said
    with engine.store.transaction() as tx:
        [sent] = tx.sent_messages(FORUM)
    assert (sent.text, sent.thread) == ("T-9 is urgent.", None)


@pytest.mark.parametrize(
    ("chat", "rule"),
    [
        pytest.param("tg:user:77", "the dm rule", id="dm-of-another-role"),
        pytest.param("tg:chat:-999", "the default rule", id="only-the-default"),
    ],
)
def test_a_chat_access_yaml_does_not_give_the_role_is_refused(
    engine: Engine, chat: str, rule: str
) -> None:
    said = (
        f"role 'support' does not speak in {chat} for bot desk (access.yaml has {rule} for "
        "it) — notify a chat whose group rule names this role, or use send_message"
    )
    with pytest.raises(Refused, match=re.escape(said)):
        engine.call(from_a_dm(), "notification_send", {"chat": chat, "text": "Hi."})
