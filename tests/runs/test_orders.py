"""Orders for runs: what firing an event nobody hears says."""

from __future__ import annotations

import pytest

from keel.brain import load_brain
from keel.runs import orders
from keel.runs.orders import hook_orders, unheard
from tests.conftest import WriteBrain

CONTEXT = "---\ndescription: Tickets.\nwhen: [run, ask]\n---\nBe kind.\n"
ROLE = "---\ncontexts: [ticket]\ncapabilities: [context:read]\n---\nYou are support.\n"
SCENARIO = (
    "---\nagent: support\nbot: desk\nchat: tg:chat:-1\nreach: [ticket]\nhooks:\n"
    "  - { event: ticket.closed, id: closing }\n"
    "---\nHandle the ticket.\n"
)


def test_an_event_only_a_skipped_inline_hook_hears_names_that_hook_and_the_fix(
    write_brain: WriteBrain,
) -> None:
    root = write_brain(
        {
            "features/support/ticket.context.md": CONTEXT,
            "features/support/support.agent.md": ROLE,
            "features/support/handle.scenario.md": SCENARIO,
            "features/support/closing.hook.md": "---\nevent: x\nagent: support\n---\nGo.\n",
        }
    )
    brain = load_brain(root)
    assert hook_orders(brain, "ticket.closed", {}) == []
    said = str(unheard(brain, "ticket.closed"))
    assert "inline hook 'closing' of scenario 'handle'" in said
    assert "features/support/closing.hook.md" in said
    assert "give it another `id:`" in said


def test_an_event_nobody_hears_suggests_the_nearest_one(write_brain: WriteBrain) -> None:
    root = write_brain(
        {
            "features/support/ticket.context.md": CONTEXT,
            "features/support/support.agent.md": ROLE,
            "features/support/handle.scenario.md": SCENARIO,
        }
    )
    said = str(unheard(load_brain(root), "ticket.closd"))
    assert said.startswith("no hook listens to 'ticket.closd'")
    assert "ticket.closed" in said
    assert "inline hook" not in said


def test_ids_made_here_are_remembered_within_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(orders, "_minted", set())
    monkeypatch.setattr(orders, "_MINTED_BOUND", 3)
    made = [orders.new_id("heartbeat", "beat") for _ in range(3)]
    assert all(orders.first_taken(m) for m in made[1:])
    assert orders._minted == {made[0]}
    more = [orders.new_id("heartbeat", "beat") for _ in range(3)]  # the third starts afresh
    assert not orders.first_taken(made[0]), "forgotten: its run would look, as any other"
    assert orders.first_taken(more[-1])
    assert not orders.first_taken(more[-1]), "taken once"
