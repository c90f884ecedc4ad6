"""Feature context code: brain code that does not load, fails a probe, has no spec, or is
missing where its spec needs it.

The code files — each context's `*.context.py`, each hook's gate, each scenario's
pipeline, each bot's chat policy — are loaded through the runner a turn uses: in a worker
process, within the timeout, so a module that hangs, exits or prints costs only itself.
With `--probe`, each match, gate and chat policy is also called once on a sample. A
context's code and a hook's gate are optional; a scenario's pipeline is not — a scenario
runs its pipeline, so one without `<id>.pipeline.py` beside it cannot run. What the code
is handed — the environment MANIFEST `code:` passes it, the tenant rows its queries name —
is `keel.doctor.code_reach`.
"""

from __future__ import annotations

from collections.abc import Iterator

from keel.brain.constitution import DEFAULT_CODE_TIMEOUT_MS
from keel.code.probe import code_files, load_findings, probe_findings
from keel.doctor import code_reach
from keel.doctor.findings import Finding, found
from keel.doctor.scope import Scope, maybe

# What a code file's spec is called: `x.context.py` goes with `x.context.md`, and so on.
_SPEC_OF = {
    ".context.py": (".context.md", "context"),
    ".hook.py": (".hook.md", "hook"),
    ".pipeline.py": (".scenario.md", "scenario"),
}


def check(scope: Scope) -> Iterator[Finding]:
    yield from _loads(scope)
    yield from code_reach.check(scope)
    yield from _orphans(scope)
    yield from _missing(scope)


def _loads(scope: Scope) -> Iterator[Finding]:
    files = code_files(scope.brain)
    if not files:
        return
    runner = scope.runner
    if runner is None:
        yield found(
            "code.unloaded",
            "brain code",
            f"{len(files)} code file(s) were not loaded: no code runner was given — "
            "keel doctor loads them (run it, or pass a runner to run_doctor)",
        )
        return
    timeout = scope.brain.manifest.contexts.code_timeout_ms or DEFAULT_CODE_TIMEOUT_MS
    findings, loaded = load_findings(runner, files, timeout_ms=timeout)
    if scope.probe:
        probed = probe_findings(runner, scope.brain, files, loaded, timeout_ms=timeout)
        findings = (*findings, *probed)
    for finding in findings:
        check = "code.load" if finding.check == "load" else "code.probe"
        yield found(check, finding.subject, finding.message, file=finding.file, line=finding.line)


def _orphans(scope: Scope) -> Iterator[Finding]:
    for path in scope.brain.orphan_code:
        head, _, name = path.rpartition("/")
        suffix = next((s for s in _SPEC_OF if name.endswith(s)), None)
        if suffix is None:
            continue
        spec_suffix, noun = _SPEC_OF[suffix]
        ident = name[: -len(suffix)]
        spec = f"{head}/{ident}{spec_suffix}"
        if (scope.brain.root / spec).is_file():
            message = (
                f"{spec} is beside it but did not load (see entity.skip), so this code is not "
                "loaded either — fix the spec"
            )
        else:
            near = maybe(ident, _siblings(scope, head, noun))
            message = (
                f"no {ident}{spec_suffix} beside it, so it is never loaded{near} — name it "
                f"after the {noun} it belongs to, add {ident}{spec_suffix}, or delete it"
            )
        yield found("code.orphan", path, message, file=path)


def _siblings(scope: Scope, head: str, noun: str) -> list[str]:
    """Ids of the specs of this kind in the code file's own directory."""
    if noun == "context":
        paths = {c.id: c.path for c in scope.brain.contexts.values()}
    else:
        paths = {e.id: e.path for e in scope.brain.entities.values() if e.kind == noun}
    return [ident for ident, path in paths.items() if path.rpartition("/")[0] == head]


def _missing(scope: Scope) -> Iterator[Finding]:
    for key in sorted(scope.brain.entities):
        entity = scope.brain.entities[key]
        if entity.kind != "scenario" or entity.code_path is not None:
            continue
        head = entity.path.rpartition("/")[0]
        yield found(
            "code.missing",
            entity.key,
            f"scenario '{entity.id}' has no {entity.id}.pipeline.py beside it, so it cannot "
            f"run: a scenario's runs are its pipeline — add {head}/{entity.id}.pipeline.py "
            "with `async def run(ctx, vars)` and `pipeline = define_pipeline(run)`",
            file=entity.path,
        )
