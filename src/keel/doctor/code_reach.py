"""What brain code is handed: the environment MANIFEST `code:` passes its workers, and the
rows its queries reach in a room pinned to a tenant.

`code.env` warns about a declared name that looks like a secret — every context file runs
in the same workers, so each of them can read it — and about a `KEEL_*` name, which Keel
never passes whatever MANIFEST says. `code.query` warns about a statement in a
`*.context.py` that names a table or view with the tenant's column by its schema
(`main.x`, `public.x`): Keel keeps only unqualified names to a room's tenant, so in a
pinned room it refuses that statement. It reads the code's string literals, not the
statements the code builds at run time; what it cannot see — a view without the column
over tenant rows, a name built in code — is refused when the query runs, with the reason
in the turn's warnings.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from keel.brain.files import MANIFEST_PATH
from keel.brain.reading import read_file
from keel.doctor.findings import Finding, found
from keel.doctor.scope import Scope
from keel.errors import ContentError

# Parts of a variable's name that mark a secret: API_KEY, GITHUB_TOKEN, PGPASSWORD, ...
_SECRET_PARTS = re.compile(
    r"(?:^|_)(?:[A-Z]*KEY|[A-Z]*TOKEN|[A-Z]*SECRET|[A-Z]*PASS(?:WORD|WD|PHRASE)?|"
    r"CREDENTIALS?|AUTH|DSN|COOKIE|PRIVATE)(?:_|$)"
)
_DATABASE = re.compile(r"(?:^|_)(?:DATABASE|DB)_?(?:URL|URI)(?:_|$)")
_QUALIFIED = re.compile(r'\b(main|public)\s*\.\s*("(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_]*)', re.I)


def check(scope: Scope) -> Iterator[Finding]:
    yield from _env(scope)
    yield from _queries(scope)


def _env(scope: Scope) -> Iterator[Finding]:
    for index, name in enumerate(scope.brain.manifest.code.env):
        line = scope.lines.key(MANIFEST_PATH, "code", "env", index)
        upper = name.upper()
        if upper.startswith("KEEL_"):
            message = (
                f"code.env names {name}, but Keel never passes its own KEEL_* variables to "
                "brain code — drop it; if the code needs the value, give it a name of its own"
            )
        elif _SECRET_PARTS.search(upper) or _DATABASE.search(upper):
            message = (
                f"code.env passes {name}, which looks like a secret, to every worker of brain "
                "code: any context file of the brain can read it — pass it only if the code "
                "needs it, and never Keel's own tokens or database URL (ctx.query reads the "
                "database without one)"
            )
        else:
            continue
        yield found("code.env", "code.env", message, file=MANIFEST_PATH, line=line)


def _queries(scope: Scope) -> Iterator[Finding]:
    tenancy = scope.brain.manifest.tenancy
    schema = scope.schema
    if tenancy is None or schema is None:
        return
    column = tenancy.column.lower()
    pinned = {
        name.lower()
        for name, columns in schema.relations.items()
        if column in (c.lower() for c in columns)
    }
    for ident in sorted(scope.brain.with_code):
        path = scope.brain.contexts[ident].code_path
        if path is None:
            continue
        for line, qualified, name in _qualified(scope, path, pinned):
            yield found(
                "code.query",
                f"context '{ident}'",
                f"a query names {qualified}, which has the tenant's column {tenancy.column}: "
                "in a room pinned to a tenant Keel refuses it, since only an unqualified name "
                f"is kept to the tenant's rows — write {name}",
                file=path,
                line=line,
            )


def _qualified(scope: Scope, path: str, pinned: set[str]) -> Iterator[tuple[int, str, str]]:
    """Each string literal's `schema.name` of a tenant relation: its line, as written."""
    try:
        tree = ast.parse(read_file(str(scope.brain.root), path), filename=path)
    except (ContentError, SyntaxError, ValueError):
        return  # code.load says why the file cannot be read
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        for match in _QUALIFIED.finditer(node.value):
            name = match.group(2)
            folded = name[1:-1].replace('""', '"') if name.startswith('"') else name
            if folded.lower() in pinned:
                line = node.lineno + node.value.count("\n", 0, match.start())
                yield line, match.group(0), folded
