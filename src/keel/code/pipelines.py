"""Running a scenario's pipeline: `async def run(ctx, vars)` in a worker, its ctx calls here.

The pipeline runs in a code worker, isolated like every brain function. Each ctx call it
makes (`run_agent`, `bind_context`, `unbind_context`, `send`, `request_approval`,
`await_approval`) comes back to this process as an ask; the caller's `on_call(name, args)`
carries it out — the runs package makes each one a durable step — and its JSON result
goes back to the pipeline. `on_call` runs in the thread that called `run_pipeline`, one
call at a time, in the order the pipeline made them. What it raises:

- a `KeelError` (a send refused, a binding refused, ...): the pipeline sees `CallFailed`
  with that text, and may catch it;
- `TerminalError`: the pipeline sees it too; uncaught, the run fails for good;
- anything else is a bug of the caller: the pipeline is stopped and the error goes on
  out of `run_pipeline`.

**Time.** The pipeline's timeout counts its own work only. When the worker sends an ask
it stops the pipeline's clock and says when (a reading of the machine-wide monotonic
clock); Keel keeps the time that was left and, with its answer, sends the new deadline:
the moment of answering plus that time. Both sides then watch the same deadline again, so
an `on_call` that waits two days for a person's approval costs the pipeline nothing.

**Replays and determinism.** The pipeline itself keeps no state between runs: a replay
runs it again from the start and the caller answers the calls it had made from its
journal. So a pipeline must make the same calls, in the same order, given the same
answers — no clock, no random numbers, no I/O of its own: `ctx.started_at` and
`ctx.random` (seeded with the run's id) stand in for those. This module relies on it
too: when a pipeline's worker is stopped under it (it waited for an answer while another
call hung there, or its process died beside a crash), it runs again on another worker,
and the calls it had made are answered from `PipelineAnswer.calls` without calling
`on_call` again; a call that differs from the record fails the run as not deterministic.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from keel.code.define import TerminalError
from keel.code.values import Failure, Job, Reply
from keel.errors import KeelError, UsageError

if TYPE_CHECKING:
    from keel.code.batches import Pending
    from keel.code.talkback import TalkingPool

# The pipeline's own computing time, by default (the time its ctx calls take is free).
DEFAULT_PIPELINE_TIMEOUT_MS = 10_000
# A pipeline whose worker died beside another call's crash runs again this many times.
_CRASH_RETRIES = 1
# How often a pipeline may lose its worker while it waits for an answer, and run again.
_MAX_MOVES = 10
_STOP = "its run stopped waiting for it"

OnCall = Callable[[str, Mapping[str, Any]], Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class PipelineCall:
    """Run one scenario's pipeline: `vars` as given, `run_id` and `started_at` its run's."""

    scenario: str
    path: str
    vars: Mapping[str, Any]
    run_id: str
    started_at: datetime
    timeout_ms: int = DEFAULT_PIPELINE_TIMEOUT_MS


@dataclass(frozen=True, slots=True, kw_only=True)
class CtxCall:
    """One ctx call a pipeline made, and how it was answered: `result`, or `error`.

    `error_type` names the error's class (`Refused`, `TerminalError`, ...).
    """

    name: str
    args: Mapping[str, Any]
    result: Any = None
    error: str | None = None
    error_type: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "args": dict(self.args),
            "result": self.result,
            "error": self.error,
            "error_type": self.error_type,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CtxCall:
        return cls(
            name=data["name"],
            args=data["args"],
            result=data["result"],
            error=data["error"],
            error_type=data["error_type"],
        )

    def answer(self) -> dict[str, Any]:
        """The answer message's body for this call."""
        if self.error is None:
            return {"value": self.result}
        terminal = self.error_type == "TerminalError"
        return {"error": {"type": self.error_type, "said": self.error, "terminal": terminal}}


@dataclass(frozen=True, slots=True, kw_only=True)
class PipelineAnswer:
    """What a pipeline came to: its return value (JSON) or its failure, and its calls.

    `failure.kind == "terminal"` (also `terminal`) when it raised `TerminalError`: the run
    fails and must not be retried. `calls` lists every ctx call, in order, with its answer.
    """

    path: str
    value: Any = None
    failure: Failure | None = None
    calls: tuple[CtxCall, ...] = ()
    log: tuple[str, ...] = ()

    @property
    def terminal(self) -> bool:
        return self.failure is not None and self.failure.kind == "terminal"

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "value": self.value,
            "failure": None if self.failure is None else self.failure.to_json(),
            "calls": [c.to_json() for c in self.calls],
            "log": list(self.log),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PipelineAnswer:
        failure = data["failure"]
        return cls(
            path=data["path"],
            value=data["value"],
            failure=None if failure is None else Failure.from_json(failure),
            calls=tuple(CtxCall.from_json(c) for c in data["calls"]),
            log=tuple(data["log"]),
        )


