"""The `keel` script's entry point: what it answers before any command loads.

`keel --version` and `keel --help` (and `keel` alone) are answered here from constants
and the command table (`keel.cli.commands`), without typer, rich or any command's
dependencies: a shell's completion, an agent probing for the tool or a person asking
what there is should not wait seconds for the engine to import. Any other command line
goes to typer with only the named command's module imported. A first argument of
`--help` or `--version` wins over what follows it, as it did when typer answered it (both
options are eager).
"""

from __future__ import annotations

import os
import sys

from keel import __version__
from keel.cli.commands import COMMANDS, SUMMARY, load
from keel.cli.status import EXIT_USAGE

# Not `typing.TYPE_CHECKING`: importing typing (or collections.abc) would cost every
# command line its time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import NoReturn

# The command a coding agent runs on every prompt: its brain's warm server answers first.
AGENT_HOOK = "agent-hook"

OPTIONS = (
    ("--version", "Print Keel's version and exit."),
    ("--help", "Show this message and exit."),
)
DEFAULT_WIDTH = 80
# Narrower than this, the boxes of `keel --help` are drawn this wide all the same.
MIN_WIDTH = 60
# Corners and lines of a box: top left, across, top right, down, bottom left, bottom right.
BOX = "╭─╮│╰╯"
ASCII_BOX = "+-+|++"


def main() -> None:
    """Entry point of the `keel` script; always ends the process (SystemExit)."""
    args = sys.argv[1:]
    _refuse_undecodable(args)
    if not args or args[0] == "--help":
        sys.stdout.write(overview(width(), box=_box(sys.stdout.encoding)))
        sys.stdout.flush()
        # `keel` alone is a usage error that shows the help, as typer's no_args_is_help was.
        raise SystemExit(0 if args else EXIT_USAGE)
    if args[0] == "--version":
        sys.stdout.write(f"keel {__version__}\n")
        sys.stdout.flush()
        raise SystemExit(0)
    if args[0] == AGENT_HOOK:
        from keel.cli import hook_client

        hook_client.main(args[1:], cold=lambda: _command(args))
    _command(args)


def _command(args: list[str]) -> NoReturn:
    """Run the command line `args` through typer, with only its command's module loaded."""
    from keel.cli.root import app

    load(args[0])
    app()
    raise SystemExit(0)  # typer exits by itself; this says so to the type checker


def overview(width: int, *, box: str = BOX) -> str:
    """`keel --help` at `width` columns, laid out as typer lays out every command's help:
    the usage, what Keel is, then the options and the commands, each in a box drawn with
    `box`'s six characters (corners, lines)."""
    width = max(width, MIN_WIDTH)
    lines = [" Usage: keel [OPTIONS] COMMAND [ARGS]...", ""]
    lines.extend(f" {line}" for line in _wrap(SUMMARY, width - 2))
    lines.append("")
    lines.extend(_panel("Options", OPTIONS, width, box))
    commands = [(name, summary) for name, (_, summary) in COMMANDS.items()]
    lines.extend(_panel("Commands", commands, width, box))
    return "\n".join(lines) + "\n"


def width() -> int:
    """The terminal's width: $COLUMNS when set, else the terminal's, else 80."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(sys.stdout.fileno()).columns
    except (OSError, ValueError):  # not a terminal, or stdout is not a file
        return DEFAULT_WIDTH


def _box(encoding: str | None) -> str:
    """The box characters a stream in `encoding` can write: rich's, else ASCII."""
    try:
        BOX.encode(encoding or "ascii")
    except (UnicodeEncodeError, LookupError):
        return ASCII_BOX
    return BOX


def _panel(title: str, rows: Sequence[tuple[str, str]], width: int, box: str) -> list[str]:
    """A box titled `title`: each name, and its text wrapped beside it."""
    top_left, line, top_right, side, bottom_left, bottom_right = tuple(box)
    inner = width - 4  # the sides, and a space inside each
    names = max(len(name) for name, _ in rows)
    lines = [f"{top_left}{line} {title} {line * (width - len(title) - 5)}{top_right}"]
    for name, text in rows:
        wrapped = _wrap(text, inner - names - 2)
        cells = [
            f"{name.ljust(names)}  {wrapped[0]}",
            *(" " * (names + 2) + w for w in wrapped[1:]),
        ]
        lines.extend(f"{side} {cell.ljust(inner)} {side}" for cell in cells)
    lines.append(f"{bottom_left}{line * (width - 2)}{bottom_right}")
    return lines


def _wrap(text: str, width: int) -> list[str]:
    """`text` in lines of at most `width` columns, broken at spaces (a longer word stands
    alone on its line)."""
    lines: list[str] = []
    line = ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return [*lines, line]


def _refuse_undecodable(args: list[str]) -> None:
    """Exit with a usage error for an argument that is not UTF-8: no database stores it."""
    for position, argument in enumerate(args, start=1):
        try:
            argument.encode("utf-8")
        except UnicodeEncodeError:
            # Bytes that are not UTF-8 arrive as lone surrogates.
            from rich.markup import escape

            from keel.cli.root import error_console

            raw = argument.encode("utf-8", "surrogateescape")
            shown = escape(raw.decode("utf-8", "backslashreplace"))
            error_console().print(
                f"[bold red]error:[/] argument {position} ({shown}) is not valid UTF-8 — "
                "Keel reads its arguments as UTF-8 text",
                markup=True,
            )
            raise SystemExit(EXIT_USAGE) from None
