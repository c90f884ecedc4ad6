"""The root `keel` command: the typer app every command module registers on, and what
every command prints and fails through.

Command modules register themselves when imported, and `keel.cli.commands` imports only
the one a command line names: so this module loads typer but neither rich (the terminal
UI, imported when something is printed through it) nor any command's dependencies. Exit
statuses are `keel.cli.status`; only this edge turns Keel's errors into them.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from keel import __version__
from keel.cli.commands import SUMMARY
from keel.cli.status import EXIT_FAILED, EXIT_REFUSED, EXIT_USAGE
from keel.errors import KeelError, LinkError, Refused, UsageError

if TYPE_CHECKING:
    from rich.console import Console

app = typer.Typer(
    name="keel",
    help=SUMMARY,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"keel {__version__}\n")
        raise typer.Exit()


@app.callback()
def _main(
    _show_version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print Keel's version and exit."
        ),
    ] = False,
) -> None:
    """Keel: feature contexts linked to each turn, assembled into budgeted model input."""


def console() -> Console:
    """Standard output for people: prose wraps at the terminal's width, at word breaks."""
    from keel.cli.terminal import terminal

    return terminal()


def error_console() -> Console:
    from keel.cli.terminal import terminal

    return terminal(stderr=True)


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def guard(as_json: bool, action: Callable[[], None]) -> None:
    """Run a command body, turning Keel's errors into the CLI's exit codes."""
    try:
        action()
    except (Refused, LinkError) as exc:
        if as_json:
            emit_json({"refused": str(exc)})
        else:
            from rich.markup import escape

            console().print(f"[bold yellow]refused:[/] {escape(str(exc))}")
        raise typer.Exit(EXIT_REFUSED) from None
    except UsageError as exc:
        fail(exc)
    except KeelError as exc:  # the database failed, or content could not be used
        fail(exc, code=EXIT_FAILED)


def fail(error: KeelError | str, *, code: int = EXIT_USAGE) -> NoReturn:
    """Print a one-line error (or refusal) to stderr and exit with `code`."""
    from rich.markup import escape

    label = "[bold yellow]refused:[/]" if isinstance(error, Refused) else "[bold red]error:[/]"
    # The message is text, not markup: a `[run, ask]` it quotes must print as written.
    error_console().print(f"{label} {escape(str(error))}", markup=True)
    raise typer.Exit(code)
