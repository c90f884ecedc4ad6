"""`keel state apply`, `keel state status`: the brain's `state/*.sql` against its database.

`apply` runs the files the database has not recorded yet and exits 0 when every file is
applied as it is on disk; a file changed since it was applied is left as it was, reported
with the way forward, and makes the command exit 1. `status` only looks, and exits 0.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from keel.cli.options import BrainArg, DbOpt, JsonOpt, open_engine
from keel.cli.root import app, console, emit_json, guard
from keel.cli.status import EXIT_FAILED
from keel.cli.widget_view import print_refreshed, refreshed_json
from keel.state.files import StateFile, StateReport

state_app = typer.Typer(help="The brain's state database.", no_args_is_help=True)
app.add_typer(state_app, name="state")

RebuildViewsOpt = Annotated[
    bool,
    typer.Option(
        "--rebuild-views",
        help="Re-create the views of applied files that changed and define only views.",
    ),
]

_STYLE = {"applied": "green", "changed": "yellow", "new": "cyan", "missing": "red"}


@state_app.command("apply")
def state_apply(
    brain: BrainArg,
    db: DbOpt = None,
    rebuild_views: RebuildViewsOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Apply the brain's state/*.sql files the database has not applied yet, in name order."""
    outcome: list[StateReport] = []

    def body() -> None:
        with open_engine(brain, db) as engine:
            report = engine.apply_state(rebuild_views=rebuild_views)
            # What ran may have changed the rows a widget shows: edit each that changed.
            edits, left = engine.refresh_widgets() if report.ran or report.rebuilt else ((), ())
        outcome.append(report)
        if as_json:
            emit_json(
                {
                    "applied": list(report.applied),
                    "ran": list(report.ran),
                    "adopted": list(report.adopted),
                    "rebuilt": list(report.rebuilt),
                    "files": [_file_json(f) for f in report.files],
                    "widgets": refreshed_json(edits, left),
                }
            )
        else:
            _print_report(console(), report)
            print_refreshed(console(), edits, left)

    guard(as_json, body)
    if outcome and outcome[0].changed:
        raise typer.Exit(EXIT_FAILED)


@state_app.command("status")
def state_status_cmd(brain: BrainArg, db: DbOpt = None, as_json: JsonOpt = False) -> None:
    """List the brain's state files: applied, changed since applied, new, or missing."""

    def body() -> None:
        with open_engine(brain, db) as engine:
            files = engine.state_status()
        if as_json:
            emit_json({"files": [_file_json(f) for f in files]})
        else:
            _print_files(console(), files)

    guard(as_json, body)


def _file_json(file: StateFile) -> dict[str, Any]:
    return {
        "path": file.path,
        "status": file.status,
        "sha256": file.sha256,
        "applied_sha256": file.applied_sha256,
        "applied_at": file.applied_at.isoformat() if file.applied_at else None,
        "advice": file.advice,
    }


def _print_report(out: Console, report: StateReport) -> None:
    total = sum(1 for f in report.files if f.status != "missing")
    out.print(f"{len(report.applied)} of {total} state file(s) applied")
    for verb, paths in (
        ("ran", report.ran),
        ("recorded without running (already in the database)", report.adopted),
        ("re-created the views of", report.rebuilt),
    ):
        if paths:
            out.print(f"{verb} {len(paths)} file(s): {', '.join(paths)}")
    for file in (*report.changed, *report.missing):
        out.print(Text(f"{file.status}: {file.path} — {file.advice}", style=_STYLE[file.status]))


def _print_files(out: Console, files: tuple[StateFile, ...]) -> None:
    if not files:
        out.print("the brain has no state files, and the database recorded none")
        return
    table = Table("status", "file", "applied at", box=None, pad_edge=False)
    for file in files:
        at = f"{file.applied_at:%Y-%m-%d %H:%M} UTC" if file.applied_at else "-"
        table.add_row(Text(file.status, style=_STYLE[file.status]), file.path, at)
    out.print(table)
    for file in files:
        if file.status != "applied" and file.advice:
            out.print(f"{file.path}: {file.advice}")
