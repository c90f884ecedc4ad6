"""Brain code on a turn: match links, render adds sections, and every failure fails closed.

One brain holds a context for each way code can go wrong. A turn of a role that admits
them all still completes: what worked attached, what failed linked or rendered nothing,
each failure in the turn's warnings with its file — on SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from keel.link.values import Conversation, TurnRequest
from keel.runtime.engine import Engine
from tests.conftest import WriteBrain

NOW = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
ROOM = Conversation(bot="b", chat="c:1")
FEATURE = "features/f"


def context(ident: str, code: str, *, entity: bool = True, chars: int = 2000) -> dict[str, str]:
    key = "entity: ticket id\n" if entity else ""
    front = f"---\n{key}when: [ask]\ndescription: {ident}.\nchars: {chars}\ncodeTimeoutMs: 400\n"
    return {
        f"{FEATURE}/{ident}.context.md": f"{front}---\nThe {ident} rules.\n",
        f"{FEATURE}/{ident}.context.py": "from keel.code import define_context\n\n" + code,
    }


MATCH_T = (
    "import re\n\ndef match(turn, ctx):\n"
    "    found = re.search(r'T-\\d+', turn.input)\n"
    "    return {'entity': found.group(0)} if found else None\n\n"
)
CODE = {
    **context(
        "good",
        MATCH_T
        + "def render(ticket, ctx):\n    ctx.log('rendering', ticket)\n"
        + "    return [{'key': 'sla', 'text': f'{ticket} due today.'}]\n\n"
        + "context = define_context(match=match, render=render)\n",
    ),
    **context(
        "raises",
        "def match(turn, ctx):\n    raise ValueError('boom')\n\ncontext = define_context(match=match)\n",
    ),
    **context(
        "hangs",
        "def match(turn, ctx):\n    while True:\n        pass\n\ncontext = define_context(match=match)\n",
    ),
    **context(
        "shape",
        "def match(turn, ctx):\n    return 'yes'\n\ncontext = define_context(match=match)\n",
    ),
    **context(
        "unkeyed",
        "def match(turn, ctx):\n    return {'entity': 'T-1'}\n\ncontext = define_context(match=match)\n",
        entity=False,
    ),
    **context("broken", "def match(turn, ctx)\n    return {}\n"),
    **context(
        "exits",
        "import os\n\ndef match(turn, ctx):\n    os._exit(3)\n\ncontext = define_context(match=match)\n",
    ),
    **context(
        "prints",
        "def match(turn, ctx):\n    print('noise on stdout')\n    return {}\n\n"
        "context = define_context(match=match)\n",
        entity=False,
    ),
    **context(
        "big",
        MATCH_T
        + "def render(ticket, ctx):\n    return [{'key': 'log', 'text': 'x' * 5000}]\n\n"
        + "context = define_context(match=match, render=render)\n",
        chars=600,
    ),
    **context(
        "badrender",
        MATCH_T
        + "def render(ticket, ctx):\n    raise RuntimeError('no sla table')\n\n"
        + "context = define_context(match=match, render=render)\n",
    ),
}
ROLE = {
    f"{FEATURE}/desk.agent.md": (
        "---\ncontexts: ['*']\ncapabilities: [context:read]\n"
        "contexts_budget: { maxActive: 10, turnChars: 100000 }\n---\nThe desk.\n"
    ),
    "constitution/access.yaml": "bots:\n  b:\n    default: { role: desk }\n",
}


@pytest.fixture
def engine(write_brain: WriteBrain, database_url: str) -> Iterator[Engine]:
    with Engine(write_brain({**CODE, **ROLE}), database_url, watch=False) as engine:
        yield engine


def test_every_failure_fails_closed_and_the_turn_goes_on(
    engine: Engine, capfd: pytest.CaptureFixture[str]
) -> None:
    prepared, assembly = engine.prepare(TurnRequest(conversation=ROOM, now=NOW, input="T-7 late?"))
    attached = {(a.link.context, a.link.entity, a.link.kind) for a in prepared.attached}
    assert attached == {
        ("good", "T-7", "code"),
        ("prints", None, "code"),
        ("big", "T-7", "code"),
        ("badrender", "T-7", "code"),
    }
    warnings = "\n".join(prepared.log)
    for failing, said in [
        ("raises", "ValueError: boom"),
        ("hangs", "ran past its 400 ms timeout"),
        ("shape", "returned a str"),
        ("unkeyed", "names no entity"),
        ("broken", "syntax error"),
        ("exits", "os._exit"),
        ("badrender", "RuntimeError: no sla table"),
    ]:
        assert f"features/f/{failing}.context.py" in warnings, (failing, warnings)
        assert said in warnings, (failing, said, warnings)
    blocks = {a.link.context: a.block.text for a in prepared.attached}
    assert '<section name="sla">\nT-7 due today.\n</section>' in blocks["good"]
    assert (
        '<section name="log">not shown: no room left in this context — raise chars: 600 of '
        "features/f/big.context.md</section>"
    ) in blocks["big"]
    assert "code sections are missing" in blocks["badrender"]
    assert assembly.fit.ok
    assert "noise on stdout" not in capfd.readouterr().out, "brain code never prints to ours"
    # What it printed is the turn's to show, naming the file and the function.
    assert "features/f/prints.context.py: match said: noise on stdout" in prepared.log
    assert "features/f/good.context.py: render said: rendering T-7" in prepared.log


def test_code_answers_are_journaled_with_the_turn(engine: Engine) -> None:
    prepared, _ = engine.prepare(TurnRequest(conversation=ROOM, now=NOW, input="no ticket here"))
    assert prepared.journal is not None
    answers = {c.context: (c.answer, c.failure) for c in prepared.journal.code}
    assert answers["good"] == ("no", None)
    assert answers["prints"] == ("yes", None)
    # The failure as the turn said it: with its file and line, for `keel explain`.
    answer, failure = answers["raises"]
    assert answer is None
    assert failure == (
        "features/f/raises.context.py:4: match raised ValueError: boom — fix the code; until "
        "then it links nothing"
    )


def test_an_edited_match_is_used_on_the_next_turn(engine: Engine) -> None:
    request = TurnRequest(conversation=ROOM, now=NOW, input="hello")
    first, _ = engine.prepare(request)
    assert "shape" not in {a.link.context for a in first.attached}
    path = engine.brain.root / FEATURE / "shape.context.py"
    path.write_text(
        "from keel.code import define_context\n\n"
        "def match(turn, ctx):\n    return {'entity': 'T-9'}\n\n"
        "context = define_context(match=match)\n"
    )
    second, _ = engine.prepare(request)
    assert ("shape", "T-9") in {(a.link.context, a.link.entity) for a in second.attached}


def test_the_workers_are_reconfigured_only_when_the_brains_code_settings_change(
    write_brain: WriteBrain, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = "constitution/MANIFEST.yaml"
    probe = "contentProbe:\n  context: 0\n"
    root = write_brain({**CODE, **ROLE, manifest: probe + "code:\n  network: true\n"})
    with Engine(root, database_url, watch=False) as engine:
        runner = engine.code
        assert runner is not None
        calls: list[object] = []
        monkeypatch.setattr(runner, "reconfigure", calls.append)
        request = TurnRequest(conversation=ROOM, now=NOW, input="hello")
        engine.prepare(request)
        engine.prepare(request)
        assert calls == [], "the same snapshot's code: on every turn"
        (root / manifest).write_text(probe + "code:\n  env:\n    - TZ_REGION\n")
        engine.prepare(request)
        assert calls == [engine.brain.manifest.code], "an edit's code: reaches the workers once"
        assert engine.brain.manifest.code.env == ("TZ_REGION",)
