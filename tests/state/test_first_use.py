"""The first use of a SQLite file is one step: concurrent starters and a kill cannot split it.

Several processes that find no database all build one beside it; the first to publish wins
and the others open the winner's, so every one ends on one complete database and nobody's
writes are lost. A process killed while it builds leaves no database, only a temporary file
that the next start removes before it builds a complete one.
"""

from __future__ import annotations

import errno
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import text

from keel.brain import load_brain
from keel.errors import StoreError
from keel.state import sqlite_file
from keel.state.database import connect, default_url
from keel.state.files import state_status
from keel.state.scripts import views_defined
from keel.state.sqlite_file import make_whole, temporary
from keel.store import MIGRATIONS, Store
from tests.state import starters

EXAMPLE = Path(__file__).parents[2] / "examples" / "brain"
STARTERS = 6
TRIALS = 10
# A statement that never ends on its own: the builder is inside the apply until it is killed.
ENDLESS = (
    "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n)\nSELECT count(*) FROM n;\n"
)


def _reference(tmp_path: Path, name: str = "brain") -> Path:
    root = tmp_path / name
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".keel"))
    return root


def _temporaries(target: Path) -> list[str]:
    pattern = temporary(target)
    return sorted(n for n in os.listdir(target.parent) if pattern.match(n))


def _wait_for(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.005)


def test_six_processes_making_one_fresh_database_all_end_on_the_full_state(
    tmp_path: Path,
) -> None:
    root = _reference(tmp_path)
    brain = load_brain(root)
    urls = [f"sqlite:///{(tmp_path / f'trial{n}' / 'keel.db').as_posix()}" for n in range(TRIALS)]
    for trial, outcomes in enumerate(starters.together("start", root, STARTERS, urls)):
        target = tmp_path / f"trial{trial}" / "keel.db"
        assert [o for o in outcomes if o[1] != "ok"] == [], f"trial {trial}"
        assert [o[2] for o in outcomes] == [1] * STARTERS, f"trial {trial}"
        assert starters.completeness(target, brain) == [], f"trial {trial}"
        assert _temporaries(target) == [], f"trial {trial}"
        engine = connect(urls[trial], brain)
        with engine.connect() as conn:
            bound = conn.execute(text("SELECT count(*) FROM keel_bindings")).scalar_one()
        engine.dispose()
        # Every starter's write is in the one database they all ended on.
        assert bound == STARTERS, f"trial {trial}"


def test_a_kill_while_the_first_apply_runs_leaves_no_database_and_the_next_start_completes(
    tmp_path: Path,
) -> None:
    root = _reference(tmp_path)
    slow = root / "state" / "85_slow.sql"
    slow.write_text(ENDLESS, encoding="utf-8")
    target = root / ".keel" / "keel.db"
    with starters.opener(default_url(root), root) as process:
        _wait_for(lambda: target.parent.is_dir() and bool(_temporaries(target)), "the build")
        assert process.is_alive()
        process.kill()
        process.join(timeout=60)
        assert process.exitcode == -signal.SIGKILL
    assert not target.exists()
    assert _temporaries(target) != []

    slow.write_text("CREATE VIEW slow_done AS SELECT 1 AS done;\n", encoding="utf-8")
    brain = load_brain(root)
    connect(default_url(root), brain).dispose()
    assert starters.completeness(target, brain) == []
    assert "slow_done" in views_defined(brain.state_sql)
    # The killed builder's file is gone; the new one is in place.
    assert _temporaries(target) == []


def test_a_kill_at_any_moment_leaves_no_database_or_a_complete_one(tmp_path: Path) -> None:
    root = _reference(tmp_path)
    brain = load_brain(root)
    timing = random.Random(20261129)
    for trial in range(5):
        target = tmp_path / f"trial{trial}" / "keel.db"
        url = f"sqlite:///{target.as_posix()}"
        with starters.opener(url, root) as process:
            # Any moment will do: whatever it interrupts, the invariant below must hold.
            time.sleep(timing.uniform(0.0, 0.15))
            process.kill()
        if target.exists():
            assert starters.completeness(target, brain) == [], f"trial {trial}"
        connect(url, brain).dispose()
        assert starters.completeness(target, brain) == [], f"trial {trial}"
        assert _temporaries(target) == [], f"trial {trial}"


