"""What a widget refresh did, as the CLI prints it (`keel widget refresh`, `keel state
apply`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from keel.cli.run_view import indented

if TYPE_CHECKING:
    from keel.runtime.widgets import WidgetEdit, WidgetLeft


def refreshed_json(edits: Sequence[WidgetEdit], left: Sequence[WidgetLeft]) -> dict[str, Any]:
    """A refresh's outcome as `--json` gives it."""
    return {"edited": [e.to_json() for e in edits], "left": [w.to_json() for w in left]}


def print_refreshed(out: Console, edits: Sequence[WidgetEdit], left: Sequence[WidgetLeft]) -> None:
    """Each widget a refresh edited, with its new lines, and each it left, with why."""
    for edit in edits:
        out.print(f"edited [bold]{edit.message_id}[/] in {edit.chat} · widget {edit.context}")
        out.print(indented(edit.text))
    for kept in left:
        out.print(
            f"[yellow]left[/] {kept.message_id} in {kept.chat} · widget {kept.context} as "
            f"last shown: {escape(kept.reason)}"
        )
