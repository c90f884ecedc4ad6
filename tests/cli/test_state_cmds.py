"""`keel state apply` and `keel state status` from the command line: output and exit codes.

Apply exits 0 when every state file is applied as it is on disk, 1 when one changed since
it was applied (reported with the way forward) or the database refused; status exits 0.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

import keel.cli.state_cmds  # noqa: F401  (registers `keel state`)
from keel.cli import app
from tests.runtime.driver import copy_reference

runner = CliRunner()
FILES = [
    "state/10_billing.sql",
    "state/20_home.sql",
    "state/30_coach.sql",
    "state/40_dutch.sql",
    "state/50_support.sql",
    "state/60_outreach.sql",
    "state/70_agency.sql",
    "state/80_largo.sql",
]


@pytest.fixture
def brain(tmp_path: Path) -> Path:
    return copy_reference(tmp_path / "brain")


def _keel(*args: str) -> Result:
    return runner.invoke(app, list(args))


def _json(*args: str, exit_code: int = 0) -> Any:
    result = _keel(*args, "--json")
    assert result.exit_code == exit_code, (result.exit_code, result.output)
    return json.loads(result.stdout)


def test_state_apply_twice_succeeds_and_the_second_runs_nothing(
    brain: Path, database_url: str
) -> None:
    first = _json("state", "apply", str(brain), "--db", database_url)
    assert first["applied"] == FILES
    second = _json("state", "apply", str(brain), "--db", database_url)
    assert second["applied"] == FILES
    assert (second["ran"], second["adopted"], second["rebuilt"]) == ([], [], [])
    assert [f["status"] for f in second["files"]] == ["applied"] * len(FILES)
    assert set(second["files"][0]) == {
        "path",
        "status",
        "sha256",
        "applied_sha256",
        "applied_at",
        "advice",
    }


def test_the_first_apply_on_a_server_runs_every_file(brain: Path, database_url: str) -> None:
    data = _json("state", "apply", str(brain), "--db", database_url)
    # A new SQLite file is complete when Keel opens it; a server's schema gets them now.
    assert data["ran"] == ([] if database_url.startswith("sqlite") else FILES)


def test_state_status_lists_every_file(brain: Path, database_url: str) -> None:
    _json("state", "apply", str(brain), "--db", database_url)
    (brain / "state" / "90_new.sql").write_text("CREATE TABLE later (x TEXT);\n", "utf-8")
    (brain / "state" / "20_home.sql").unlink()
    with (brain / "state" / "30_coach.sql").open("a", encoding="utf-8") as sql:
        sql.write("-- reviewed\n")
    data = _json("state", "status", str(brain), "--db", database_url)
    statuses = {f["path"]: f["status"] for f in data["files"]}
    assert statuses == {
        **dict.fromkeys(FILES, "applied"),
        "state/20_home.sql": "missing",
        "state/30_coach.sql": "changed",
        "state/90_new.sql": "new",
    }

    shown = _keel("state", "status", str(brain), "--db", database_url)
    assert shown.exit_code == 0, shown.output
    assert re.search(r"changed\s+state/30_coach\.sql\s+\d{4}-\d\d-\d\d \d\d:\d\d UTC", shown.stdout)
    assert re.search(r"new\s+state/90_new\.sql\s+-", shown.stdout)
    assert "state/20_home.sql: recorded as applied" in shown.stdout


def test_a_changed_file_exits_1_with_the_way_forward(brain: Path, sqlite_url: str) -> None:
    _json("state", "apply", str(brain), "--db", sqlite_url)
    home = brain / "state" / "20_home.sql"
    home.write_text(home.read_text("utf-8").replace("'oat milk'", "'soy milk'"), "utf-8")
    data = _json("state", "apply", str(brain), "--db", sqlite_url, exit_code=1)
    [changed] = [f for f in data["files"] if f["status"] == "changed"]
    assert changed["path"] == "state/20_home.sql"
    assert "new file such as state/20_home_2.sql" in changed["advice"]

    shown = _keel("state", "apply", str(brain), "--db", sqlite_url)
    assert shown.exit_code == 1
    assert "7 of 8 state file(s) applied" in shown.stdout
    assert "changed: state/20_home.sql — changed since it was applied" in shown.stdout


def test_rebuild_views_re_creates_a_changed_view(brain: Path, database_url: str) -> None:
    _json("state", "apply", str(brain), "--db", database_url)
    (brain / "state" / "90_views.sql").write_text(
        "CREATE VIEW open_items AS SELECT item FROM home_shopping_items WHERE done = 0;\n",
        "utf-8",
    )
    _json("state", "apply", str(brain), "--db", database_url)
    (brain / "state" / "90_views.sql").write_text(
        "CREATE VIEW open_items AS SELECT item, added_by FROM home_shopping_items;\n", "utf-8"
    )
    refused = _keel("state", "apply", str(brain), "--db", database_url)
    assert refused.exit_code == 1
    assert "--rebuild-views" in refused.stdout

    data = _json("state", "apply", str(brain), "--db", database_url, "--rebuild-views")
    assert data["rebuilt"] == ["state/90_views.sql"]
    assert [f["status"] for f in data["files"]] == ["applied"] * (len(FILES) + 1)
    shown = _keel("state", "apply", str(brain), "--db", database_url)
    assert shown.exit_code == 0, shown.output
    assert "9 of 9 state file(s) applied" in shown.stdout


def test_rebuild_views_refuses_a_file_with_tables(brain: Path, sqlite_url: str) -> None:
    _json("state", "apply", str(brain), "--db", sqlite_url)
    with (brain / "state" / "10_billing.sql").open("a", encoding="utf-8") as sql:
        sql.write("CREATE VIEW billing_all AS SELECT * FROM billing_invoices;\n")
    result = _keel("state", "apply", str(brain), "--db", sqlite_url, "--rebuild-views")
    assert result.exit_code == 1
    assert "error: state/10_billing.sql changed since it was applied and does more" in (
        " ".join(result.stderr.split())
    )
