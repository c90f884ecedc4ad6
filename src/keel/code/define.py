"""What brain code defines: a context's code half, a hook's gate, a chat policy, a pipeline.

Brain code lives beside its spec and exports one value made by these functions, under a
name fixed by the kind of file::

    # features/support/ticket.context.py        -> context = define_context(...)
    import re
    from keel.code import define_context

    def match(turn, ctx):
        found = re.search(r"\\bT-\\d+\\b", turn.input)
        return {"entity": found.group(0)} if found else None

    async def render(entity, ctx):
        rows = ctx.query("SELECT due FROM sla WHERE ticket_id = :id", {"id": entity})
        return [{"key": "sla", "text": f"due {rows[0]['due']}"}] if rows else []

    context = define_context(match=match, render=render)

    # features/dutch/skip.hook.py               -> hook = define_gate(gate)
    hook = define_gate(lambda event, ctx: {"reach": [{"context": event["skill"]}]})

    # constitution/nova.engage.py               -> engage = define_engage(fn)
    @define_engage
    def engage(message, ctx):
        found = re.search(r"\\bT-\\d+\\b", message.text or "")
        if found is None:
            return None  # no verdict: the bot's chat rules decide
        return {"engage": True, "attach": [{"context": "ticket", "entity": found.group(0)}]}

    # features/sales/outreach.pipeline.py       -> pipeline = define_pipeline(run)
    from keel.code import TerminalError, define_pipeline

    @define_pipeline
    async def pipeline(ctx, vars):
        if "prospect" not in vars:
            raise TerminalError("outreach needs vars.prospect")  # the run fails, no retry
        await ctx.bind_context(context="prospect", entity=vars.prospect, chat=vars.chat)
        return await ctx.run_agent(agent="sdr", prompt="Draft the first touch.")

Every function but a pipeline's may take its `ctx` argument or leave it out (`match(turn)` is
fine); a pipeline is `async def run(ctx, vars)` (see `keel.code.pipelines`).

The two exceptions here belong to pipelines: brain code raises `TerminalError` to fail its
run for good, and catches `CallFailed` when Keel refused one of its `ctx` calls.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Match = Callable[..., Any]
Render = Callable[..., Any]
Gate = Callable[..., Any]
Engage = Callable[..., Any]
PipelineRun = Callable[..., Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextCode:
    """The code half of a context: `match` links a turn, `render` adds sections."""

    match: Match | None = None
    render: Render | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class HookGate:
    """A hook's gate: decides what one fire is a run of (its reach, its entity)."""

    gate: Gate


@dataclass(frozen=True, slots=True, kw_only=True)
class EngagePolicy:
    """A bot's chat policy: whether to answer a message, and which contexts it attaches."""

    engage: Engage


@dataclass(frozen=True, slots=True, kw_only=True)
class Pipeline:
    """A scenario's steps: `run(ctx, vars)`, usually `async`, called by the runs worker."""

    run: PipelineRun


def define_context(*, match: Match | None = None, render: Render | None = None) -> ContextCode:
    """Declare a context's code; export the result as `context` from `<id>.context.py`."""
    if match is None and render is None:
        raise TypeError("define_context needs match=, render= or both")
    for name, fn in (("match", match), ("render", render)):
        if fn is not None and not callable(fn):
            raise TypeError(f"define_context: {name} must be a function, got {type(fn).__name__}")
    return ContextCode(match=match, render=render)


def define_gate(gate: Gate) -> HookGate:
    """Declare a hook's gate; export the result as `hook` from `<id>.hook.py`."""
    _callable("define_gate", gate)
    return HookGate(gate=gate)


def define_engage(engage: Engage) -> EngagePolicy:
    """Declare a bot's chat policy; export it as `engage` from `constitution/<bot>.engage.py`."""
    _callable("define_engage", engage)
    return EngagePolicy(engage=engage)


def define_pipeline(run: PipelineRun) -> Pipeline:
    """Declare a scenario's steps; export them as `pipeline` from `<id>.pipeline.py`."""
    _callable("define_pipeline", run)
    return Pipeline(run=run)


class TerminalError(Exception):
    """Raised by a pipeline to fail its run with this message, and never retry it.

    Any other exception fails the run too, reported with its line; this one says that
    running again cannot help (the vars are wrong, the entity is gone).
    """


class CallFailed(Exception):
    """A pipeline's `ctx` call that Keel could not carry out (a send refused, say).

    The message is Keel's reason; `call` names the ctx method (`send`, `run_agent`, ...)
    and `kind` the kind of error Keel raised (`Refused`, `LinkError`, ...). Catch it to
    go on without that step; left uncaught, it fails the run.
    """

    def __init__(self, message: str, *, call: str = "", kind: str = "") -> None:
        super().__init__(message)
        self.call = call
        self.kind = kind


def _callable(name: str, fn: object) -> None:
    if not callable(fn):
        raise TypeError(f"{name} needs a function, got {type(fn).__name__}")
