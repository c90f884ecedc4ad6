"""The seed: played into a new database once, never again, and never into one with turns.

Its turns are played as the service is built; its runs start once a served app's runs
worker is up. Those are tested on a served copy of the reference brain, launched once per
module and database (DBOS is a process singleton; see tests/web/test_dbos_runs.py), whose
waiting run is decided before the module ends so no workflow thread is left.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from keel.errors import ContentError
from keel.runtime.engine import Engine
from keel.web.dbos_runs import NO_WORKER, NOT_STARTED, DurableRuns
from keel.web.seed import Claimed, Seed, play_runs, read_seed, seed_once
from keel.web.service import Seeded, Service
from keel.web.serving import build_service
from tests.databases import fresh_schema
from tests.runs.conftest import drop_dbos_schema
from tests.runtime.driver import REFERENCE, copy_reference
from tests.web.conftest import prepared_brain

NOW = datetime(2026, 11, 29, 19, 0, tzinfo=UTC)


def test_the_reference_seed_plays_every_worked_example(
    tmp_path: Path, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    seed = read_seed(REFERENCE)
    assert seed is not None
    brain = prepared_brain(tmp_path, database_url)
    with Engine(brain, database_url, watch=False) as engine, caplog.at_level(logging.INFO):
        claimed = seed_once(engine, now=NOW)
        seeded = claimed.seeded
        assert seeded.played == len(seed.numbered(runs=False))
        # Its runs wait for a runs worker, which only a served app hosts (tests below).
        later = len(seed.numbered(runs=True))
        assert later >= 4
        # Counted out of every step, as the dashboard counts once the runs have started.
        assert seeded.note == (
            f"played {seeded.played} of {len(seed.steps)} steps; "
            f"{later} run steps wait for the runs worker"
        )
        assert claimed.seed is not None
        # Nothing warned of: the refusals the seed shows on purpose are said as such.
        assert [r.message for r in caplog.records if r.levelno >= logging.WARNING] == []
        expected = [r.getMessage() for r in caplog.records if "as the seed expects" in r.message]
        assert len(expected) == 3, expected
        turns = engine.turns(limit=1000)
        assert len(turns) == sum(step.turn is not None for step in seed.steps)
        assert max(t.request.now for t in turns) == NOW
        # The dashboard's first page has turns with stubs and with refusals to show.
        assert any(t.stubbed for t in turns)
        assert any(t.refused for t in turns)
        assert {t.role for t in turns} == set(engine.brain.roles)
        # Played once: a second start (or a second server) plays nothing.
        again = seed_once(engine, now=NOW)
        assert (again.seeded.played, again.seed) == (0, None)
        assert "was seeded on 2026-11-29" in again.seeded.note
        assert len(engine.turns(limit=1000)) == len(turns)


def test_a_database_that_holds_turns_is_not_seeded(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    url = f"sqlite:///{(tmp_path / 'k.db').as_posix()}"
    with Engine(brain, url, watch=False) as engine:
        from keel.link.values import Conversation, TurnRequest

        engine.prepare(
            TurnRequest(conversation=Conversation(bot="nova", chat="tg:user:1"), now=NOW)
        )
        seeded = seed_once(engine, now=NOW).seeded
        assert (seeded.played, seeded.note) == (0, "not played: the database already held turns")
        assert len(engine.turns()) == 1
        assert "already held turns" in seed_once(engine, now=NOW).seeded.note


def test_a_brain_without_a_seed_plays_nothing(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    (brain / "seed.yaml").unlink()
    with Engine(brain, f"sqlite:///{tmp_path / 'k.db'}", watch=False) as engine:
        assert seed_once(engine).seeded.note == "no seed.yaml in the brain"
        assert engine.turns() == ()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "version: 2\nsteps: []\n", r"seed.yaml:1: version: Input should be 1", id="version"
        ),
        pytest.param(
            "version: 1\nsteps:\n  - turn: {bot: nova}\n    bind: {context: x, chat: y}\n",
            r"seed.yaml:3: steps.0: .*exactly one of",
            id="two-kinds",
        ),
        pytest.param(
            "version: 1\nsteps:\n  - turn: {chatt: x}\n",
            r"seed.yaml:3: steps.0.turn.chatt: Extra inputs",
            id="unknown-field",
        ),
        pytest.param("version: 1\nsteps: [\n", r"seed.yaml", id="broken-yaml"),
        pytest.param(
            "version: 1\nsteps:\n  - turn: {bot: nova}\n  - run: {run: 'hook:skip'}\n",
            r"seed.yaml:4: steps.1.run.run: a hook runs when its event fires — write a fire:",
            id="hook-as-run",
        ),
        pytest.param(
            "version: 1\nsteps:\n  - run:\n      run: 'heartbeat:invoice-chase'\n"
            "      model: 'scripted:../elsewhere.json'\n",
            r"seed.yaml:5: steps.0.run.model: model 'scripted:../elsewhere.json': the scripted "
            r"file is outside the brain",
            id="script-outside",
        ),
        pytest.param(
            "version: 1\nsteps:\n  - fire: {event: x, model: 'scripted:/srv/elsewhere.json'}\n",
            r"seed.yaml:3: steps.0.fire.model: model 'scripted:/srv/elsewhere.json': the "
            r"scripted file is outside",
            id="script-absolute",
        ),
        pytest.param(
            "version: 1\nsteps:\n  - fire: {event: x, model: gpt}\n",
            r"seed.yaml:3: steps.0.fire.model: model 'gpt': not a model spec",
            id="model-spec",
        ),
        pytest.param(
            "version: 1\nsteps:\n  - fire: {payload: {}}\n",
            r"seed.yaml:3: steps.0.fire.event: Field required",
            id="fire-without-event",
        ),
    ],
)
def test_a_broken_seed_names_its_line_and_is_not_played(
    tmp_path: Path, text: str, message: str
) -> None:
    brain = copy_reference(tmp_path / "brain")
    (brain / "seed.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(ContentError, match=message):
        read_seed(brain)
    with Engine(brain, f"sqlite:///{tmp_path / 'k.db'}", watch=False) as engine:
        assert seed_once(engine).seeded.note.startswith("not played: seed.yaml")
        assert engine.turns() == ()


def test_a_step_the_brain_refuses_is_skipped_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    brain = copy_reference(tmp_path / "brain")
    (brain / "seed.yaml").write_text(
        "version: 1\nsteps:\n"
        "  - turn: {bot: nova, chat: 'tg:user:1', role: nosuch}\n"
        "  - send: {bot: nova, chat: 'tg:user:1', text: hi, run: 'heartbeat:evening-film'}\n"
        "  - send: {bot: nova, chat: 'tg:user:1', text: ok, refused: true}\n"
        "  - turn: {bot: nova, chat: 'tg:user:1', input: hello, answer: hi}\n"
        "  - turn: {bot: nova, chat: 'tg:user:1', input: again, refused: true}\n",
        encoding="utf-8",
    )
    told: list[tuple[int, int]] = []
    with Engine(brain, f"sqlite:///{tmp_path / 'k.db'}", watch=False) as engine:
        seeded = seed_once(engine, now=NOW, progress=lambda *n: told.append(n)).seeded
        assert seeded.played == 3
        assert told == [(1, 5), (2, 5), (3, 5), (4, 5), (5, 5)]
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert any("step 1 skipped: no role 'nosuch'" in w for w in warnings), warnings
        assert any("step 2 skipped" in w and "keyed" in w for w in warnings), warnings
        assert any("step 3 was sent, but the seed expects it refused" in w for w in warnings)
        assert any("step 5 refused no link, but the seed expects a refusal" in w for w in warnings)
        assert [m.text for m in engine.history("tg:user:1")] == ["ok", "hello", "hi", "again"]


# -- run steps: started once the opened app's runs worker is up ------------------------------

BOOKS = "tg:chat:-1004000000001"
FORUM = "tg:chat:-1003000000001"
ENDED = ("done", "failed")


def scripted(brain: Path, name: str) -> list[dict[str, Any]]:
    """The steps of one of the seed's scripted models."""
    steps: list[dict[str, Any]] = json.loads((brain / "seed" / name).read_text(encoding="utf-8"))
    return steps


