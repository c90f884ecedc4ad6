"""Building the service as `keel serve` does: the model it answers with, and its seed."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from keel.errors import UsageError
from keel.web import api
from keel.web.serving import build_service
from tests.runtime.driver import copy_reference
from tests.web.conftest import Served


def test_the_model_is_none_unless_a_provider_key_is_set(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    url = f"sqlite:///{(tmp_path / 'k.db').as_posix()}"
    svc, _ = build_service(brain, url, seed=False, env={})
    assert (svc.model, svc.model_spec) == (None, "none")
    svc.engine.close()
    keyed, _ = build_service(brain, url, seed=False, env={"OPENAI_API_KEY": "sk-test"})
    assert keyed.model is not None
    assert keyed.model_spec == "openai:any-model"
    keyed.engine.close()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param("gpt-5", r"not a model spec", id="no-provider"),
        pytest.param("anthropic:claude", r"need an API key: set ANTHROPIC_API_KEY", id="no-key"),
    ],
)
def test_a_model_that_cannot_be_built_is_a_usage_error(
    tmp_path: Path, spec: str, message: str
) -> None:
    brain = copy_reference(tmp_path / "brain")
    with pytest.raises(UsageError, match=message):
        build_service(brain, f"sqlite:///{tmp_path / 'k.db'}", model=spec, seed=False, env={})


def test_a_turn_is_answered_by_the_servers_model(tmp_path: Path) -> None:
    script = tmp_path / "model.json"
    steps = [
        {"tool_calls": [{"name": "context_open", "arguments": {"name": "policy"}}]},
        {"text": "Earrings cannot be returned."},
    ]
    script.write_text(json.dumps(steps), encoding="utf-8")
    brain = copy_reference(tmp_path / "brain")
    url = f"sqlite:///{(tmp_path / 'k.db').as_posix()}"
    svc, app = build_service(brain, url, model=f"scripted:{script}", seed=False, env={})
    with TestClient(app) as client:
        body = {"bot": "desk", "chat": "tg:user:42", "input": "Can I return earrings?"}
        answer = client.post("/v1/turns", json=body).json()
        assert answer["reply"] == "Earrings cannot be returned."
        assert answer["requests"] == 2
        history = client.get("/v1/history", params={"chat": "tg:user:42"}).json()["messages"]
        assert [m["speaker"] for m in history] == ["user", "assistant"]
        # A dry run asks no model.
        dry = client.post("/v1/turns", json=body | {"dry_run": True}).json()
        assert "reply" not in dry
        assert dry["id"] is None
    svc.engine.close()


def on_the_loop() -> bool:
    """Whether this code runs on the thread of a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def where_prepared(served: Served, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """For each turn the engine prepares from now on: whether it ran on the event loop."""
    seen: list[bool] = []
    prepare = served.service.engine.prepare

    def noted(*args: Any, **kwargs: Any) -> Any:
        seen.append(on_the_loop())
        return prepare(*args, **kwargs)

    monkeypatch.setattr(served.service.engine, "prepare", noted)
    return seen


def test_a_turn_is_prepared_on_the_event_loop_only_on_sqlite_with_no_model_waited_for(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    svc = served.service
    seen = where_prepared(served, monkeypatch)
    body = {"bot": "desk", "chat": "tg:user:42", "input": "Hello"}
    assert served.client.post("/v1/turns", json=body).status_code == 200
    sqlite = served.url.startswith("sqlite")
    assert seen == [sqlite]
    assert svc.prepares_on_loop(dry_run=False) is sqlite
    svc.model = object()  # type: ignore[assignment]  # a model answers: its call may take seconds
    assert svc.prepares_on_loop(dry_run=False) is False
    assert svc.prepares_on_loop(dry_run=True) is sqlite


def test_a_turn_waits_in_a_thread_while_the_database_is_held_elsewhere(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    svc = served.service
    seen = where_prepared(served, monkeypatch)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:  # a long call in a thread (a what-if, say) holds the database
        with svc.database():
            held.set()
            release.wait(10)

    answer = api.answer_turn

    def answered(*args: Any, **kwargs: Any) -> Any:
        release.set()  # the turn left the loop while the database was held: let it go on
        return answer(*args, **kwargs)

    # Released only once the turn has been handed on, however slow the machine: a timer
    # could fire before the request reached the service, and the turn find it free.
    monkeypatch.setattr(api, "answer_turn", answered)
    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(10)
    body = {"bot": "desk", "chat": "tg:user:43", "input": "Hello"}
    assert served.client.post("/v1/turns", json=body).status_code == 200
    holder.join()
    assert seen == [False]  # not on the event loop, which stayed free meanwhile
    assert served.client.post("/v1/turns", json=body).status_code == 200
    assert seen == [False, served.url.startswith("sqlite")]
