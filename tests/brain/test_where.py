"""Where a run speaks: `bot:`, `chat:` and `thread:` on a heartbeat, hook or scenario."""

from __future__ import annotations

import pytest

from keel.brain import load_brain
from keel.brain.specs import EntitySpec
from tests.conftest import WriteBrain

FILES = {
    "heartbeat": ("features/desk/daily.heartbeat.md", "schedule: '0 8 * * *'\n"),
    "hook": ("features/desk/opened.hook.md", "event: ticket.opened\n"),
    "scenario": ("features/desk/onboard.scenario.md", ""),
}


def entity_file(kind: str, where: str) -> tuple[str, str]:
    path, own = FILES[kind]
    return path, f"---\n{own}agent: desk\n{where}---\nGo.\n"


def loaded(write_brain: WriteBrain, kind: str, where: str) -> EntitySpec:
    path, text = entity_file(kind, where)
    brain = load_brain(write_brain({path: text}))
    assert brain.skips == ()
    [spec] = brain.entities.values()
    return spec


@pytest.mark.parametrize("kind", list(FILES))
def test_bot_chat_and_thread_land_on_the_spec(write_brain: WriteBrain, kind: str) -> None:
    spec = loaded(write_brain, kind, 'bot: desk\nchat: "tg:chat:-100"\nthread: "t-7"\n')
    assert (spec.bot, spec.chat, spec.thread) == ("desk", "tg:chat:-100", "t-7")


@pytest.mark.parametrize("kind", list(FILES))
def test_without_them_a_run_names_no_room(write_brain: WriteBrain, kind: str) -> None:
    spec = loaded(write_brain, kind, "")
    assert (spec.bot, spec.chat, spec.thread) == (None, None, None)


def test_a_numeric_thread_or_chat_is_read_as_its_id(write_brain: WriteBrain) -> None:
    spec = loaded(write_brain, "hook", "bot: desk\nchat: -1001234\nthread: 42\n")
    assert (spec.chat, spec.thread) == ("-1001234", "42")


@pytest.mark.parametrize(
    ("where", "line", "message"),
    [
        pytest.param(
            "thread: t-7\n",
            4,
            "'thread': thread 't-7' names a topic, but no `chat:` says which chat it is in — "
            "add `chat:`, or remove `thread:`",
            id="thread-without-chat",
        ),
        pytest.param(
            'chat: ""\n', 4, "'chat' string should have at least 1 character", id="empty-chat"
        ),
        pytest.param(
            'chat: "tg:\\x01"\n',
            4,
            "'chat': 'tg:\\x01' holds a control character — ids are printable text",
            id="control-character",
        ),
        pytest.param(
            f'chat: "{"c" * 257}"\n', 4, "'chat' string should have at most 256", id="long-chat"
        ),
        pytest.param("bot: two words\n", 4, "'bot' is 'two words', which is not", id="bot-id"),
        pytest.param("bot: true\n", 4, "'bot' input should be a valid string", id="bot-bool"),
        pytest.param("chatt: x\n", 4, "unknown key 'chatt' — did you mean 'chat'?", id="misspelt"),
    ],
)
def test_a_wrong_room_skips_the_file_with_key_and_fix(
    write_brain: WriteBrain, where: str, line: int, message: str
) -> None:
    path, text = entity_file("heartbeat", where)
    brain = load_brain(write_brain({path: text}))
    [skip] = brain.skips
    assert (skip.path, skip.line) == (path, line)
    assert skip.reason.startswith(message), skip.reason


def test_a_chat_that_failed_is_not_also_reported_as_missing(write_brain: WriteBrain) -> None:
    path, text = entity_file("heartbeat", 'chat: ""\nthread: t-7\n')
    reasons = [s.reason for s in load_brain(write_brain({path: text})).skips]
    assert len(reasons) == 1, reasons
    assert reasons[0].startswith("'chat'")