@dataclass(frozen=True)
class Opened:
    """The reference brain opened on a new database, its worker hosted, its seed played."""

    client: TestClient
    service: Service
    brain: Path
    db: str
    seed: Seed

    def call(self, method: str, path: str, body: Any = None, status: int = 200) -> Any:
        answer = self.client.request(method, path, json=body)
        assert answer.status_code == status, (answer.status_code, answer.text)
        return answer.json()

    def run_ids(self) -> list[str]:
        return sorted(r["id"] for r in self.call("GET", "/v1/runs", None)["runs"])

    def settled(self, run_id: str, statuses: tuple[str, ...]) -> dict[str, Any]:
        """The run once its status is one of `statuses`; fails, not hangs, when it never is."""
        deadline = time.monotonic() + 30
        while (run := self.call("GET", f"/v1/runs/{run_id}"))["status"] not in statuses:
            assert time.monotonic() < deadline, run
            time.sleep(0.05)
        found: dict[str, Any] = run
        return found

    @property
    def runs(self) -> DurableRuns:
        runs = self.service.runs
        assert isinstance(runs, DurableRuns)
        return runs

    def seeded_id(self, number: int) -> str:
        """The id the seed gave the run of its step `number` (the event it fires starts one
        hook, ticket-opened)."""
        step = self.seed.steps[number - 1]
        tag = f"seed-{self.seed.digest[:8]}-{number}"
        if step.fire is not None:
            return f"hook-ticket-opened-{tag}"
        assert step.run is not None
        return f"{step.run.run.replace(':', '-')}-{tag}"


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
    ],
)
def opened(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Opened]:
    folder = tmp_path_factory.mktemp("seeded-runs")
    if request.param == "sqlite":
        yield from _serving(folder, f"sqlite:///{(folder / 'keel.db').as_posix()}")
        return
    with fresh_schema() as url:
        text = url.render_as_string(hide_password=False)
        try:
            yield from _serving(folder, text)
        finally:
            drop_dbos_schema(text)


