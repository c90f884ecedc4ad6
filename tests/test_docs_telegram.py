"""docs/telegram.md runs as written, against the project's local Bot API double (never
Telegram): on a fresh copy of examples/brain, the `--until-idle` command meets the updates
its output implies (a question in the support forum's topic 12, then a sticker) and prints
the page's two lines; `keel messages --json` then shows the answer as the page does; the
Formatting answer converts to the page's sendMessage fields; and the webhook command
registers the page's URL (with the secret the page exports) and says so.

The page's commands are pointed at the double with `--api-url`, the way the page says any
Bot API server is named. Only what truly varies is normalised: a message's Keel id and its
time."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from keel.telegram.formatting import formatted
from tests.runtime.driver import copy_reference
from tests.telegram.double import TOKEN, BotAPIDouble, running_double
from tests.test_docs_tutorial import commands, shell

DOC = Path(__file__).parents[1] / "docs" / "telegram.md"
FORUM = {"id": -1003000000001, "type": "supergroup", "title": "Support", "is_forum": True}
ANA = {"id": 5513001, "is_bot": False, "first_name": "Ana"}
# What the scripted model answers: the text the page's `keel messages` shows.
ANSWER = "It left the warehouse today; tracking follows by mail."
# A block opening with a command (the page's four-backtick block holds fences of its own).
CONSOLE = re.compile(r"^```\n(\$ .*?)^```$", re.DOTALL | re.MULTILINE)
VARYING = [
    (re.compile(r'"message_id": "[0-9a-f]{32}"'), '"message_id": "<id>"'),
    (re.compile(r'"at": "[^"]+"'), '"at": "<time>"'),
]


def consoles() -> list[str]:
    """The text of each unlabelled block of the page that starts with a command."""
    return CONSOLE.findall(DOC.read_text(encoding="utf-8"))


def console_with(start: str) -> str:
    (found,) = [text for text in consoles() if text.startswith(start)]
    return found


def varying_out(text: str) -> str:
    for pattern, placeholder in VARYING:
        text = pattern.sub(placeholder, text)
    return text


def environment() -> dict[str, str]:
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "COLUMNS": "200",
        "KEEL_TELEGRAM_TOKEN": TOKEN,
        "KEEL_HOOK_SERVER": "off",
    }
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        env.pop(name, None)
    return env


def in_topic(update_id: int, **fields: Any) -> dict[str, Any]:
    message = {
        "message_id": 40 + update_id,
        "date": 1_777_000_000,
        "chat": FORUM,
        "from": ANA,
        "message_thread_id": 12,
        "is_topic_message": True,
        **fields,
    }
    return {"update_id": update_id, "message": message}


def test_until_idle_and_the_message_history_print_what_the_page_shows(tmp_path: Path) -> None:
    copy_reference(tmp_path / "examples" / "brain")
    (tmp_path / "model.json").write_text(json.dumps([{"text": ANSWER}]), encoding="utf-8")
    env = environment()
    (polled,) = commands(console_with("$ keel telegram examples/brain --bot desk --until-idle"))
    (listed,) = commands(console_with("$ keel messages examples/brain"))
    with running_double() as double:
        double.push(in_topic(1, text="@desk_bot where is parcel 5512?"))
        sticker = {"file_id": "s1", "file_unique_id": "s1", "type": "regular"}
        double.push(
            in_topic(
                2,
                sticker={
                    **sticker,
                    "width": 1,
                    "height": 1,
                    "is_animated": False,
                    "is_video": False,
                },
            )
        )
        done = shell(f"{polled.line} --api-url {double.url}", tmp_path, env)
        assert done.returncode == 0, done.stdout + done.stderr
        # The page shows the terminal: the skip's log line (stderr), then the tally (stdout).
        assert (done.stderr + done.stdout).splitlines() == polled.expected.splitlines()
        (sent,) = double.sent()
        assert (sent["chat_id"], sent["message_thread_id"], sent["text"]) == (
            "-1003000000001",
            "12",
            ANSWER,
        )
    history = shell(listed.line, tmp_path, env)
    assert history.returncode == 0, history.stderr
    shown = json.loads(varying_out(listed.expected))
    printed = json.loads(varying_out(history.stdout))
    assert printed == shown, history.stdout


def test_the_formatting_example_is_sent_as_the_page_shows() -> None:
    page = DOC.read_text(encoding="utf-8")
    answer = page.split("This answer\n\n````\n", 1)[1].split("\n````", 1)[0]
    fields = page.split("(the fields of the sendMessage call):\n\n```\n", 1)[1].split("```", 1)[0]
    (part,) = formatted(answer)
    entities = [e.model_dump(exclude_none=True) for e in part.entities]
    assert {"text": part.text, "entities": entities} == json.loads(fields)


def registered(double: BotAPIDouble) -> list[dict[str, Any]]:
    return [fields for name, fields in double.calls if name == "setWebhook"]


def test_the_webhook_commands_register_the_page_url(tmp_path: Path) -> None:
    copy_reference(tmp_path / "examples" / "brain")
    env = environment()
    exported, served, webhook = commands(console_with("$ export KEEL_TELEGRAM_SECRET"))
    assert served.line.startswith("keel serve examples/brain --telegram-secret ")
    with running_double() as double:
        line = f"{exported.line} && {webhook.line} --api-url {double.url}"
        done = shell(line, tmp_path, env)
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.splitlines() == webhook.expected.splitlines()
        (call,) = registered(double)
    assert call["url"] == "https://keel.example.com/telegram/desk"
    assert re.fullmatch(r"[0-9a-f]{48}", call["secret_token"]), call
