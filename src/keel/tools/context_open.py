"""`context_open(name, entity?)`: the agent opens a context mid-turn and reads it at once.

The answer is what the turn's tail would carry for it — the instructions and the views as
of now, fitted into the context's `chars`. Instructions longer than `chars` are delivered
whole all the same, every view a one-line stub after them: the agent asked for it by name,
and a stub that promised it must not be refused. The
context then rides the conversation's next `keep` turns, its views read afresh each time.
The same gates as a turn's ask link apply: the role must be able to call the tool, and the
context must be one the role admits, the turn's run reaches, or access.yaml binds here;
the room's pin holds it to the bound entity.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from keel.brain.knobs import turn_settings
from keel.brain.snapshot import Brain
from keel.brain.specs import ReachEntry
from keel.budget.blocks import render_views
from keel.code.runner import CodeRunner
from keel.errors import Refused
from keel.link.bindings import pin, tenant_of
from keel.link.gather import link_turn
from keel.link.values import Stored, TurnRequest
from keel.store import Tx
from keel.tools.registry import Tool, ToolContext
from keel.turn.blocks import read_link_views
from keel.turn.code import Rendered, render

STRING = {"type": "string"}


def open_context(
    brain: Brain,
    tx: Tx,
    request: TurnRequest,
    entry: ReachEntry,
    code: CodeRunner | None = None,
) -> str:
    """The opened context's block, with what its code renders; `Refused` with the reason."""
    conversation = request.conversation
    turn = max(tx.current_turn(conversation), 1)
    stored = Stored(turn=turn, bindings=tx.bindings_here(conversation))
    # Only the open is asked for; the run is kept because a context it reaches may be opened.
    asked = replace(request, reply_to=(), attach=(), open=(entry,))
    result = link_turn(brain, asked, stored)
    refusal = next((r for r in result.refused if r.kind == "ask"), None)
    if refusal is not None:
        raise Refused(refusal.reason)
    # The pair asked for, after the room's pin; a stronger link (the run reaching it, a chat
    # binding) may carry that same pair.
    wanted = (entry.context, pin(entry.context, entry.entity, result.pins).entity)
    link = next((k for k in result.links if k.pair == wanted), None)
    if link is None:
        raise Refused(f"'{entry.context}' could not be opened here")
    noun = brain.contexts[link.context].entity
    if link.entity is None and noun is not None:
        # Its views are filtered by the key: opened without one, they would show nothing.
        raise Refused(f"'{link.context}' is keyed by {noun} — open it with entity: the {noun}")
    settings = turn_settings(brain, brain.roles[result.role])
    tx.keep(conversation, [k for k in result.keep if k.context == entry.context])
    tenant = tenant_of(brain, result.pins)
    views = read_link_views(brain, link, tx.connection, settings.knobs.rows, tenant)
    rendered = Rendered()
    if code is not None:
        rendered = render(code, brain, settings, (link,), tx.connection, tenant)
    # Asked for by name: instructions longer than its chars are delivered whole, views cut.
    block = render_views(brain, settings, link, views, rendered.answers.get(link.pair), opened=True)
    if block is None:  # `opened` always gives one: this says so to the type checker
        raise Refused(f"'{link.context}' could not be rendered")
    return block.text


def _run(ctx: ToolContext, args: Mapping[str, Any]) -> str:
    entry = ReachEntry(context=args["name"], entity=args.get("entity"))
    return open_context(ctx.brain, ctx.tx, ctx.request, entry, ctx.code)


CONTEXT_OPEN = Tool(
    name="context_open",
    description="Read a context now; it stays a few turns.",
    parameters={
        "type": "object",
        "properties": {"name": STRING, "entity": STRING},
        "required": ["name"],
    },
    capability="context:read",
    risk="safe",
    run=_run,
)
