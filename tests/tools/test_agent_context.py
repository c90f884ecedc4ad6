"""`agent_context`: the spend report as a tool, behind its own capability."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from keel.brain.specs import ReachEntry
from keel.errors import Refused, UsageError
from keel.link.values import Conversation, TurnRequest
from keel.runtime.engine import Engine
from keel.tools import CODING_TOOLS, LEDGER_CAPABILITY, report_text
from tests.runtime.driver import copy_reference

NOW = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
SHOPPER = Conversation(bot="desk", chat="tg:user:42")
TICKETS = tuple(ReachEntry(context="ticket", entity=f"T-{n}") for n in range(479, 484))
DESK = Conversation(bot="cli", chat="cli")


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    brain = copy_reference(tmp_path / "brain")
    (brain / "features" / "agency" / "tuner.agent.md").write_text(
        f"---\ndescription: Tunes budgets.\ncontexts: []\ncapabilities: [{LEDGER_CAPABILITY}]\n"
        "---\nTune.\n",
        encoding="utf-8",
    )
    with Engine(brain, tools=CODING_TOOLS, watch=False) as engine:
        yield engine


def ask(engine: Engine, caller: str, **args: str) -> str:
    request = TurnRequest(conversation=DESK, now=NOW, role=caller)
    return engine.call(request, "agent_context", args)


def test_the_tool_reads_the_report_keel_report_reads(engine: Engine) -> None:
    request = TurnRequest(conversation=SHOPPER, now=NOW - timedelta(hours=1), attach=TICKETS)
    engine.prepare(request)
    text = ask(engine, "tuner", role="support", since="1d")
    assert text == report_text(engine.report("support", since="1d", now=NOW))
    header, *lines = text.splitlines()
    assert header.startswith("Role support: 1 turn(s) from 2026-11-28T18:00")
    (ticket,) = [line for line in lines if line.startswith("- ticket ")]
    assert "attached 1" in ticket
    assert "stubbed" in ticket, "five tickets do not all fit; the report names the knob"


def test_without_turns_the_report_says_so(engine: Engine) -> None:
    assert ask(engine, "tuner").endswith("No context attached to or was offered on these turns.")


def test_a_role_without_ledger_read_is_refused(engine: Engine) -> None:
    with pytest.raises(Refused, match=f"add {LEDGER_CAPABILITY} to its `capabilities:`"):
        ask(engine, "support")


def test_a_wrong_role_or_window_is_refused_with_the_fix(engine: Engine) -> None:
    with pytest.raises(Refused, match="no role 'suport' in this brain"):
        ask(engine, "tuner", role="suport")
    with pytest.raises(UsageError, match="write a span such as 7d"):
        ask(engine, "tuner", since="last week")
