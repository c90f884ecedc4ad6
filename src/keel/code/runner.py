"""`CodeRunner`: brain code's calls, typed — one turn's matches, its renders, a chat policy's
verdicts, a hook's gate, a scenario's pipeline, doctor's look at a file — each checked
before it is believed.

Each method hands one batch to the worker pool (`keel.code.pool`), so its calls run at once
and the batch takes as long as its slowest call, never longer than the longest timeout.
Every answer is checked (`keel.code.answers`), and what the code logged or printed, and
every failure, goes to the `keel.code` logger under the file's path: failures and dropped
attach entries as warnings, the code's own lines as info. The answers are plain values for
the turn to record::

    with CodeRunner(brain.root, access=brain.manifest.code) as runner:
        matches = runner.match_all([MatchCall(context="ticket", path=..., keyed=True,
                                              turn=TurnView(...), timeout_ms=2000)])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from keel.code.answers import engage_answer, gate_answer, match_answer, render_answer
from keel.code.batches import Reader
from keel.code.modules import CodeKind
from keel.code.pipelines import CtxCall, OnCall, PipelineAnswer, PipelineCall, run_pipeline
from keel.code.pool import LOG
from keel.code.talkback import TalkingPool
from keel.code.values import (
    DEFAULT_TIMEOUT_MS,
    EngageAnswer,
    EngageCall,
    Failure,
    GateAnswer,
    GateCall,
    Inspection,
    Job,
    MatchAnswer,
    MatchCall,
    RenderAnswer,
    RenderCall,
    Reply,
)


class _Call(Protocol):
    @property
    def path(self) -> str: ...


class _Answer(Protocol):
    @property
    def failure(self) -> Failure | None: ...

    @property
    def log(self) -> tuple[str, ...]: ...


C = TypeVar("C", bound=_Call)
A = TypeVar("A", bound=_Answer)


class CodeRunner(TalkingPool):
    """Runs one brain's code in worker processes; thread-safe; a context manager."""

    def match_all(
        self, calls: Sequence[MatchCall], *, retry_crowded: bool = False
    ) -> tuple[MatchAnswer, ...]:
        """Ask every context's `match` about the turn, all at once.

        `retry_crowded` is doctor's: see `WorkerPool.run`. So are the other methods'.
        """
        # One plain turn per TurnView: the calls that share it send it once.
        turns = {id(c.turn): c.turn.to_json() for c in calls}
        jobs = [
            Job(
                kind="match",
                path=c.path,
                args={"context": c.context, "turn": turns[id(c.turn)]},
                timeout_ms=c.timeout_ms,
            )
            for c in calls
        ]
        return self._answered(calls, jobs, match_answer, retry_crowded)

    def render_all(
        self,
        calls: Sequence[RenderCall],
        *,
        retry_crowded: bool = False,
        reader: Reader | None = None,
    ) -> tuple[RenderAnswer, ...]:
        """Ask every attached context's `render` for its sections, all at once.

        `reader` runs their `ctx.query` statements, in this thread (a turn's: on its
        transaction, pinned to its room's tenant — `keel.state.queries`); without one,
        `ctx.query` fails in brain code, saying so.
        """
        jobs = [
            Job(
                kind="render",
                path=c.path,
                args={"context": c.context, "entity": c.entity},
                timeout_ms=c.timeout_ms,
            )
            for c in calls
        ]
        return self._answered(calls, jobs, render_answer, retry_crowded, reader)

    def engage_all(
        self, calls: Sequence[EngageCall], *, retry_crowded: bool = False
    ) -> tuple[EngageAnswer, ...]:
        """Ask a chat policy about each message of a turn (merged messages: one call each)."""
        jobs = [
            Job(
                kind="engage",
                path=c.path,
                args={"bot": c.bot, "message": dict(c.message)},
                timeout_ms=c.timeout_ms,
            )
            for c in calls
        ]
        answers = self._answered(calls, jobs, engage_answer, retry_crowded)
        for answer in answers:
            for reason in answer.dropped:
                LOG.warning("%s", reason)
        return answers

    def gate(self, call: GateCall) -> GateAnswer:
        """Ask a hook's gate about one event (`keel.code.gates.fire_gate` checks the reach)."""
        (answer,) = self.gate_all([call])
        return answer

    def gate_all(
        self, calls: Sequence[GateCall], *, retry_crowded: bool = False
    ) -> tuple[GateAnswer, ...]:
        """Ask several gates at once (doctor's probe); each answer as `gate` gives it."""
        jobs = [
            Job(
                kind="gate",
                path=c.path,
                args={
                    "hook": c.hook,
                    "event": dict(c.event),
                    "reach": [{"context": r.context, "entity": r.entity} for r in c.reach],
                },
                timeout_ms=c.timeout_ms,
            )
            for c in calls
        ]
        return self._answered(calls, jobs, gate_answer, retry_crowded)

    def _answered(
        self,
        calls: Sequence[C],
        jobs: list[Job],
        check: Callable[[C, Reply], A],
        retry_crowded: bool,
        reader: Reader | None = None,
    ) -> tuple[A, ...]:
        """Run a batch, check each reply against its call, and log what each file said."""
        replies = self.run(jobs, retry_crowded=retry_crowded, reader=reader)
        answers = tuple(check(c, r) for c, r in zip(calls, replies, strict=True))
        for call, answer in zip(calls, answers, strict=True):
            _report(call.path, answer.failure, answer.log)
        return answers

    def run_pipeline(
        self, call: PipelineCall, on_call: OnCall, *, replay: Sequence[CtxCall] = ()
    ) -> PipelineAnswer:
        """Run a scenario's pipeline to its end; `on_call(name, args)` carries out each of
        its ctx calls, in this thread (see `keel.code.pipelines`)."""
        answer = run_pipeline(self, call, on_call, replay=replay)
        _report(call.path, answer.failure, answer.log)
        return answer

    def inspect_all(
        self, files: Sequence[tuple[str, CodeKind]], *, timeout_ms: int = DEFAULT_TIMEOUT_MS
    ) -> tuple[Inspection, ...]:
        """Load each (path, kind) file in a worker and say what it exports, or why not."""
        jobs = [
            Job(kind="inspect", path=path, args={"kind": kind}, timeout_ms=timeout_ms)
            for path, kind in files
        ]
        # A module that exits while loading takes its worker down with the other files it
        # was loading; each of those is loaded again alone, so the finding lands on it.
        replies = self.run(jobs, retry_crowded=True)
        return tuple(
            _inspection(path, reply) for (path, _), reply in zip(files, replies, strict=True)
        )


def _inspection(path: str, reply: Reply) -> Inspection:
    value = reply.value
    if reply.failure is not None or not isinstance(value, dict):
        failure = reply.failure or Failure(
            file=path, kind="shape", reason="the worker gave no account of this file"
        )
        return Inspection(path=path, failure=failure, log=reply.log)
    return Inspection(
        path=path,
        functions=tuple(value["functions"]),
        async_functions=tuple(value["async"]),
        lines=dict(value["lines"]),
        log=reply.log,
    )


def _report(path: str, failure: Failure | None, log: Sequence[str]) -> None:
    for line in log:
        LOG.info("%s: %s", path, line)
    if failure is not None:
        LOG.warning("%s", failure)
