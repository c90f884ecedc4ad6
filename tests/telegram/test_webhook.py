"""`keel serve`'s Telegram webhooks: a signed update is answered like a polled one; a call
without the secret is 401 and changes nothing. `keel telegram --webhook` registers it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from keel.cli import app as cli
from keel.link.values import Conversation, TurnRequest
from keel.runtime.engine import Engine
from keel.web.serving import build_service
from tests.runtime.driver import copy_reference
from tests.telegram.double import TOKEN, BotAPIDouble, running_double
from tests.telegram.test_bot import message
from tests.web.memory_runs import MemoryRuns

SECRET = "s3cret-for-the-webhook"
HEADER = "X-Telegram-Bot-Api-Secret-Token"


@pytest.fixture
def double() -> Iterator[BotAPIDouble]:
    with running_double() as made:
        yield made


@pytest.fixture
def served(tmp_path: Path, double: BotAPIDouble) -> Iterator[tuple[TestClient, Engine]]:
    brain = copy_reference(tmp_path / "brain")
    model = tmp_path / "model.json"
    model.write_text(json.dumps([{"text": "It is on its way."}]), encoding="utf-8")
    url = f"sqlite:///{(tmp_path / 'k.db').as_posix()}"
    svc, app = build_service(
        brain,
        url,
        model=f"scripted:{model}",
        seed=False,
        runs=MemoryRuns(),
        env={"KEEL_TELEGRAM_TOKEN_DESK": TOKEN},
        telegram_secret=SECRET,
        telegram_api_url=double.url,
    )
    with TestClient(app) as client:
        yield client, svc.engine
    svc.engine.close()


def test_a_signed_update_is_answered_in_its_topic(
    served: tuple[TestClient, Engine], double: BotAPIDouble
) -> None:
    client, _ = served
    answer = client.post(
        "/telegram/desk", json=message(1, "where is my parcel?"), headers={HEADER: SECRET}
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["answered"] is True
    (sent,) = double.sent()
    assert (sent["text"], sent["message_thread_id"]) == ("It is on its way.", "12")
    assert sent["reply_parameters"]["message_id"] == 41


@pytest.mark.parametrize("secret", [None, "wrong"], ids=["missing", "wrong"])
def test_a_call_without_the_secret_is_refused_and_changes_nothing(
    served: tuple[TestClient, Engine], double: BotAPIDouble, secret: str | None
) -> None:
    client, engine = served
    headers: dict[str, Any] = {} if secret is None else {HEADER: secret}
    answer = client.post("/telegram/desk", json=message(1, "where is my parcel?"), headers=headers)
    assert answer.status_code == 401
    assert HEADER in answer.json()["error"]
    assert double.calls == []
    with engine.store.transaction() as tx:
        assert tx.update_handled("desk", 1) is False
        assert tx.journals() == ()


def test_a_server_without_a_secret_has_no_webhooks(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    url = f"sqlite:///{(tmp_path / 'k.db').as_posix()}"
    svc, app = build_service(brain, url, seed=False, runs=MemoryRuns(), env={})
    with TestClient(app) as client:
        answer = client.post("/telegram/desk", json=message(1, "hi"), headers={HEADER: "x"})
    svc.engine.close()
    assert answer.status_code == 404
    assert "--telegram-secret" in answer.json()["error"]


def test_keel_telegram_webhook_registers_the_url_with_the_secret(
    tmp_path: Path, double: BotAPIDouble, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy_reference(tmp_path / "brain")
    monkeypatch.setenv("KEEL_TELEGRAM_TOKEN", TOKEN)
    monkeypatch.setenv("KEEL_TELEGRAM_SECRET", SECRET)
    hook = "https://keel.example/telegram/desk"
    result = CliRunner().invoke(
        cli,
        [
            *("telegram", str(tmp_path / "brain"), "--bot", "desk"),
            *("--api-url", double.url, "--webhook", hook),
        ],
    )
    assert result.exit_code == 0, result.output
    (registered,) = double.sent("setWebhook")
    assert (registered["url"], registered["secret_token"]) == (hook, SECRET)
    assert double.sent("getUpdates") == []


def test_a_webhook_call_opens_the_topics_a_run_recorded_and_maps_their_messages(
    served: tuple[TestClient, Engine], double: BotAPIDouble
) -> None:
    client, engine = served
    forum = "tg:chat:-1003000000001"
    request = TurnRequest(
        conversation=Conversation(bot="desk", chat=forum), now=datetime.now(UTC), role="support"
    )
    bind = {"context": "ticket", "entity": "T-480"}
    said = engine.call(request, "topic_open", {"title": "T-480 · Wrong size", "bind": bind})
    thread = said.split()[2]
    first = client.post("/telegram/desk", json=message(1, "hello"), headers={HEADER: SECRET})
    assert first.status_code == 200, first.text
    [made] = double.sent("createForumTopic")
    assert made["name"] == "T-480 · Wrong size"
    with engine.store.transaction() as tx:
        topic = tx.topic("desk", forum, thread)
    assert topic is not None
    assert topic.state == "opened"
    # A message in the topic is a turn of Keel's thread, carrying the ticket bound to it.
    update = message(2, "@desk_bot any news?", message_thread_id=int(str(topic.surface_thread_id)))
    answer = client.post("/telegram/desk", json=update, headers={HEADER: SECRET})
    assert answer.json()["answered"] is True
    turn = engine.context(forum, bot="desk", thread=thread)
    assert turn is not None
    assert turn.journal.conversation.thread == thread
    assert '"entity": "T-480"' in json.dumps(turn.to_json())
    sent = double.sent()[-1]
    assert sent["message_thread_id"] == topic.surface_thread_id


def test_a_call_for_a_bot_the_brain_does_not_have_is_404(
    served: tuple[TestClient, Engine], double: BotAPIDouble
) -> None:
    client, engine = served
    answer = client.post("/telegram/nobot", json=message(1, "hi"), headers={HEADER: SECRET})
    assert answer.status_code == 404
    assert answer.json()["error"].startswith("no bot 'nobot' in access.yaml — this server answers")
    assert double.calls == []
    with engine.store.transaction() as tx:
        assert tx.journals() == ()


@pytest.mark.parametrize(
    ("hook", "said"),
    [
        pytest.param("https://keel.example/telegram/nova", "not keel serve's route", id="other"),
        pytest.param("http://keel.example/telegram/desk", "HTTPS only", id="plain-http"),
    ],
)
def test_a_webhook_url_that_cannot_reach_this_bot_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hook: str, said: str
) -> None:
    copy_reference(tmp_path / "brain")
    monkeypatch.setenv("KEEL_TELEGRAM_TOKEN", TOKEN)
    monkeypatch.setenv("KEEL_TELEGRAM_SECRET", SECRET)
    result = CliRunner().invoke(
        cli, ["telegram", str(tmp_path / "brain"), "--bot", "desk", "--webhook", hook]
    )
    assert result.exit_code == 2
    assert said in result.output


def test_an_api_url_that_is_no_address_is_refused_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy_reference(tmp_path / "brain")
    monkeypatch.setenv("KEEL_TELEGRAM_TOKEN", TOKEN)
    result = CliRunner().invoke(
        cli, ["telegram", str(tmp_path / "brain"), "--bot", "desk", "--api-url", "notaurl"]
    )
    assert result.exit_code == 2
    assert "is not an http:// or https:// address" in result.output
    assert TOKEN not in result.output
