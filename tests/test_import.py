"""`import keel` is cheap: the database layer, the terminal UI and the watcher load on use."""

from __future__ import annotations

import subprocess
import sys

from typer.testing import CliRunner

from keel.cli import app

HEAVY = ("sqlalchemy", "psycopg", "rich", "typer", "watchfiles", "jsonschema")


def loaded_after(statement: str) -> set[str]:
    """The top-level modules a fresh interpreter holds after running `statement`."""
    code = f"{statement}\nimport sys\nprint(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return set(out.stdout.split())


def test_import_keel_loads_none_of_the_heavy_dependencies() -> None:
    assert loaded_after("import keel") & set(HEAVY) == set()


def test_the_pure_core_needs_no_database_driver() -> None:
    core = "import keel.link, keel.budget, keel.assemble, keel.tokens, keel.payload"
    assert loaded_after(core) & {"sqlalchemy", "psycopg"} == set()


def test_a_name_loads_its_module_on_first_use() -> None:
    assert "sqlalchemy" in loaded_after("import keel; keel.Engine")


def test_keel_version() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.startswith("keel ")
