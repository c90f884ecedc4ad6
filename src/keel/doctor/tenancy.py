"""Tenancy: MANIFEST `tenancy:` names a keyed context, and which views stay global.

In a room pinned to a tenant, only views with the tenant's column are filtered to its rows;
the views keyed contexts carry without that column show every tenant's rows there. One
note lists them, so an owner sees what is global and can add the column where it is not
meant to be.
"""

from __future__ import annotations

from collections.abc import Iterator

from keel.brain.files import MANIFEST_PATH
from keel.doctor.findings import Finding, found
from keel.doctor.scope import Scope, maybe


def check(scope: Scope) -> Iterator[Finding]:
    tenancy = scope.brain.manifest.tenancy
    if tenancy is None:
        return
    line = scope.lines.key(MANIFEST_PATH, "tenancy", "context")
    context = scope.brain.contexts.get(tenancy.context)
    if context is None:
        yield found(
            "tenancy.context",
            "tenancy",
            f"tenancy names context '{tenancy.context}', which does not exist"
            f"{maybe(tenancy.context, scope.brain.contexts)} — no room is ever a tenant's, so "
            "no view is filtered; name the context whose binding marks a room's tenant",
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


def _views(count: int) -> str:
    return "1 view" if count == 1 else f"{count} views"
