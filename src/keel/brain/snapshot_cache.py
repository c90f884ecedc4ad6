"""The brain's parse kept on disk between processes: `.keel/snapshot.json` in the brain.

A coding agent runs `keel agent-hook` as a new process on every prompt; parsing every
file of the brain each time (YAML, frontmatter, access rules) cost more than the turn
itself. `cached_brain(root)` parses only what changed since the last process did:

- Each file the loader reads (`keel.brain.loader.scan`) has a **stat signature**: size,
  mtime, ctime and inode, of the file and, for a symbolic link, of its target. An entry
  of the cache is used for a file only while that signature is what it was when the file
  was parsed; a file edited, replaced, renamed or touched is parsed again, a file added
  is parsed, a file removed is gone. ctime moves on every change, even one that puts the
  mtime back.
- A signature cannot tell two writes apart within one tick of the file system's clock.
  So an entry whose file changed less than `RACY_SECONDS` before the cache was written is
  also checked by content: its bytes are read and their digest compared (git's "racily
  clean" entries). An edit of the same size in the same tick is seen.
- The snapshot itself is never stored: it is built from the files' parse results by
  `build_snapshot` on every call, so ids, duplicates and indexes are always Keel's own.
- The key includes the stat signature of the loader's own modules (this package and
  `keel.errors`): another version of Keel, or an edit of the parser, starts afresh.

The cache file is data, never code: JSON, read back by a strict reader that takes only
the spec types and their exact fields, with the types their annotations declare
(`keel.brain.spec_json`), each spec consistent with the file it claims to come from. A
file that is not that (corrupt, truncated, of another format, hand-edited) is ignored
whole: the brain is parsed and the file rewritten. Writes go to a temporary file renamed
over the cache, so a reader sees an old cache or a new one, never half of one; a brain
whose `.keel/` cannot be written is parsed on every call, as before.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import stat
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import keel.errors
from keel.brain.constitution import Access, Manifest
from keel.brain.files import Location, Parsed, location_of
from keel.brain.loader import build_snapshot, check_root, parse_path, scan
from keel.brain.reading import read_file
from keel.brain.snapshot import Brain
from keel.brain.spec_json import Unreadable, plain, reader
from keel.brain.specs import ContextSpec, EntitySpec, FeatureSpec, RoleSpec, SkillSpec, SqlFile
from keel.errors import ContentError

CACHE_FILE = ".keel/snapshot.json"  # relative to the brain's root
FORMAT = 1
RACY_SECONDS = 2.0
_RACY_NS = int(RACY_SECONDS * 1e9)
_HERE = Path(__file__).resolve().parent

# What a parsed file's spec is, by the kind its path says it is.
_SPECS: dict[str, Any] = {
    "context": ContextSpec,
    "role": RoleSpec,
    "heartbeat": EntitySpec,
    "hook": EntitySpec,
    "scenario": EntitySpec,
    "skill": SkillSpec,
    "feature": FeatureSpec,
    "manifest": Manifest,
    "access": Access,
    "sql": SqlFile,
    "code": str,
    "engage": str,
}

Signature = tuple[int, ...]


class CachedSource:
    """A brain source for a process that lives one command (a prompt hook, a check): the
    snapshot is read once, through the cache, and edits made while it runs are not
    followed. It offers what `keel.runtime.engine.Engine` asks of a `BrainSource`."""

    def __init__(self, root: Path) -> None:
        self.root = check_root(root)
        self._brain = cached_brain(self.root)

    def current(self) -> Brain:
        return self._brain

    def close(self) -> None:
        """Nothing to stop: no watcher, no probe."""


class FollowedSource:
    """A brain source for a long-lived process that must answer as a new process would (the
    prompt hook's warm server): `refresh()` takes every file's stat signature and, when one
    moved, a file came or went, or a file changed too recently for its signature to be
    trusted, reads the brain through the cache again. So the snapshot is always the one
    `cached_brain` builds at that moment, at the cost of a listing and a stat per file."""

    def __init__(self, root: Path, *, wall_clock: Callable[[], int] = time.time_ns) -> None:
        self.root = check_root(root)
        self._wall = wall_clock
        self._seen: dict[str, Signature | None] = {}
        self._read = 0  # when the brain held was read
        self._brain = self._reread(self._wall(), self._signatures())

    def refresh(self) -> Brain:
        """The brain as `cached_brain` reads it now; the one held while nothing moved."""
        started = self._wall()
        seen = self._signatures()
        if seen != self._seen or not all(
            _changed(signature) + _RACY_NS <= self._read
            for signature in seen.values()
            if signature is not None
        ):
            self._brain = self._reread(started, seen)
        return self._brain

    def current(self) -> Brain:
        """The brain of the last `refresh`."""
        return self._brain

    def close(self) -> None:
        """Nothing to stop: no watcher, no thread."""

    def _signatures(self) -> dict[str, Signature | None]:
        files, _ = scan(self.root)
        base = str(self.root)
        return {rel: _signature(os.path.join(base, rel)) for rel in files}

    def _reread(self, started: int, seen: dict[str, Signature | None]) -> Brain:
        brain = cached_brain(self.root, wall_clock=self._wall)
        self._seen, self._read = seen, started
        return brain


def cached_brain(root: Path, *, wall_clock: Callable[[], int] = time.time_ns) -> Brain:
    """The brain at `root`, parsing only the files whose cache entry no longer holds; the
    cache is rewritten when a file was parsed, added or removed, or has settled."""
    root = check_root(root)
    started = wall_clock()
    code = _code_signature()
    files, _ = scan(root)
    base = str(root)
    stored = _read(root, code)
    entries: dict[str, _Entry] = {}
    changed = stored is None
    for rel in files:
        entry, fresh = _entry(base, rel, (stored or {}).get(rel), started)
        if entry is not None:
            entries[rel] = entry
            changed = changed or fresh
    if changed or entries.keys() != (stored or {}).keys():
        _write(root, code, entries, started)
    return build_snapshot(
        root,
        [entries[rel].parsed if rel in entries else parse_path(root, rel) for rel in sorted(files)],
    )


@dataclasses.dataclass(frozen=True, slots=True)
class _Entry:
    signature: Signature
    digest: str
    parsed: Parsed
    written: int  # when the cache holding it was written (or, for a new entry, begun)


def _entry(base: str, rel: str, known: _Entry | None, started: int) -> tuple[_Entry | None, bool]:
    """The entry for one file, and whether it is new; None for a file the cache does not
    keep: one that cannot be named or read, whose parse only says why, at no cost."""
    if not isinstance(location_of(rel), Location):
        return None, False
    signature = _signature(os.path.join(base, rel))
    if signature is None:
        return None, False
    if known is not None and known.signature == signature and _settled(signature, known):
        return known, False
    try:
        raw = read_file(base, rel)
    except ContentError:
        return None, False
    digest = hashlib.blake2b(raw, digest_size=16).hexdigest()
    if known is not None and known.signature == signature and known.digest == digest:
        # Racily clean: the same bytes. Worth writing again once that settles it.
        entry = _Entry(signature, digest, known.parsed, started)
        return entry, _settled(signature, entry)
    return _Entry(signature, digest, parse_path(Path(base), rel, raw), started), True


def _settled(signature: Signature, entry: _Entry) -> bool:
    """Whether the file last changed well before the entry was written, so that any later
    change gives it another signature."""
    return _changed(signature) + _RACY_NS <= entry.written


def _changed(signature: Signature) -> int:
    """When the file (or its link's target) last changed: its latest mtime or ctime."""
    return max(signature[i] for i in (1, 2, 5, 6) if i < len(signature))


def _signature(path: str) -> Signature | None:
    try:
        st = os.lstat(path)
        own = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        if not stat.S_ISLNK(st.st_mode):
            return own
        target = os.stat(path)
    except OSError:
        return None
    return (*own, target.st_size, target.st_mtime_ns, target.st_ctime_ns, target.st_ino)


def _code_signature() -> list[list[Any]]:
    """The stat signature of the loader's modules: another parser, another cache."""
    paths = sorted(p for p in os.listdir(_HERE) if p.endswith(".py"))
    found: list[list[Any]] = []
    for path in [*(str(_HERE / p) for p in paths), str(keel.errors.__file__)]:
        st = os.stat(path)
        found.append([Path(path).name, st.st_size, st.st_mtime_ns, st.st_ino])
    return found


# -- the file ---------------------------------------------------------------------------


def _read(root: Path, code: list[list[Any]]) -> dict[str, _Entry] | None:
    """The cache's entries, or None when there is no usable cache."""
    try:
        text = (root / CACHE_FILE).read_bytes()
    except OSError:
        return None
    try:
        data = json.loads(text, parse_constant=_no_constant)
        return _entries(root, code, data)
    except (ValueError, RecursionError):
        # Not JSON, nested past the parser's depth, or not the cache's shape (Unreadable
        # is a ValueError): the brain is parsed and the file rewritten, whatever it held.
        return None


def _no_constant(name: str) -> Any:
    raise Unreadable(f"{name} is not a number the cache writes")


def _entries(root: Path, code: list[list[Any]], data: Any) -> dict[str, _Entry]:
    if not isinstance(data, dict) or data.keys() != {"format", "root", "code", "written", "files"}:
        raise Unreadable("not a snapshot cache")
    if data["format"] != FORMAT or data["root"] != str(root) or data["code"] != code:
        raise Unreadable("written by another Keel, or for another brain")
    written, files = data["written"], data["files"]
    if type(written) is not int or not isinstance(files, dict):
        raise Unreadable("not a snapshot cache")
    return {rel: _decode_entry(rel, entry, written) for rel, entry in files.items()}


def _write(root: Path, code: list[list[Any]], entries: Mapping[str, _Entry], started: int) -> None:
    data = {
        "format": FORMAT,
        "root": str(root),
        "code": code,
        "written": started,
        "files": {rel: _encode_entry(entry) for rel, entry in entries.items()},
    }
    # ASCII only (json's escapes), so the file reads the same under any locale.
    text = json.dumps(data, separators=(",", ":"))
    target = root / CACHE_FILE
    temporary = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    try:
        target.parent.mkdir(exist_ok=True)
        temporary.write_text(text, encoding="ascii")
        os.replace(temporary, target)
    except OSError:
        # A brain on read-only storage, or a full disk: it parses on every call instead.
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)


def _encode_entry(entry: _Entry) -> dict[str, Any]:
    parsed = entry.parsed
    return {
        "signature": list(entry.signature),
        "digest": entry.digest,
        "spec": plain(parsed.spec),
        "errors": [[e.path, e.reason, e.line] for e in parsed.errors],
    }


def _decode_entry(rel: str, data: Any, written: int) -> _Entry:
    location = location_of(rel)
    if not isinstance(location, Location):
        raise Unreadable(f"{rel!r} is not a brain file the cache keeps")
    if not isinstance(data, dict) or data.keys() != {"signature", "digest", "spec", "errors"}:
        raise Unreadable(f"{rel!r}: not a cache entry")
    signature = reader(tuple[int, ...])(data["signature"])
    digest = data["digest"]
    if len(signature) not in (4, 8) or not isinstance(digest, str) or len(digest) != 32:
        raise Unreadable(f"{rel!r}: not a cache entry")
    spec = None if data["spec"] is None else reader(_SPECS[location.kind])(data["spec"])
    errors = tuple(
        ContentError(path, reason, line=line)
        for path, reason, line in reader(tuple[tuple[str, str, int | None], ...])(data["errors"])
    )
    if spec is not None and not _belongs(spec, rel, location):
        raise Unreadable(f"{rel!r}: the spec is another file's")
    return _Entry(signature, digest, Parsed(rel, location, spec=spec, errors=errors), written)


def _belongs(spec: Any, rel: str, location: Location) -> bool:
    """Whether a spec says it comes from the file at `rel`, where the loader put it."""
    if isinstance(spec, str):
        return spec == rel
    ident = location.feature if location.kind == "feature" else location.id
    return (
        getattr(spec, "path", rel) == rel
        and getattr(spec, "id", ident) == ident
        and getattr(spec, "feature", location.feature) == location.feature
        and getattr(spec, "dir", location.dir) == location.dir
        and getattr(spec, "kind", location.kind) == location.kind
    )
