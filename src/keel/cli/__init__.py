"""The `keel` command line."""

import sys

from rich.markup import escape

from keel.cli import brain_cmds as _brain_cmds  # noqa: F401  (registers the commands)
from keel.cli import chat_cmds as _chat_cmds  # noqa: F401
from keel.cli import hook_cmd as _hook_cmd  # noqa: F401
from keel.cli import import_cmd as _import_cmd  # noqa: F401
from keel.cli import inspect_cmds as _inspect_cmds  # noqa: F401
from keel.cli import mcp_cmd as _mcp_cmd  # noqa: F401
from keel.cli import report_cmds as _report_cmds  # noqa: F401
from keel.cli import run_cmds as _run_cmds  # noqa: F401
from keel.cli import serve_cmd as _serve_cmd  # noqa: F401
from keel.cli import state_cmds as _state_cmds  # noqa: F401
from keel.cli import turn_cmd as _turn_cmd  # noqa: F401
from keel.cli.app import EXIT_USAGE, app, error_console


def main() -> None:
    """Entry point of the `keel` script."""
    for position, argument in enumerate(sys.argv[1:], start=1):
        try:
            argument.encode("utf-8")
        except UnicodeEncodeError:
            # Bytes that are not UTF-8 arrive as lone surrogates; no database stores them.
            raw = argument.encode("utf-8", "surrogateescape")
            shown = escape(raw.decode("utf-8", "backslashreplace"))
            error_console().print(
                f"[bold red]error:[/] argument {position} ({shown}) is not valid UTF-8 — "
                "Keel reads its arguments as UTF-8 text",
                markup=True,
            )
            sys.exit(EXIT_USAGE)
    app()


__all__ = ["app", "main"]
