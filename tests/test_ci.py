"""`.ci/run` prepares what the suite needs: its PostgreSQL part, run with stand-ins for the
server's commands, creates the database `test` only when the server lacks it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


def postgresql_part() -> str:
    """The lines of `.ci/run` from its PostgreSQL comment to the next part's."""
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    return "# PostgreSQL:" + script.split("# PostgreSQL:", 1)[1].split("\n# Chromium", 1)[0]


def stand_in(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text(f"#!/usr/bin/env bash\n{body}\n", encoding="utf-8")
    path.chmod(0o755)


@pytest.mark.parametrize(("has_test", "created"), [(False, True), (True, False)])
def test_the_database_test_is_created_when_the_server_lacks_it(
    tmp_path: Path, has_test: bool, created: bool
) -> None:
    calls = tmp_path / "calls"
    stand_in(tmp_path, "pg_isready", "exit 0")  # the server is up
    # psql -tA prints `1` for a database that is there, nothing for one that is not.
    stand_in(tmp_path, "psql", f'echo "psql $*" >> {calls}; {"echo 1" if has_test else ":"}')
    stand_in(tmp_path, "createdb", f'echo "createdb $*" >> {calls}')
    env = {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        ["bash", "-c", "set -euo pipefail\n" + postgresql_part()],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    said = calls.read_text(encoding="utf-8").splitlines()
    assert said[0].startswith("psql -h 127.0.0.1 -U postgres "), said
    assert "datname = 'test'" in said[0]
    assert said[1:] == (["createdb -h 127.0.0.1 -U postgres test"] if created else [])
