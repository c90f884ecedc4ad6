"""The console every command prints through: stored text cannot drive the terminal.

Messages, ids, keys and model output in the store came from outside — a chat, an HTTP
body, a model. Printed raw, an escape sequence in one could clear the screen, move the
cursor over Keel's own lines, or reorder them (bidi controls). `Terminal` writes every
control character of what it prints as an escape (`\\x1b`, `\\u202e`), keeping only line
breaks and tabs; the colours and styles Keel itself asks for are rich's control output,
added after, and stay.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Text

from keel.log import printable


class Terminal(Console):
    """A rich `Console` whose printed text shows control characters as escapes.

    Text given as `str` (table cells, lines) is escaped before it is laid out, so its
    column fits what is printed; a `Text` is escaped as it is written out, which keeps the
    terminal safe but may crop a hostile line laid out at its raw width.
    """

    def render_str(self, text: str, **options: Any) -> Text:
        return super().render_str(printable(text, lines=True), **options)

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control or segment.text.isprintable():
                yield segment
            else:
                yield Segment(printable(segment.text, lines=True), segment.style)

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        # Tables pad every line to their width; in a pipe or a file (no colours to keep)
        # those trailing spaces are noise to `grep`, `diff` and a reader's editor.
        rendered = super()._render_buffer(buffer)
        if self.is_terminal or self._color_system is not None:
            return rendered
        return "\n".join(line.rstrip(" ") for line in rendered.split("\n"))


def terminal(**options: Any) -> Terminal:
    """A `Terminal` that highlights nothing on its own (Keel's output styles itself)."""
    return Terminal(highlight=False, **options)
