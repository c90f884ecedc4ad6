"""The runs facade's own calls that no door exercises on its way to a run: whether runs can
live on a database, and which runtime this process launched on an engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from keel.errors import UsageError
from keel.runs.service import check_database, hosted
from keel.runtime.engine import Engine
from tests.runs.brains import RUNS_BRAIN
from tests.runs.conftest import Runs, write_files


def test_runs_need_a_database_that_outlives_the_process(tmp_path: Path) -> None:
    brain = write_files(tmp_path / "brain", RUNS_BRAIN)
    in_memory = Engine(brain, "sqlite://", watch=False)
    on_file = Engine(brain, f"sqlite:///{(tmp_path / 'keel.db').as_posix()}", watch=False)
    try:
        with pytest.raises(UsageError, match="is in memory"):
            check_database(in_memory)
        check_database(on_file)
    finally:
        in_memory.close()
        on_file.close()


def test_hosted_is_the_runtime_launched_on_that_engine_only(runs: Runs, tmp_path: Path) -> None:
    assert hosted(runs.engine) is runs.runtime
    other = Engine(runs.brain, f"sqlite:///{(tmp_path / 'other.db').as_posix()}", watch=False)
    try:
        assert hosted(other) is None
    finally:
        other.close()