def run_pipeline(
    pool: TalkingPool,
    call: PipelineCall,
    on_call: OnCall,
    *,
    replay: Sequence[CtxCall] = (),
) -> PipelineAnswer:
    """Run the pipeline to its end, carrying out its ctx calls with `on_call`.

    `replay`: calls already made, answered from this record (checked to be the same
    calls) before `on_call` is asked anything.
    """
    if call.started_at.tzinfo is None:
        raise UsageError(
            f"the pipeline call for {call.scenario!r} has a naive started_at "
            f"({call.started_at.isoformat()}); give the run's start in UTC"
        )
    job = Job(
        kind="pipeline",
        path=call.path,
        args={
            "scenario": call.scenario,
            "vars": dict(call.vars),
            "run_id": call.run_id,
            "started_at": call.started_at.isoformat(),
        },
        timeout_ms=call.timeout_ms,
    )
    calls = list(replay)
    retries, moves = _CRASH_RETRIES, _MAX_MOVES
    while True:
        pending = pool.launch(job)
        failure = _converse(pool, pending, calls, on_call)
        reply = pending.reply or Reply()
        moved = pending.moved and moves > 0
        if failure is None and (moved or (pending.crowded and retries > 0)):
            if moved:
                moves -= 1
            else:
                retries -= 1
            # Its time is for the pipeline's work, not for a worker to start.
            pool.wait_ready()
            continue
        if failure is None:
            failure = reply.failure
        if failure is None and reply.unplain is not None:
            failure = _shape(call, reply, f"the pipeline returned {reply.unplain}")
        value = reply.value if failure is None else None
        return PipelineAnswer(
            path=call.path, value=value, failure=failure, calls=tuple(calls), log=reply.log
        )


def _converse(
    pool: TalkingPool, pending: Pending, calls: list[CtxCall], on_call: OnCall
) -> Failure | None:
    """Answer the pipeline's asks until it ends; a failure found here (not deterministic)."""
    made = 0
    unanswered: object = None
    finished = False
    try:
        while (ask := pool.next_ask(pending)) is not None:
            unanswered = seq = ask.get("seq")
            name, args = str(ask.get("name")), ask.get("args") or {}
            if made < len(calls):
                before = calls[made]
                if (before.name, _normal(before.args)) != (name, _normal(args)):
                    return _diverged(pending.job.path, made, before, name, args)
                record = before
            else:
                record = _carry_out(name, args, on_call)
                calls.append(record)
            made += 1
            unanswered = None
            pool.answer(pending, seq, record.answer())
        finished = True
        return None
    finally:
        # Leaving early (a diverging call, on_call raised, this thread interrupted): the
        # pipeline is told to stop, at the ask it waits on or its next one, instead of
        # waiting for ever.
        if unanswered is not None:
            pool.answer(pending, unanswered, {"cancel": _STOP})
        if unanswered is not None or not finished:
            pool.abandon(pending)


def _carry_out(name: str, args: Mapping[str, Any], on_call: OnCall) -> CtxCall:
    """Run one ctx call through `on_call`; its record, as the pipeline will see it."""
    try:
        result = on_call(name, args)
    except TerminalError as exc:
        return CtxCall(name=name, args=args, error=str(exc), error_type="TerminalError")
    except KeelError as exc:
        return CtxCall(name=name, args=args, error=str(exc), error_type=type(exc).__name__)
    try:
        # What the pipeline gets is what JSON carries (a tuple arrives as a list), on the
        # first run and on every replay alike.
        result = _normal(result)
    except (TypeError, ValueError) as exc:
        raise UsageError(
            f"on_call answered {name} with a value that is not JSON ({exc}); return plain data"
        ) from None
    _check_result(name, result)
    return CtxCall(name=name, args=args, result=result)


def _check_result(name: str, result: Any) -> None:
    if name == "request_approval" and not isinstance(result, str):
        raise UsageError(
            f"on_call answered request_approval with {type(result).__name__}; "
            "it must return the card's id (a string)"
        )
    if name == "await_approval" and not isinstance(result, bool):
        raise UsageError(
            f"on_call answered await_approval with {type(result).__name__}; "
            "it must return True (approved) or False (denied, or timed out)"
        )


def _normal(value: Any) -> Any:
    return json.loads(json.dumps(value, allow_nan=False))


def _diverged(path: str, index: int, before: CtxCall, name: str, args: Any) -> Failure:
    reason = (
        f"the pipeline is not deterministic: its ctx call #{index + 1} was "
        f"{_shown(before.name, before.args)} when it ran before, and is {_shown(name, args)} "
        "now — given the same answers, a pipeline must make the same calls (use "
        "ctx.started_at and ctx.random, not the clock or random); until then its "
        "scenario's runs fail"
    )
    return Failure(file=path, kind="shape", reason=reason)


def _shown(name: str, args: Any) -> str:
    text = json.dumps(args, ensure_ascii=False, sort_keys=True)
    return f"{name}({text if len(text) <= 200 else text[:200] + '...'})"


def _shape(call: PipelineCall, reply: Reply, what: str) -> Failure:
    reason = (
        f"{what}, which is not plain data — return dicts, lists, strings, numbers, booleans "
        "or None; until then its scenario's runs fail"
    )
    return Failure(file=call.path, kind="shape", reason=reason, line=reply.line)
