"""A run's record, as `keel runs BRAIN show ID --json` prints it and the service answers.

Read from Keel's tables only (no DBOS): the run's row, its steps with their timings, the
turns it took (each as `keel turn --json` prints one), the messages it sent (as `keel
messages --json` shows one), its approval cards and what the provider reported each of
its model requests cost.

    {"id", "kind", "run", "entity_id", "entity", "status", "role", "reach", "bot", "chat",
     "thread", "pin", "model", "created_at", "updated_at", "error",
     "steps": [{"seq", "name", "status", "started_at", "finished_at", "ms", "turn_id",
                "detail"}],
     "turns": [...], "messages": [...], "cards": [{"id", "status", ...}],
     "usage": {"input_tokens", "cached_tokens", "output_tokens", "requests"}}
"""

from __future__ import annotations

from typing import Any

from keel.runs.approvals import card_json
from keel.store import Tx
from keel.store.run_values import RunRow, StepRow
from keel.store.runs import reach_json


def run_summary(run: RunRow) -> dict[str, Any]:
    """One run in a listing: what it is, how it stands."""
    return {
        "id": run.id,
        "kind": run.kind,
        "run": run.key,
        "entity": run.entity,
        "status": run.status,
        "role": run.role,
        "chat": run.chat,
        "created_at": run.created_at.isoformat(),
        "updated_at": run.updated_at.isoformat(),
        "error": run.error,
    }


def run_record(tx: Tx, run_id: str) -> dict[str, Any] | None:
    """The whole record of one run, or None for an id no run has."""
    run = tx.run(run_id)
    if run is None:
        return None
    steps = tx.steps(run_id)
    usage = tx.usage(run_id=run_id)
    return {
        **run_summary(run),
        "entity_id": run.entity_id,
        "reach": reach_json(run.reach),
        "bot": run.bot,
        "thread": run.thread,
        "pin": run.pin,
        "model": run.model,
        "executor": run.executor,
        "steps": [step_json(s) for s in steps],
        "turns": [s.output["turn"] for s in steps if s.name == "prepare" and _has(s, "turn")],
        "messages": [m.to_json() for m in tx.sent_messages(run_id=run_id, limit=1000)],
        "cards": [card_json(c) for c in tx.cards(run_id=run_id)],
        "refused": any(
            isinstance(s.output, dict) and s.output.get("refused") is True for s in steps
        ),
        "usage": {
            "input_tokens": sum(u.usage.input_tokens for u in usage),
            "cached_tokens": sum(u.usage.cached_tokens for u in usage),
            "output_tokens": sum(u.usage.output_tokens for u in usage),
            "requests": len(usage),
        },
    }


def step_json(step: StepRow) -> dict[str, Any]:
    """One step as a run's record shows it: its name, status, timing and a line of detail."""
    took = None
    if step.finished_at is not None:
        took = round((step.finished_at - step.started_at).total_seconds() * 1000, 1)
    return {
        "seq": step.seq,
        "name": step.name,
        "status": step.status,
        "started_at": step.started_at.isoformat(),
        "finished_at": None if step.finished_at is None else step.finished_at.isoformat(),
        "ms": took,
        "turn_id": step.turn_id,
        "detail": step.detail,
    }


def _has(step: StepRow, key: str) -> bool:
    return isinstance(step.output, dict) and key in step.output