def test_a_temporary_file_of_a_live_builder_is_left_alone(tmp_path: Path) -> None:
    target = tmp_path / "keel.db"
    mine = tmp_path / temporary_name(target, os.getppid())
    mine.write_bytes(b"half built")
    brain = load_brain(_reference(tmp_path))
    connect(f"sqlite:///{target.as_posix()}", brain).dispose()
    assert mine.exists(), "its builder (this test's parent process) is still running"
    assert starters.completeness(target, brain) == []


def test_a_temporary_file_of_a_builder_that_is_gone_is_removed(tmp_path: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    target = tmp_path / "keel.db"
    stale = [tmp_path / (temporary_name(target, gone.pid) + end) for end in ("", "-journal")]
    for path in stale:
        path.write_bytes(b"half built")
    brain = load_brain(_reference(tmp_path))
    connect(f"sqlite:///{target.as_posix()}", brain).dispose()
    assert [path.exists() for path in stale] == [False, False]
    assert starters.completeness(target, brain) == []


def test_a_builder_killed_after_putting_its_file_in_place_leaves_nothing_behind(
    tmp_path: Path,
) -> None:
    # Killed between publishing the database and removing its own copy: the next open
    # (of a database that now exists, so nothing is built) removes the copy.
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    brain = load_brain(_reference(tmp_path))
    target = tmp_path / "keel.db"
    connect(f"sqlite:///{target.as_posix()}", brain).dispose()
    left = tmp_path / temporary_name(target, gone.pid)
    left.write_bytes(target.read_bytes())
    connect(f"sqlite:///{target.as_posix()}", brain).dispose()
    assert not left.exists()
    assert starters.completeness(target, brain) == []


def test_a_bad_state_file_leaves_neither_database_nor_temporary_file(tmp_path: Path) -> None:
    root = _reference(tmp_path)
    (root / "state" / "90_bad.sql").write_text("CREATE TABLE t (x);\nNOT SQL;\n", "utf-8")
    with pytest.raises(StoreError, match=r"state/90_bad\.sql:2: the database refused"):
        connect(default_url(root), load_brain(root))
    target = root / ".keel" / "keel.db"
    assert not target.exists()
    assert _temporaries(target) == []


@pytest.mark.parametrize(
    "refusal",
    [
        pytest.param(errno.EPERM, id="EPERM"),
        pytest.param(errno.EOPNOTSUPP, id="EOPNOTSUPP"),
    ],
)
def test_without_hard_links_the_database_is_renamed_into_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refusal: int
) -> None:
    def no_links(_src: object, _dst: object) -> None:
        raise OSError(refusal, os.strerror(refusal))

    monkeypatch.setattr(os, "link", no_links)
    brain = load_brain(_reference(tmp_path))
    target = tmp_path / "db" / "keel.db"
    connect(f"sqlite:///{target.as_posix()}", brain).dispose()
    assert starters.completeness(target, brain) == []
    assert _temporaries(target) == []


def test_a_database_another_process_published_first_is_the_one_used(tmp_path: Path) -> None:
    target = tmp_path / "keel.db"

    def fill(temp: Path) -> None:
        temp.write_bytes(b"mine")
        target.write_bytes(b"theirs")  # published by another starter meanwhile

    make_whole(target, fill, where="test")
    assert target.read_bytes() == b"theirs"
    assert _temporaries(target) == []


def test_a_new_database_opens_migrated_with_its_state_recorded(tmp_path: Path) -> None:
    brain = load_brain(_reference(tmp_path))
    for url in (f"sqlite:///{(tmp_path / 'new.db').as_posix()}", "sqlite://"):
        engine = connect(url, brain)
        assert Store(engine).migrate() == ()
        assert Store(engine).applied() == tuple(name for name, _ in MIGRATIONS)
        files = state_status(engine, brain.state_sql)
        assert [(f.path, f.status) for f in files] == [(f.path, "applied") for f in brain.state_sql]
        engine.dispose()


def temporary_name(target: Path, pid: int) -> str:
    """The name a builder with this process id on this host gives its temporary file."""
    host = sqlite_file._host()
    return f".{target.name}.{host}.{pid}.0123abcd.new"
