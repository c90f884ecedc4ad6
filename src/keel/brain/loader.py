"""Loading a brain directory: find the files, parse each, assemble one snapshot.

Parsing is per file and cached by the caller (`keel.brain.source`), so a content edit
re-parses only the files that changed; building the snapshot (ids, duplicates,
switched-off features, code beside its spec) is one cheap pass over what parsed.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from keel.brain.constitution import Access, Manifest
from keel.brain.files import Kind, Location, Parsed, location_of, parse_file
from keel.brain.reading import folder_problem
from keel.brain.snapshot import Brain, DirKey
from keel.brain.specs import ENTITY_KINDS, ContextSpec, EntitySpec, FeatureSpec, Skip, SqlFile
from keel.errors import ContentError, UsageError

# Directories Keel never reads: its own database, VCS data, caches, virtualenvs.
IGNORED_DIRS = frozenset({".keel", ".git", "__pycache__", ".venv", "node_modules"})
# The folders of the brain root that Keel reads.
TOPS = ("features", "constitution", "state")


def check_root(root: Path) -> Path:
    """The brain directory, or a `UsageError` saying what is wrong with the path."""
    if not root.exists():
        raise UsageError(f"{root}: no such directory — give the path of a brain directory")
    if not root.is_dir():
        raise UsageError(f"{root}: not a directory — give the path of a brain directory")
    return root.resolve()


def scan(root: Path) -> tuple[list[str], dict[str, int]]:
    """Every brain file, sorted, and every directory with its mtime.

    Among the files are the entries that will be skipped with a reason when parsed: a
    directory named like a brain file, a top folder that is not a folder or links out of
    the brain, a link to a folder below the top (see `keel.brain.reading`). A file is
    listed without a stat of its own: a dangling link or a file gone mid-scan is still
    listed, so that reading it reports the problem instead of the file vanishing unseen.
    """
    files: list[str] = []
    dirs: dict[str, int] = {}
    base = str(root)
    for top in TOPS:
        path = os.path.join(base, top)
        if not os.path.lexists(path):
            continue
        if folder_problem(base, top, top=True) is not None:
            files.append(top)
        else:
            _walk(root, path, files, dirs)
    files.sort()
    return files, dirs


def _walk(root: Path, folder: str, files: list[str], dirs: dict[str, int]) -> None:
    prefix = len(str(root)) + 1
    stack = [folder]
    while stack:
        current = stack.pop()
        try:
            dirs[current[prefix:].replace(os.sep, "/")] = os.stat(current).st_mtime_ns
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            rel = entry.path[prefix:].replace(os.sep, "/")
            kind = entry_kind(entry, rel)
            if kind == "folder":
                stack.append(entry.path)
            elif kind == "file":
                files.append(rel)


def entry_kind(entry: os.DirEntry[str], rel: str) -> str | None:
    """What a scan does with a directory entry below a top folder: walk it as a "folder",
    take it as a "file" (to read, or to skip with its reason), or ignore it (None)."""
    hidden = entry.name in IGNORED_DIRS or entry.name.startswith(".")
    try:
        if entry.is_dir(follow_symlinks=False):
            if hidden:
                return None
            # A folder named like a brain file is where a file belongs: reading says so.
            return "file" if location_of(rel) is not None else "folder"
        if location_of(rel) is not None:
            return "file"
        # A link to a folder is not followed, but said: its files would go unseen.
        if not hidden and entry.is_symlink() and entry.is_dir():
            return "file"
    except OSError:
        return None
    return None


def parse_path(root: Path, path: str, raw: bytes | None = None) -> Parsed:
    """Parse one brain-relative path (a file `scan` found), from `raw` if already read."""
    location = location_of(path)
    if isinstance(location, ContentError):
        return Parsed(path, Location("code", path), errors=(location,))
    if location is None:
        problem = folder_problem(str(root), path, top=path in TOPS)
        if problem is None:
            raise UsageError(f"{path}: not a brain file")
        return Parsed(path, Location("code", path), errors=(problem,))
    return parse_file(root, path, location, raw)


def load_brain(root: Path) -> Brain:
    """Load the brain at `root` in one go (no caching): the CLI's and tests' entry point."""
    root = check_root(root)
    files, _ = scan(root)
    return build_snapshot(root, [parse_path(root, p) for p in files])


_ID_GROUPS: tuple[Kind, ...] = ("context", "role", "skill", *ENTITY_KINDS)


@dataclass(slots=True)
class _Sorted:
    """Every file's parse result, sorted by what it is; the skips so far."""

    skips: list[Skip] = field(default_factory=list)
    by_kind: dict[str, dict[str, list[Parsed]]] = field(
        default_factory=lambda: {k: defaultdict(list) for k in _ID_GROUPS}
    )
    features: dict[str, FeatureSpec] = field(default_factory=dict)
    feature_dirs: set[str] = field(default_factory=set)
    code: set[str] = field(default_factory=set)
    engage: dict[str, str] = field(default_factory=dict)
    manifest: Manifest = field(default_factory=Manifest)
    access: Access = field(default_factory=Access)
    sql: list[SqlFile] = field(default_factory=list)
    # Filled as specs are placed: code files a spec took, ids whose feature is off.
    used_code: set[str] = field(default_factory=set)
    switched_off: dict[str, str] = field(default_factory=dict)


