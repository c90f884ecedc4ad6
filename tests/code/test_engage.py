"""A bot's chat policy through the runner: its verdict, and its attach entries checked one by one."""

from __future__ import annotations

from pathlib import Path

from keel.brain.specs import ReachEntry
from keel.code import CodeRunner, EngageCall
from keel.code.answers import merged_attach
from keel.code.probe import engage_path
from tests.code.support import write_code

POLICY = """\
import re

from keel.code import define_engage


@define_engage
def engage(message, ctx):
    ctx.log("policy of", ctx.bot, "reads", message.text)
    found = re.findall(r"\\bT-\\d+\\b", message.text)
    if not found:
        return None
    attach = [{"context": "ticket", "entity": key} for key in found]
    attach.append({"context": "tickets", "entity": "T-0"})
    attach.append({"context": "kb", "entity": "faq"})
    return {"engage": True, "attach": attach}
"""
CONTEXTS = {"ticket": True, "kb": False}


def _call(text: str, path: str) -> EngageCall:
    return EngageCall(
        bot="desk", path=path, message={"text": text, "chat": "tg:chat:1"}, contexts=CONTEXTS
    )


def test_a_policy_attaches_what_it_names_and_drops_what_it_gets_wrong(
    runner: CodeRunner, code_root: Path
) -> None:
    path = write_code(code_root, POLICY, path=engage_path("desk"))
    first, second, quiet = runner.engage_all(
        [_call("T-1 and T-2 are late", path), _call("also T-2", path), _call("hello", path)]
    )
    assert first.failure is None
    assert first.engage is True
    assert first.attach == (
        ReachEntry(context="ticket", entity="T-1"),
        ReachEntry(context="ticket", entity="T-2"),
    )
    assert len(first.dropped) == 2
    assert "no context 'tickets' in this brain — did you mean 'ticket'?" in first.dropped[0]
    assert "context 'kb' names no entity, so it takes no key ('faq')" in first.dropped[1]
    assert first.log == ("policy of desk reads T-1 and T-2 are late",)
    assert (quiet.engage, quiet.attach, quiet.failure) == (None, (), None)
    # Messages merged into one turn carry every message's attach, each once.
    assert merged_attach([first, second, quiet]) == (
        ReachEntry(context="ticket", entity="T-1"),
        ReachEntry(context="ticket", entity="T-2"),
    )


def test_a_policy_that_raises_decides_nothing(runner: CodeRunner, code_root: Path) -> None:
    path = write_code(
        code_root,
        "from keel.code import define_engage\n\nengage = define_engage(lambda message: message.txt)\n",
        suffix=".engage.py",
    )
    (answer,) = runner.engage_all([_call("T-1", path)])
    assert (answer.engage, answer.attach) == (None, ())
    assert answer.failure is not None
    assert answer.failure.kind == "raise"
    assert answer.failure.line == 3
    assert "message has no attribute 'txt' — did you mean 'text'?" in answer.failure.reason
    assert answer.failure.reason.endswith("the chat rules decide alone and nothing is attached")
