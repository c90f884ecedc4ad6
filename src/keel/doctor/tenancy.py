"""Tenancy: MANIFEST `tenancy:` names a keyed context, and which views stay global.

A MANIFEST that did not load keeps tenancy and approvals strict (`keel.brain.files`):
doctor says what that costs until the file is fixed.

In a room pinned to a tenant, only views with the tenant's column are filtered to its rows;
the views keyed contexts carry without that column show every tenant's rows there. One
note lists them, so an owner sees what is global and can add the column where it is not
meant to be.
"""

from __future__ import annotations

from collections.abc import Iterator

from keel.brain.files import MANIFEST_PATH, NOBODY, STRICT_APPROVALS
from keel.doctor.findings import Finding, found
from keel.doctor.scope import Scope, maybe


def check(scope: Scope) -> Iterator[Finding]:
    yield from _broken(scope)
    tenancy = scope.brain.manifest.tenancy
    if tenancy is None:
        return
    line = scope.lines.key(MANIFEST_PATH, "tenancy", "context")
    context = scope.brain.contexts.get(tenancy.context)
    if context is None:
        failed = scope.brain.failed_contexts.get(tenancy.context)
        why = (
            f"whose file did not load ({failed}) — fix it"
            if failed is not None
            else f"which does not exist{maybe(tenancy.context, scope.brain.contexts)} — name "
            "the context whose binding marks a room's tenant"
        )
        yield found(
            "tenancy.context",
            "tenancy",
            f"tenancy names context '{tenancy.context}', {why}; meanwhile only rooms bound to "
            f"'{tenancy.context}' by name keep to their tenant's rows",
            file=MANIFEST_PATH,
            line=line,
        )
        return
    if not context.keyed:
        yield found(
            "tenancy.context",
            "tenancy",
            f"tenancy names context '{tenancy.context}', which is keyed by no entity — a "
            "tenant is the entity a room is bound to: name a context with `entity:`",
            file=MANIFEST_PATH,
            line=line,
        )
        return
    if scope.schema is None:
        return
    schema = scope.schema
    carried = sorted(
        {
            ref.view
            for spec in scope.brain.contexts.values()
            if spec.keyed
            for ref in spec.data
            if schema.has(ref.view) and tenancy.column not in schema.columns(ref.view)
        }
    )
    if carried:
        yield found(
            "tenancy.global-views",
            "tenancy",
            f"{_views(len(carried))} of keyed contexts {'has' if len(carried) == 1 else 'have'} "
            f"no {tenancy.column} column, so "
            f"they show every {tenancy.context}'s rows even in a room pinned to one: "
            f"{', '.join(carried)} — add the column to keep a view to its "
            f"{tenancy.context}, or leave it global on purpose",
            file=MANIFEST_PATH,
            line=line,
        )


def _broken(scope: Scope) -> Iterator[Finding]:
    """What a MANIFEST that did not load holds strict until it is fixed."""
    manifest = scope.brain.manifest
    if manifest.broken is None:
        return
    if manifest.tenancy is None:
        rooms = sorted({r.scope for r in scope.brain.access.rules if r.is_group and r.contexts})
        listed = f" ({len(rooms)} bound in access.yaml: {', '.join(rooms[:5])}" + (
            ", ...)" if len(rooms) > 5 else ")"
        )
        yield found(
            "tenancy.withheld",
            "tenancy",
            "MANIFEST.yaml did not load and its tenancy: cannot be read on its own, so every "
            f"room with a binding{listed if rooms else ''} shows no view until the file is "
            "fixed (a room may be a tenant's, and whose rows it may see is unknown)",
            file=MANIFEST_PATH,
        )
    if manifest.people == NOBODY:
        yield found(
            "approvals.nobody",
            "people",
            "MANIFEST.yaml did not load and its people: cannot be read on its own, so nobody "
            "may decide a card until the file is fixed (a role's own people: still decide "
            "its cards)",
            file=MANIFEST_PATH,
        )
    if manifest.approvals == STRICT_APPROVALS:
        yield found(
            "approvals.strict",
            "approvals",
            "MANIFEST.yaml did not load and its approvals: cannot be read on its own, so every "
            "tool call above safe waits for a person's approval until the file is fixed",
            file=MANIFEST_PATH,
        )


def _views(count: int) -> str:
    return "1 view" if count == 1 else f"{count} views"