def _serving(folder: Path, db: str) -> Iterator[Opened]:
    brain = prepared_brain(folder, db)
    seed = read_seed(brain)
    assert seed is not None
    svc, app = build_service(brain, db, model="none", worker=True, env={})
    try:
        with TestClient(app) as client:
            opened = Opened(client=client, service=svc, brain=brain, db=db, seed=seed)
            try:
                yield opened
            finally:  # a run left waiting would hold a workflow thread past the module
                for card in opened.call("GET", "/v1/approvals")["cards"]:
                    path = f"/v1/approvals/{quote(card['id'], safe='')}"
                    opened.call("POST", path, {"decision": "deny"})
                    opened.settled(card["run_id"], ENDED)
    finally:
        svc.engine.close()
    assert isinstance(svc.runs, DurableRuns)
    assert svc.runs.left_running == 0  # no workflow thread is left behind


def test_a_new_database_opens_on_the_seeds_runs_done_and_one_waiting_on_a_card(
    opened: Opened,
) -> None:
    numbers = [n for n, _ in opened.seed.numbered(runs=True)]
    total = len(opened.seed.steps)
    assert opened.service.seeded == Seeded(played=total, note=f"played {total} of {total} steps")
    # The System page counts the steps the seed's note counts.
    assert f"The reference seed played {total} steps" in opened.client.get("/").text
    runs = {n: opened.settled(opened.seeded_id(n), ("done", "failed", "waiting")) for n in numbers}
    assert {runs[n]["run"]: runs[n]["status"] for n in numbers} == {
        "heartbeat:invoice-chase": "done",
        "hook:ticket-opened": "done",
        "scenario:knm-practice": "done",
        "scenario:first-touch": "waiting",
    }
    assert all(run["error"] is None for run in runs.values())
    chase, ticket, practice, touch = (runs[n] for n in numbers)
    # Each answered with its scripted model from the brain's seed/ folder, and sent.
    [draft] = scripted(opened.brain, "invoice-chase.json")
    assert [(m["chat"], m["text"]) for m in chase["messages"]] == [(BOOKS, draft["text"])]
    assert chase["messages"][0]["origin"]["run"] == "heartbeat:invoice-chase"
    # The hook opened a forum topic for the ticket (its thread id is Keel's until a bot
    # serving the forum opens it in Telegram), bound it, and said hello there.
    [(chat, topic)] = [(m["chat"], m["thread"]) for m in ticket["messages"]]
    assert (chat, topic.startswith("topic-")) == (FORUM, True)
    bound = opened.call("GET", f"/v1/bindings?chat={quote(FORUM)}")["bindings"]
    assert ("ticket", "T-480", topic) in [(b["context"], b["entity"], b["thread"]) for b in bound]
    assert [m["chat"] for m in practice["messages"]] == ["tg:user:2"]
    # The first touch waits for the owner: the runs page shows its card to decide.
    [card] = touch["cards"]
    assert (card["status"], card["tool"]) == ("pending", "request_approval")
    assert [c["id"] for c in opened.call("GET", "/v1/approvals")["cards"]] == [card["id"]]
    page = opened.client.get("/runs").text
    assert f'action="/runs/cards/{quote(card["id"], safe="")}"' in page
    assert f'href="/runs/{chase["id"]}"' in page


