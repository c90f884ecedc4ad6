"""A role's turn settings: resolved once per brain snapshot, and kept for a few snapshots."""

from __future__ import annotations

from keel.brain import Brain, load_brain
from keel.brain.knobs import turn_settings


def test_two_snapshots_used_in_turn_keep_their_own_settings(reference_brain: Brain) -> None:
    # A live brain and a snapshot a run is pinned to serve turns side by side.
    pinned = load_brain(reference_brain.root)
    live_coach, pinned_coach = reference_brain.roles["coach"], pinned.roles["coach"]
    live = turn_settings(reference_brain, live_coach)
    held = turn_settings(pinned, pinned_coach)
    assert held is not live
    assert turn_settings(reference_brain, live_coach) is live, "not pushed out by the other"
    assert turn_settings(pinned, pinned_coach) is held
    assert live.knobs == held.knobs, "the same files give the same settings"
