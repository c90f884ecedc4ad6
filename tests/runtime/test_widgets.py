"""Widgets on the reference brain's shopping list: shown as numbered lines, edited in place
as the list changes, kept at any age, and read as its lines by a reply's turn."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from keel.assemble.values import Assembly
from keel.assemble.widgets import NO_LINES, widget_text
from keel.brain import Brain
from keel.brain.specs import WidgetSpec
from keel.budget.rows import ViewRows
from keel.errors import Refused, UsageError
from keel.link.values import Conversation, TurnRequest
from keel.runtime.widgets import refresh_widgets, show_widget
from keel.store import Store
from keel.store.history import REPLACED
from keel.tokens import Estimator
from keel.tools.send import origin_of, record_send
from keel.turn.prepare import no_tools, prepare_and_assemble

FAMILY = Conversation(bot="nova", chat="tg:chat:-1001000000001")
NOW = datetime(2026, 11, 29, 19, tzinfo=UTC)
LIST = "Shopping list\n1. oat milk · 2 cartons\n2. apples · 1 kg\n3. dishwasher tabs\n4. birthday candles · 12"


def tick_off(store: Store, item_id: int) -> None:
    """What the family's app does when an item is bought: Keel does not write state."""
    with store.transaction() as tx:
        tx.connection.execute(
            text("UPDATE home_shopping_items SET done = 1 WHERE item_id = :i"), {"i": item_id}
        )


def current(assembly: Assembly) -> str:
    (section,) = [s for s in assembly.sections if s.id == "current"]
    return section.text


def test_the_shopping_list_is_shown_as_numbered_lines_of_its_open_items(
    reference_brain: Brain, reference_store: Store
) -> None:
    shown = show_widget(
        reference_brain, reference_store, FAMILY, "shopping", message_id="list-1", at=NOW
    )
    origin = shown.origin
    assert (shown.text, shown.replaced) == (LIST, ())
    assert (origin.feature, origin.widget) == ("home", "shopping")
    assert [e.context for e in origin.reach] == ["shopping"]
    with reference_store.transaction() as tx:
        (sent,) = tx.sent_messages(FAMILY.chat)
    assert (sent.message_id, sent.text, sent.widget, sent.edited_at) == (
        "list-1",
        LIST,
        "shopping",
        None,
    )
    assert sent.delivery is not None
    assert sent.delivery.state == "pending"


def test_a_ticked_off_item_edits_the_message_in_place_once(
    reference_brain: Brain, reference_store: Store
) -> None:
    show_widget(reference_brain, reference_store, FAMILY, "shopping", message_id="list-1", at=NOW)
    assert refresh_widgets(reference_brain, reference_store, NOW) == ((), ()), "nothing changed"
    tick_off(reference_store, 3)
    later = NOW + timedelta(minutes=5)
    (edit,), left = refresh_widgets(reference_brain, reference_store, later)
    assert left == ()
    assert (edit.message_id, edit.context) == ("list-1", "shopping")
    assert edit.text == (
        "Shopping list\n1. oat milk · 2 cartons\n2. dishwasher tabs\n3. birthday candles · 12"
    )
    with reference_store.transaction() as tx:
        (sent,) = tx.sent_messages(FAMILY.chat)
    assert (sent.text, sent.edited_at) == (edit.text, later)
    assert refresh_widgets(reference_brain, reference_store, later) == ((), ()), "edited once"


def test_an_edit_of_a_delivered_widget_goes_back_to_the_outbox_as_an_edit(
    reference_brain: Brain, reference_store: Store
) -> None:
    show_widget(reference_brain, reference_store, FAMILY, "shopping", message_id="list-1", at=NOW)
    with reference_store.transaction() as tx:
        (out,) = tx.outbox("nova", "tg:", NOW)
        assert out.surface_message_id is None, "a first delivery is a send"
        tx.mark_delivered(out.row, "1001")
        assert tx.outbox("nova", "tg:", NOW) == ()
    tick_off(reference_store, 1)
    refresh_widgets(reference_brain, reference_store, NOW)
    with reference_store.transaction() as tx:
        (edit,) = tx.outbox("nova", "tg:", NOW)
    assert edit.surface_message_id == "1001"
    assert edit.text.startswith("Shopping list\n1. apples · 1 kg\n")


def test_showing_the_list_again_retires_the_earlier_message(
    reference_brain: Brain, reference_store: Store
) -> None:
    show_widget(reference_brain, reference_store, FAMILY, "shopping", message_id="list-1", at=NOW)
    again = show_widget(
        reference_brain, reference_store, FAMILY, "shopping", message_id="list-2", at=NOW
    )
    assert again.replaced == ("list-1",)
    with reference_store.transaction() as tx:
        assert [w.message_id for w in tx.live_widgets()] == ["list-2"]
        old, new = tx.origins(FAMILY.bot, FAMILY.chat, ["list-1", "list-2"])
    assert (old.widget, new.widget) == (None, "shopping")


def test_a_reply_to_the_list_carries_its_lines_numbered_as_shown(
    reference_brain: Brain, reference_store: Store
) -> None:
    show_widget(reference_brain, reference_store, FAMILY, "shopping", message_id="list-1", at=NOW)
    request = TurnRequest(
        conversation=FAMILY, now=NOW + timedelta(hours=1), input="2 done", reply_to=("list-1",)
    )
    prepared, assembly = prepare_and_assemble(
        reference_brain, reference_store, request, Estimator(), no_tools
    )
    assert prepared.replied_lines == (("shopping", LIST),)
    assert current(assembly) == (
        f'The message replied to is the list of "shopping", numbered as shown:\n{LIST}\n\n2 done'
    )
    assert [a.link.context for a in prepared.attached] == ["shopping"]


