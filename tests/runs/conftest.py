"""Runs tests share one launched DBOS per module and database (it is a process singleton,
and launching it costs more than most of the tests it serves).

`runs` is the test brain (`tests.runs.brains`) on SQLite or on a fresh PostgreSQL schema,
with this process's runtime launched on it; the run commands invoked in-process use that
runtime. Tests keep apart by their own chats and run ids.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine
from typer.testing import CliRunner, Result

from keel.cli import app
from keel.runs.app import Runtime, system_database
from keel.runs.service import launch
from keel.runtime.engine import Engine
from tests.databases import fresh_schema, postgres_url
from tests.runs.brains import RUNS_BRAIN

runner = CliRunner()


def write_files(root: Path, files: dict[str, str]) -> Path:
    for rel, content in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    return root


def script(folder: Path, name: str, steps: list[dict[str, Any]]) -> str:
    """A scripted model file; its `--model` spec."""
    path = folder / f"{name}.json"
    path.write_text(json.dumps(steps), encoding="utf-8")
    return f"scripted:{path}"


@dataclass(frozen=True)
class Runs:
    """The test brain on one database, with this process's runtime launched on it."""

    brain: Path
    db: str
    engine: Engine
    runtime: Runtime
    folder: Path

    def invoke(self, *args: str) -> Result:
        words = [args[0], str(self.brain), *args[1:], "--db", self.db]
        return runner.invoke(app, words)

    def json(self, *args: str, exit_code: int = 0) -> Any:
        result = self.invoke(*args, "--json")
        assert result.exit_code == exit_code, (result.exit_code, result.output)
        return json.loads(result.stdout)

    def script(self, name: str, steps: list[dict[str, Any]]) -> str:
        return script(self.folder, name, steps)


def drop_dbos_schema(url: str) -> None:
    """Drop the schema DBOS kept its journal in beside a test's PostgreSQL schema."""
    schema = system_database(url).schema
    admin = create_engine(postgres_url())
    try:
        with admin.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        admin.dispose()


# A runs fixture serves its module once on each database.
DATABASES = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
]


def runs_of(files: dict[str, str], folder_name: str) -> Any:
    """A module's `runs` fixture: `files` as the brain, served once on each database."""

    @pytest.fixture(scope="module", params=DATABASES, name="runs")
    def runs(
        request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
    ) -> Iterator[Runs]:
        folder = tmp_path_factory.mktemp(folder_name)
        yield from launched_on(request.param, write_files(folder / "brain", files), folder)

    return runs


runs = runs_of(RUNS_BRAIN, "runs")


def launched_on(database: str, brain: Path, folder: Path) -> Iterator[Runs]:
    """`brain` on a SQLite file in `folder` or a fresh PostgreSQL schema (`database`), with
    this process's runtime launched on it; the schemas are dropped afterwards."""
    if database == "sqlite":
        yield from _launched(brain, f"sqlite:///{(folder / 'keel.db').as_posix()}", folder)
        return
    with fresh_schema() as url:
        text = url.render_as_string(hide_password=False)
        try:
            yield from _launched(brain, text, folder)
        finally:
            drop_dbos_schema(text)


def _launched(brain: Path, db: str, folder: Path) -> Iterator[Runs]:
    engine = Engine(brain, db, watch=False)
    if not db.startswith("sqlite"):
        engine.apply_state()
    runtime = launch(engine, kind="test")
    try:
        yield Runs(brain=brain, db=db, engine=engine, runtime=runtime, folder=folder)
    finally:
        runtime.close()
        engine.close()
