"""Fixtures of the service's tests: a copy of the reference brain served on each database.

`served` builds the service as `keel serve` does (`build_service`), without the seed and
without a model, with the in-memory runs backend, and hands back a test client on it.
`seeded_client` is the same with the reference seed played (SQLite only: the browser and
fuzz tests read it, they do not test the database).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from keel.runtime.engine import Engine
from keel.web.runs import RunsBackend
from keel.web.service import Service
from keel.web.serving import build_service
from tests.runtime.driver import copy_reference
from tests.web.memory_runs import MemoryRuns


@dataclass(frozen=True)
class Served:
    client: TestClient
    service: Service
    brain: Path
    url: str
    runs: MemoryRuns


def wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    """Poll until `condition` holds (the brain's watcher reports an edit within ~0.1 s);
    fail, not hang, when it never does."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"still not true after {seconds} s")
        time.sleep(0.01)


def prepared_brain(tmp_path: Path, url: str) -> Path:
    """A copy of the reference brain whose state is in `url`'s database."""
    brain = copy_reference(tmp_path / "brain")
    if not url.startswith("sqlite"):
        with Engine(brain, url, watch=False) as engine:
            engine.apply_state()
    return brain


@pytest.fixture
def served(tmp_path: Path, database_url: str) -> Iterator[Served]:
    brain = prepared_brain(tmp_path, database_url)
    runs = MemoryRuns()
    svc, app = build_service(brain, database_url, seed=False, runs=runs, env={})
    with TestClient(app) as client:
        yield Served(client=client, service=svc, brain=brain, url=database_url, runs=runs)
    svc.engine.close()


def serve_copy(
    tmp_path: Path, *, runs: RunsBackend | None = None, token: str | None = None, seed: bool = True
) -> tuple[Service, TestClient]:
    """The reference brain on a new SQLite file, seeded as on a first start."""
    brain = copy_reference(tmp_path / "seeded")
    url = f"sqlite:///{(tmp_path / 'seeded.db').as_posix()}"
    svc, app = build_service(brain, url, seed=seed, runs=runs, token=token, env={})
    return svc, TestClient(app)
