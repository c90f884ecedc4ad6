"""Which roles can carry a context: admitted, the agent of a reaching run, or bound there."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from keel.brain import Brain, load_brain
from keel.link.reachable import roles_carrying_contexts

WriteBrain = Callable[[dict[str, str | bytes]], Path]

ROLE = "---\n{front}\n---\nA role.\n"


def test_admitted_run_and_bound_roles_carry_contexts_others_do_not(write_brain: WriteBrain) -> None:
    root = write_brain(
        {
            "features/f/note.context.md": "---\nwhen: [run, ask]\ndescription: A note.\n---\nNotes.\n",
            "features/f/card.context.md": "---\nwhen: [chat]\nentity: id\n---\nA card.\n",
            "features/f/admits.agent.md": ROLE.format(front="contexts: [note]"),
            "features/f/runner.agent.md": ROLE.format(front="contexts: []"),
            "features/f/bound.agent.md": ROLE.format(front="description: Bound."),
            "features/f/plain.agent.md": ROLE.format(front="description: Plain."),
            "features/f/beat.heartbeat.md": "---\nschedule: '0 9 * * *'\nagent: runner\n---\nGo.\n",
            "constitution/access.yaml": (
                "bots:\n  b:\n    chats:\n      'c:1':\n        role: bound\n"
                "        contexts: { card: x }\n"
            ),
        }
    )
    brain = load_brain(root)
    assert brain.skips == ()
    assert roles_carrying_contexts(brain) == {"admits", "runner", "bound"}
    assert roles_carrying_contexts(brain) is roles_carrying_contexts(brain), "kept per snapshot"


def test_two_snapshots_in_use_side_by_side_keep_their_answers(write_brain: WriteBrain) -> None:
    # Each turn asks: a process with two brains must not work the answer out anew each
    # time it turns from one to the other.
    files: dict[str, str | bytes] = {
        "features/f/note.context.md": "---\nwhen: [ask]\ndescription: A note.\n---\nNotes.\n",
        "features/f/admits.agent.md": ROLE.format(front="contexts: [note]"),
    }
    first, second = load_brain(write_brain(files)), load_brain(write_brain(files))
    answer = roles_carrying_contexts(first)
    other = roles_carrying_contexts(second)
    assert answer == other == {"admits"}
    assert roles_carrying_contexts(first) is answer
    assert roles_carrying_contexts(second) is other


def test_a_snapshot_in_use_keeps_its_answer_while_others_come_and_go(
    reference_brain: Brain,
) -> None:
    pinned = reference_brain
    held = roles_carrying_contexts(pinned)
    for _ in range(5):  # more edits than snapshots are kept
        live = load_brain(pinned.root)
        first = roles_carrying_contexts(live)
        assert roles_carrying_contexts(pinned) is held, "not pushed out"
        assert roles_carrying_contexts(live) is first
