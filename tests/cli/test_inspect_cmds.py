"""`keel turns`, `keel history`, `keel bindings`: what the store holds, as JSON and tables."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from keel import models
from keel.assemble.values import ModelStep
from keel.cli import app
from keel.runtime.engine import Engine
from tests.runtime.driver import Keel, keel_on

ACME = "tg:chat:-1002000000101"
FORUM = "tg:chat:-1003000000001"


@pytest.fixture
def keel(tmp_path: Path, sqlite_url: str) -> Keel:
    return keel_on(tmp_path, sqlite_url)


def shown(keel: Keel, command: str, *args: str) -> str:
    result = CliRunner().invoke(
        app,
        [command, str(keel.brain), *args, "--db", keel.db],
        env={"COLUMNS": "80", "NO_COLOR": "1", "TERM": "dumb"},
    )
    assert result.exit_code == 0, result.output
    assert all(len(line) <= 80 for line in result.stdout.splitlines()), result.stdout
    return result.stdout


def test_turns_list_newest_first_with_what_each_carried(keel: Keel) -> None:
    assert keel.json("turns") == {"turns": []}
    assert shown(keel, "turns") == "no recorded turns\n"
    first = keel.turn("--bot", "nova", "--chat", ACME, "--open", "client=globex", "--input", "hi")
    second = keel.turn("--bot", "nova", "--chat", "tg:user:1", "--run", "heartbeat:invoice-chase")
    listed = keel.json("turns")["turns"]
    assert [t["id"] for t in listed] == [second.data["id"], first.data["id"]]
    assert listed[1] == {
        "id": first.data["id"],
        "at": "2026-11-29T19:00:00+00:00",
        "bot": "nova",
        "chat": ACME,
        "thread": None,
        "turn": 1,
        "role": "client-desk",
        "run": None,
        "sender": None,
        "input": "hi",
        "contexts": [
            {
                "context": "client",
                "entity": "acme",
                "link": "chat",
                "kept": None,
                "status": "attached",
                "chars": first.data["attached"][0]["chars"],
                "knob": None,
            },
        ],
        "refused": 1,
        "fit": first.data["fit"],
    }
    assert listed[0]["run"] == "heartbeat:invoice-chase"
    assert [t["id"] for t in keel.json("turns", "--chat", ACME)["turns"]] == [first.data["id"]]
    assert [t["role"] for t in keel.json("turns", "--role", "bookkeeper")["turns"]] == [
        "bookkeeper"
    ]
    assert len(keel.json("turns", "--limit", "1")["turns"]) == 1
    assert keel.json("turns", "--since", "2030-01-01")["turns"] == []
    out = shown(keel, "turns")
    assert "client-desk  client" in out
    assert "bookkeeper   chase" in out


def test_messages_lists_an_answer_recorded_without_a_message_id(keel: Keel) -> None:
    # `engine.turn` records its answer with no message id: the surface gives none.
    answer = models.scripted([ModelStep(text="Paid in full on Monday.")])
    with Engine(keel.brain, keel.db) as engine:
        engine.turn(bot="nova", chat=ACME, text="was it paid?", model=answer)
    listed = keel.json("messages", "--chat", ACME)["messages"]
    assert [(m["message_id"], m["text"]) for m in listed] == [(None, "Paid in full on Monday.")]
    assert "Paid in full on Monday." in shown(keel, "messages", "--chat", ACME)


def test_history_lists_a_chats_messages_oldest_first(keel: Keel) -> None:
    keel.turn("--bot", "nova", "--chat", ACME, "--input", "first question")
    keel.json(
        "send", "--bot", "nova", "--chat", ACME, "--text", "an answer " * 20, "--message-id", "a1"
    )
    keel.turn("--bot", "desk", "--chat", ACME, "--input", "from another bot")
    messages = keel.json("history", "--chat", ACME)["messages"]
    assert [(m["bot"], m["turn"], m["speaker"]) for m in messages] == [
        ("nova", 1, "user"),
        ("nova", 1, "assistant"),
        ("desk", 1, "user"),
    ]
    assert messages[1]["message_id"] == "a1"
    assert messages[1]["text"] == "an answer " * 20
    assert set(messages[0]) == {
        "bot",
        "chat",
        "thread",
        "turn",
        "at",
        "speaker",
        "sender",
        "text",
        "message_id",
        "replaced",
    }
    assert [
        m["text"] for m in keel.json("history", "--chat", ACME, "--bot", "desk")["messages"]
    ] == ["from another bot"]
    assert len(keel.json("history", "--chat", ACME, "--limit", "1")["messages"]) == 1
    out = shown(keel, "history", "--chat", ACME)
    assert "first question" in out
    assert "an answer an answer" in out
    assert "…" in out
    assert shown(keel, "history", "--chat", "tg:none") == "no messages recorded in tg:none\n"


def test_a_turns_sender_is_recorded_and_shown_wherever_the_turn_is(keel: Keel) -> None:
    said = keel.turn("--bot", "nova", "--chat", ACME, "--from", "tg:user:7", "--input", "hello")
    assert said.data["sender"] == "tg:user:7"
    keel.turn("--bot", "nova", "--chat", ACME, "--input", "nobody said")
    keel.turn("--bot", "nova", "--chat", ACME, "--run", "heartbeat:invoice-chase")
    listed = keel.json("turns", "--chat", ACME)["turns"]
    assert [t["sender"] for t in listed] == [None, None, "tg:user:7"]
    messages = keel.json("history", "--chat", ACME)["messages"]
    assert [(m["text"], m["sender"]) for m in messages if m["speaker"] == "user"] == [
        ("hello", "tg:user:7"),
        ("nobody said", None),
    ]
    table = shown(keel, "history", "--chat", ACME)
    assert "tg:user:7  hello" in table
    assert "user       nobody said" in table


@pytest.mark.parametrize(
    ("sender", "error"),
    [
        pytest.param("", "the sender is empty", id="empty"),
        pytest.param("tg:user:\x07", "control character", id="control"),
    ],
)
def test_a_sender_keel_could_not_store_is_refused(keel: Keel, sender: str, error: str) -> None:
    result = CliRunner().invoke(
        app,
        ["turn", str(keel.brain), "--from", sender, "--db", keel.db],
    )
    assert result.exit_code != 0
    assert error in result.output


def test_bindings_list_access_yaml_then_context_bind(keel: Keel) -> None:
    keel.json(
        "bind", "--context", "ticket", "--entity", "T-481", "--chat", FORUM, "--thread", "77",
        "--role", "support",
    )  # fmt: skip
    listed = keel.json("bindings")["bindings"]
    assert listed[0] == {
        "context": "client",
        "entity": "acme",
        "chat": ACME,
        "thread": None,
        "bot": "nova",
        "source": "access",
    }
    assert len(listed) == 4
    assert listed[-1] == {
        "context": "ticket",
        "entity": "T-481",
        "chat": FORUM,
        "thread": "77",
        "bot": None,
        "source": "tool",
    }
    assert [b["context"] for b in keel.json("bindings", "--chat", FORUM)["bindings"]] == ["ticket"]
    assert [b["entity"] for b in keel.json("bindings", "--chat", ACME)["bindings"]] == ["acme"]
    out = shown(keel, "bindings")
    assert "access.yaml" in out
    assert "context_bind" in out
    assert "(every)" in out
    assert shown(keel, "bindings", "--chat", "tg:none") == "no bindings\n"


HOSTILE = "clear\x1b[2J\x07 bell \u202eevil\u202c \x9b31m"


def test_listings_print_stored_control_characters_as_escapes(keel: Keel) -> None:
    keel.turn("--bot", "nova", "--chat", ACME, "--input", HOSTILE)
    keel.json("send", "--bot", "nova", "--chat", ACME, "--text", HOSTILE, "--message-id", "m1")
    out = shown(keel, "history", "--chat", ACME)
    assert not any(c in out for c in "\x1b\x07\u202e\u202c\x9b"), out
    assert "clear\\x1b[2J\\x07 bell \\u202eevil\\u202c \\x9b31m" in out
    assert keel.json("history", "--chat", ACME)["messages"][0]["text"] == HOSTILE
