"""Model adapters from the providers' own SDK clients, for `Engine.turn` and `Engine.aturn`.

    import openai, keel.models
    model = keel.models.openai(openai.OpenAI(), "gpt-5-mini")          # engine.turn(...)
    model = keel.models.openai(openai.AsyncOpenAI(), "gpt-5-mini")     # await engine.aturn(...)
    model = keel.models.anthropic(anthropic.AsyncAnthropic(), "claude-sonnet-4-5")
    model = keel.models.scripted([ModelStep(text="Hello")])            # tests: no SDK, no key

Each adapter sends through the client it is given, so its base URL, key, retries and
timeouts are the caller's: an OpenAI-compatible server is `openai.OpenAI(base_url=...)`.
An async client gives an adapter whose request is awaited (`acomplete`), for `aturn`.
This module imports no SDK: the caller already has, to make the client.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, overload

from keel.errors import UsageError
from keel.runtime.models import (
    AnthropicModel,
    AsyncAnthropicModel,
    AsyncOpenAIChatModel,
    OpenAIChatModel,
)
from keel.runtime.scripted import ScriptedModel, Step

if TYPE_CHECKING:
    from anthropic import Anthropic, AsyncAnthropic
    from openai import AsyncOpenAI, OpenAI

__all__ = ["anthropic", "openai", "scripted"]


@overload
def openai(
    client: OpenAI, model_name: str, *, max_output: int | None = None
) -> OpenAIChatModel: ...
@overload
def openai(
    client: AsyncOpenAI, model_name: str, *, max_output: int | None = None
) -> AsyncOpenAIChatModel: ...
def openai(
    client: OpenAI | AsyncOpenAI, model_name: str, *, max_output: int | None = None
) -> OpenAIChatModel | AsyncOpenAIChatModel:
    """Chat Completions through `openai.OpenAI` (for `turn`) or `openai.AsyncOpenAI`
    (for `aturn`); `max_output` defaults to the output reserve the fit check kept."""
    _check_client(client, "openai", "chat.completions.create", "openai.OpenAI()")
    from openai import AsyncOpenAI  # the caller's client needed it already: no extra cost

    if isinstance(client, AsyncOpenAI):
        return AsyncOpenAIChatModel(client=client, model=model_name, max_output=max_output)
    return OpenAIChatModel(client=client, model=model_name, max_output=max_output)


@overload
def anthropic(
    client: Anthropic, model_name: str, *, max_output: int | None = None
) -> AnthropicModel: ...
@overload
def anthropic(
    client: AsyncAnthropic, model_name: str, *, max_output: int | None = None
) -> AsyncAnthropicModel: ...
def anthropic(
    client: Anthropic | AsyncAnthropic, model_name: str, *, max_output: int | None = None
) -> AnthropicModel | AsyncAnthropicModel:
    """Messages through `anthropic.Anthropic` (for `turn`) or `anthropic.AsyncAnthropic`
    (for `aturn`); `max_output` defaults to the output reserve the fit check kept."""
    _check_client(client, "anthropic", "messages.create", "anthropic.Anthropic()")
    from anthropic import AsyncAnthropic

    if isinstance(client, AsyncAnthropic):
        return AsyncAnthropicModel(client=client, model=model_name, max_output=max_output)
    return AnthropicModel(client=client, model=model_name, max_output=max_output)


def _check_client(client: object, adapter: str, call: str, example: str) -> None:
    """A `UsageError` now for a client without the call the adapter makes: else the turn
    would fail later, on an AttributeError far from the mistake."""
    target: object = client
    for name in call.split("."):
        target = getattr(target, name, None)
    if not callable(target):
        raise UsageError(
            f"keel.models.{adapter}() was given {type(client).__name__!r}, which has no "
            f"{call}() — pass the SDK's client, such as {example} or its async twin"
        )


def scripted(steps: Iterable[Step]) -> ScriptedModel:
    """A model that answers with `steps` in order (`keel.assemble.values.ModelStep`s) and
    records each request it was sent (`.requests`): for tests, with `turn` or `aturn`."""
    return ScriptedModel(steps)
