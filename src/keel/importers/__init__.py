"""`keel import`: a repository's coding-agent rules as one feature of a Keel brain.

Cursor, Claude Code, AGENTS.md, GitHub Copilot and Windsurf rule files become feature
contexts, so rules attach by Keel's links and budgets — always, by their catalog line, or
for the files a turn names — instead of invisibly on every turn.

Each name below is imported on first use, as in `keel`: the context code `keel import`
generates imports `keel.importers.globs` inside a code worker, and that must not drag in
the importer itself (YAML, pydantic, the brain loader).
"""

from __future__ import annotations

import importlib

# Not `typing.TYPE_CHECKING`, as in `keel/__init__.py`: keep the import cheap.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from keel.importers.globs import GlobSet
    from keel.importers.report import ImportedRule, ImportReport, RoleChange
    from keel.importers.rules import Notice
    from keel.importers.run import import_rules

_HOME = {
    "GlobSet": "keel.importers.globs",
    "ImportReport": "keel.importers.report",
    "ImportedRule": "keel.importers.report",
    "Notice": "keel.importers.rules",
    "RoleChange": "keel.importers.report",
    "import_rules": "keel.importers.run",
}

__all__ = ["GlobSet", "ImportReport", "ImportedRule", "Notice", "RoleChange", "import_rules"]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'keel.importers' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # the next access is a plain attribute read
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
