"""What the brain already holds: every context and role id, and the files an import wrote.

Ids are read from file names (`features/**/<id>.context.md`), not from a loaded brain, so a
context file that fails to load still keeps its id from being taken twice. Only the
feature's own folder is read for ownership: the files `keel import` wrote there carry its
line (see `keel.importers.generated`).

Brain files are read through the brain's own reader (`keel.brain.reading.read_file`): a
FIFO is never opened, a link out of the brain never followed, a huge file never read whole.
A name that is not UTF-8 is left to the loader, which reports it; no id is taken by it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from keel.brain.document import is_utf8
from keel.brain.reading import read_file
from keel.errors import ContentError
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
    present: frozenset[str]  # every entry directly in the feature's folder (links, FIFOs too)

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
    for entry in sorted(home.iterdir()) if home.is_dir() and not home.is_symlink() else ():
        if not is_utf8(entry.name) or (entry.is_dir() and not entry.is_symlink()):
            continue
        path = f"features/{feature}/{entry.name}"
        present.add(path)
        if entry.name.endswith((CONTEXT, CODE, ROLE)) or entry.name == "FEATURE.md":
            text = _head(root, path)
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
        if not is_utf8(rel):
            continue
        for name in sorted(n for n in files if is_utf8(n)):
            for suffix, ids in found.items():
                if name.endswith(suffix):
                    ids.setdefault(name.removesuffix(suffix), []).append(f"{rel}/{name}")
    contexts, roles = ({k: tuple(v) for k, v in found[s].items()} for s in (CONTEXT, ROLE))
    return contexts, roles


def _head(root: Path, path: str) -> str:
    """The first lines of a brain file, where the import's line would be; "" when the
    brain would not read the file (a link out of it, a FIFO, too big)."""
    try:
        raw = read_file(str(root.resolve()), path)
    except ContentError:
        return ""
    return "\n".join(raw.decode("utf-8", errors="replace").splitlines()[:8])