def test_a_reply_to_another_message_carries_no_lines(
    reference_brain: Brain, reference_store: Store
) -> None:
    with reference_store.transaction() as tx:
        origin = origin_of(reference_brain, conversation=FAMILY, message_id="hi", sent_at=NOW)
        record_send(tx, reference_brain, origin, "Hello all")
    request = TurnRequest(conversation=FAMILY, now=NOW, input="2 done", reply_to=("hi",))
    prepared, assembly = prepare_and_assemble(
        reference_brain, reference_store, request, Estimator(), no_tools
    )
    assert prepared.replied_lines == ()
    assert current(assembly) == "2 done"


def test_the_list_keeps_its_rows_past_the_prune_age_and_a_reply_still_links(
    reference_brain: Brain, reference_store: Store
) -> None:
    long_ago = NOW - timedelta(days=800)  # past the year a message's origin is kept
    show_widget(
        reference_brain, reference_store, FAMILY, "shopping", message_id="list-1", at=long_ago
    )
    with reference_store.transaction() as tx:
        origin = origin_of(reference_brain, conversation=FAMILY, message_id="hi", sent_at=long_ago)
        record_send(tx, reference_brain, origin, "Hello all")
        assert tx.prune_origins(NOW - timedelta(days=365)) == 1, "the ordinary message goes"
        (kept,) = tx.origins(FAMILY.bot, FAMILY.chat, ["list-1", "hi"])
    assert kept.widget == "shopping"
    request = TurnRequest(conversation=FAMILY, now=NOW, input="2 done", reply_to=("list-1",))
    prepared, _ = prepare_and_assemble(
        reference_brain, reference_store, request, Estimator(), no_tools
    )
    assert prepared.replied_lines == (("shopping", LIST),)
    assert not any("older than" in line for line in prepared.log)


def test_only_a_context_that_declares_a_widget_can_be_shown(
    reference_brain: Brain, reference_store: Store
) -> None:
    with pytest.raises(UsageError, match=r"context 'client' declares no widget — add 'widget:"):
        show_widget(reference_brain, reference_store, FAMILY, "client", message_id="x", at=NOW)
    with pytest.raises(UsageError, match=r"no context 'shoping' in this brain \(contexts with"):
        show_widget(reference_brain, reference_store, FAMILY, "shoping", message_id="x", at=NOW)


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        pytest.param(ViewRows(view="v", columns=("item",)), f"List\n{NO_LINES}", id="empty"),
        pytest.param(
            ViewRows(view="v", columns=("item",), rows=(("milk\nand honey",),), total=3),
            "List\n1. milk and honey\n… and 2 more",
            id="one-line-each-and-the-rest-counted",
        ),
    ],
)
def test_the_lines_are_one_per_row_and_say_what_is_not_shown(
    reference_brain: Brain, rows: ViewRows, expected: str
) -> None:
    context = reference_brain.contexts["shopping"]
    widget = WidgetSpec(view="v", line=("item",), title="List")
    assert widget_text(context, widget, rows) == expected


def test_a_line_column_the_view_lacks_is_named_with_the_fix(reference_brain: Brain) -> None:
    context = reference_brain.contexts["shopping"]
    widget = WidgetSpec(view="v", line=("name",))
    with pytest.raises(UsageError, match=r"widget line column 'name' is not a column of view v"):
        widget_text(context, widget, ViewRows(view="v", columns=("item",)))


def test_a_room_whose_role_does_not_admit_the_context_gets_no_lines(
    reference_brain: Brain, reference_store: Store
) -> None:
    acme = Conversation(bot="nova", chat="tg:chat:-1002000000101")  # client-desk: no shopping
    with pytest.raises(Refused, match=r"role 'client-desk' .* does not admit context 'shopping'"):
        show_widget(reference_brain, reference_store, acme, "shopping", message_id="x", at=NOW)
    nobody = Conversation(bot="nobot", chat="tg:chat:-1001000000001")
    with pytest.raises(Refused, match="no rule with a role for bot 'nobot'"):
        show_widget(reference_brain, reference_store, nobody, "shopping", message_id="y", at=NOW)
    with reference_store.transaction() as tx:
        assert tx.live_widgets() == ()


def test_a_view_that_cannot_be_read_leaves_the_list_and_says_why(
    reference_brain: Brain, reference_store: Store
) -> None:
    show_widget(reference_brain, reference_store, FAMILY, "shopping", message_id="list-1", at=NOW)
    with reference_store.transaction() as tx:
        tx.connection.exec_driver_sql('DROP VIEW "home_shopping_open"')
    edits, (left,) = refresh_widgets(reference_brain, reference_store, NOW)
    assert edits == ()
    assert (left.message_id, left.context) == ("list-1", "shopping")
    assert "home_shopping_open" in left.reason


def test_a_reply_turn_reads_a_retired_list_as_replaced_not_its_old_numbers(
    reference_brain: Brain, reference_store: Store
) -> None:
    show_widget(reference_brain, reference_store, FAMILY, "shopping", message_id="list-1", at=NOW)
    tick_off(reference_store, 1)
    second = show_widget(
        reference_brain, reference_store, FAMILY, "shopping", message_id="list-2", at=NOW
    ).text
    request = TurnRequest(
        conversation=FAMILY, now=NOW + timedelta(hours=1), input="2 done", reply_to=("list-2",)
    )
    prepared, _ = prepare_and_assemble(
        reference_brain, reference_store, request, Estimator(), no_tools
    )
    assert [m.text for m in prepared.history] == [
        f"Shopping list\n{REPLACED}",
        second,
    ], "only the live list's lines are numbered"
    assert prepared.replied_lines == (("shopping", second),)
