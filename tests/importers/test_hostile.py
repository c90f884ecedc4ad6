"""Hostile repositories: `keel import` ends, writes only inside the brain, runs nothing.

Each case of `tests/importers/hostile.py` — a rule file linked to a secret or to
`/dev/zero`, a FIFO, YAML nested 500 deep, a late NUL, a name that is not UTF-8, folder
names and values that are YAML keys and Python statements — and random trees mixing them
under hostile folder names, is imported in a subprocess (one for the cases, one per batch
of trees), then the brain is checked by doctor and asked for a turn. For each: the import ends (the subprocess's
timeout only guards the suite against a hang; no time is asserted), nothing outside the
brain changed, the secret did not reach the brain, no payload ran (its canary file does not
exist), each bad file is listed as skipped (or refused) with its reason, every good file
was imported, and the brain loads every file the import wrote.

`KEEL_FUZZ=long` (`scripts/fuzz`) builds many more random trees than CI's bounded,
seeded set.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.brain.fuzzing import PROFILE
from tests.importers.hostile import CASES, FEATURE

REPO = Path(__file__).resolve().parents[2]
TREES = 6 if PROFILE == "ci" else max(1, int(os.environ.get("KEEL_FUZZ_EXAMPLES", "5000")) // 25)
BATCH = TREES if PROFILE == "ci" else 20  # random trees per subprocess


def outcomes(cases: list[str]) -> list[dict[str, Any]]:
    """What importing each case gave, from a subprocess (see `hostile.py`)."""
    result = subprocess.run(
        [sys.executable, "-m", "tests.importers.hostile", *cases],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120 + 30 * len(cases),  # a guard against a hang, not a benchmark
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    found = [json.loads(line) for line in result.stdout.splitlines()]
    assert [f["case"] for f in found] == cases, result.stderr[-3000:]
    return found


def check(outcome: dict[str, Any]) -> None:
    assert outcome["error"] is None, outcome.get("traceback")
    assert outcome["outside_changed"] == [], "written outside the brain"
    assert outcome["leaked"] == [], "the secret reached the brain"
    assert outcome["canary"] == [], "a payload ran"
    for how, path, reason in outcome["expected"]:
        if how == "error":
            assert reason in (outcome["usage_error"] or ""), outcome["usage_error"]
            continue
        listed = dict(map(tuple, outcome[how]))
        assert path in listed, (how, path, outcome[how])
        assert reason in listed[path], (path, listed[path])
    if outcome["usage_error"] is not None:
        return
    for path, message in outcome["skipped"] + outcome["refused"]:
        assert message, path
    assert set(outcome["imported"]) <= set(outcome["rules"]), outcome["skipped"]
    # The brain loads every file the import wrote; what a case damaged itself aside.
    ours = f"features/{FEATURE}/"
    damaged = {path for how, path, _ in outcome["expected"] if how == "refused"}
    wrote = [s for s in outcome["brain_skips"] if s[0].startswith(ours) and s[0] not in damaged]
    assert wrote == []
    failed = [f for f in outcome["doctor_fails"] if f.startswith(ours)]
    assert [f for f in failed if f.split(": ", 1)[0] not in damaged] == []


@pytest.fixture(scope="module")
def cases() -> dict[str, dict[str, Any]]:
    """Every case's outcome, from one subprocess (a failure is kept for every case)."""
    return {outcome["case"]: outcome for outcome in outcomes(list(CASES))}


@pytest.mark.parametrize("case", [pytest.param(c, id=c) for c in CASES])
def test_a_hostile_file_is_a_skip_not_a_breach(cases: dict[str, dict[str, Any]], case: str) -> None:
    check(cases[case])


@pytest.mark.parametrize(
    "seeds",
    [
        pytest.param(list(range(start, min(start + BATCH, TREES))), id=f"trees-{start}")
        for start in range(0, TREES, BATCH)
    ],
)
def test_a_random_hostile_tree_is_imported_as_data(seeds: list[int]) -> None:
    for outcome in outcomes([f"tree-{seed}" for seed in seeds]):
        check(outcome)
