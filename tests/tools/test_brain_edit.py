"""The brain-edit tools: each edits through the registry as a role holding `brain:edit`, the
next turn's snapshot has the change, a widening goes only through `access_widen`, and
`access_widen` always waits for a person."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from keel.assemble.values import ToolCall
from keel.brain import load_brain
from keel.brain.knobs import approval_required
from keel.brain.source import BrainSource
from keel.brain.specs import ReachEntry, RoleSpec
from keel.errors import Refused
from keel.link.reach import run_reach
from keel.link.values import Conversation, TurnRequest
from keel.runs import approvals as run_approvals
from keel.runtime.engine import Engine
from keel.state.database import connect
from keel.store import Store
from keel.tools import TOOLS

WriteBrain = Callable[[dict[str, str | bytes]], Path]

ROLE = "---\ndescription: {d}\ncontexts: ['*']\ncapabilities: [{c}]\n{x}---\nYou {d}\n"
FILES: dict[str, str | bytes] = {
    "constitution/MANIFEST.yaml": "contentProbe: {context: 1}\n",
    "features/ops/keeper.agent.md": ROLE.format(d="keep.", c="brain:edit, access:widen", x=""),
    "features/ops/lax.agent.md": ROLE.format(
        d="skip cards.",
        c="brain:edit, access:widen",
        x='approvals: {dangerous: none, "access:widen": none}\n',
    ),
    "features/ops/wild.agent.md": ROLE.format(d="do all.", c="'*'", x=""),
    "features/ops/topic.context.md": "---\ndescription: T.\nwhen: [run]\n---\nRivers.\n",
    "features/ops/weather.context.md": "---\ndescription: W.\nwhen: [run]\n---\nRain.\n",
    "features/ops/client.context.md": (
        "---\ndescription: C.\nwhen: [chat]\nentity: client id\n---\nThe client.\n"
    ),
    "features/ops/daily.heartbeat.md": (
        "---\nschedule: '0 8 * * *'\nagent: keeper\nreach: [topic]\n---\nWrite.\n"
    ),
    "features/ops/opened.hook.md": "---\nevent: ticket.opened\nagent: keeper\n---\nAnswer.\n",
    "features/ops/welcome.scenario.md": "---\nagent: keeper\n---\nWelcome them.\n",
    "constitution/access.yaml": (
        "bots:\n  nova:\n    chats:\n      'tg:chat:1':\n        title: Client one\n"
        "        role: keeper\n        contexts: {client: c1}\n      'tg:chat:2':\n"
        "        role: wild\n"
    ),
}
ACCESS = "constitution/access.yaml"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def engine(write_brain: WriteBrain, clock: Clock) -> Iterator[Engine]:
    root = write_brain(FILES)
    source = BrainSource(root, watch=False, clock=clock)
    with Engine(root, watch=False, source=source) as engine:
        yield engine


def call(engine: Engine, tool: str, as_role: str = "keeper", **arguments: Any) -> str:
    room = Conversation(bot="nova", chat="tg:chat:ops")
    request = TurnRequest(conversation=room, now=datetime.now(UTC), role=as_role)
    return engine.call(request, tool, arguments)


def test_a_heartbeat_update_of_reach_changes_the_next_runs_reach(
    engine: Engine, clock: Clock
) -> None:
    entity = engine.brain.entity("heartbeat", "daily")
    assert entity is not None
    assert run_reach(engine.brain, entity) == (ReachEntry(context="topic"),)
    said = call(engine, "heartbeat_update", id="daily", reach=["weather"])
    assert said.startswith("updated features/ops/daily.heartbeat.md: reach (")
    clock.now += 2  # the next turn, after the brain's probe interval
    entity = engine.brain.entity("heartbeat", "daily")
    assert entity is not None
    assert run_reach(engine.brain, entity) == (ReachEntry(context="weather"),)


def test_hook_and_scenario_updates_edit_their_files(engine: Engine, clock: Clock) -> None:
    call(engine, "hook_update", id="opened", event="ticket.closed", body="Close it.")
    call(engine, "scenario_update", id="welcome", description="The welcome.")
    clock.now += 2
    hook = engine.brain.entity("hook", "opened")
    scenario = engine.brain.entity("scenario", "welcome")
    assert hook is not None
    assert scenario is not None
    assert (hook.event, hook.prompt) == ("ticket.closed", "Close it.")
    assert scenario.description == "The welcome."


def test_a_key_the_kind_does_not_take_is_refused_by_the_schema(engine: Engine) -> None:
    with pytest.raises(Refused, match="schedule"):
        call(engine, "hook_update", id="opened", schedule="0 9 * * *")


def test_an_update_that_would_not_load_is_refused_and_the_file_stays(engine: Engine) -> None:
    path = engine.brain.root / "features/ops/daily.heartbeat.md"
    before = path.read_bytes()
    with pytest.raises(Refused, match=r"would not load.*daily\.heartbeat\.md:\d+: "):
        call(engine, "heartbeat_update", id="daily", schedule="at noon")
    assert path.read_bytes() == before


def test_only_a_role_naming_brain_edit_gets_the_tools(engine: Engine) -> None:
    keeper, wild = engine.brain.roles["keeper"], engine.brain.roles["wild"]
    names = {t.name for t in TOOLS.for_role(keeper)}
    assert {"heartbeat_update", "access_update", "access_widen"} <= names
    assert not {t.name for t in TOOLS.for_role(wild)} & names - {"context_open"}
    with pytest.raises(Refused, match="add brain:edit to its `capabilities:`"):
        call(engine, "heartbeat_update", as_role="wild", id="daily", reach=["weather"])


def test_access_update_narrows(engine: Engine, clock: Clock) -> None:
    said = call(
        engine, "access_update", bot="nova", chat="tg:chat:1", title="One", unbind=["client"]
    )
    assert said.startswith(
        f"updated {ACCESS}: for bot nova, chat tg:chat:1, title One (was Client one), "
        "unbound client (was c1) ("
    )
    clock.now += 2
    (rule,) = engine.brain.access.group_rules("tg:chat:1")
    assert (rule.title, dict(rule.contexts)) == ("One", {})
    call(engine, "access_update", bot="nova", chat="tg:chat:1", role="wild")


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param({"chat": "tg:chat:1", "role": "lax"}, id="a-role-no-rule-names"),
        pytest.param({"chat": "tg:chat:9", "title": "New"}, id="a-new-rule"),
    ],
)
def test_access_update_refuses_a_widening_and_names_access_widen(
    engine: Engine, arguments: dict[str, Any]
) -> None:
    path = engine.brain.root / ACCESS
    before = path.read_bytes()
    with pytest.raises(Refused, match=r"widens it: .* call access_widen instead"):
        call(engine, "access_update", bot="nova", **arguments)
    assert path.read_bytes() == before


def test_access_update_has_no_bind_argument(engine: Engine) -> None:
    with pytest.raises(Refused, match="bind"):
        call(engine, "access_update", bot="nova", chat="tg:chat:1", bind={"topic": None})


def test_access_widen_binds(engine: Engine, clock: Clock) -> None:
    call(engine, "access_widen", bot="nova", chat="tg:chat:2", bind={"client": "c2"})
    clock.now += 2
    (rule,) = engine.brain.access.group_rules("tg:chat:2")
    assert dict(rule.contexts) == {"client": "c2"}


def test_access_widen_always_needs_approval(write_brain: WriteBrain) -> None:
    brain = load_brain(write_brain(FILES))
    widen, update = TOOLS.get("access_widen"), TOOLS.get("access_update")
    assert widen is not None
    assert update is not None
    assert (widen.capability, widen.risk) == ("access:widen", "dangerous")
    for role in ("keeper", "lax"):  # lax's approvals: say none, and are overruled
        assert approval_required(brain, role, widen.capability, widen.risk)
    assert not approval_required(brain, "keeper", update.capability, update.risk)


def test_a_runs_access_widen_call_waits_for_a_card(
    write_brain: WriteBrain, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    brain = load_brain(write_brain(FILES))
    store = Store(connect(f"sqlite:///{tmp_path / 'keel.db'}", brain))
    store.migrate()
    asked: list[str] = []

    def ask(_context: object, _tool: Any, call: ToolCall, **_: object) -> str:
        asked.append(call.name)
        return "card"

    monkeypatch.setattr(run_approvals, "durable", lambda _name, body: body())  # no DBOS here
    monkeypatch.setattr(run_approvals, "ask", ask)
    monkeypatch.setattr(run_approvals, "wait", lambda _context, card: f"waited on {card}")
    request = TurnRequest(
        conversation=Conversation(bot="nova", chat="tg:chat:1"), now=datetime.now(UTC)
    )
    context = SimpleNamespace(brain=brain, store=store)
    approve = run_approvals.approvals(cast(Any, context), TOOLS, request)
    role: RoleSpec = brain.roles["lax"]
    arguments = {"bot": "nova", "chat": "tg:chat:1", "title": "The ops room"}
    widen = ToolCall(id="c1", name="access_widen", arguments=arguments)
    update = ToolCall(id="c2", name="access_update", arguments={"bot": "nova", "chat": "x"})
    assert cast(object, approve(role, widen)) == "waited on card"
    assert approve(role, update) is None
    assert asked == ["access_widen"]
