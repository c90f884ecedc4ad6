"""Widgets: a chat message that shows a context's lines, kept up to date in place.

A context declares one in its frontmatter (`widget: {view, line, title}`). Showing it
(`show_widget`) reads the view as a turn in that room would (the room's tenant applies),
writes one numbered line per row — the `line` columns' values, empty ones left out —
under the title, and records the message with its origin: the context's feature, the
context as its reach, and the widget's mark. That mark keeps the origin at any age, and
makes a reply to the message carry the lines, numbered as shown (`replied_lines`), so
"2 done" names a row. Showing the list again in the same room retires the earlier
message: one live widget per context and room.

`refresh_widgets` reads every live widget's view again and records an edit of each
whose lines changed; a surface then edits the message it delivered (Telegram:
editMessageText), and `keel messages` shows the new text, marked edited. Keel does not
write state itself — the brain's app does, or a person with `keel state apply` — so the
surfaces refresh on every delivery pass, and a caller may refresh at any time (`keel
widget refresh`, `POST /v1/widgets/refresh`). A view that cannot be read leaves the
message as it was, and says so in the log.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from keel.assemble.widgets import MAX_LINES, widget_text
from keel.brain.snapshot import Brain
from keel.brain.specs import ContextSpec, ReachEntry, ViewRef, WidgetSpec
from keel.budget.rows import ViewRows
from keel.errors import Refused, UsageError
from keel.link.bindings import effective_bindings, pins_of, tenant_of
from keel.link.values import Conversation, Origin
from keel.log import logger, shown
from keel.state.views import read_view
from keel.store import Tx
from keel.store.store import Store
from keel.store.widgets import LiveWidget
from keel.tools.notification_send import DM_PREFIXES
from keel.tools.send import record_send

log = logger("widgets")


@dataclass(frozen=True, slots=True, kw_only=True)
class ShownWidget:
    """A widget sent to a room: its message's origin, its text, and the room's earlier
    messages of the same widget that it replaced (they stay, as ordinary messages)."""

    origin: Origin
    text: str
    replaced: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        reach = [{"context": r.context, "entity": r.entity} for r in self.origin.reach]
        return {
            "message_id": self.origin.message_id,
            "widget": self.origin.widget,
            "text": self.text,
            "origin": {"feature": self.origin.feature, "reach": reach},
            "replaced": list(self.replaced),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class WidgetLeft:
    """A live widget a refresh left as last shown, and why."""

    chat: str
    message_id: str
    context: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {
            "chat": self.chat,
            "message_id": self.message_id,
            "context": self.context,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class WidgetEdit:
    """A live widget whose lines changed, and the text it shows now."""

    bot: str
    chat: str
    thread: str | None
    message_id: str
    context: str
    text: str

    def to_json(self) -> dict[str, str | None]:
        return {
            "bot": self.bot,
            "chat": self.chat,
            "thread": self.thread,
            "message_id": self.message_id,
            "context": self.context,
            "text": self.text,
        }


def show_widget(
    brain: Brain,
    store: Store,
    conversation: Conversation,
    context_id: str,
    *,
    message_id: str,
    at: datetime,
) -> ShownWidget:
    """Send `context_id`'s widget to the room: record the message and its origin, retire
    the room's earlier one. `UsageError` for a context with no widget, `Refused` for a
    message id already used in the chat."""
    context, widget = _declared(brain, context_id)
    refused = _not_admitted(brain, conversation, context.id)
    if refused is not None:
        raise Refused(refused)
    with store.transaction() as tx:
        text = widget_text(context, widget, _rows(brain, tx, conversation, widget))
        origin = Origin(
            bot=conversation.bot,
            chat=conversation.chat,
            thread=conversation.thread,
            message_id=message_id,
            sent_at=at,
            feature=context.feature,
            reach=(ReachEntry(context=context.id),),
            widget=context.id,
        )
        record_send(tx, brain, origin, text)
        replaced = tx.retire_widgets(
            bot=conversation.bot,
            chat=conversation.chat,
            thread=conversation.thread,
            context=context.id,
            keep=message_id,
            at=at,
        )
    return ShownWidget(origin=origin, text=text, replaced=replaced)


def refresh_widgets(
    brain: Brain, store: Store, at: datetime
) -> tuple[tuple[WidgetEdit, ...], tuple[WidgetLeft, ...]]:
    """Read every live widget's lines again and record an edit of each that changed; and
    the widgets left as last shown, each with why."""
    edits: list[WidgetEdit] = []
    left: list[WidgetLeft] = []
    with store.transaction() as tx:
        for live in tx.live_widgets():
            text = _read_again(brain, tx, live)
            if isinstance(text, WidgetLeft):
                log.warning(
                    "widget %s in %s left as it was: %s",
                    live.message_id,
                    shown(live.chat),
                    text.reason,
                )
                left.append(text)
                continue
            if text == live.text:
                continue
            tx.edit_message(live.row, text, at)
            edits.append(
                WidgetEdit(
                    bot=live.bot,
                    chat=live.chat,
                    thread=live.thread,
                    message_id=live.message_id,
                    context=live.context,
                    text=text,
                )
            )
    return tuple(edits), tuple(left)


def _read_again(brain: Brain, tx: Tx, live: LiveWidget) -> str | WidgetLeft:
    """A live widget's text as its lines read now, or why it is left as last shown."""
    found = brain.contexts.get(live.context)
    room = Conversation(bot=live.bot, chat=live.chat, thread=live.thread)
    if found is None or found.widget is None:
        why = f"context {live.context!r} did not load or declares no widget any more"
    elif (refused := _not_admitted(brain, room, live.context)) is not None:
        why = refused
    else:
        try:
            return widget_text(found, found.widget, _rows(brain, tx, room, found.widget))
        except (UsageError, Refused) as exc:
            why = str(exc)
    return WidgetLeft(chat=live.chat, message_id=live.message_id, context=live.context, reason=why)


