"""`keel doctor` and `keel init`: check a brain, or start a new one.

`keel doctor` is run by people and by CI on every change, so it is built for its start
time: the brain is read through its snapshot cache (`keel.brain.snapshot_cache`; only the
files edited since the last read are parsed), and when the brain has code the workers
that load it are started first, so they start while the database layer and the checks
are imported.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from keel.cli.options import BrainArg, DbOpt, JsonOpt
from keel.cli.root import app, console, emit_json, fail
from keel.cli.status import EXIT_FAILED
from keel.errors import UsageError

if TYPE_CHECKING:
    from keel.brain.snapshot import Brain
    from keel.code.runner import CodeRunner
    from keel.doctor import Report


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
        report = _check(brain, db, probe=probe)
    except UsageError as exc:
        fail(exc)
    from keel.doctor import render

    if as_json:
        emit_json(report.to_json())
    else:
        render(report, console())
    if report.failed:
        raise typer.Exit(EXIT_FAILED)


def _check(path: Path, db: str | None, *, probe: bool) -> Report:
    """Doctor's report on the brain at `path`, its code's workers started first."""
    from keel.brain.snapshot_cache import CachedSource

    source = CachedSource(path)
    started = _Starting(source.current())
    try:
        from keel.runtime.engine import Engine  # the database layer: most of the wait

        code = started.runner()
    except BaseException:
        started.close()
        raise
    with Engine(path, db, watch=False, source=source, code=code) as engine:
        return engine.doctor(probe=probe)


class _Starting:
    """The runner of a brain's code, starting in a thread of its own; none for a brain
    without code."""

    def __init__(self, brain: Brain) -> None:
        self._runner: CodeRunner | None = None
        self._failed: BaseException | None = None
        self._thread: threading.Thread | None = None
        if brain.with_code or brain.engage:
            from keel.code.runner import CodeRunner

            self._runner = CodeRunner(brain.root, access=brain.manifest.code)
            self._thread = threading.Thread(target=self._start, args=(self._runner,))
            self._thread.start()

    def _start(self, runner: CodeRunner) -> None:
        try:
            runner.start()
        except BaseException as exc:  # noqa: BLE001  (raised again in the command's thread)
            self._failed = exc

    def runner(self) -> CodeRunner | None:
        """The runner once started; what failed to start it is raised here."""
        if self._thread is not None:
            self._thread.join()
        if self._failed is not None:
            raise self._failed
        return self._runner

    def close(self) -> None:
        if self._thread is not None:
            self._thread.join()
        if self._runner is not None:
            self._runner.close()


@app.command()
def init(
    directory: Annotated[Path, typer.Argument(help="Where to create the brain.")],
) -> None:
    """Create a minimal working brain: one feature, one role, one context."""
    if directory.exists() and not directory.is_dir():
        fail(f"{directory}: is a file — name a new directory for the brain")
    if directory.exists() and any(directory.iterdir()):
        fail(f"{directory}: already exists and is not empty — choose a new directory")
    from keel.brain.scaffold import scaffold_files

    name = directory.resolve().name
    try:
        for rel, text in scaffold_files(name).items():
            target = directory / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    except OSError as exc:
        fail(
            f"{directory}: cannot create the brain there ({exc.strerror or exc}) — name a "
            "directory you can write in"
        )
    out = console()
    out.print(f"[green]Created a brain in {directory}[/]")
    out.print(f"Next: [bold]keel doctor {directory}[/]")
