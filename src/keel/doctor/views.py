"""Views a context carries: shared, missing, a `by` column the view lacks, a widget's `line`
column it lacks, a key that never comes, and each view a turn reads that is too slow to read.

The name checks need the database's schema; without one, a single note says they did not
look and why, rather than passing in silence. With a connection as well, each view a turn
may read — a context's `data:`, a role's `state:` — that the database has is read once as
a turn reads it, within `state.readTimeoutMs`, and timed: one past the deadline would be a
stub on every turn, one over half of it is close to becoming one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from functools import partial

from keel.brain.files import MANIFEST_PATH
from keel.brain.specs import ContextSpec, ViewRef, WhenWord
from keel.doctor.findings import Finding, found
from keel.doctor.scope import Scope, is_view, is_word, maybe, quoted
from keel.state.schema import Schema
from keel.state.scripts import views_defined
from keel.state.views import timed_read, too_slow

# Links that carry an entity key whatever else is true: a chat binding, a reply to a keyed
# post, an open that names the key.
_KEYED_LINKS: frozenset[WhenWord] = frozenset({"chat", "reply", "ask"})


def check(scope: Scope) -> Iterator[Finding]:
    yield from _shared(scope)
    yield from _against_schema(scope)
    yield from _by_entries(scope)
    yield from _timed(scope)


def _shared(scope: Scope) -> Iterator[Finding]:
    claims: dict[str, list[ContextSpec]] = defaultdict(list)
    for ident in sorted(scope.brain.contexts):
        context = scope.brain.contexts[ident]
        for view in dict.fromkeys(ref.view for ref in context.data):
            claims[view].append(context)
    for view in sorted(claims):
        owners = sorted(claims[view], key=lambda c: c.path)
        if len(owners) < 2:
            continue
        first = owners[0]
        named = ", ".join(f"'{c.id}' ({c.path})" for c in owners)
        yield found(
            "view.shared",
            f"view '{view}'",
            f"view '{view}' is claimed by {len(owners)} contexts: {named} — a view travels "
            "with one context, so two features now own it; keep it in one, or split it into "
            "one view per context",
            file=first.path,
            line=scope.lines.item(first.path, "data", is_view(view)),
        )


def _against_schema(scope: Scope) -> Iterator[Finding]:
    schema = scope.schema
    if schema is None:
        yield _unchecked(scope)
        return
    defined = views_defined(scope.brain.state_sql)
    for ident in sorted(scope.brain.contexts):
        context = scope.brain.contexts[ident]
        for ref in context.data:
            line = scope.lines.item(context.path, "data", is_view(ref.view))
            if not schema.has(ref.view):
                fix = _missing_fix(ref.view, defined, _widget_view(scope, context, ref.view))
                yield found(
                    "view.missing",
                    f"context '{ident}'",
                    f"'{ident}' carries view '{ref.view}', which the database lacks"
                    f"{maybe(ref.view, schema.names)} — {fix}",
                    file=context.path,
                    line=line,
                )
            elif ref.by is not None and ref.by not in schema.columns(ref.view):
                columns = schema.columns(ref.view)
                yield found(
                    "view.by-column",
                    f"context '{ident}'",
                    f"'{ident}' filters view '{ref.view}' by column '{ref.by}', which the view "
                    f"lacks{maybe(ref.by, columns)} — its columns are {', '.join(columns)}; "
                    "name one of them in `by:`, or add the column to the view",
                    file=context.path,
                    line=line,
                )
    yield from _widget_lines(scope, schema)


def _widget_lines(scope: Scope, schema: Schema) -> Iterator[Finding]:
    """A widget's `line` columns its view lacks: every refresh would leave it as it was."""
    for ident in sorted(scope.brain.contexts):
        context = scope.brain.contexts[ident]
        widget = context.widget
        if widget is None or not schema.has(widget.view):
            continue  # no widget, or its view is missing (view.missing says so)
        columns = schema.columns(widget.view)
        for column in widget.line:
            if column in columns:
                continue
            yield found(
                "view.widget-line",
                f"context '{ident}'",
                f"'{ident}' makes its widget's lines of column '{column}', which view "
                f"'{widget.view}' lacks{maybe(column, columns)} — its columns are "
                f"{', '.join(columns)}; name them in the widget's `line:`",
                file=context.path,
                line=scope.lines.key(context.path, "widget", "line"),
            )


def _widget_view(scope: Scope, context: ContextSpec, view: str) -> str:
    """Where else the context names `view`: its widget's `view:`, when the widget shows it."""
    if context.widget is None or context.widget.view != view:
        return ""
    line = scope.lines.key(context.path, "widget", "view")
    return " and in the widget's `view:`" + (f" (line {line})" if line is not None else "")


def _missing_fix(view: str, defined: Mapping[str, str], also: str = "") -> str:
    """What to do about a missing view: apply the file that defines it, or write one."""
    home = defined.get(view) or defined.get(view.lower())
    if home is not None:
        return (
            f"{home} defines it but this database has not applied it: run "
            "`keel state apply BRAIN` (with --db URL for another database)"
        )
    return f"create it in state/*.sql and apply it, or fix the name in `data:`{also}"


