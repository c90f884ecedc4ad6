"""Fuzzing the loader: no brain file, however mangled, crashes, hangs or takes the rest down.

Each example writes a small valid brain with one file replaced by a mangled one (see
`tests/brain/fuzzing.py`) and checks that loading never raises, that every good file still
loads, that the mangled file either loads or is a skip with a reason, that every setting
that loaded lies within its bounds and every text that loaded can be stored and printed,
that access answers every chat without raising (and refuses the chats of its failed
rules), and that doctor reports it all without raising. `KEEL_FUZZ=long` (`scripts/fuzz`)
runs thousands of examples; CI runs a bounded, reproducible set.

The files that once crashed or hung every command are run as explicit cases in a
subprocess with a timeout and a memory limit (`tests/brain/catastrophes.py`), so a
regression fails the test instead of hanging or killing the suite.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from keel.brain import Brain, load_brain
from keel.brain import limits as bounds
from keel.brain.knobs import SectionBudgets, context_chars, context_keep, model_limits, turn_knobs
from keel.brain.specs import ContextsBudget, ModelSpec
from keel.doctor import run_doctor
from tests.brain.catastrophes import CASES
from tests.brain.fuzzing import GOOD_FILES, KINDS, PROFILE, Kind, fuzzed_file

REPO = Path(__file__).resolve().parents[2]
CHATS = ("tg:chat:-1", "tg:chat:-2", "tg:chat:-3", "tg:chat:-9", "default", "dm", "")
BOTS = ("nova", "desk", "other")


def write(root: Path, files: Mapping[str, str | bytes]) -> None:
    for rel, content in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")


@pytest.mark.parametrize("kind", [pytest.param(k, id=k.name) for k in KINDS])
@settings(settings.get_profile(PROFILE))
@given(data=st.data())
def test_a_mangled_file_costs_only_itself(kind: Kind, data: st.DataObject) -> None:
    content = data.draw(fuzzed_file(kind), label="content")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "brain"
        write(root, {**GOOD_FILES, kind.path: content})
        brain = load_brain(root)
        report = run_doctor(brain, schema=None)
    assert {"good"} <= set(brain.contexts), brain.skips
    assert {"helper"} <= set(brain.roles), brain.skips
    assert "heartbeat:beat" in brain.entities, brain.skips
    skipped = [s.reason.split(" — ")[0][:40] for s in brain.skips if s.path == kind.path]
    event(f"skipped: {skipped[0]}" if skipped else "loaded")
    assert_loaded_or_skipped(brain, kind)
    assert_within_bounds(brain)
    assert_access_answers(brain, kind)
    for skip in brain.skips:
        assert skip.reason, skip
        str(skip).encode("utf-8")
    json.dumps(report.to_json(), ensure_ascii=False).encode("utf-8")


def assert_loaded_or_skipped(brain: Brain, kind: Kind) -> None:
    skipped = [s for s in brain.skips if s.path == kind.path]
    loaded = {
        "context": "fuzzed" in brain.contexts,
        "role": "fuzzed" in brain.roles,
        "heartbeat": "heartbeat:fuzzed" in brain.entities,
        "manifest": brain.manifest.path == kind.path and brain.manifest.broken is None,
        "access": brain.access.path == kind.path and brain.access.broken is None,
    }[kind.name]
    if kind.name == "access":
        # access.yaml is always there: whole, with failed rules (each a skip), or broken.
        assert brain.access.path == kind.path
        failed = brain.access.failed or brain.access.broken is not None
        assert bool(skipped) == bool(failed), (skipped, brain.access)
    else:
        assert loaded != bool(skipped), (loaded, skipped)


def assert_within_bounds(brain: Brain) -> None:
    manifest = brain.manifest
    budgets = [manifest.contexts, *(r.contexts_budget for r in brain.roles.values())]
    for budget in budgets:
        within(budget.chars, bounds.CHARS)
        within(budget.max_active, bounds.MAX_ACTIVE)
        within(budget.turn_chars, bounds.TURN_CHARS)
        within(budget.keep, bounds.KEEP)
        within(budget.code_timeout_ms, bounds.CODE_TIMEOUT_MS)
    for model in [manifest.model, *(r.model for r in brain.roles.values())]:
        within(model.window, bounds.MODEL_WINDOW)
        within(model.output_reserve, bounds.OUTPUT_RESERVE)
        within(model.input_allocation, bounds.INPUT_ALLOCATION)
    for context in brain.contexts.values():
        within(context.chars, bounds.CHARS)
        within(context.keep, bounds.KEEP)
    sections = [*manifest.sections, *(s for r in brain.roles.values() for s in r.sections)]
    for _, tokens in sections:
        within(tokens, bounds.SECTION_BUDGET)
    within(manifest.state_rows, bounds.STATE_ROWS)
    within(manifest.retention_days, bounds.RETENTION_DAYS)
    assert 0 <= manifest.content_probe_seconds <= bounds.CONTENT_PROBE_SECONDS.high
    # What a turn does with them: none of this may raise.
    timedelta(days=manifest.retention_days)
    for role in brain.roles.values():
        turn_knobs(role, manifest)
        model_limits(role, manifest)
        SectionBudgets.of(role, manifest)("render.queue")
        for context in brain.contexts.values():
            assert context_chars(context, role, manifest) <= bounds.CHARS.high
            assert context_keep(context, role, manifest) <= bounds.KEEP.high
    for text in texts(brain):
        assert "\x00" not in text
        text.encode("utf-8")


def within(value: int | None, allowed: bounds.Range) -> None:
    if value is not None:
        assert not isinstance(value, bool)
        assert allowed.low <= value <= allowed.high, (value, allowed)


def texts(value: Any) -> Iterator[str]:
    """Every string a loaded spec holds, walking dataclasses, mappings and sequences."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Brain):
        for part in (value.manifest, value.access, value.contexts, value.roles, value.entities):
            yield from texts(part)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for item in dataclasses.fields(value):
            yield from texts(getattr(value, item.name))
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from texts(key)
            yield from texts(item)
    elif isinstance(value, (tuple, list, frozenset, set)):
        for item in value:
            yield from texts(item)


