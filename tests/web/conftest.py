"""Fixtures of the service's tests: a copy of the reference brain served on each database.

`served` builds the service as `keel serve` does (`build_service`), without the seed and
without a model, with the in-memory runs backend, and hands back a test client on it.
`seeded_client` is the same with the reference seed played (SQLite only: the browser and
fuzz tests read it, they do not test the database).

`hosted` serves the runs test brain (`tests.runs.brains`) with the real runs worker, once
per module and database: DBOS is a process singleton, and launching it costs more than
most tests it serves. The app's lifespan starts the worker when the test client is
entered and stops it — DBOS with it — when the module is done, so another module's
runtime can launch in the same process afterwards. Every run that waits for a card is
denied before the module ends, so no workflow thread is left.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from keel.runtime.engine import Engine
from keel.web.dbos_runs import DurableRuns
from keel.web.runs import RunsBackend
from keel.web.service import Service
from keel.web.serving import build_service
from tests.databases import fresh_schema
from tests.runs.brains import RUNS_BRAIN
from tests.runs.conftest import drop_dbos_schema, script, write_files
from tests.runtime.driver import copy_reference
from tests.web.memory_runs import MemoryRuns

if TYPE_CHECKING:
    from playwright.sync_api import Browser

    from tests.web.browsing import Live

SETTLED = ("done", "failed", "waiting")
ENDED = ("done", "failed")


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


@dataclass(frozen=True)
class Hosted:
    """The test brain served with its worker hosted, on one database."""

    client: TestClient
    service: Service
    brain: Path
    db: str
    folder: Path

    def call(self, method: str, path: str, body: Any = None, status: int = 200) -> Any:
        answer = self.client.request(method, path, json=body)
        assert answer.status_code == status, (answer.status_code, answer.text)
        return answer.json()

    def script(self, name: str, steps: list[dict[str, Any]]) -> str:
        """A scripted model in the brain's folder: a run picked over HTTP reads none
        elsewhere (`chosen_by_caller`)."""
        (self.brain / "scripts").mkdir(exist_ok=True)
        return script(self.brain / "scripts", name, steps)

    def settled(self, run_id: str, statuses: tuple[str, ...] = SETTLED) -> dict[str, Any]:
        """The run once its status is one of `statuses`; fails, not hangs, when it never is."""
        deadline = time.monotonic() + 60
        while True:
            run: dict[str, Any] = self.call("GET", f"/v1/runs/{run_id}")
            if run["status"] in statuses:
                return run
            if time.monotonic() > deadline:
                pytest.fail(f"run {run_id} is still {run['status']}: {run}")
            time.sleep(0.05)

    def deny_pending(self) -> None:
        """Deny every card still pending and let its run end (a run left waiting would
        hold a workflow thread the process waits for at exit)."""
        for card in self.call("GET", "/v1/approvals")["cards"]:
            self.call("POST", f"/v1/approvals/{quote(card['id'], safe='')}", {"decision": "deny"})
            self.settled(card["run_id"], ENDED)

    def page(self, path: str) -> str:
        answer = self.client.get(path)
        assert answer.status_code == 200, (answer.status_code, answer.text)
        return answer.text


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
    ],
)
def hosted(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Hosted]:
    folder = tmp_path_factory.mktemp("hosted")
    brain = write_files(folder / "brain", RUNS_BRAIN)
    if request.param == "sqlite":
        yield from _serving(brain, f"sqlite:///{(folder / 'keel.db').as_posix()}", folder)
        return
    with fresh_schema() as url:
        text = url.render_as_string(hide_password=False)
        try:
            yield from _serving(brain, text, folder)
        finally:
            drop_dbos_schema(text)


def _serving(brain: Path, db: str, folder: Path) -> Iterator[Hosted]:
    if not db.startswith("sqlite"):
        with Engine(brain, db, watch=False) as engine:
            engine.apply_state()
    svc, app = build_service(brain, db, model="none", seed=False, worker=True, env={})
    try:
        with TestClient(app) as client:
            assert svc.runs.unavailable() is None
            hosted = Hosted(client=client, service=svc, brain=brain, db=db, folder=folder)
            try:
                yield hosted
            finally:
                hosted.deny_pending()
    finally:
        svc.engine.close()
    assert isinstance(svc.runs, DurableRuns)
    assert svc.runs.left_running == 0  # no workflow thread is left behind


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    """The dashboard served on a free loopback port, for a browser (`tests.web.browsing`)."""
    from tests.web.browsing import serving

    with serving(tmp_path) as served:
        yield served


@pytest.fixture
def browser() -> Iterator[Browser]:
    """Headless Chromium, launched for the test and closed after it."""
    from tests.web.browsing import chromium

    with chromium() as launched:
        yield launched
