"""The `keel` command line."""

from keel.cli import brain_cmds as _brain_cmds  # noqa: F401  (registers the commands)
from keel.cli import chat_cmds as _chat_cmds  # noqa: F401
from keel.cli import hook_cmd as _hook_cmd  # noqa: F401
from keel.cli import import_cmd as _import_cmd  # noqa: F401
from keel.cli import inspect_cmds as _inspect_cmds  # noqa: F401
from keel.cli import mcp_cmd as _mcp_cmd  # noqa: F401
from keel.cli import report_cmds as _report_cmds  # noqa: F401
from keel.cli import state_cmds as _state_cmds  # noqa: F401
from keel.cli import turn_cmd as _turn_cmd  # noqa: F401
from keel.cli.app import app


def main() -> None:
    """Entry point of the `keel` script."""
    app()


__all__ = ["app", "main"]
