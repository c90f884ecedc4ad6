"""A role's turn settings: resolved once per brain snapshot, and kept for a few snapshots."""

from __future__ import annotations

from keel.brain import Brain, load_brain
from keel.brain.knobs import turn_settings


def test_a_snapshot_in_use_keeps_its_settings_while_others_come_and_go(
    reference_brain: Brain,
) -> None:
    # A run's pinned snapshot serves turns between the live brain's, which edits replace.
    pinned = reference_brain
    held = turn_settings(pinned, pinned.roles["coach"])
    for _ in range(5):  # more edits than snapshots are kept
        live = load_brain(pinned.root)
        first = turn_settings(live, live.roles["coach"])
        assert turn_settings(pinned, pinned.roles["coach"]) is held, "not pushed out"
        assert turn_settings(live, live.roles["coach"]) is first
    assert first.knobs == held.knobs, "the same files give the same settings"
