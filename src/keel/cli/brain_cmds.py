"""`keel doctor` and `keel init`: check a brain, or start a new one."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from keel.brain import load_brain
from keel.brain.scaffold import scaffold_files
from keel.cli.app import EXIT_FAILED, app, console, emit_json, fail
from keel.doctor import render, run_doctor
from keel.errors import StoreError, UsageError
from keel.state import connect, default_url, read_schema

BrainArg = Annotated[Path, typer.Argument(help="The brain directory.", show_default=False)]
DbOpt = Annotated[
    str | None,
    typer.Option(
        "--db", help="Database URL (default: the brain's own SQLite file).", show_default=False
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for machines.")]


@app.command()
def doctor(brain: BrainArg, db: DbOpt = None, as_json: JsonOpt = False) -> None:
    """Check a brain: files that do not load, bindings, reach, views. Exit 1 on a fail."""
    try:
        loaded = load_brain(brain)
    except UsageError as exc:
        fail(exc)
    url = db or default_url(loaded.root)
    try:
        schema, note = read_schema(connect(url, loaded)), None
    except StoreError as exc:
        schema, note = None, str(exc)
    report = run_doctor(loaded, schema=schema, db_note=note)
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
