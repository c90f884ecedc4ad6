"""Feature context code: brain code that does not load, and code with no spec beside it.

Loading runs the module, as the engine would on a turn; that is the one part of doctor that
is not a pure function of the snapshot.
"""

from __future__ import annotations

from collections.abc import Iterator

from keel.code.modules import load_context_code, load_gate
from keel.doctor.findings import Finding, found
from keel.doctor.scope import Scope, maybe
from keel.errors import ContentError

# What a code file's spec is called: `x.context.py` goes with `x.context.md`, and so on.
_SPEC_OF = {
    ".context.py": (".context.md", "context"),
    ".hook.py": (".hook.md", "hook"),
    ".pipeline.py": (".scenario.md", "scenario"),
}


def check(scope: Scope) -> Iterator[Finding]:
    yield from _loads(scope)
    yield from _orphans(scope)


def _loads(scope: Scope) -> Iterator[Finding]:
    root = scope.brain.root
    for ident in sorted(scope.brain.contexts):
        context = scope.brain.contexts[ident]
        if context.code_path is None:
            continue
        try:
            load_context_code(root, context.code_path)
        except ContentError as exc:
            yield _failed(f"context '{ident}'", exc)
    for key in sorted(scope.brain.entities):
        entity = scope.brain.entities[key]
        if entity.kind != "hook" or entity.code_path is None:
            continue
        try:
            load_gate(root, entity.code_path)
        except ContentError as exc:
            yield _failed(entity.key, exc)


def _failed(subject: str, exc: ContentError) -> Finding:
    return found("code.load", subject, exc.reason, file=exc.path, line=exc.line)


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
