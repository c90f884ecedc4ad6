"""The brain's state files against the database doctor reads: a file the database has not
applied (new), or applied as it was before an edit (changed), is one a turn does not see.

Read only: `keel.state.files.state_status` changes nothing. A state file the database
refused (when doctor connected, so no view could be read) fails with its line; without a
database to read, the view checks say so (`view.unchecked`).
"""

from __future__ import annotations

from collections.abc import Iterator

from keel.doctor.findings import Finding, found
from keel.doctor.scope import Scope
from keel.errors import StoreError
from keel.state.files import state_status


def check(scope: Scope) -> Iterator[Finding]:
    if scope.refused is not None:  # the database refused the brain's own SQL
        error = scope.refused
        yield found("state.refused", error.path, str(error), file=error.path, line=error.line)
    if scope.reader is None:
        return
    try:
        files = state_status(scope.reader.engine, scope.brain.state_sql)
    except StoreError:
        return  # the view checks say what the database could not answer
    for file in files:
        if file.status not in ("new", "changed"):
            continue
        what = (
            "is new: this database has not applied it"
            if file.status == "new"
            else "changed since this database applied it"
        )
        yield found(
            "state.pending",
            file.path,
            f"{file.path} {what}, so turns do not see it — {file.advice}",
            file=file.path,
        )
