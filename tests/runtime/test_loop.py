"""Whole turns with a scripted model behind the real SDK clients: tools, refusals, fit."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from keel.assemble.tokens import Estimator
from keel.assemble.values import ModelStep, ToolCall
from keel.brain import Brain, load_brain
from keel.errors import FitOverflow
from keel.link import Conversation, TurnRequest
from keel.runtime.loop import run_turn
from keel.runtime.models import AnthropicModel, OpenAIChatModel
from keel.store import Store
from keel.testing import ScriptedModel

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
    outcome = run_turn(brain, store, request("How long do I have to return?"), model, COUNTER)
    assert outcome.reply == "30 days."
    assert outcome.requests == 2
    second = scripted.requests[1].body["messages"]
    assert second[-1]["role"] == "tool"
    assert "Eligibility. Unworn items" in second[-1]["content"]
    system = [m["content"] for m in second if m["role"] == "system"]
    assert all("<feature-context feature=" not in text for text in system)
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
    outcome = run_turn(brain, store, request("bind me", role="client-desk"), model, COUNTER)
    tools = [t["name"] for t in scripted.requests[0].body.get("tools", [])]
    assert tools == ["context_open"], "only the tools its capabilities allow are described"
    result = scripted.requests[1].body["messages"][-1]["content"][0]
    assert result["type"] == "tool_result"
    assert result["is_error"] is True
    assert "may not call context_bind — it needs context:bind" in result["content"]
    with store.transaction() as tx:
        assert tx.bindings(SHOPPER.chat) == ()
    assert outcome.reply == "ok"


def test_a_later_request_that_would_overflow_is_refused_before_it_is_sent(
    brain: Brain, store: Store, tmp_path: Path
) -> None:
    manifest = brain.root / "constitution" / "MANIFEST.yaml"
    text = manifest.read_text(encoding="utf-8")
    opening = run_turn(
        brain,
        store,
        request("hello"),
        OpenAIChatModel(client=ScriptedModel([ModelStep(text="hi")]).openai_client()),
        COUNTER,
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