def assert_access_answers(brain: Brain, kind: Kind) -> None:
    access = brain.access
    for bot in BOTS:
        for chat in CHATS:
            for dm in (False, True):
                refusal = access.refusal(bot, chat, dm=dm)
                if access.broken is not None:
                    assert refusal is not None
                rule = access.rule_for(bot, chat, dm=dm)
                if rule is not None and refusal is None:
                    assert rule.bot == bot
    for failure in access.failed:
        assert failure.problems
        if failure.chat is not None:
            assert access.room_refusal(failure.chat) is not None
            for bot in BOTS:
                assert access.refusal(bot, failure.chat) is not None
    if kind.name != "access":
        assert access.broken is None
        assert access.failed == ()


def test_the_default_budgets_are_none() -> None:
    # The bounds walk above treats None as "not set": the defaults must really be unset.
    assert ContextsBudget().chars is None
    assert ModelSpec().window is None


# -- the files that once brought everything down ---------------------------------------


def test_no_file_that_once_crashed_or_hung_every_command_does_so_now() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tests.brain.catastrophes"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    results = {r["case"]: r for r in map(json.loads, result.stdout.splitlines())}
    assert set(results) == set(CASES), result.stderr[-2000:]
    for name, found in results.items():
        assert found["contexts"] == ["good"], name
        assert found["roles"] == ["helper"], name
        bad = [skip for skip in found["skips"] if skip[0] == found["bad"]]
        assert bad, (name, found["skips"])
        assert all(skip[2] for skip in bad), name
        assert found["broken_access"] == name.startswith("access-"), name
        # A guard against a hang or a quadratic parse, not a benchmark: each takes a few
        # milliseconds (scripts/fuzz prints the times).
        assert found["seconds"] < 5, (name, found["seconds"])
