"""`keel widget show` and a reply to the list it shows, as people read them at 80 columns:
the list's lines as written, and `keel explain` saying the reply carried them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from keel.store.history import REPLACED
from tests.cli.test_report_cmds import shown
from tests.runtime.driver import Keel, keel_on
from tests.test_docs_content import PAGE as CONTENT_PAGE

FAMILY = ("--bot", "nova", "--chat", "tg:chat:-1001000000001")


@pytest.fixture
def keel(tmp_path: Path, sqlite_url: str) -> Keel:
    return keel_on(tmp_path, sqlite_url)


def test_show_prints_the_lines_as_the_chat_reads_them_with_no_padding(keel: Keel) -> None:
    out = shown(keel, "widget show", "--context", "shopping", *FAMILY, "--message-id", "list-1")
    assert out == (
        "sent list-1 · widget shopping\n"
        "  Shopping list\n"
        "  1. oat milk · 2 cartons\n"
        "  2. apples · 1 kg\n"
        "  3. dishwasher tabs\n"
        "  4. birthday candles · 12\n"
    )


def test_showing_the_list_again_says_which_message_it_replaces(keel: Keel) -> None:
    first = keel.json("widget show", "--context", "shopping", *FAMILY, "--message-id", "list-1")
    assert first["replaced"] == []
    out = shown(keel, "widget show", "--context", "shopping", *FAMILY, "--message-id", "list-2")
    assert out.splitlines()[0] == "sent list-2 · widget shopping"
    said = "replaces list-1: no longer kept up to date, left as it reads"
    assert out.splitlines()[-1] == said
    assert f"`{said}`" in CONTENT_PAGE, "docs/content.md shows the line as printed"
    third = keel.json("widget show", "--context", "shopping", *FAMILY, "--message-id", "list-3")
    assert third["replaced"] == ["list-2"]


def test_a_long_line_wraps_under_its_indent_with_no_padding(keel: Keel) -> None:
    item = " ".join(["wholegrain"] * 12)  # 131 characters: wraps at 80 columns
    keel.json("state apply")
    with sqlite3.connect(keel.db.removeprefix("sqlite:///")) as db:
        db.execute("UPDATE home_shopping_items SET item = ? WHERE item_id = 1", (item,))
    out = shown(keel, "widget show", "--context", "shopping", *FAMILY)
    lines = out.splitlines()
    assert all(line == line.rstrip() for line in lines), lines
    assert lines[2].startswith("  1. wholegrain")
    assert lines[3].startswith("  wholegrain"), "a wrapped line stays under its start"


def test_explain_says_a_reply_carried_the_widget_lines(keel: Keel) -> None:
    keel.json("widget show", "--context", "shopping", *FAMILY, "--message-id", "list-1")
    reply = keel.turn(*FAMILY, "--reply-to", "list-1", "--input", "2 done")
    explained = keel.json("explain", str(reply.data["id"]))
    assert explained["replied_lines"] == [{"context": "shopping", "lines": 4}]
    out = shown(keel, "explain", str(reply.data["id"]))
    said = "replied to widget shopping: its 4 lines, numbered as shown"
    assert f"{said}\n" in out
    assert f"`{said}`" in CONTENT_PAGE, "docs/content.md shows the line as printed"
    plain = keel.turn(*FAMILY, "--input", "and milk")
    assert keel.json("explain", str(plain.data["id"]))["replied_lines"] == []
    assert "replied to widget" not in shown(keel, "explain", str(plain.data["id"]))


def test_state_apply_edits_a_widget_whose_lines_its_files_changed(keel: Keel) -> None:
    keel.json("widget show", "--context", "shopping", *FAMILY, "--message-id", "list-1")
    (keel.brain / "state" / "90_more.sql").write_text(
        "INSERT INTO home_shopping_items VALUES (6, 'coffee', '1 bag', 'Mila', '2025-04-14', 0);\n"
    )
    applied = keel.json("state apply")
    assert applied["ran"] == ["state/90_more.sql"]
    (edit,) = applied["widgets"]["edited"]
    assert (edit["message_id"], edit["context"]) == ("list-1", "shopping")
    assert edit["text"].endswith("\n5. coffee · 1 bag")
    assert keel.json("state apply")["widgets"] == {"edited": [], "left": []}, "nothing ran"


def test_history_shows_a_replaced_list_as_later_turns_read_it(keel: Keel) -> None:
    for message in ("list-1", "list-2"):
        keel.json("widget show", "--context", "shopping", *FAMILY, "--message-id", message)
    chat = FAMILY[3]
    old, live = keel.json("history", "--chat", chat)["messages"][-2:]
    assert (old["replaced"], live["replaced"]) == (True, False)
    assert old["text"] == f"Shopping list\n{REPLACED}"
    assert live["text"].startswith("Shopping list\n1. oat milk")
    out = shown(keel, "history", "--chat", chat)
    assert f"Shopping list {REPLACED}" in out
