"""Loading a brain directory: find the files, parse each, assemble one snapshot.

Parsing is per file and cached by the caller (`keel.brain.source`), so a content edit
re-parses only the files that changed; assembling (ids, duplicates, switched-off features,
code beside its spec) is one cheap pass over what parsed.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from keel.brain.constitution import Access, Manifest
from keel.brain.files import Kind, Parsed, Place, parse_file, place_of
from keel.brain.snapshot import Brain, DirKey
from keel.brain.specs import ENTITY_KINDS, ContextSpec, EntitySpec, FeatureSpec, Skip
from keel.errors import ContentError, UsageError

# Directories Keel never reads: its own database, VCS data, caches, virtualenvs.
IGNORED_DIRS = frozenset({".keel", ".git", "__pycache__", ".venv", "node_modules"})

Stamp = tuple[int, int]  # (mtime_ns, size)


def check_root(root: Path) -> Path:
    """The brain directory, or a `UsageError` saying what is wrong with the path."""
    if not root.exists():
        raise UsageError(f"{root}: no such directory — give the path of a brain directory")
    if not root.is_dir():
        raise UsageError(f"{root}: not a directory — give the path of a brain directory")
    return root.resolve()


def scan(root: Path) -> tuple[dict[str, Stamp], dict[str, int]]:
    """Every brain file with its stamp, and every directory with its mtime."""
    files: dict[str, Stamp] = {}
    dirs: dict[str, int] = {}
    for top in ("features", "constitution", "state"):
        base = root / top
        if base.is_dir():
            _walk(root, base, files, dirs)
    return files, dirs


def _walk(root: Path, folder: Path, files: dict[str, Stamp], dirs: dict[str, int]) -> None:
    prefix = len(str(root)) + 1
    stack = [str(folder)]
    while stack:
        current = stack.pop()
        try:
            dirs[current[prefix:].replace(os.sep, "/")] = os.stat(current).st_mtime_ns
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in IGNORED_DIRS and not entry.name.startswith("."):
                    stack.append(entry.path)
                continue
            rel = entry.path[prefix:].replace(os.sep, "/")
            if place_of(rel) is None:
                continue
            try:
                st = entry.stat()
            except OSError:
                # A dangling link or a file gone mid-scan: listed all the same, so that
                # reading it reports the problem instead of the file vanishing unseen.
                files[rel] = (0, -1)
                continue
            files[rel] = (st.st_mtime_ns, st.st_size)


def parse_path(root: Path, path: str, raw: bytes | None = None) -> Parsed:
    """Parse one brain-relative path (a file `scan` found), from `raw` if already read."""
    place = place_of(path)
    if isinstance(place, ContentError):
        return Parsed(path, Place("code", path), errors=(place,))
    if place is None:
        raise UsageError(f"{path}: not a brain file")
    return parse_file(root, path, place, raw)


def load_brain(root: Path) -> Brain:
    """Load the brain at `root` in one go (no caching): the CLI's and tests' entry point."""
    root = check_root(root)
    files, _ = scan(root)
    return assemble(root, [parse_path(root, p) for p in sorted(files)])


_ID_GROUPS: tuple[Kind, ...] = ("context", "role", "skill", *ENTITY_KINDS)


def assemble(root: Path, results: Iterable[Parsed]) -> Brain:
    """One snapshot from every file's parse result."""
    skips: list[Skip] = []
    by_kind: dict[str, dict[str, list[Parsed]]] = {k: defaultdict(list) for k in _ID_GROUPS}
    features: dict[str, FeatureSpec] = {}
    feature_dirs: set[str] = set()
    code: set[str] = set()
    manifest, access, sql = Manifest(), Access(), []
    for parsed in results:
        skips.extend(Skip(path=e.path, reason=e.reason, line=e.line) for e in parsed.errors)
        if parsed.errors:
            continue
        kind = parsed.place.kind
        if parsed.place.feature:
            feature_dirs.add(parsed.place.feature)
        if kind in by_kind:
            by_kind[kind][parsed.place.id].append(parsed)
        elif kind == "feature":
            features[parsed.place.feature] = parsed.spec
        elif kind == "code":
            code.add(parsed.path)
        elif kind == "manifest":
            manifest = parsed.spec
        elif kind == "access":
            access = parsed.spec
        elif kind == "sql":
            sql.append(parsed.spec)
    for name in feature_dirs - features.keys():
        features[name] = FeatureSpec(id=name, path=f"features/{name}")
    off = {name for name, spec in features.items() if not spec.enabled}

    unique = {kind: _unique(by_kind[kind], skips) for kind in _ID_GROUPS}
    switched_off: dict[str, str] = {}
    used_code: set[str] = set()

    contexts: dict[str, ContextSpec] = {}
    by_dir: dict[DirKey, list[str]] = defaultdict(list)
    by_when: dict[str, list[str]] = defaultdict(list)
    for ident, spec in unique["context"].items():
        if spec.feature in off:
            switched_off[ident] = spec.feature
            continue
        beside = _beside(spec.path, f"{ident}.context.py")
        if beside in code:
            used_code.add(beside)
            spec = replace(spec, code_path=beside)
        contexts[ident] = spec
        by_dir[(spec.feature, spec.dir)].append(ident)
        for word in spec.when:
            by_when[word].append(ident)

    entities: dict[str, EntitySpec] = {}
    for kind in ENTITY_KINDS:
        suffix = ".pipeline.py" if kind == "scenario" else f".{kind}.py"
        for ident, entity in unique[kind].items():
            beside = _beside(entity.path, f"{ident}{suffix}")
            if beside in code:
                used_code.add(beside)
                if entity.feature not in off:
                    entity = replace(entity, code_path=beside)
            if entity.feature in off:
                switched_off[entity.key] = entity.feature
                continue
            entities[entity.key] = entity

    orphans = sorted(p for p in code - used_code if not _in_off_feature(p, off))
    return Brain(
        root=root,
        manifest=manifest,
        access=access,
        features=MappingProxyType(features),
        contexts=MappingProxyType(contexts),
        roles=MappingProxyType(unique["role"]),
        entities=MappingProxyType(entities),
        skills=MappingProxyType(unique["skill"]),
        state_sql=tuple(sorted(sql, key=lambda f: f.path)),
        orphan_code=tuple(orphans),
        switched_off=MappingProxyType(switched_off),
        skips=tuple(sorted(skips, key=lambda s: (s.path, s.line or 0))),
        by_dir=MappingProxyType({k: tuple(sorted(v)) for k, v in by_dir.items()}),
        by_when=MappingProxyType({k: tuple(sorted(v)) for k, v in by_when.items()}),
        claimed_views=frozenset(v.view for c in contexts.values() for v in c.data),
        failed_contexts=MappingProxyType(_failed_contexts(skips, contexts)),
    )


