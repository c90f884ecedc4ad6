"""Doctor's look at brain code, through the very runner a turn uses.

`load_findings` loads every code file of the brain in a worker — `*.context.py`,
`*.hook.py`, `*.pipeline.py`, and each bot's chat policy `constitution/<bot>.engage.py`
— and reports each that does not load or exports the wrong thing. A module that sleeps at
import costs its timeout; one that exits or crashes costs a worker; what it prints never
reaches doctor's output as it is (so `--json` stays JSON): it goes to the log, and is
quoted in the finding of a file that fails.

`probe_findings` (doctor `--probe`) then calls what loaded, once, within the timeout:
each `match` on a sample turn, each gate on an empty event, each chat policy on a sample
message — and reports what raised (an attribute the turn does not have), hung or answered
the wrong shape. A gate that needs a field of the event raises on the empty one; that
finding is worth a look rather than a fix.

Findings are plain values (file, line, message); doctor gives them their check and level.
A finding ends with what the failing code printed or logged before it failed (`it said:
...`), its author's own clues; code that works is not quoted (`keel turn` shows it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from keel.brain.snapshot import Brain
from keel.code.modules import CodeKind
from keel.code.runner import CodeRunner
from keel.code.values import (
    DEFAULT_TIMEOUT_MS,
    EngageCall,
    Failure,
    GateCall,
    Inspection,
    MatchCall,
    TurnView,
)
from keel.log import shown

ENGAGE_DIR = "constitution"
ENGAGE_SUFFIX = ".engage.py"
SAMPLE_INPUT = "Hello! This is a sample message from keel doctor --probe."
# The lines of what failing code said that a finding quotes; the log has them all.
SAID_LINES = 5


@dataclass(frozen=True, slots=True, kw_only=True)
class CodeFile:
    """A code file doctor loads: what it belongs to, where it is, what it must export.

    `owner` is the context id, the entity key (`hook:x`) or the bot the file belongs to;
    `subject` names it for a reader.
    """

    subject: str
    owner: str
    path: str
    kind: CodeKind


@dataclass(frozen=True, slots=True, kw_only=True)
class CodeFinding:
    """A code file that did not load (`load`) or whose call failed on a sample (`probe`)."""

    check: Literal["load", "probe"]
    subject: str
    file: str
    line: int | None
    message: str


def engage_path(bot: str) -> str:
    """Where a bot's chat policy lives: `constitution/<bot>.engage.py`."""
    return f"{ENGAGE_DIR}/{bot}{ENGAGE_SUFFIX}"


def code_files(brain: Brain) -> tuple[CodeFile, ...]:
    """Every code file of the brain that has a spec (or, for a policy, a file), in order."""
    files = [
        CodeFile(subject=f"context '{c.id}'", owner=c.id, path=c.code_path, kind="context")
        for c in sorted(brain.contexts.values(), key=lambda c: c.id)
        if c.code_path is not None
    ]
    for key in sorted(brain.entities):
        entity = brain.entities[key]
        if entity.code_path is None or entity.kind == "heartbeat":
            continue
        kind: CodeKind = "hook" if entity.kind == "hook" else "pipeline"
        files.append(CodeFile(subject=key, owner=key, path=entity.code_path, kind=kind))
    folder = brain.root / ENGAGE_DIR
    policies = sorted(folder.glob(f"*{ENGAGE_SUFFIX}")) if folder.is_dir() else []
    for file in policies:
        bot = file.name[: -len(ENGAGE_SUFFIX)]
        files.append(
            CodeFile(subject=f"bot '{bot}'", owner=bot, path=engage_path(bot), kind="engage")
        )
    return tuple(files)


def load_findings(
    runner: CodeRunner, files: Iterable[CodeFile], *, timeout_ms: int = DEFAULT_TIMEOUT_MS
) -> tuple[tuple[CodeFinding, ...], dict[str, Inspection]]:
    """Load each file in a worker: a finding for each that fails, and what each exports."""
    todo = tuple(files)
    looked = runner.inspect_all([(f.path, f.kind) for f in todo], timeout_ms=timeout_ms)
    findings = tuple(
        _finding("load", f.subject, i.failure, i.log)
        for f, i in zip(todo, looked, strict=True)
        if i.failure is not None
    )
    return findings, {i.path: i for i in looked}


def probe_findings(
    runner: CodeRunner,
    brain: Brain,
    files: Iterable[CodeFile],
    loaded: Mapping[str, Inspection],
    *,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> tuple[CodeFinding, ...]:
    """Call every loaded match, gate and chat policy once on a sample; what failed."""
    todo = [f for f in files if f.path in loaded and loaded[f.path].failure is None]
    matches = [
        (f, _sample_match(brain, f, timeout_ms))
        for f in todo
        if f.kind == "context" and "match" in loaded[f.path].functions
    ]
    policies = [
        (
            f,
            EngageCall(
                bot=f.owner,
                path=f.path,
                message={"text": SAMPLE_INPUT},
                contexts={c.id: c.keyed for c in brain.contexts.values()},
                timeout_ms=timeout_ms,
            ),
        )
        for f in todo
        if f.kind == "engage"
    ]
    failures: list[tuple[CodeFile, Failure | None, Sequence[str]]] = []
    # A file that crashes its worker must not take the findings of the files beside it.
    answers = runner.match_all([call for _, call in matches], retry_crowded=True)
    failures += [(f, a.failure, a.log) for (f, _), a in zip(matches, answers, strict=True)]
    verdicts = runner.engage_all([call for _, call in policies], retry_crowded=True)
    failures += [(f, v.failure, v.log) for (f, _), v in zip(policies, verdicts, strict=True)]
    gates = [
        (
            f,
            GateCall(
                hook=f.owner,
                path=f.path,
                event={},
                reach=brain.reach_of(hook),
                timeout_ms=timeout_ms,
            ),
        )
        for f in todo
        if f.kind == "hook" and (hook := brain.entities.get(f.owner)) is not None
    ]
    decisions = runner.gate_all([call for _, call in gates], retry_crowded=True)
    failures += [(f, d.failure, d.log) for (f, _), d in zip(gates, decisions, strict=True)]
    return tuple(
        _finding("probe", f.subject, failure, log)
        for f, failure, log in failures
        if failure is not None
    )


def _sample_match(brain: Brain, file: CodeFile, timeout_ms: int) -> MatchCall:
    context = brain.contexts[file.owner]
    role = next(
        (r.id for r in sorted(brain.roles.values(), key=lambda r: r.id) if r.admits(context.id)),
        "doctor",
    )
    turn = TurnView(input=SAMPLE_INPUT, role=role, surface="chat", subject_id="doctor:probe")
    return MatchCall(
        context=context.id, path=file.path, keyed=context.keyed, turn=turn, timeout_ms=timeout_ms
    )


def _finding(
    check: Literal["load", "probe"], subject: str, failure: Failure, log: Sequence[str]
) -> CodeFinding:
    message = failure.reason if check == "load" else f"on a sample call: {failure.reason}"
    return CodeFinding(
        check=check,
        subject=subject,
        file=failure.file,
        line=failure.line,
        message=message + _said(log),
    )


def _said(log: Sequence[str]) -> str:
    """What the code printed or logged, quoted after a finding (the first few lines)."""
    if not log:
        return ""
    quoted = " | ".join(shown(line) for line in log[:SAID_LINES])
    more = f" (and {len(log) - SAID_LINES} more lines)" if len(log) > SAID_LINES else ""
    return f" — it said: {quoted}{more}"
