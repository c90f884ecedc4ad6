"""What a call came to, in words: the worker's facts, a timeout or a dead worker → a `Reply`.

Every failure message of brain code is written here, so they read alike: what the code
did, where (the file, and the line when it is known), what to fix, and what it costs until
then (it links nothing, renders nothing, ...). The shape checks of answers that did come
back are in `keel.code.answers`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from keel.code.protocol import MAX_FRAME
from keel.code.values import Failure, FailureKind, Job, JobKind, Reply

WHO: dict[JobKind, str] = {
    "match": "match",
    "render": "render",
    "gate": "the gate",
    "engage": "engage",
    "inspect": "loading the module",
    "pipeline": "the pipeline",
}
EFFECT: dict[JobKind, str] = {
    "match": "it links nothing",
    "render": "it renders nothing",
    "gate": "every fire of the hook fails",
    "engage": "the chat rules decide alone and nothing is attached",
    "inspect": "it does nothing",
    "pipeline": "its scenario's runs fail",
}


def reply_of(job: Job, message: Mapping[str, Any]) -> Reply:
    """The reply a worker's `done` message carries."""
    log = tuple(str(line) for line in message.get("log", ()))
    line = message.get("line")
    if "load" in message:
        load = message["load"]
        failure = Failure(file=job.path, kind="load", reason=load["reason"], line=load["line"])
        return Reply(failure=failure, log=log)
    if "terminal" in message:
        # The pipeline's own words: it chose to end its run, and says why.
        terminal = message["terminal"]
        failure = _failure(job, "terminal", terminal["said"], terminal["line"])
        return Reply(failure=failure, log=log)
    if "raised" in message:
        raised = message["raised"]
        reason = (
            f"{WHO[job.kind]} raised {raised['type']}: {raised['said']} — fix the code; "
            f"until then {EFFECT[job.kind]}"
        )
        return Reply(failure=_failure(job, "raise", reason, raised["line"]), log=log)
    if "too_large" in message:
        reason = (
            f"{WHO[job.kind]} answered {message['too_large']} bytes, more than the {MAX_FRAME} "
            f"one call may return — return less; until then {EFFECT[job.kind]}"
        )
        return Reply(failure=_failure(job, "shape", reason, line), log=log)
    if message.get("absent"):
        return Reply(absent=True, log=log)
    if "unplain" in message:
        return Reply(unplain=str(message["unplain"]), line=line, log=log)
    return Reply(value=message.get("value"), line=line, log=log)


def timed_out(job: Job, line: int | None, *, loading: bool = False) -> Reply:
    """A call still running at its deadline (`line`: where it was, if the worker could say).

    `loading`: it was still running the file's module level, so the function was never
    called — that needs other advice than a slow function does.
    """
    knob = (
        "codeTimeoutMs (in the context's frontmatter, or contexts.codeTimeoutMs in MANIFEST.yaml)"
        if job.kind in ("match", "render")
        else "contexts.codeTimeoutMs in MANIFEST.yaml"
    )
    at = " (it was at this line)" if line is not None else ""
    if loading or job.kind == "inspect":
        # A fresh worker loads the file within its first call's time: loading must be quick.
        reason = (
            f"loading the module ran past its {job.timeout_ms} ms timeout{at} — keep module "
            "level quick: move slow work (sleeps, network, large files) into the functions, "
            f"where ctx.signal can stop it, or give it longer with {knob}; until then "
            f"{EFFECT[job.kind]}"
        )
        return Reply(failure=_failure(job, "timeout", reason, line))
    # A pipeline's clock stops while Keel carries out its ctx calls: only its own work counts.
    ran = "computed" if job.kind == "pipeline" else "ran"
    own = " (the time its ctx calls took does not count)" if job.kind == "pipeline" else ""
    reason = (
        f"{WHO[job.kind]} {ran} past its {job.timeout_ms} ms timeout{own}{at} — make it return "
        f"sooner (check ctx.signal in loops and waits), or give it longer with {knob}; until "
        f"then {EFFECT[job.kind]}"
    )
    return Reply(failure=_failure(job, "timeout", reason, line))


def died(job: Job, how: str, line: int | None, *, beside: int, culprit: str | None) -> Reply:
    """A call whose worker process died under it.

    `beside`: how many other calls that process was running; `culprit`: the file whose
    call crashed it, when that is known and is not this one.
    """
    if culprit is not None:
        reason = (
            f"the worker process running {WHO[job.kind]} {how}: {culprit} crashed it while "
            f"this call ran beside it — nothing to fix here; for this turn {EFFECT[job.kind]}"
        )
        return Reply(failure=_failure(job, "crash", reason, None))
    others = (
        f"; {beside} other call{'s were' if beside != 1 else ' was'} running in that process, "
        "and any of them may have done it"
        if beside
        else ""
    )
    reason = (
        f"the worker process running {WHO[job.kind]} {how} — brain code must not crash the "
        f"interpreter or kill its process{others}; until then {EFFECT[job.kind]}"
    )
    return Reply(failure=_failure(job, "crash", reason, line))


def not_run(job: Job, why: str) -> Reply:
    """A call Keel could not even hand to a worker."""
    reason = f"{WHO[job.kind]} could not be run: {why}; until then {EFFECT[job.kind]}"
    return Reply(failure=_failure(job, "crash", reason, None))


def _failure(job: Job, kind: FailureKind, reason: str, line: int | None) -> Failure:
    return Failure(file=job.path, kind=kind, reason=reason, line=line)