def _unique(groups: Mapping[str, list[Parsed]], skips: list[Skip]) -> dict[str, Any]:
    """Specs whose id only one file claims; every claimant of a shared id is skipped."""
    found: dict[str, Any] = {}
    for ident, claimants in groups.items():
        if len(claimants) == 1:
            found[ident] = claimants[0].spec
            continue
        paths = sorted(c.path for c in claimants)
        for path in paths:
            others = ", ".join(p for p in paths if p != path)
            skips.append(
                Skip(
                    path=path,
                    reason=f"duplicate id '{ident}': {others} has the same file name, so neither "
                    "loads — ids are unique across the brain; rename one of them",
                )
            )
    return found


def _failed_contexts(skips: list[Skip], loaded: Mapping[str, ContextSpec]) -> dict[str, Skip]:
    """The first skip of each context file that did not load, by the context's id."""
    failed: dict[str, Skip] = {}
    for skip in skips:
        name = skip.path.rpartition("/")[2]
        if name.endswith(".context.md"):
            ident = name.removesuffix(".context.md")
            if ident not in loaded:
                failed.setdefault(ident, skip)
    return failed


def _beside(path: str, name: str) -> str:
    head, _, _ = path.rpartition("/")
    return f"{head}/{name}" if head else name


def _in_off_feature(path: str, off: set[str]) -> bool:
    parts = path.split("/")
    return len(parts) > 2 and parts[1] in off
