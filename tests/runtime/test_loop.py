"""Whole turns with a scripted model behind the real SDK clients: tools, refusals, fit."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from keel.assemble.values import ModelStep, ToolCall, ToolResult
from keel.brain import Brain, load_brain
from keel.errors import FitOverflow
from keel.link import Conversation, TurnRequest
from keel.runtime.loop import run_turn
from keel.runtime.models import AnthropicModel, OpenAIChatModel, OpenAIResponsesModel
from keel.store import Store
from keel.testing import RawToolCall, ScriptedModel, ScriptedStep
from keel.tokens.estimate import Estimator
from keel.tools import TOOLS

EXAMPLE = Path(__file__).parents[2] / "examples" / "brain"
NOW = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
SHOPPER = Conversation(bot="desk", chat="tg:user:42")
COUNTER = Estimator()


@pytest.fixture
def brain(reference_brain: Brain) -> Brain:
    return reference_brain


@pytest.fixture
def store(reference_store: Store) -> Store:
    return reference_store


def call(tool: str, **arguments: str) -> ModelStep:
    return ModelStep(calls=(ToolCall(id=f"call-{tool}", name=tool, arguments=arguments),))


def request(text: str, role: str = "support") -> TurnRequest:
    return TurnRequest(conversation=SHOPPER, now=NOW, role=role, input=text)


def test_a_tool_call_is_answered_and_the_next_request_carries_its_result(
    brain: Brain, store: Store
) -> None:
    scripted = ScriptedModel([call("context_open", name="policy"), ModelStep(text="30 days.")])
    model = OpenAIChatModel(client=scripted.openai_client())
    outcome = run_turn(
        brain, store, request("How long do I have to return?"), model, COUNTER, TOOLS
    )
    assert outcome.reply == "30 days."
    assert outcome.requests == 2
    second = scripted.requests[1].body["messages"]
    assert second[-1]["role"] == "tool"
    assert "Eligibility. Unworn items" in second[-1]["content"]
    system = [m["content"] for m in second if m["role"] == "system"]
    assert all("<context name=" not in text for text in system)
    with store.transaction() as tx:
        history = tx.history(SHOPPER, before_turn=outcome.prepared.turn + 1)
    assert [(m.role, m.text) for m in history] == [
        ("user", "How long do I have to return?"),
        ("assistant", "30 days."),
    ]


def test_a_tool_the_role_may_not_call_is_refused_at_execution(brain: Brain, store: Store) -> None:
    scripted = ScriptedModel(
        [call("context_bind", context="client", entity="acme"), ModelStep(text="ok")]
    )
    model = AnthropicModel(client=scripted.anthropic_client())
    outcome = run_turn(brain, store, request("bind me", role="client-desk"), model, COUNTER, TOOLS)
    tools = [t["name"] for t in scripted.requests[0].body.get("tools", [])]
    assert tools == ["context_open"], "only the tools its capabilities allow are described"
    result = scripted.requests[1].body["messages"][-1]["content"][0]
    assert result["type"] == "tool_result"
    assert result["is_error"] is True
    assert "cannot call context_bind — add context:bind" in result["content"]
    with store.transaction() as tx:
        assert tx.bindings(SHOPPER.chat) == ()
    assert outcome.reply == "ok"


def test_a_later_request_that_would_overflow_is_refused_before_it_is_sent(
    brain: Brain, store: Store
) -> None:
    manifest = brain.root / "constitution" / "MANIFEST.yaml"
    text = manifest.read_text(encoding="utf-8")
    opening = run_turn(
        brain,
        store,
        request("hello"),
        OpenAIChatModel(client=ScriptedModel([ModelStep(text="hi")]).openai_client()),
        COUNTER,
        TOOLS,
    ).assembly.fit.estimate
    # Room for the opening request, not for the policy the tool call brings back.
    limits = f"model:\n  name: small\n  window: {opening + 300}\n  output_reserve: 100\n"
    manifest.write_text(_with_model(text, limits), encoding="utf-8")
    small = load_brain(brain.root)
    scripted = ScriptedModel([call("context_open", name="policy"), ModelStep(text="never")])
    with pytest.raises(FitOverflow, match=r"tool results added .* tokens — largest: .*transcript"):
        run_turn(
            small,
            store,
            request("hello"),
            OpenAIChatModel(client=scripted.openai_client()),
            COUNTER,
            TOOLS,
        )
    assert len(scripted.requests) == 1, "the second request was never sent"


def _with_model(manifest: str, model: str) -> str:
    """MANIFEST text with its `model:` block replaced."""
    lines = manifest.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith("model:"))
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i][:1] not in (" ", "\n")), len(lines)
    )
    return "".join(lines[:start]) + model + "".join(lines[end:])


BAD_CALLS = (
    ScriptedStep(calls=(RawToolCall(id="c1", name="context_open", arguments='{"name": '),)),
    ScriptedStep(calls=(RawToolCall(id="c2", name="context_open", arguments='["policy"]'),)),
    ModelStep(calls=(ToolCall(id="c3", name="delete_everything", arguments={"all": True}),)),
    ModelStep(calls=(ToolCall(id="c4", name="context_open", arguments={"nme": "policy"}),)),
    ModelStep(calls=(ToolCall(id="c5", name="context_open", arguments={"name": 7}),)),
    ModelStep(text="Sorry, let me answer without it."),
)
BAD_RESULTS = (
    r"refused: the arguments are not JSON .* — call it as context_open\(\{\"name\": string "
    r"\(required\), \"entity\": string\}\)",
    r"refused: the arguments are not a JSON object",
    r"refused: there is no tool 'delete_everything' — the tools you can call: context_open\. "
    r"Tell the person plainly; do not try another way around it\.$",
    r"refused: the arguments of context_open do not fit its schema: "
    r"'name' is a required property; Additional properties are not allowed \('nme' was unexpected\)",
    r"refused: the arguments of context_open do not fit its schema: name: 7 is not of type 'string'",
)


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_unknown_tools_and_malformed_arguments_are_error_results_not_aborted_turns(
    brain: Brain, store: Store, api: str
) -> None:
    scripted = ScriptedModel(BAD_CALLS)
    client = scripted.openai_client()
    model = OpenAIChatModel(client=client) if api == "chat" else OpenAIResponsesModel(client=client)
    outcome = run_turn(brain, store, request("return?", role="client-desk"), model, COUNTER, TOOLS)
    assert outcome.reply == "Sorry, let me answer without it."
    assert outcome.requests == len(BAD_CALLS)
    results = [i for i in outcome.transcript.items if isinstance(i, ToolResult)]
    assert [r.is_error for r in results] == [True] * len(BAD_RESULTS)
    for result, expected in zip(results, BAD_RESULTS, strict=True):
        assert re.match(expected, result.content), result.content
    with store.transaction() as tx:  # the turn and its answer were recorded
        assert tx.current_turn(SHOPPER) == outcome.prepared.turn == 1
        texts = [m.text for m in tx.history(SHOPPER, before_turn=2)]
    assert texts == ["return?", "Sorry, let me answer without it."]


def test_anthropic_tool_errors_are_flagged_results(brain: Brain, store: Store) -> None:
    scripted = ScriptedModel(
        [
            ModelStep(calls=(ToolCall(id="a1", name="no_such_tool"),)),
            ModelStep(calls=(ToolCall(id="a2", name="context_open", arguments={"entity": "x"}),)),
            ModelStep(text="done"),
        ]
    )
    model = AnthropicModel(client=scripted.anthropic_client())
    outcome = run_turn(brain, store, request("hi"), model, COUNTER, TOOLS)
    assert outcome.reply == "done"
    for number, words in ((1, "there is no tool 'no_such_tool'"), (2, "'name' is a required")):
        result = scripted.requests[number].body["messages"][-1]["content"][0]
        assert result["type"] == "tool_result"
        assert result["is_error"] is True
        assert words in result["content"]