def test_the_seeds_runs_are_played_once_and_playing_them_again_starts_nothing_new(
    opened: Opened, caplog: pytest.LogCaptureFixture
) -> None:
    numbers = [n for n, _ in opened.seed.numbered(runs=True)]
    before = opened.run_ids()
    assert set(map(opened.seeded_id, numbers)) <= set(before)
    # A second server on the database plays nothing: the seed is claimed, runs included.
    svc, _ = build_service(opened.brain, opened.db, model="none", worker=False, env={})
    svc.engine.close()
    assert svc.seeded.played == 0
    assert svc.seeded.note.startswith("not played: the database was seeded on")
    # Played again anyway, its runs keep their ids: each is answered as it stands.
    claimed = Claimed(seeded=Seeded(), seed=opened.seed)
    with caplog.at_level(logging.INFO, logger="keel.seed"):
        again = play_runs(opened.runs, claimed)
    assert again.played == len(numbers)
    assert opened.run_ids() == before
    for number in numbers:
        assert any(f"run {opened.seeded_id(number)} is " in r.getMessage() for r in caplog.records)


def test_a_run_step_that_cannot_start_is_logged_and_skipped(
    opened: Opened, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "knm.json").write_text('[{"text": "Vraag 2"}]', encoding="utf-8")
    (tmp_path / "seed.yaml").write_text(
        "version: 1\nsteps:\n"
        "  - run: {run: 'heartbeat:nope'}\n"
        "  - run: {run: 'heartbeat:invoice-chase', model: 'scripted:missing.json'}\n"
        "  - fire: {event: nobody.listens}\n"
        "  - run: {run: 'scenario:knm-practice', vars: {chat: 'tg:user:29'},"
        " model: 'scripted:knm.json'}\n",
        encoding="utf-8",
    )
    seed = read_seed(tmp_path)
    assert seed is not None
    claimed = Claimed(seeded=Seeded(note="played 0 of 0 steps"), seed=seed)
    with caplog.at_level(logging.INFO, logger="keel.seed"):
        seeded = play_runs(opened.runs, claimed)
    assert seeded == Seeded(played=1, note="played 1 of 4 steps")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("step 1 skipped: no heartbeat 'nope'" in w for w in warnings), warnings
    assert any("step 2 skipped" in w and "the scripted model cannot be read" in w for w in warnings)
    assert "seed step 3 started nothing: no hook listens to 'nobody.listens'" in warnings
    run = opened.settled(f"scenario-knm-practice-seed-{seed.digest[:8]}-4", ENDED)
    assert [(m["chat"], m["text"]) for m in run["messages"]] == [("tg:user:29", "Vraag 2")]


@pytest.mark.parametrize(
    ("db", "worker", "said"),
    [
        pytest.param(None, False, NO_WORKER, id="no-worker"),
        pytest.param("sqlite://", True, "is in memory", id="memory"),
    ],
)
def test_a_server_without_a_worker_skips_the_run_steps_with_one_note(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, db: str | None, worker: bool, said: str
) -> None:
    brain = copy_reference(tmp_path / "brain")
    url = db or f"sqlite:///{(tmp_path / 'k.db').as_posix()}"
    with caplog.at_level(logging.INFO, logger="keel.seed"):
        svc, app = build_service(brain, url, worker=worker, env={})
        with TestClient(app) as client:  # its start-up starts no run
            assert client.get("/healthz").json()["runs"] is False
    svc.engine.close()
    seed = read_seed(brain)
    assert seed is not None
    played, later = len(seed.numbered(runs=False)), len(seed.numbered(runs=True))
    assert svc.seeded.played == played
    total = len(seed.steps)
    assert svc.seeded.note.startswith(f"played {played} of {total} steps; {later} run steps ")
    assert said in svc.seeded.note
    notes = [r.getMessage() for r in caplog.records if "run step" in r.getMessage()]
    assert len(notes) == 1, notes
    assert notes[0].startswith(f"seed.yaml: {later} run steps not played: ")


def test_run_steps_played_before_the_worker_is_up_are_skipped_with_why(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    url = f"sqlite:///{(tmp_path / 'k.db').as_posix()}"
    svc, _ = build_service(brain, url, worker=True, env={})  # its lifespan never runs
    svc.engine.close()
    seed = read_seed(brain)
    assert seed is not None
    assert svc.seeded.note.endswith("run steps wait for the runs worker")
    assert isinstance(svc.runs, DurableRuns)
    seeded = play_runs(svc.runs, Claimed(seeded=svc.seeded, seed=seed))
    assert seeded.played == svc.seeded.played
    assert seeded.note.endswith(f"skipped: {NOT_STARTED}")
