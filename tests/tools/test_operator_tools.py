"""The operator's questions in a chat: `access_explain`, `agent_context` and `doctor_check`
are tools of a chat role's registry, each behind a capability of its own."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from keel.assemble.values import ModelStep, ToolCall
from keel.brain import Brain, load_brain
from keel.link import Conversation, TurnRequest
from keel.runtime.loop import run_turn
from keel.runtime.models import OpenAIChatModel
from keel.store import Store
from keel.testing import ScriptedModel
from keel.tokens.estimate import Estimator
from keel.tools import TOOLS

EXAMPLE = Path(__file__).parents[2] / "examples" / "brain"
NOW = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
OPS_ROOM = Conversation(bot="desk", chat="tg:chat:-100900")
OPS_ROLE = (
    "---\n"
    "description: The operators' desk, answering questions about the brain itself.\n"
    "contexts: []\n"
    "capabilities: [access:read, ledger:read, doctor:read]\n"
    "---\n"
    "You answer the operators' questions about the brain.\n"
)
OPERATOR_TOOLS = ["agent_context", "access_explain", "doctor_check"]


@pytest.fixture
def brain(tmp_path: Path) -> Brain:
    root = tmp_path / "brain"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".keel"))
    (root / "features" / "support" / "ops.agent.md").write_text(OPS_ROLE, encoding="utf-8")
    return load_brain(root)


@pytest.fixture
def store(brain: Brain, tmp_path: Path) -> Store:
    from keel.state.database import connect

    store = Store(connect(f"sqlite:///{tmp_path / 'keel.db'}", brain))
    store.migrate()
    return store


def call(tool: str, **arguments: str) -> ModelStep:
    return ModelStep(calls=(ToolCall(id=f"call-{tool}", name=tool, arguments=arguments),))


def turn(brain: Brain, store: Store, role: str, steps: list[ModelStep]) -> ScriptedModel:
    scripted = ScriptedModel(steps)
    request = TurnRequest(conversation=OPS_ROOM, now=NOW, role=role, input="How are we doing?")
    run_turn(
        brain, store, request, OpenAIChatModel(client=scripted.openai_client()), Estimator(), TOOLS
    )
    return scripted


def tool_results(scripted: ScriptedModel) -> list[str]:
    messages: list[dict[str, Any]] = scripted.requests[-1].body["messages"]
    return [m["content"] for m in messages if m["role"] == "tool"]


def test_an_operator_role_is_shown_its_three_tools_and_a_client_role_none(
    brain: Brain, store: Store
) -> None:
    ops = turn(brain, store, "ops", [ModelStep(text="ok")])
    support = turn(brain, store, "support", [ModelStep(text="ok")])
    ops_tools = [t["function"]["name"] for t in ops.requests[0].body["tools"]]
    support_tools = [t["function"]["name"] for t in support.requests[0].body["tools"]]
    assert ops_tools == OPERATOR_TOOLS
    assert not set(OPERATOR_TOOLS) & set(support_tools)


def test_each_operator_tool_answers_in_the_chat(brain: Brain, store: Store) -> None:
    turn(brain, store, "support", [ModelStep(text="Returns take 30 days.")])
    steps = [call(name) for name in OPERATOR_TOOLS] + [ModelStep(text="All is well.")]
    steps[0] = call("agent_context", role="support", since="30d")
    scripted = turn(brain, store, "ops", steps)
    report, access, doctor = tool_results(scripted)
    assert report.startswith("Role support: 1 turn(s)")
    assert access.startswith("Bot desk in tg:chat:-100900: role ops, named by the caller.")
    # The doctor's report, in the words `keel doctor` prints, its sections and verdict.
    assert "Feature contexts\n  ok" in doctor
    assert doctor.endswith("No problems found (2 note).")


@pytest.mark.parametrize(
    ("tool", "capability"),
    [
        ("access_explain", "access:read"),
        ("agent_context", "ledger:read"),
        ("doctor_check", "doctor:read"),
    ],
)
def test_a_client_role_calling_one_is_refused_with_the_capability_to_add(
    brain: Brain, store: Store, tool: str, capability: str
) -> None:
    scripted = turn(brain, store, "support", [call(tool), ModelStep(text="Sorry.")])
    (refusal,) = tool_results(scripted)
    assert f"role 'support' cannot call {tool} — add {capability}" in refusal