def build_snapshot(root: Path, results: Iterable[Parsed]) -> Brain:
    """One snapshot from every file's parse result: sort, settle ids, place the specs."""
    found = _sort(results)
    off = _features(found)
    unique = {kind: _unique(found.by_kind[kind], found.skips) for kind in _ID_GROUPS}
    contexts = _contexts(found, unique["context"], off)
    entities = _entities(found, unique, off)
    by_dir: dict[DirKey, list[str]] = defaultdict(list)
    by_when: dict[str, list[str]] = defaultdict(list)
    for ident, spec in contexts.items():
        by_dir[(spec.feature, spec.dir)].append(ident)
        for word in spec.when:
            by_when[word].append(ident)
    orphans = sorted(p for p in found.code - found.used_code if not _in_off_feature(p, off))
    skips = found.skips
    return Brain(
        root=root,
        manifest=found.manifest,
        access=found.access,
        features=MappingProxyType(found.features),
        contexts=MappingProxyType(contexts),
        roles=MappingProxyType(unique["role"]),
        entities=MappingProxyType(entities),
        skills=MappingProxyType(unique["skill"]),
        state_sql=tuple(sorted(found.sql, key=lambda f: f.path)),
        orphan_code=tuple(orphans),
        engage=MappingProxyType(found.engage),
        with_code=tuple(sorted(i for i, c in contexts.items() if c.code_path is not None)),
        switched_off=MappingProxyType(found.switched_off),
        skips=tuple(sorted(skips, key=lambda s: (s.path, s.line or 0))),
        by_dir=MappingProxyType({k: tuple(sorted(v)) for k, v in by_dir.items()}),
        by_when=MappingProxyType({k: tuple(sorted(v)) for k, v in by_when.items()}),
        claimed_views=frozenset(v.view for c in contexts.values() for v in c.data),
        failed_contexts=MappingProxyType(_failed_contexts(skips, contexts)),
    )


def _sort(results: Iterable[Parsed]) -> _Sorted:
    """Each parse result in its place; a file that failed becomes skips only."""
    found = _Sorted()
    for parsed in results:
        found.skips.extend(Skip(path=e.path, reason=e.reason, line=e.line) for e in parsed.errors)
        # access.yaml and MANIFEST come with their failures: a failed access rule still
        # refuses its chats, and a failed MANIFEST still guards tenancy and approvals.
        if parsed.errors and parsed.location.kind not in ("access", "manifest"):
            continue
        if parsed.location.feature:
            found.feature_dirs.add(parsed.location.feature)
        _place(found, parsed)
    return found


