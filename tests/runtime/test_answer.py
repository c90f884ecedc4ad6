"""`Engine.turn` and `Engine.aturn`: one message answered in one call, through the real SDK
clients (sync and async) against a local OpenAI-compatible server, and the scripted model."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest

import keel.models
from keel.assemble.values import ModelStep, ToolCall
from keel.errors import UsageError
from keel.runtime.answer import turn_request
from keel.runtime.engine import Engine
from keel.runtime.models import AsyncOpenAIChatModel, OpenAIChatModel
from keel.testing import ScriptedModel
from tests.openai_double import openai_double
from tests.runtime.driver import copy_reference

ACME = "tg:chat:-1002000000101"
OPEN_CLIENT = ModelStep(
    calls=(ToolCall(id="c1", name="context_open", arguments={"name": "client"}),)
)
SEND = ToolCall(id="s1", name="send_message", arguments={"text": "Tonight: Whiplash"})
BIND = ToolCall(id="b1", name="context_bind", arguments={"context": "client", "chat": ACME})


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    with Engine(copy_reference(tmp_path / "brain"), watch=False) as engine:
        yield engine


def test_turn_with_the_sync_openai_client_answers_and_records(engine: Engine) -> None:
    with openai_double([OPEN_CLIENT, ModelStep(text="It renews on 30 September.")]) as double:
        client = openai.OpenAI(base_url=double.base_url, api_key="local", max_retries=0)
        model = keel.models.openai(client, "local-model")
        assert isinstance(model, OpenAIChatModel)
        answer = engine.turn(
            bot="nova", chat=ACME, text="When does our retainer renew?", model=model
        )
    assert answer.text == "It renews on 30 September."
    assert (answer.role, answer.sends, answer.refused) == ("client-desk", (), ())
    assert answer.turn_id is not None
    assert [b["model"] for b in double.bodies] == ["local-model", "local-model"]
    assert "Acme Corporation" in double.bodies[1]["messages"][-1]["content"]
    history = engine.history("tg:chat:-1002000000101", bot="nova")
    assert [(m.speaker, m.text) for m in history][-1] == ("assistant", "It renews on 30 September.")


def test_aturn_awaits_the_async_openai_client(engine: Engine) -> None:
    async def main() -> keel.Answer:
        with openai_double([OPEN_CLIENT, ModelStep(text="30 September.")]) as double:
            client = openai.AsyncOpenAI(base_url=double.base_url, api_key="local", max_retries=0)
            model = keel.models.openai(client, "local-model")
            assert isinstance(model, AsyncOpenAIChatModel)
            answer = await engine.aturn(bot="nova", chat=ACME, text="renewal?", model=model)
            await client.close()
        assert len(double.bodies) == 2
        return answer

    answer = asyncio.run(main())
    assert answer.text == "30 September."
    assert answer.outcome.requests == 2


def test_aturn_takes_a_sync_client_too(engine: Engine) -> None:
    with openai_double([ModelStep(text="Hello.")]) as double:
        client = openai.OpenAI(base_url=double.base_url, api_key="local", max_retries=0)
        model = keel.models.openai(client, "local-model")
        answer = asyncio.run(engine.aturn(bot="nova", chat=ACME, text="hi", model=model))
    assert answer.text == "Hello."


def test_turn_refuses_an_async_client_and_says_to_await_aturn(engine: Engine) -> None:
    model = keel.models.openai(
        openai.AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="x"), "m"
    )
    with pytest.raises(UsageError, match=r"async model client — await engine\.aturn"):
        engine.turn(bot="nova", chat=ACME, text="hi", model=model)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("adapter", "call"),
    [(keel.models.openai, "chat.completions.create"), (keel.models.anthropic, "messages.create")],
)
def test_an_adapter_refuses_a_client_without_the_call_it_makes(adapter: Any, call: str) -> None:
    with pytest.raises(UsageError, match=rf"given 'object', which has no {call}\(\) — pass"):
        adapter(object(), "x")


def test_the_answer_carries_the_sends_and_the_refused_calls(engine: Engine) -> None:
    model = keel.models.scripted(
        [ModelStep(calls=(SEND, BIND)), ModelStep(text="Sent you tonight's pick.")]
    )
    answer = engine.turn(
        bot="nova",
        chat="tg:user:1",
        text="what tonight?",
        role="coach",
        sender="owner",
        model=model,
    )
    assert answer.text == "Sent you tonight's pick."
    [sent] = answer.sends
    assert (sent.chat, sent.thread, sent.text) == ("tg:user:1", None, "Tonight: Whiplash")
    assert any(m.text == "Tonight: Whiplash" for m in engine.history("tg:user:1", bot="nova"))
    [refused] = answer.refused
    assert refused.name == "context_bind"
    assert refused.content.startswith("refused:")


def test_the_request_names_the_room_the_sender_and_the_message_replied_to() -> None:
    request = turn_request(
        bot="nova", chat="tg:chat:1", text="hi", sender="ana", thread="7", reply_to="m1"
    )
    assert (request.conversation.chat, request.conversation.thread) == ("tg:chat:1", "7")
    assert (request.input, request.sender, request.reply_to) == ("hi", "ana", ("m1",))


def test_the_scripted_model_serves_turn_and_aturn_with_no_sdk(engine: Engine) -> None:
    model = keel.models.scripted([ModelStep(text="one"), ModelStep(text="two")])
    assert engine.turn(bot="nova", chat=ACME, text="a", model=model).text == "one"
    again = asyncio.run(engine.aturn(bot="nova", chat=ACME, text="b", model=model))
    assert again.text == "two"
    assert [r.body["messages"][-1]["content"][-2:] for r in model.requests] == ["\na", "\nb"]
    with pytest.raises(UsageError, match="only 2 were scripted"):
        engine.turn(bot="nova", chat=ACME, text="c", model=model)


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_anthropic_clients_answer_through_the_adapter(engine: Engine, is_async: bool) -> None:
    script = ScriptedModel([OPEN_CLIENT, ModelStep(text="It renews in September.")])
    transport = script.transport()
    if is_async:
        aclient = anthropic.AsyncAnthropic(
            base_url="http://scripted.invalid",
            api_key="x",
            max_retries=0,
            http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(script.handle)),
        )
        model = keel.models.anthropic(aclient, "claude-test")
        answer = asyncio.run(engine.aturn(bot="nova", chat=ACME, text="renewal?", model=model))
    else:
        client = anthropic.Anthropic(
            base_url="http://scripted.invalid",
            api_key="x",
            max_retries=0,
            http_client=httpx2.Client(transport=transport),
        )
        answer = engine.turn(
            bot="nova",
            chat=ACME,
            text="renewal?",
            model=keel.models.anthropic(client, "claude-test"),
        )
    assert answer.text == "It renews in September."
    assert [r.path for r in script.requests] == ["/v1/messages", "/v1/messages"]
    assert script.requests[0].body["model"] == "claude-test"
