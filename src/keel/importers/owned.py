"""What the brain already holds: every context and role id, and the files an import wrote.

Ids are read from file names (`features/**/<id>.context.md`), not from a loaded brain, so a
context file that fails to load still keeps its id from being taken twice. Only the
feature's own folder is read for ownership: the files `keel import` wrote there carry its
line (see `keel.importers.generated`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from keel.importers.generated import owner_of, written_by_import

# As the brain loader: directories Keel never reads, and hidden ones.
IGNORED_DIRS = frozenset({".keel", ".git", "__pycache__", ".venv", "node_modules"})
CONTEXT, CODE, ROLE = ".context.md", ".context.py", ".agent.md"


@dataclass(frozen=True, slots=True, kw_only=True)
class BrainFiles:
    """The brain's context and role files, and which of the feature's files are the import's."""

    contexts: Mapping[str, tuple[str, ...]]  # context id -> its `.context.md` paths
    roles: Mapping[str, tuple[str, ...]]  # role id -> its `.agent.md` paths
    owned: Mapping[str, str]  # the feature's context and code files -> their source
    written: frozenset[str]  # the feature's FEATURE.md and roles the import created
    present: frozenset[str]  # every file directly in the feature's folder

    def previous_ids(self) -> dict[str, str]:
        """The id each source got from an earlier run, by source."""
        found: dict[str, str] = {}
        for path, source in sorted(self.owned.items()):
            name = path.rsplit("/", 1)[-1]
            if name.endswith(CONTEXT):
                found.setdefault(source, name.removesuffix(CONTEXT))
        return found


def scan_brain(root: Path, feature: str) -> BrainFiles:
    """Read the brain's `features/` tree for ids, and the feature's folder for ownership."""
    contexts, roles = _ids(root)
    owned: dict[str, str] = {}
    written: set[str] = set()
    present: set[str] = set()
    home = root / "features" / feature
    for entry in sorted(home.iterdir()) if home.is_dir() else ():
        if not entry.is_file():
            continue
        path = f"features/{feature}/{entry.name}"
        present.add(path)
        if entry.name.endswith((CONTEXT, CODE, ROLE)) or entry.name == "FEATURE.md":
            text = _head(entry)
            source = owner_of(text)
            if source is not None and entry.name.endswith((CONTEXT, CODE)):
                owned[path] = source
            elif written_by_import(text):
                written.add(path)
    return BrainFiles(
        contexts=MappingProxyType(contexts),
        roles=MappingProxyType(roles),
        owned=MappingProxyType(owned),
        written=frozenset(written),
        present=frozenset(present),
    )


def _ids(root: Path) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """Every context and role id under `features/`, with the files that claim it."""
    found: dict[str, dict[str, list[str]]] = {CONTEXT: {}, ROLE: {}}
    for folder, dirs, files in os.walk(root / "features"):
        dirs[:] = sorted(d for d in dirs if d not in IGNORED_DIRS and not d.startswith("."))
        rel = Path(folder).relative_to(root).as_posix()
        for name in sorted(files):
            for suffix, ids in found.items():
                if name.endswith(suffix):
                    ids.setdefault(name.removesuffix(suffix), []).append(f"{rel}/{name}")
    contexts, roles = ({k: tuple(v) for k, v in found[s].items()} for s in (CONTEXT, ROLE))
    return contexts, roles


def _head(path: Path) -> str:
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            return "".join(handle.readline() for _ in range(8))
    except OSError:
        return ""
