"""The console every command prints through: stored text cannot drive the terminal."""

from __future__ import annotations

import io

from rich.table import Table
from rich.text import Text

from keel.cli.terminal import terminal


def printed(*renderables: object, color: bool = False) -> str:
    out = io.StringIO()
    console = terminal(
        file=out, width=80, force_terminal=color, color_system="standard" if color else None
    )
    console.print(*renderables)
    return out.getvalue()


def test_control_characters_print_as_escapes_and_lines_stay() -> None:
    out = printed(Text("a\x1b[2Jb\nc\u202ed\x9be"))
    assert out == "a\\x1b[2Jb\nc\\u202ed\\x9be\n"


def test_table_cells_are_escaped_too() -> None:
    table = Table("x")
    table.add_row("p\x1b]0;title\x07q")
    out = printed(table)
    assert "\x1b" not in out
    assert "p\\x1b]0;title\\x07q" in out, "laid out at its escaped width: nothing cropped"


def test_keels_own_colours_stay() -> None:
    out = printed(Text("ok", style="green"), color=True)
    assert "\x1b[32mok" in out


def test_a_table_in_a_pipe_ends_its_lines_without_padding() -> None:
    table = Table("name", "note", box=None, pad_edge=False)
    table.add_row("a-rather-long-name", "")
    table.add_row("b", "x")
    out = printed(table)
    assert out.splitlines() == [
        "name                note",
        "a-rather-long-name",
        "b                   x",
    ]