def _place(found: _Sorted, parsed: Parsed) -> None:
    """File one parsed file under its kind."""
    kind, location = parsed.location.kind, parsed.location
    if kind in found.by_kind:
        found.by_kind[kind][location.id].append(parsed)
    elif kind == "feature":
        found.features[location.feature] = parsed.spec
    elif kind == "code":
        found.code.add(parsed.path)
    elif kind == "engage":
        found.engage[location.id] = parsed.path
    elif kind == "manifest":
        found.manifest = parsed.spec
    elif kind == "access":
        found.access = parsed.spec
    elif kind == "sql":
        found.sql.append(parsed.spec)


def _features(found: _Sorted) -> set[str]:
    """Give every feature directory a spec (FEATURE.md is optional); the ids switched off."""
    for name in found.feature_dirs - found.features.keys():
        found.features[name] = FeatureSpec(id=name, path=f"features/{name}")
    return {name for name, spec in found.features.items() if not spec.enabled}


def _contexts(
    found: _Sorted, unique: Mapping[str, ContextSpec], off: set[str]
) -> dict[str, ContextSpec]:
    """The contexts of features that are on, each with its code half when one is beside it."""
    contexts: dict[str, ContextSpec] = {}
    for ident, spec in unique.items():
        if spec.feature in off:
            found.switched_off[ident] = spec.feature
            continue
        beside = _beside(spec.path, f"{ident}.context.py")
        if beside in found.code:
            found.used_code.add(beside)
            spec = replace(spec, code_path=beside)
        contexts[ident] = spec
    return contexts


def _entities(
    found: _Sorted, unique: Mapping[Kind, Mapping[str, Any]], off: set[str]
) -> dict[str, EntitySpec]:
    """Heartbeats, hooks and scenarios of features that are on, with their code beside."""
    entities: dict[str, EntitySpec] = {}
    for kind in ENTITY_KINDS:
        suffix = ".pipeline.py" if kind == "scenario" else f".{kind}.py"
        for ident, entity in unique[kind].items():
            beside = _beside(entity.path, f"{ident}{suffix}")
            if beside in found.code:
                found.used_code.add(beside)
                if entity.feature not in off:
                    entity = replace(entity, code_path=beside)
            if entity.feature in off:
                found.switched_off[entity.key] = entity.feature
                continue
            entities[entity.key] = entity
    for scenario in [e for e in entities.values() if e.hooks]:
        for hook in inline_hooks(scenario):
            if hook.key in entities:
                found.skips.append(
                    Skip(
                        path=scenario.path,
                        reason=f"its inline hook '{hook.id}' has the id of "
                        f"{entities[hook.key].path} — give it another `id:`",
                    )
                )
                continue
            entities[hook.key] = hook
    return entities


def inline_hooks(scenario: EntitySpec) -> tuple[EntitySpec, ...]:
    """A scenario's inline hooks as hooks of the brain: each runs as the scenario's role,
    reaches what the scenario reaches, and speaks where it says or else where the scenario
    does."""
    return tuple(
        EntitySpec(
            kind="hook",
            id=hook.id or f"{scenario.id}-{_NOT_IN_ID.sub('-', hook.event)}",
            feature=scenario.feature,
            path=scenario.path,
            dir=scenario.dir,
            prompt=hook.prompt if hook.prompt is not None else scenario.prompt,
            agent=scenario.agent,
            description=scenario.description,
            reach=scenario.reach,
            event=hook.event,
            bot=hook.bot or scenario.bot,
            chat=hook.chat or scenario.chat,
            thread=hook.thread if hook.chat else (hook.thread or scenario.thread),
            scenario=scenario.id,
        )
        for hook in scenario.hooks
    )


_NOT_IN_ID = re.compile(r"[^A-Za-z0-9_-]+")


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
