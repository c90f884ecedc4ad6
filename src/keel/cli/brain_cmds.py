"""`keel doctor` and `keel init`: check a brain, or start a new one."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from keel.brain.scaffold import scaffold_files
from keel.cli.options import BrainArg, DbOpt, JsonOpt, open_engine
from keel.cli.root import app, console, emit_json, fail
from keel.cli.status import EXIT_FAILED
from keel.doctor import render
from keel.errors import UsageError


@app.command()
def doctor(
    brain: BrainArg,
    db: DbOpt = None,
    probe: Annotated[
        bool,
        typer.Option(
            "--probe", help="Also call each match, gate and chat policy once on a sample."
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Check a brain: files that do not load, bindings, reach, views. Exit 1 on a fail."""
    try:
        with open_engine(brain, db) as engine:
            report = engine.doctor(probe=probe)
    except UsageError as exc:
        fail(exc)
    if as_json:
        emit_json(report.to_json())
    else:
        render(report, console())
    if report.failed:
        raise typer.Exit(EXIT_FAILED)


@app.command()
def init(
    directory: Annotated[Path, typer.Argument(help="Where to create the brain.")],
) -> None:
    """Create a minimal working brain: one feature, one role, one context."""
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        fail(f"{directory}: already exists and is not empty — choose a new directory")
    name = directory.resolve().name
    for rel, text in scaffold_files(name).items():
        target = directory / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    out = console()
    out.print(f"[green]Created a brain in {directory}[/]")
    out.print(f"Next: [bold]keel doctor {directory}[/]")
