"""The shopping list on Telegram: `keel widget show` posts it once, and when an item is
ticked off the next delivery pass edits that same message (editMessageText), as plain text."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from keel.cli import app
from tests.telegram.double import BotAPIDouble, Failure

runner = CliRunner()
FAMILY = -1001000000001
DB = "sqlite:///k.db"


def keel(*args: str) -> dict[str, Any]:
    result = runner.invoke(app, [*args, "--db", DB, "--json"])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def deliver(double: BotAPIDouble) -> dict[str, Any]:
    return keel(
        "telegram", "brain", "--bot", "nova", "--api-url", double.url, "--until-idle",
        "--model", "none",
    )  # fmt: skip


def tick_off(here: Path, item_id: int) -> None:
    with sqlite3.connect(here / "k.db") as db:
        db.execute("UPDATE home_shopping_items SET done = 1 WHERE item_id = ?", (item_id,))


def shown() -> dict[str, Any]:
    (message,) = keel("messages", "brain", "--chat", f"tg:chat:{FAMILY}")["messages"]
    found: dict[str, Any] = message
    return found


def show_list() -> None:
    keel(
        "widget", "show", "brain", "--context", "shopping", "--bot", "nova",
        "--chat", f"tg:chat:{FAMILY}", "--message-id", "list-1",
    )  # fmt: skip


def test_a_ticked_off_item_edits_the_list_message_telegram_shows(
    here: Path, double: BotAPIDouble
) -> None:
    show_list()
    assert deliver(double)["delivered"] == 1
    (sent,) = double.sent()
    assert sent["chat_id"] == str(FAMILY)
    assert sent["text"].startswith("Shopping list\n1. oat milk · 2 cartons\n2. apples · 1 kg")
    assert shown()["surface_message_id"] == "1001"

    assert deliver(double)["delivered"] == 0, "an unchanged list is not edited"
    assert double.sent("editMessageText") == []

    tick_off(here, 3)
    assert deliver(double)["delivered"] == 1
    (edit,) = double.sent("editMessageText")
    assert (edit["chat_id"], edit["message_id"]) == (str(FAMILY), "1001")
    assert edit["text"] == (
        "Shopping list\n1. oat milk · 2 cartons\n2. dishwasher tabs\n3. birthday candles · 12"
    )
    assert "parse_mode" not in edit
    assert "entities" not in edit
    assert len(double.sent()) == 1, "edited in place, never sent again"
    message = shown()
    assert message["text"] == edit["text"]
    assert message["origin"]["widget"] == "shopping"
    assert message["edited_at"] is not None
    assert message["delivery"] == {"state": "delivered", "attempts": 1, "reason": None}
    assert message["surface_message_id"] == "1001"


def test_an_edit_telegram_refuses_for_good_fails_with_the_reason(
    here: Path, double: BotAPIDouble
) -> None:
    show_list()
    deliver(double)
    tick_off(here, 1)
    double.fail_next("editMessageText", Failure(400, "Bad Request: message to edit not found"))
    assert deliver(double)["failed"] == 1
    assert shown()["delivery"]["reason"] == "Bad Request: message to edit not found"


def test_a_list_is_sent_as_written_never_as_markdown(here: Path, double: BotAPIDouble) -> None:
    keel("state", "apply", "brain")
    with sqlite3.connect(here / "k.db") as db:
        db.execute(
            "INSERT INTO home_shopping_items VALUES (6, '*organic* eggs', NULL, 'Mila', "
            "'2025-04-15', 0)"
        )
    show_list()
    deliver(double)
    (sent,) = double.sent()
    assert sent["text"].endswith("\n5. *organic* eggs")
    assert "entities" not in sent
