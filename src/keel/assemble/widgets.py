"""A widget's words: its lines as the message shows them, and as a reply's turn reads them.

Pure functions of their arguments (`keel.runtime.widgets` reads the rows and records the
message): the same rows always make the same text, so a refresh that finds the text
unchanged edits nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from keel.brain.specs import ContextSpec, WidgetSpec
from keel.budget.render import unforgeable
from keel.budget.rows import ViewRows
from keel.errors import UsageError
from keel.link.values import Origin

# A widget shows up to this many lines, and a count of the rest.
MAX_LINES = 100
# Well inside a Telegram message (4,096 UTF-16 units), so an edit is always one message.
MAX_CHARS = 3500
NO_LINES = "(no lines)"
_NUMBERED = re.compile(r"\d+\. ")


def widget_text(context: ContextSpec, widget: WidgetSpec, rows: ViewRows) -> str:
    """The message a widget shows for these rows: its title, then one numbered line per
    row. Raises `UsageError` when the rows cannot make lines (the view failed, or lacks a
    `line` column)."""
    if rows.problem is not None:
        raise UsageError(f"widget {context.id}: view {widget.view} {rows.problem}")
    missing = [c for c in widget.line if c not in rows.columns]
    if missing:
        raise UsageError(
            f"{context.path}: widget line column {', '.join(repr(c) for c in missing)} is "
            f"not a column of view {widget.view} (it has {', '.join(rows.columns) or 'none'}) "
            "— name its columns in 'line:'"
        )
    at = [rows.columns.index(c) for c in widget.line]
    title = widget.title or context.description or context.id
    text = title
    shown_lines = 0
    for number, row in enumerate(rows.rows, start=1):
        values = (_one_line(row[i]) for i in at)
        line = f"\n{number}. " + " · ".join(v for v in values if v)
        if len(text) + len(line) > MAX_CHARS:
            break
        text += line
        shown_lines = number
    rest = max(rows.total, len(rows.rows)) - shown_lines
    if not rows.rows:
        text += f"\n{NO_LINES}"
    elif rest > 0:
        text += f"\n… and {rest} more"
    return text


def _one_line(value: object) -> str:
    return "" if value is None else " ".join(str(value).split())


def replied_lines(
    origins: Iterable[Origin], texts: Mapping[str, str]
) -> tuple[tuple[str, str], ...]:
    """(context, text) of each widget among the messages a turn replies to, as last shown."""
    return tuple(
        (o.widget, texts[o.message_id])
        for o in origins
        if o.widget is not None and o.message_id in texts
    )


def numbered(text: str) -> int:
    """How many numbered lines a widget's text shows (its title and its count of the rest
    are not lines)."""
    return sum(1 for line in text.splitlines()[1:] if _NUMBERED.match(line))


def lines_note(replied: Iterable[tuple[str, str]]) -> str:
    """What a reply's turn reads before its input: each widget it answers, numbered as the
    person saw it."""
    return "\n\n".join(
        f'The message replied to is the list of "{context}", numbered as shown:\n'
        f"{unforgeable(text)}"
        for context, text in replied
    )
