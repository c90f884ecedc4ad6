"""A `RunsBackend` held in memory, for the tests of the runs routes and pages.

It is a test double, not runs: it starts nothing and calls no model. It records what it is
asked (runs started, events fired, cards decided) and answers as the protocol says — None
for an unknown id, `Refused` for a card decided twice, `UsageError` for a run of a kind it
cannot start.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from keel.errors import Refused, UsageError
from keel.link.values import RunRef
from keel.web.runs import Card, Run, RunsBackend, RunStart, RunStep, Where

AT = datetime(2026, 11, 29, 19, 0, tzinfo=UTC)


class MemoryRuns(RunsBackend):
    """Runs and cards in dictionaries; one pending card on one waiting run to begin with."""

    def __init__(self) -> None:
        self._ids = itertools.count(2)
        card = Card(
            id="card-1",
            run_id="run-1",
            tool="refund",
            summary="Refund EUR 149.00 to Maria for T-481?",
            risk="dangerous",
            arguments={"ticket": "T-481", "amount": 149},
            asked_at=AT,
        )
        first = Run(
            id="run-1",
            run=RunRef(kind="hook", id="ticket-opened"),
            status="waiting",
            entity="T-481",
            started_at=AT,
            steps=(
                RunStep(name="prepare", status="done", started_at=AT, turn_id=1),
                RunStep(name="refund", status="waiting", detail="waits for card-1"),
            ),
            cards=(card,),
        )
        self.runs_by_id: dict[str, Run] = {first.id: first}
        # Each event fired: its name, payload, where it speaks, model and event id.
        self.fired: list[tuple[str, Mapping[str, Any], Where, str | None, str | None]] = []

    def unavailable(self) -> str | None:
        return None

    def runs(self, *, limit: int) -> Sequence[Run]:
        return list(reversed(self.runs_by_id.values()))[:limit]

    def run(self, run_id: str) -> Run | None:
        return self.runs_by_id.get(run_id)

    def start(self, start: RunStart, *, run_id: str | None = None) -> Run:
        if start.run.kind not in ("heartbeat", "scenario"):
            raise UsageError(f"{start.run.key}: only heartbeats and scenarios start here")
        run = Run(
            id=run_id or f"run-{next(self._ids)}",
            run=start.run,
            status="pending",
            entity=start.entity,
            started_at=AT,
        )
        self.runs_by_id[run.id] = run
        return run

    def fire(
        self,
        event: str,
        payload: Mapping[str, Any],
        where: Where,
        *,
        model: str | None = None,
        event_id: str | None = None,
    ) -> Sequence[Run]:
        self.fired.append((event, payload, where, model, event_id))
        if event != "ticket.opened":
            return ()
        run = Run(
            id=f"run-{next(self._ids)}",
            run=RunRef(kind="hook", id="ticket-opened"),
            status="pending",
            started_at=AT,
        )
        self.runs_by_id[run.id] = run
        return (run,)

    def cards(self) -> Sequence[Card]:
        return [c for r in self.runs_by_id.values() for c in r.cards if c.status == "pending"]

    def decide(
        self,
        card_id: str,
        *,
        approve: bool,
        by: str | None,
        note: str | None,
        person: str | None = None,
    ) -> Card | None:
        for run in self.runs_by_id.values():
            for card in run.cards:
                if card.id != card_id:
                    continue
                if card.status != "pending":
                    raise Refused(f"card {card_id} was {card.status} already")
                decided = replace(
                    card,
                    status="approved" if approve else "denied",
                    decided_at=AT,
                    decided_by=person or by,
                    note=note,
                )
                cards = tuple(decided if c.id == card_id else c for c in run.cards)
                self.runs_by_id[run.id] = replace(
                    run, cards=cards, status="running" if approve else "cancelled"
                )
                return decided
        return None
