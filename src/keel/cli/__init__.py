"""The `keel` command line.

`main` is the `keel` script. `app` is the whole typer app with every command registered:
importing it imports every command module (the engine, the database layer, DBOS, the web
server), so it is loaded on first use, never by `keel --version` or `keel --help`.
"""

from __future__ import annotations

from keel.cli.entry import main

# Not `typing.TYPE_CHECKING`: importing typing here would cost `keel --version` its time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import typer

    app: typer.Typer

__all__ = ["app", "main"]


def __getattr__(name: str) -> object:
    if name != "app":
        raise AttributeError(f"module 'keel.cli' has no attribute {name!r}")
    from keel.cli.commands import load_all
    from keel.cli.root import app

    load_all()
    globals()["app"] = app  # the next access is a plain attribute read
    return app