def _not_admitted(brain: Brain, room: Conversation, context: str) -> str | None:
    """Why the widget's lines may not be shown in `room` (None: they may): they are the
    context's rows, for a room whose role (access.yaml's rule there) admits it."""
    access = brain.access.room(room.bot, room.chat, dm=room.chat.startswith(DM_PREFIXES))
    if access.refusal is not None:
        return str(access.refusal)
    rule = access.rule
    if rule is None or rule.role is None:
        return (
            f"access.yaml has no rule with a role for bot {room.bot!r} in chat {room.chat!r}, "
            "so no role there may read the widget's lines — add a rule for the chat, or show "
            "it where one applies"
        )
    role = brain.roles.get(rule.role)
    if role is None or not role.admits(context):
        return (
            f"role {rule.role!r} (access.yaml's rule for bot {room.bot!r} in {room.chat!r}) "
            f"does not admit context {context!r}, so its lines may not be shown there — add "
            "it to the role's contexts:, or show the widget where a role that admits it speaks"
        )
    return None


def _declared(brain: Brain, context_id: str) -> tuple[ContextSpec, WidgetSpec]:
    context = brain.contexts.get(context_id)
    with_widgets = sorted(c.id for c in brain.contexts.values() if c.widget is not None)
    listed = ", ".join(with_widgets) or "none"
    if context is None:
        raise UsageError(
            f"no context {context_id!r} in this brain (contexts with a widget: {listed})"
        )
    if context.widget is None:
        raise UsageError(
            f"{context.path}: context {context_id!r} declares no widget — add "
            f"'widget: {{view: <view>, line: <column>}}' to its frontmatter "
            f"(contexts with a widget: {listed})"
        )
    return context, context.widget


def _rows(brain: Brain, tx: Tx, room: Conversation, widget: WidgetSpec) -> ViewRows:
    """The widget's view as a turn in `room` reads it: its tenant's rows only."""
    pins = pins_of(brain, effective_bindings(brain, room, tx.bindings_here(room)))
    return read_view(
        tx.connection,
        ViewRef(view=widget.view),
        None,
        limit=MAX_LINES,
        timeout_ms=brain.manifest.state_read_timeout_ms,
        tenant=tenant_of(brain, pins),
    )
