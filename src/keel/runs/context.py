"""One execution of a run's workflow: its plan, its brain, its step counter, its model.

A `RunContext` lives while the workflow function runs, and is made again when a replay
runs it again: everything in it is either read from the journal (the plan) or counted in
the order the workflow takes its steps, so a replay counts the same way.

The model is made on the first request that is really sent: a replay answers the earlier
requests from the journal, and a scripted model (`scripted:FILE`) must then start at the
step after the last one answered, not at its first.

A process that finishes a run may name another model for the rest of it (`keel approve
--model`, `answered_by`): the requests it still sends go there, a scripted file from its
first step. The requests already journaled are read back as they were answered, never
asked again, so a replay stays the same; and the plan keeps the model recorded at the
start, which a process with no such word goes back to.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from keel.assemble.values import Assembly, ModelStep, Transcript
from keel.brain.snapshot import Brain
from keel.errors import UsageError
from keel.runs.app import Runtime
from keel.runs.commits import Pin
from keel.runs.journal import Starting
from keel.runs.values import RunOrder, RunPlan
from keel.runtime.engine import Engine
from keel.runtime.model_specs import ModelChoice, build_model, parse_model, scripted_step
from keel.runtime.models import ModelClient, OpenAIChatModel
from keel.runtime.scripted import ScriptedModel
from keel.store.store import Store

# The model that answers the rest of a run in this process, by run id (`answered_by`).
_answering: dict[str, ModelChoice] = {}


@contextmanager
def answered_by(run_id: str | None, choice: ModelChoice | None) -> Iterator[None]:
    """While the block runs, the requests run `run_id` sends from this process go to
    `choice` instead of the model recorded at its start (either None: no change)."""
    if run_id is None or choice is None:
        yield
        return
    _answering[run_id] = choice
    try:
        yield
    finally:
        if _answering.get(run_id) is choice:
            del _answering[run_id]


class NoModel(UsageError):
    """A run without a model (`--model none`) was asked for a model's answer."""


@dataclass(slots=True, kw_only=True)
class RunContext:
    """See the module docstring."""

    runtime: Runtime
    order: RunOrder
    plan: RunPlan | None = None
    seq: int = 0
    requests: int = 0
    # This execution found no row of the run when it started: its steps skip the look
    # for a row an earlier execution wrote (`keel.runs.journal.once`).
    fresh: bool = False
    # The work's last transaction also wrote the `finish` step (a run that asks no model):
    # the workflow's own `finish` has nothing left to write.
    finished: bool = False
    # Step `start`'s rows, not written yet: the run's next transaction writes them
    # (`keel.runs.journal.Starting`).
    starting: Starting | None = None
    _model: ModelClient | None = field(default=None, repr=False)
    _spec: str | None = field(default=None, repr=False)  # the spec `_model` was made from

    @property
    def run_id(self) -> str:
        return self.order.id

    @property
    def planned(self) -> RunPlan:
        if self.plan is None:
            raise UsageError(f"run {self.run_id!r} has no plan yet — its start step comes first")
        return self.plan

    @property
    def engine(self) -> Engine:
        """The engine of the brain the run is pinned to."""
        pin = self.plan.pin if self.plan is not None else None
        return self.runtime.engine_for(None if pin is None else Pin.from_json(pin))

    @property
    def brain(self) -> Brain:
        return self.engine.brain

    @property
    def store(self) -> Store:
        return self.runtime.engine.store

    def next_seq(self) -> int:
        """The number of the run's next step."""
        self.seq += 1
        return self.seq

    def message_id(self, seq: int) -> str:
        """The id of the message a step sends: the same on every replay of the step."""
        return f"{self.run_id}:{seq}"

    @property
    def model_spec(self) -> str:
        """The spec of the model that answers the run's next request sent from here."""
        override = _answering.get(self.run_id)
        return override.spec if override is not None else self.planned.model

    def model(self) -> ModelClient | None:
        """The run's model client (None for `none`), made at the first request sent, and
        again when another model is to answer the rest of the run (`answered_by`)."""
        spec = self.model_spec
        if self._spec != spec:
            override = _answering.get(self.run_id)
            if override is not None:  # a new model starts at its own beginning
                self._model = run_model(override, served=0)
            else:
                self._model = run_model(parse_model(spec), served=self.requests - 1)
            self._spec = spec
        return self._model


class RunModel:
    """The model client a run's turn calls: the run's, made when a request is really sent."""

    __slots__ = ("_context",)

    def __init__(self, context: RunContext) -> None:
        self._context = context

    def complete(self, assembly: Assembly, transcript: Transcript) -> ModelStep:
        model = self._context.model()
        if model is None:
            raise NoModel(
                "this run has no model (--model none): it prepares turns only — start it "
                "with a model (--model openai:NAME, scripted:FILE, ...; on the service, the "
                "run's model field or keel serve --model)"
            )
        return model.complete(assembly, transcript)


def run_model(choice: ModelChoice, *, served: int) -> ModelClient | None:
    """The client for one run, `served` requests into it.

    Every provider but the scripted one keeps no place: a request is a request. A scripted
    file is the steps of one run, and a replay that resumes at request n+1 plays from the
    step after n.
    """
    model = build_model(choice)  # checks the spec, the key and a scripted file alike
    if choice.provider != "scripted" or served <= 0:
        return model
    path = choice.path or Path()
    # build_model read the same file and found it sound.
    steps = json.loads(path.read_text(encoding="utf-8"))
    script = [scripted_step(str(path), number, step) for number, step in enumerate(steps, 1)]
    return OpenAIChatModel(client=ScriptedModel(script[served:]).openai_client())
