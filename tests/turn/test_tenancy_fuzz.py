"""Fuzzing MANIFEST against a pinned room: however the file is mangled, no other tenant's
rows reach the room.

Each example writes a mangled MANIFEST.yaml (see `tests/brain/fuzzing.py`) that started as
one naming tenancy, loads the brain beside the same database, and reads the room pinned to
acme three ways: a run's context, an open of another role's context, the role's own state.
The file either loads with its tenancy as written, or fails — and then the room shows
acme's rows or none, with the reason. Only a mangling that still loads and names another
tenancy on purpose (a valid file saying something else) is left out, and counted.
`KEEL_FUZZ=long` (`scripts/fuzz`) runs thousands of examples; CI a bounded, reproducible set.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from keel.brain.constitution import Tenancy
from keel.link.values import Conversation, RunRef, TurnRequest
from keel.runtime.engine import Engine
from tests.brain.fuzzing import MANIFEST, PROFILE, Kind, fuzzed_file
from tests.runtime.driver import view_rows
from tests.turn.test_tenancy import BRAIN

ACME = Conversation(bot="b", chat="c:acme")
NOW = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
TENANCY = Tenancy(context="client", column="client_slug")
KIND = Kind(
    "manifest",
    "constitution/MANIFEST.yaml",
    {**MANIFEST, "tenancy": {"context": "client", "column": "client_slug"}},
    False,
)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    root = tmp_path_factory.mktemp("tenancy-fuzz")
    brain = root / "brain"
    for rel, content in BRAIN.items():
        (brain / rel).parent.mkdir(parents=True, exist_ok=True)
        (brain / rel).write_text(str(content), encoding="utf-8")
    url = f"sqlite:///{(root / 'state.db').as_posix()}"
    with Engine(brain, url, watch=False) as engine:
        engine.apply_state()
    yield brain, url
    shutil.rmtree(root, ignore_errors=True)


BASE = settings.get_profile(PROFILE)


# Each example loads a brain and reads a room three ways: fewer than the loader's fuzz.
@settings(BASE, max_examples=25 if PROFILE == "ci" else BASE.max_examples)
@given(data=st.data())
def test_a_mangled_manifest_never_shows_a_pinned_room_another_tenants_rows(
    home: tuple[Path, str], data: st.DataObject
) -> None:
    brain, url = home
    (brain / KIND.path).write_bytes(data.draw(fuzzed_file(KIND)))
    with Engine(brain, url, watch=False) as engine:
        manifest = engine.brain.manifest
        if manifest.broken is None and manifest.tenancy != TENANCY:
            event("loaded, naming another tenancy")
            return
        event("broken" if manifest.broken is not None else "loaded")
        run = RunRef(kind="heartbeat", id="sweep")
        prepared, _ = engine.prepare(TurnRequest(conversation=ACME, now=NOW, run=run))
        texts = [a.block.text for a in prepared.attached]
        texts.append(engine.open(TurnRequest(conversation=ACME, now=NOW, role="other"), "notes"))
        own, _ = engine.prepare(TurnRequest(conversation=ACME, now=NOW, role="other"))
    # The views with the tenant's column (note_list and desk_count have none: global).
    notes = [view_rows(t, "all_notes") for t in texts if '<view name="all_notes"' in t]
    seen = [row[2] for rows in notes for row in rows or ()]
    seen += [row[1] for r in own.renders if r.view == "desk_notes" for row in r.rows]
    assert set(seen) <= {"acme note"}, (manifest.broken, seen)
