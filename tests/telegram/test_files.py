"""Sends beyond text: `file_send` and `voice_send` record a file of the brain's files/
folder with the message, and `keel telegram --until-idle` sends it with sendDocument or
sendVoice to the Bot API double; a path out of the folder, a chat no surface carries files
to and a voice that is no recording are refused with what to do instead."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from keel.cli import app
from keel.errors import Refused
from keel.link.values import Conversation, TurnRequest
from keel.runtime.engine import Engine
from tests.telegram.double import BotAPIDouble
from tests.telegram.test_bot import DB, FORUM, run_bot, runner, sent_in_forum

LABEL = b"%PDF-1.4 a return label"


@pytest.fixture
def engine(here: Path) -> Iterator[Engine]:
    files = here / "brain" / "files"
    (files / "returns").mkdir(parents=True)
    (files / "returns" / "label.pdf").write_bytes(LABEL)
    (files / "hello.ogg").write_bytes(b"OggS voice")
    (here / "secret.txt").write_text("not the brain's to send", encoding="utf-8")
    # The desk may send files (the reference brain's desk only binds and opens topics).
    role = here / "brain" / "features" / "support" / "support.agent.md"
    text = role.read_text(encoding="utf-8")
    role.write_text(text.replace("chat:topic]", "chat:topic, message:file]"), encoding="utf-8")
    with Engine(here / "brain", DB, watch=False) as made:
        yield made


def support(chat: str = f"tg:chat:{FORUM}") -> TurnRequest:
    room = Conversation(bot="desk", chat=chat, thread="12")
    return TurnRequest(conversation=room, now=datetime.now(UTC), role="support")


def test_a_file_is_sent_with_its_caption_by_send_document(
    engine: Engine, double: BotAPIDouble
) -> None:
    said = engine.call(
        support(),
        "file_send",
        {"path": "returns/label.pdf", "caption": "Your return label for T-480."},
    )
    assert re.fullmatch(
        rf"sent [0-9a-f]{{32}} to tg:chat:{FORUM} thread 12: the document files/returns/label.pdf",
        said,
    ), said
    [recorded] = sent_in_forum()
    assert recorded["text"] == "Your return label for T-480."
    assert recorded["delivery"]["state"] == "pending"

    tally = run_bot(double, "none")
    assert (tally["delivered"], tally["failed"]) == (1, 0)
    assert double.sent() == []  # no text message besides the file
    [sent] = double.sent("sendDocument")
    assert sent["document"] == {"filename": "label.pdf", "bytes": LABEL}
    assert (sent["chat_id"], sent["message_thread_id"]) == (str(FORUM), "12")
    assert sent["caption"] == "Your return label for T-480."
    [shown] = sent_in_forum()
    assert shown["delivery"]["state"] == "delivered"
    assert shown["surface_message_id"] == "1001"


def test_a_voice_goes_by_send_voice_and_without_a_caption_carries_none(
    engine: Engine, double: BotAPIDouble
) -> None:
    engine.call(support(), "voice_send", {"path": "hello.ogg"})
    [recorded] = sent_in_forum()
    assert recorded["text"] == "[voice hello.ogg]"  # what the history shows of it
    run_bot(double, "none")
    [sent] = double.sent("sendVoice")
    assert sent["voice"] == {"filename": "hello.ogg", "bytes": b"OggS voice"}
    assert "caption" not in sent


def test_a_file_gone_before_delivery_fails_saying_so(engine: Engine, double: BotAPIDouble) -> None:
    engine.call(support(), "file_send", {"path": "returns/label.pdf"})
    (Path("brain") / "files" / "returns" / "label.pdf").unlink()
    tally = run_bot(double, "none")
    assert (tally["delivered"], tally["failed"]) == (0, 1)
    [shown] = sent_in_forum()
    assert shown["delivery"]["reason"] == (
        "the file files/returns/label.pdf is not in the brain's files/ folder any more"
    )
    assert double.sent("sendDocument") == []


@pytest.mark.parametrize(
    ("tool", "arguments", "chat", "said"),
    [
        pytest.param(
            "file_send", {"path": "../secret.txt"}, None,
            "'../secret.txt' is not a path inside the brain's files/ folder", id="climbs-out",
        ),
        pytest.param(
            "file_send", {"path": "/etc/hostname"}, None,
            "'/etc/hostname' is not a path inside the brain's files/ folder", id="absolute",
        ),
        pytest.param(
            "file_send", {"path": "returns/none.pdf"}, None,
            "there is no file files/returns/none.pdf in the brain", id="missing",
        ),
        pytest.param(
            "file_send", {"path": "returns"}, None,
            "there is no file files/returns in the brain", id="a-folder",
        ),
        pytest.param(
            "voice_send", {"path": "returns/label.pdf"}, None,
            "'returns/label.pdf' is not a voice recording", id="not-a-voice",
        ),
        pytest.param(
            "file_send", {"path": "returns/label.pdf", "caption": "x" * 1025}, None,
            "a caption is at most 1024 characters; this one has 1025", id="long-caption",
        ),
        pytest.param(
            "file_send", {"path": "returns/label.pdf"}, "cli",
            "the chat cli is on no surface that carries files (only text reaches it) — say "
            "it in words with send_message instead", id="cli",
        ),
    ],
)  # fmt: skip
def test_a_file_that_cannot_go_is_refused_and_nothing_recorded(
    engine: Engine, tool: str, arguments: dict[str, str], chat: str | None, said: str
) -> None:
    request = support(chat or f"tg:chat:{FORUM}")
    with pytest.raises(Refused, match=re.escape(said)):
        engine.call(request, tool, arguments)
    assert sent_in_forum() == []


def test_a_link_out_of_the_files_folder_is_refused(engine: Engine, here: Path) -> None:
    (here / "brain" / "files" / "out.txt").symlink_to(here / "secret.txt")
    with pytest.raises(Refused, match=r"'out\.txt' leads out of the brain's files/ folder"):
        engine.call(support(), "file_send", {"path": "out.txt"})


@pytest.mark.usefixtures("engine")
def test_a_run_sends_a_file_of_the_live_brain_and_says_nothing_more(
    here: Path, double: BotAPIDouble
) -> None:
    """A run reads a snapshot of the brain, which reaches the live files/ folder."""
    send = {"path": "returns/label.pdf", "caption": "Your return label for T-484."}
    script = [{"tool_calls": [{"name": "file_send", "arguments": send}]}, {"text": "Sent."}]
    (here / "label.json").write_text(json.dumps(script), encoding="utf-8")
    fired = runner.invoke(
        app,
        [
            "fire", "brain", "ticket.opened", "--payload", '{"ticket": "T-484"}',
            "--thread", "4484", "--model", "scripted:label.json", "--db", DB, "--json",
        ],
    )  # fmt: skip
    assert fired.exit_code == 0, fired.output
    [record] = json.loads(fired.stdout)["runs"]
    assert record["status"] == "done", record
    # The file was the agent's word: its closing "Sent." is not sent as well.
    assert [m["text"] for m in record["messages"]] == ["Your return label for T-484."]
    tally = run_bot(double, "none")
    assert (tally["delivered"], tally["failed"]) == (1, 0)
    [sent] = double.sent("sendDocument")
    assert (sent["document"], sent["message_thread_id"]) == (
        {"filename": "label.pdf", "bytes": LABEL},
        "4484",
    )
    assert double.sent() == []
