"""The `/v1` routes over runs and approval cards: against the in-memory backend, and the
build without runs (501 on every route)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from keel.web.app import create_app
from keel.web.runs import NOT_BUILT, NoRuns
from tests.web.conftest import Served


def call(client: TestClient, method: str, path: str, body: Any = None, status: int = 200) -> Any:
    answer = client.request(method, path, json=body)
    assert answer.status_code == status, (answer.status_code, answer.text)
    return answer.json()


def test_the_runs_are_listed_and_read(served: Served) -> None:
    listed = call(served.client, "GET", "/v1/runs")["runs"]
    assert [r["id"] for r in listed] == ["run-1"]
    run = call(served.client, "GET", "/v1/runs/run-1")
    assert run["run"] == "hook:ticket-opened"
    assert [s["name"] for s in run["steps"]] == ["prepare", "refund"]
    assert run["cards"][0]["status"] == "pending"


def test_a_heartbeat_starts_and_a_hook_is_sent_to_events(served: Served) -> None:
    started = call(served.client, "POST", "/v1/runs", {"run": "heartbeat:evening-film"})
    assert started["run"] == "heartbeat:evening-film"
    assert started["status"] == "pending"
    assert call(served.client, "GET", f"/v1/runs/{started['id']}")["id"] == started["id"]
    hook = call(served.client, "POST", "/v1/runs", {"run": "hook:skip"}, 422)
    assert "POST /v1/events/" in hook["detail"]


def test_an_event_fires_the_hooks_that_listen(served: Served) -> None:
    body = {
        "payload": {"ticket": "T-481"},
        "bot": "desk",
        "chat": "tg:chat:-1003000000001",
        "model": "none",
        "event_id": "evt-481",
    }
    fired = call(served.client, "POST", "/v1/events/ticket.opened", body)
    assert fired["event"] == "ticket.opened"
    assert [r["run"] for r in fired["runs"]] == ["hook:ticket-opened"]
    event, payload, where, model, event_id = served.runs.fired[0]
    assert (event, dict(payload)) == ("ticket.opened", {"ticket": "T-481"})
    assert (model, event_id) == ("none", "evt-481")
    assert (where.bot, where.chat, where.thread) == ("desk", "tg:chat:-1003000000001", None)
    # An event no hook listens to is refused, as `keel fire` refuses it: nothing starts.
    refused = call(served.client, "POST", "/v1/events/ticket.opend", {}, status=422)
    assert "no hook listens to 'ticket.opend'" in str(refused)
    assert "ticket.opened" in str(refused)  # the event it is near
    assert len(served.runs.fired) == 1


def test_a_card_is_approved_once(served: Served) -> None:
    assert [c["id"] for c in call(served.client, "GET", "/v1/approvals")["cards"]] == ["card-1"]
    body = {"decision": "approve", "by": "maria"}
    decided = call(served.client, "POST", "/v1/approvals/card-1", body)
    assert decided["status"] == "approved"
    assert decided["decided_by"] == "maria"
    again = call(served.client, "POST", "/v1/approvals/card-1", {"decision": "deny"}, 409)
    assert again == {"refused": "card card-1 was approved already"}
    assert call(served.client, "GET", "/v1/approvals")["cards"] == []
    missing = call(served.client, "POST", "/v1/approvals/card-9", {"decision": "deny"}, 404)
    assert "no approval card 'card-9'" in missing["detail"]


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        pytest.param("/v1/runs", {"run": "nightly"}, "run", id="run-without-kind"),
        pytest.param("/v1/runs", {}, "run", id="run-missing"),
        pytest.param("/v1/approvals/card-1", {"decision": "maybe"}, "decision", id="decision"),
        pytest.param("/v1/events/x", {"payload": []}, "payload", id="payload-not-object"),
    ],
)
def test_a_bad_runs_body_is_422(served: Served, path: str, body: Any, field: str) -> None:
    detail = call(served.client, "POST", path, body, 422)["detail"]
    assert any(field in problem["loc"] for problem in detail), detail


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        pytest.param("GET", "/v1/runs", None, id="list"),
        pytest.param("POST", "/v1/runs", {"run": "heartbeat:evening-film"}, id="start"),
        pytest.param("GET", "/v1/runs/run-1", None, id="show"),
        pytest.param("POST", "/v1/events/ticket.opened", {}, id="event"),
        pytest.param("GET", "/v1/approvals", None, id="cards"),
        pytest.param("POST", "/v1/approvals/card-1", {"decision": "approve"}, id="decide"),
    ],
)
def test_a_build_without_runs_answers_501(
    served: Served, method: str, path: str, body: Any
) -> None:
    served.service.runs = NoRuns()
    assert call(served.client, method, path, body, 501) == {"detail": NOT_BUILT}


def test_a_database_that_cannot_be_reached_is_503(tmp_path: Path) -> None:
    from keel.runtime.engine import Engine
    from keel.web.service import Service
    from tests.runtime.driver import copy_reference

    brain = copy_reference(tmp_path / "brain")
    engine = Engine(brain, "postgresql+psycopg://postgres@127.0.0.1:1/none", watch=False)
    with TestClient(create_app(Service(engine))) as client:
        answer = call(
            client, "POST", "/v1/turns", {"bot": "nova", "chat": "c", "role": "coach"}, 503
        )
        assert "cannot" in answer["detail"]
        assert "127.0.0.1:1" in answer["detail"]
        assert call(client, "GET", "/healthz")["ok"] is True
    engine.close()


@pytest.mark.parametrize(
    ("model", "said"),
    [
        pytest.param("scripted:/etc/hostname", "outside the brain", id="a-file-elsewhere"),
        pytest.param("scripted:../../x.json", "outside the brain", id="a-file-above"),
        pytest.param(
            "openai-compatible:m@http://169.254.169.254/v1", "another OpenAI", id="a-server"
        ),
        pytest.param("gpt-5", "not a model spec", id="not-a-spec"),
    ],
)
def test_a_run_may_not_pick_a_model_that_reads_or_calls_outside(
    served: Served, model: str, said: str
) -> None:
    for path, body in (
        ("/v1/runs", {"run": "heartbeat:evening-film", "model": model}),
        ("/v1/events/ticket.opened", {"model": model}),
    ):
        refused = call(served.client, "POST", path, body, 422)
        assert said in refused["detail"]
    assert served.runs.fired == []


def test_a_run_may_pick_a_provider_none_or_a_script_in_the_brain(served: Served) -> None:
    script = served.brain / "scripts" / "film.json"
    script.parent.mkdir()
    script.write_text('[{"text": "Tonight: Whiplash."}]', encoding="utf-8")
    for model, kept in (
        ("none", "none"),
        ("anthropic:claude-x", "anthropic:claude-x"),
        ("scripted:scripts/film.json", f"scripted:{script.resolve()}"),
    ):
        call(served.client, "POST", "/v1/events/ticket.opened", {"model": model})
        assert served.runs.fired[-1][3] == kept
