"""A run's start: what it is a run of, the brain it reads, its reach, role, chat and model.

Decided once, in the run's first step, and kept for its whole life (replays included):

- the pin — the brain's git commit (or the content hash of its files), whose snapshot the
  run reads from then on (`keel.runs.commits`, remembered by `keel.runs.pinning`);
- the reach — the order's override (a gate's answer for a hook with a `<id>.hook.py`, a
  caller's `--reach`), else the entity's `reach:`, else the layout; keyed by the order's
  entity (`--entity`, a gate's `entity`);
- where it speaks — the order's bot, chat and thread (an event's, a caller's), else the
  entity's `bot:`, `chat:` and `thread:`; a run with no chat speaks in `run:<kind>:<id>`;
- the role — the entity's `agent:`, else access.yaml's rule for that bot and chat;
- the model — the order's spec, else the process's (`--model`), else the role's or
  MANIFEST's `model:`, else a provider whose key is set, else none;
- how long an approval card waits (`approvals.timeout`).
"""

from __future__ import annotations

from datetime import UTC, datetime

from keel.brain.knobs import approval_timeout
from keel.code.gates import fire_gate
from keel.errors import LinkError
from keel.link.gather import resolve_role
from keel.link.reach import find_run, run_reach
from keel.link.values import Conversation, TurnRequest
from keel.runs.app import Runtime
from keel.runs.values import RunOrder, RunPlan
from keel.runtime.model_specs import default_model

# The bot a run speaks as when neither its entity nor its order names one.
DEFAULT_BOT = "cli"


def plan_run(runtime: Runtime, order: RunOrder) -> RunPlan:
    """Decide the run's plan; a `KeelError` says why it cannot start."""
    pin = runtime.pin()
    engine = runtime.engine_for(pin)
    brain = engine.brain
    ref = order.ref
    entity = find_run(brain, ref)
    key = order.entity
    if entity.kind == "hook" and entity.code_path is not None:
        gate = fire_gate(engine.runner_for(brain), brain, entity, order.payload)
        if gate.failure is not None:
            raise LinkError(f"the gate of {entity.key} failed: {gate.failure}")
        reach, key = gate.reach, gate.entity
    else:
        reach = run_reach(brain, entity, override=order.reach, key=order.entity)
    conversation = Conversation(
        bot=order.bot or entity.bot or DEFAULT_BOT,
        chat=order.chat or entity.chat or f"run:{entity.key}",
        thread=order.thread if order.chat else (order.thread or entity.thread),
    )
    request = TurnRequest(conversation=conversation, now=datetime.now(UTC), run=ref)
    role = resolve_role(brain, request)
    if order.model is not None:
        model = order.model
    elif runtime.model is not None:
        model = runtime.model.spec
    else:
        model = default_model(role.model.name or brain.manifest.model.name).spec
    return RunPlan(
        run_id=order.id,
        ref=ref,
        role=role.id,
        reach=reach,
        conversation=conversation,
        model=model,
        entity=key,
        feature=entity.feature,
        pin=pin.to_json(),
        timeout_s=approval_timeout(brain, role).total_seconds(),
    )
