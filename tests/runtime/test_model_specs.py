"""Model specs: which model answers, from a string, with clear errors and no surprise calls."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from keel.errors import UsageError
from keel.runtime.model_specs import (
    ModelChoice,
    build_model,
    default_model,
    model_name,
    parse_model,
)
from keel.runtime.models import AnthropicModel, OpenAIChatModel


@pytest.mark.parametrize(
    ("spec", "choice"),
    [
        pytest.param("none", ModelChoice(provider="none"), id="none"),
        pytest.param("openai:gpt-x", ModelChoice(provider="openai", name="gpt-x"), id="openai"),
        pytest.param(
            "anthropic:claude-x", ModelChoice(provider="anthropic", name="claude-x"), id="anthropic"
        ),
        pytest.param(
            "openai-compatible:llama3@http://127.0.0.1:11434/v1",
            ModelChoice(
                provider="openai-compatible", name="llama3", url="http://127.0.0.1:11434/v1"
            ),
            id="compatible",
        ),
        pytest.param(
            "scripted:steps.json", ModelChoice(provider="scripted", path=Path("steps.json")), id="f"
        ),
    ],
)
def test_each_form_parses(spec: str, choice: ModelChoice) -> None:
    assert parse_model(spec) == choice
    assert parse_model(choice.spec) == choice


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        pytest.param("gpt-4", "not a model spec — write openai:NAME", id="bare"),
        pytest.param("mistral:large", "not a model spec", id="unknown-provider"),
        pytest.param("openai:", "not a model spec", id="no-name"),
        pytest.param("openai-compatible:llama3", "write openai-compatible:NAME@URL", id="no-url"),
        pytest.param("openai-compatible:x@ftp://h", "write openai-compatible:NAME@URL", id="url"),
    ],
)
def test_a_bad_spec_names_the_forms(spec: str, error: str) -> None:
    with pytest.raises(UsageError, match=error):
        parse_model(spec)


def test_the_default_is_a_declared_spec_then_a_key_that_is_set_then_none() -> None:
    assert default_model("anthropic:claude-x", env={"OPENAI_API_KEY": "k"}).provider == "anthropic"
    assert default_model("any-model", env={"OPENAI_API_KEY": "k"}) == ModelChoice(
        provider="openai", name="any-model"
    )
    assert default_model("m", env={"ANTHROPIC_API_KEY": "k"}).provider == "anthropic"
    assert default_model("any-model", env={}) == ModelChoice(provider="none")
    assert default_model(None, env={}).provider == "none"


def test_the_models_own_name_drops_the_provider() -> None:
    assert model_name("anthropic:claude-x") == "claude-x"
    assert model_name("openai-compatible:llama3@http://h/v1") == "llama3"
    assert model_name("any-model") == "any-model"
    assert model_name("gpt-4o:2024") == "gpt-4o:2024", "not a provider: the whole name"


def test_a_missing_key_names_the_variable() -> None:
    with pytest.raises(UsageError, match="set OPENAI_API_KEY, or pass --model none"):
        build_model(parse_model("openai:gpt-x"), env={})
    with pytest.raises(UsageError, match="set ANTHROPIC_API_KEY"):
        build_model(parse_model("anthropic:claude-x"), env={})


def test_clients_are_built_with_their_key_and_url() -> None:
    openai = build_model(parse_model("openai:gpt-x"), env={"OPENAI_API_KEY": "sk-1"})
    assert isinstance(openai, OpenAIChatModel)
    assert openai.client.api_key == "sk-1"
    assert openai.model == "gpt-x"
    local = build_model(parse_model("openai-compatible:llama3@http://127.0.0.1:9/v1"), env={})
    assert isinstance(local, OpenAIChatModel)
    assert str(local.client.base_url).startswith("http://127.0.0.1:9/v1")
    claude = build_model(parse_model("anthropic:claude-x"), env={"ANTHROPIC_API_KEY": "a"})
    assert isinstance(claude, AnthropicModel)
    assert build_model(parse_model("none")) is None


def test_a_scripted_file_plays_its_steps_through_the_sdk(tmp_path: Path) -> None:
    from keel.assemble.values import Assembly, Fit, Section, Transcript
    from keel.brain.knobs import ModelLimits

    steps = [
        {"tool_calls": [{"name": "context_open", "arguments": {"name": "policy"}}]},
        {"tool_calls": [{"name": "context_open", "arguments": '{"name": '}]},
        {"text": "Thirty days.", "sleep_s": 0.2},
    ]
    path = tmp_path / "steps.json"
    path.write_text(json.dumps(steps))
    model = build_model(parse_model(f"scripted:{path}"))
    assert model is not None
    limits = ModelLimits(name="m", window=1000, output_reserve=100, input_allocation=900)
    assembly = Assembly(
        sections=(Section(id="current", place="tail", text="hi", used_tokens=1),),
        limits=limits,
        fit=Fit(ok=True, estimate=1, window=1000, output_reserve=100, input_allocation=900),
        counter="estimate",
    )
    first = model.complete(assembly, Transcript())
    assert [(c.name, dict(c.arguments)) for c in first.calls] == [
        ("context_open", {"name": "policy"})
    ]
    second = model.complete(assembly, Transcript())
    assert second.calls[0].problem is not None, "raw arguments go out as written"
    started = time.monotonic()
    third = model.complete(assembly, Transcript())
    assert third.text == "Thirty days."
    assert time.monotonic() - started >= 0.2


@pytest.mark.parametrize(
    ("content", "error"),
    [
        pytest.param("{", "is not JSON", id="not-json"),
        pytest.param('{"text": "x"}', "is a JSON list of steps", id="not-a-list"),
        pytest.param('[{"txt": "x"}]', "step 1: write", id="unknown-key"),
        pytest.param('[{"tool_calls": [{"arguments": {}}]}]', "each tool call is", id="no-name"),
        pytest.param('[{"sleep_s": -1}]', "sleep_s is a number", id="negative-sleep"),
    ],
)
def test_a_bad_scripted_file_is_a_usage_error(tmp_path: Path, content: str, error: str) -> None:
    path = tmp_path / "steps.json"
    path.write_text(content)
    with pytest.raises(UsageError, match=error):
        build_model(parse_model(f"scripted:{path}"))
    with pytest.raises(
        UsageError, match="the scripted model cannot be read — cannot read: No such file"
    ):
        build_model(parse_model(f"scripted:{tmp_path / 'missing.json'}"))


def test_a_scripted_file_that_is_not_a_regular_file_is_refused_unopened(tmp_path: Path) -> None:
    fifo = tmp_path / "steps.json"
    os.mkfifo(fifo)
    # Opened for reading, a FIFO with no writer would block this test forever.
    with pytest.raises(UsageError, match=r"steps.json: the scripted model cannot be read — .*FIFO"):
        build_model(parse_model(f"scripted:{fifo}"))
    with pytest.raises(UsageError, match="is a directory"):
        build_model(parse_model(f"scripted:{tmp_path}"))
