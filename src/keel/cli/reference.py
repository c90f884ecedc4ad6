"""The CLI reference (docs/cli.md), generated from each command's own `--help`.

`keel --help` is what the entry point prints (`keel.cli.entry`), every other page what
typer prints for the command. A test regenerates it and compares, so the document cannot
drift from the code; `scripts/cli-reference` rewrites it after a change.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.testing import CliRunner

from keel.cli.commands import load_all
from keel.cli.entry import overview
from keel.cli.root import app

WIDTH = 100


def _commands(group: Any, prefix: list[str]) -> list[list[str]]:
    found: list[list[str]] = []
    for name in sorted(group.commands):
        command = group.commands[name]
        if hasattr(command, "commands"):
            found.extend(_commands(command, [*prefix, name]))
        else:
            found.append([*prefix, name])
    return found


def reference() -> str:
    """Markdown: the top-level help, then each command's help, in name order."""
    load_all()
    runner = CliRunner()
    env = {"COLUMNS": str(WIDTH), "NO_COLOR": "1", "TERM": "dumb"}
    root = typer.main.get_command(app)
    parts = ["# The `keel` command\n", "Generated from `--help`; do not edit by hand.\n"]
    parts.append(f"## `keel`\n\n```text\n{overview(WIDTH).rstrip()}\n```\n")
    for path in _commands(root, []):
        result = runner.invoke(app, [*path, "--help"], env=env, prog_name="keel")
        title = " ".join(["keel", *path])
        text = "\n".join(line.rstrip() for line in result.output.splitlines()).strip("\n")
        parts.append(f"## `{title}`\n\n```text\n{text}\n```\n")
    return "\n".join(parts)
