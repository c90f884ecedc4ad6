"""The `keel` command: one typer app, one module per command group.

Exit status: 0 done, 1 a check failed (doctor) or the database failed, 2 a usage error,
3 a refusal, 4 a turn that does not fit. Only this edge turns Keel's errors into exit codes.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from importlib.metadata import version
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from keel.cli.terminal import terminal
from keel.errors import KeelError, LinkError, Refused, UsageError

app = typer.Typer(
    name="keel",
    help="Keel: feature contexts linked to each turn, assembled into budgeted model input.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"keel {version('keel')}\n")
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


EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_REFUSED = 3
EXIT_OVERFLOW = 4


def console() -> Console:
    """Standard output for people: prose wraps at the terminal's width, at word breaks."""
    return terminal()


def error_console() -> Console:
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
            console().print(f"[bold yellow]refused:[/] {escape(str(exc))}")
        raise typer.Exit(EXIT_REFUSED) from None
    except UsageError as exc:
        fail(exc)
    except KeelError as exc:  # the database failed, or content could not be used
        fail(exc, code=EXIT_FAILED)


def fail(error: KeelError | str, *, code: int = EXIT_USAGE) -> NoReturn:
    """Print a one-line error (or refusal) to stderr and exit with `code`."""
    label = "[bold yellow]refused:[/]" if isinstance(error, Refused) else "[bold red]error:[/]"
    # The message is text, not markup: a `[run, ask]` it quotes must print as written.
    error_console().print(f"{label} {escape(str(error))}", markup=True)
    raise typer.Exit(code)