def _unchecked(scope: Scope) -> Finding:
    views = sum(len(c.data) for c in scope.brain.contexts.values())
    views += sum(len(r.state) for r in scope.brain.roles.values())
    if scope.refused is not None:
        why = f"{scope.refused.path} did not apply (state.refused)"
        fix = "fix it, then run doctor again"
    else:
        why = scope.db_note or "no database was given"
        fix = "run doctor where the database is reachable (or give its URL with --db)"
    return found(
        "view.unchecked",
        "database",
        f"did not check {views} view name(s) and their `by` columns against the database: "
        f"{why} — {fix}",
    )


def _by_entries(scope: Scope) -> Iterator[Finding]:
    for ident in sorted(scope.brain.contexts):
        context = scope.brain.contexts[ident]
        keyed = [ref for ref in context.data if ref.by is not None]
        if not keyed:
            continue
        views = quoted(ref.view for ref in keyed)
        line = scope.lines.item(context.path, "data", is_view(keyed[0].view))
        if not _names_a_key(scope, context):
            yield found(
                "view.by-unkeyed",
                f"context '{ident}'",
                f"'{ident}' filters {views} by its entity key, but none of its `when` links "
                f"({', '.join(sorted(context.when))}) carries a key — always carries none, "
                "and run carries one only from a gated hook, a pipeline or a .context.py — so "
                "those views show rows only when an engage() attach names one; add reply or "
                "ask to `when:`, gate a hook that reaches it, or drop `by`",
                file=context.path,
                line=line,
            )
        if context.entity is None:
            yield found(
                "view.by-without-entity",
                f"context '{ident}'",
                f"'{ident}' filters {views} by an entity key, but has no `entity:`, so no link "
                "can ever carry a key to it and those views show no rows — add `entity:` "
                "(what its key is, e.g. `entity: ticket id`), or drop `by`",
                file=context.path,
                line=line,
            )


def _names_a_key(scope: Scope, context: ContextSpec) -> bool:
    """Whether some link in the context's `when` can carry an entity key to it."""
    if context.when & _KEYED_LINKS:
        return True
    if "run" not in context.when:
        return False
    if context.code_path is not None or context.id in scope.keyed_reach:
        return True
    # A gate's { entity } / { reach } or a pipeline's runAgent keys the run; a plain beat
    # or an ungated hook never does.
    return any(
        entity.code_path is not None and entity.kind in ("hook", "scenario")
        for entity in scope.reached.get(context.id, ())
    )


def _timed(scope: Scope) -> Iterator[Finding]:
    reader = scope.reader
    if reader is None:
        return
    manifest = scope.brain.manifest
    timeout_ms = manifest.state_read_timeout_ms
    fix = (
        "make it end sooner (a recursive query needs a stop, a filter an index), or raise "
        f"state.readTimeoutMs in {manifest.path or MANIFEST_PATH}"
    )
    for ref, path, where in _read_by_turns(scope):
        rows, seconds = timed_read(
            reader, ref, limit=manifest.state_rows, timeout_ms=timeout_ms, clock=scope.clock
        )
        took_ms = round(seconds * 1000)
        if rows.problem == too_slow(timeout_ms):
            yield found(
                "view.timeout",
                f"view '{ref.view}'",
                f"view '{ref.view}' did not finish within state.readTimeoutMs ({timeout_ms} ms) "
                "when doctor read it as a turn does — every turn that reads it shows a stub "
                f"instead of its rows; {fix}",
                file=path,
                line=where(),
            )
        elif rows.problem is None and took_ms * 2 > timeout_ms:
            yield found(
                "view.slow",
                f"view '{ref.view}'",
                f"view '{ref.view}' took {took_ms:,} ms to read, over half of "
                f"state.readTimeoutMs ({timeout_ms} ms) — under more load it may pass it, and "
                f"then turns show a stub instead of its rows; {fix}",
                file=path,
                line=where(),
            )


def _read_by_turns(scope: Scope) -> Iterator[tuple[ViewRef, str, Callable[[], int | None]]]:
    """Each view a turn may read that the database has (with its `by` column), once, with
    the file of the first context or role that carries it and how to find its line there
    (looked up only for a finding: it reads the file's frontmatter again)."""
    schema = scope.schema
    if schema is None:
        return
    seen: set[ViewRef] = set()
    brain = scope.brain
    for ident in sorted(brain.contexts):
        context = brain.contexts[ident]
        for ref in context.data:
            readable = schema.has(ref.view) and (
                ref.by is None or ref.by in schema.columns(ref.view)
            )
            if readable and ref not in seen:
                seen.add(ref)
                yield (
                    ref,
                    context.path,
                    partial(scope.lines.item, context.path, "data", is_view(ref.view)),
                )
    for ident in sorted(brain.roles):
        role = brain.roles[ident]
        for view in role.state:
            ref = ViewRef(view=view)
            if schema.has(view) and view not in brain.claimed_views and ref not in seen:
                seen.add(ref)
                yield ref, role.path, partial(scope.lines.item, role.path, "state", is_word(view))
