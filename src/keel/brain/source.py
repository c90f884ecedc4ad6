"""The live brain: one long-lived holder of the current snapshot, kept in step with the disk.

Content is hot: an edit reaches the next turn with no restart. `BrainSource.current()` is
called once per turn and answers the snapshot to use. When nothing changed it returns the
very same `Brain` object; when something did, it re-parses only the files that changed
(each file's parse is cached with its stamp and content digest) and assembles a new
snapshot in one pass over the cache.

How changes are found:

- **watch** (the default): a watchfiles (inotify) thread collects the paths that
  changed; a call swaps them out and looks only at those. A call with nothing pending
  costs two attribute reads. If the watcher cannot start, or dies, the source logs why
  and probes by stat instead.
- **stat** (with `watch=False`, or where a watcher cannot run): at most once every
  `contentProbe.context` seconds (MANIFEST; 0 = every call) stat every known file (mtime,
  size) and directory (a new mtime means an entry was added, removed or renamed there, so
  that directory is listed again). Between probes a call costs one clock read.
  Timestamps are coarse (a kernel tick, two seconds on some file systems), so a file
  whose mtime was within `RACY_SECONDS` of the moment it was last read is re-read and its
  digest compared on every probe until it settles: an edit that keeps the size and lands
  in the same tick is still seen (git's "racily clean").

Files are compared by content digest before parsing, so a `touch` or a save that writes
the same bytes costs a read, never a parse or a new snapshot.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Literal

# Private module, kept steady by the exact pin of watchfiles (see _Watcher for why).
from watchfiles._rust_notify import RustNotify

from keel.brain.files import Parsed
from keel.brain.loader import (
    IGNORED_DIRS,
    TOPS,
    build_snapshot,
    check_root,
    entry_kind,
    parse_path,
)
from keel.brain.reading import folder_problem, read_file
from keel.brain.snapshot import Brain
from keel.errors import ContentError

logger = logging.getLogger(__name__)

# The parse step, injectable so tests can count it: (root, path, bytes or None) -> Parsed.
# None asks the parser to read the file itself (and report why it cannot).
ParseFn = Callable[[Path, str, bytes | None], Parsed]
Mode = Literal["stat", "watch"]

RACY_SECONDS = 2.0
_RACY_NS = int(RACY_SECONDS * 1e9)
# The watcher groups a burst of events (an editor's save is several) before handing them
# over; the stop event is checked every step, so close() returns within one step.
_DEBOUNCE_MS, _STEP_MS, _TIMEOUT_MS = 100, 20, 1000


@dataclass(frozen=True, slots=True)
class _File:
    path: str  # absolute, ready for os.stat
    mtime: int
    size: int
    digest: bytes
    parsed: Parsed


@dataclass(slots=True)
class _Dir:
    path: str
    mtime: int
    children: set[str]  # brain-relative paths of the files and folders listed in it


class BrainSource:
    """The current snapshot of the brain at `root`, re-read as its files change.

    `clock` (monotonic seconds) spaces stat probes; `wall_clock` (epoch nanoseconds, the
    file system's clock) tells a freshly written file from a settled one. By default changes
    are followed with a file watcher (inotify), which costs a turn almost nothing; where it
    cannot start, or with `watch=False`, the files are stat-probed at most once per
    `contentProbe.context` seconds. Thread-safe; use as a context
    manager, or call `close()`, to stop the watcher.
    """

    def __init__(
        self,
        root: Path,
        *,
        clock: Callable[[], float] = time.monotonic,
        watch: bool = True,
        wall_clock: Callable[[], int] = time.time_ns,
        parse: ParseFn = parse_path,
    ) -> None:
        self.root = check_root(root)
        self._root = str(self.root)
        self._clock = clock
        self._wall = wall_clock
        self._parse = parse
        self._files: dict[str, _File] = {}
        self._dirs: dict[str, _Dir] = {}
        self._racy_files: set[str] = set()
        self._racy_dirs: set[str] = set()
        self._order: list[str] | None = None
        self._lock = threading.Lock()
        self._pending_lock = threading.Lock()
        self._pending: set[str] = set()
        self._watch_failure: BaseException | None = None
        self._watcher: _Watcher | None = None
        self._dirty = False

        # The watcher starts before the first read, so an edit made while the brain loads
        # is still reported (and costs no parse if the load already saw it).
        cannot_watch: BaseException | None = None
        if watch:
            try:
                self._watcher = _Watcher(self._root, self._on_events, self._on_failure)
            except (OSError, RuntimeError) as exc:
                cannot_watch = exc
        now = self._wall()
        self._refresh(self._rescan("", now), now)
        self._brain = self._assemble()
        self._due = self._clock() + self._brain.manifest.content_probe_seconds
        if cannot_watch is not None:
            logger.warning(
                "%s: cannot watch the brain for edits (%s) — probing files by stat every "
                "%s s instead",
                self._root,
                cannot_watch,
                self._brain.manifest.content_probe_seconds,
            )

    @property
    def mode(self) -> Mode:
        """How changes are found now: "watch" while the watcher runs, else "stat"."""
        return "watch" if self._watcher is not None else "stat"

    def current(self) -> Brain:
        """The snapshot for this turn: the same object unless a file changed."""
        if self._watcher is not None:
            if not self._pending and self._watch_failure is None:
                return self._brain
            with self._lock:
                return self._apply_events()
        now = self._clock()
        if now < self._due:
            return self._brain
        with self._lock:
            if self._clock() >= self._due:
                self._probe()
                self._due = self._clock() + self._brain.manifest.content_probe_seconds
            return self._brain

    def close(self) -> None:
        """Stop the watcher thread, if one runs; the source then keeps working by stat."""
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.stop()

    def __enter__(self) -> BrainSource:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # -- stat mode ---------------------------------------------------------------------

    def _probe(self) -> None:
        now = self._wall()
        dirty = set(self._racy_dirs)
        if "" not in self._dirs:  # the root itself went away: look for it again
            dirty.add("")
        for rel, folder in self._dirs.items():
            try:
                if os.stat(folder.path).st_mtime_ns != folder.mtime:
                    dirty.add(rel)
            except OSError:
                dirty.add(rel)
        suspects = set(self._racy_files)
        for rel, known in self._files.items():
            try:
                st = os.stat(known.path)
            except OSError:
                suspects.add(rel)
                continue
            if st.st_mtime_ns != known.mtime or st.st_size != known.size:
                suspects.add(rel)
        if dirty or suspects:
            self._update(dirty, suspects, now)

    # -- watch mode --------------------------------------------------------------------

    def _on_events(self, paths: set[str]) -> None:
        with self._pending_lock:
            self._pending |= paths

    def _on_failure(self, exc: BaseException) -> None:
        self._watch_failure = exc

    def _apply_events(self) -> Brain:
        if self._watch_failure is not None:
            logger.warning(
                "%s: the brain watcher stopped (%s) — probing files by stat from now on",
                self._root,
                self._watch_failure,
            )
            self._watch_failure = None
            self.close()
            # Whatever happened while the watcher was failing is found by a full probe.
            self._probe()
            self._due = self._clock() + self._brain.manifest.content_probe_seconds
            return self._brain
        with self._pending_lock:
            paths, self._pending = self._pending, set()
        dirs: set[str] = set()
        files: set[str] = set()
        for rel in paths:
            if rel in self._dirs:
                dirs.add(rel)
            elif rel in self._files:
                files.add(rel)
            else:
                # Something new (a file, or a folder whose own contents inotify may not
                # have reported yet): list the nearest folder we know again.
                dirs.add(self._known_ancestor(rel))
        self._update(dirs, files, self._wall())
        return self._brain

    def _known_ancestor(self, rel: str) -> str:
        while rel:
            rel = rel.rpartition("/")[0]
            if rel in self._dirs:
                return rel
        return ""

    # -- shared ------------------------------------------------------------------------

    def _update(self, dirs: set[str], files: set[str], now: int) -> None:
        self._dirty = False
        found: set[str] = set()
        # Parents first, so a folder removed with its children is dropped once.
        for rel in sorted(dirs, key=len):
            if rel in self._dirs or not rel:
                found |= self._rescan(rel, now)
        self._refresh((files & self._files.keys()) | found, now)
        if self._dirty:
            self._brain = self._assemble()

    def _rescan(self, top: str, now: int) -> set[str]:
        """List `top` and any folder new under it; return brain files not seen before."""
        found: set[str] = set()
        stack = [top]
        while stack:
            rel = stack.pop()
            path = self._abs(rel)
            known = self._dirs.get(rel)
            try:
                mtime = os.stat(path).st_mtime_ns
                with os.scandir(path) as listing:
                    entries = list(listing)
            except OSError:
                self._drop(rel)
                continue
            present = self._listed(rel, entries, stack, found)
            if known is not None:
                for gone in known.children - present:
                    self._drop(gone)
            self._dirs[rel] = _Dir(path, mtime, present)
            _mark(self._racy_dirs, rel, now - mtime < _RACY_NS)
        return found

    def _listed(
        self, rel: str, entries: list[os.DirEntry[str]], stack: list[str], found: set[str]
    ) -> set[str]:
        """The brain files and folders of one listing; new folders go on `stack`, files
        not seen before into `found`. Entries to skip with a reason count as files."""
        present: set[str] = set()
        for entry in entries:
            child = f"{rel}/{entry.name}" if rel else entry.name
            if rel:
                kind = entry_kind(entry, child)
            elif entry.name in TOPS:
                # Top folders are followed through symlinks that stay inside the brain.
                problem = folder_problem(self._root, child, top=True)
                kind = "folder" if problem is None else "file"
            else:
                kind = None
            if kind == "folder":
                present.add(child)
                if child in self._files:  # was a file, or a folder to skip
                    self._drop(child)
                if child not in self._dirs:
                    stack.append(child)
            elif kind == "file":
                present.add(child)
                if child in self._dirs:  # was a folder, is now a file or one to skip
                    self._drop(child)
                if child not in self._files:
                    found.add(child)
        return present

    def _refresh(self, paths: set[str], now: int) -> None:
        """Re-read each path; parse it again only if its bytes changed."""
        for rel in paths:
            path = self._abs(rel)
            raw: bytes | None
            try:
                # The stamp is taken before the read: a write in between shows up as a
                # new stamp at the next probe, never as a stale parse under a fresh stamp.
                st = os.stat(path)
            except OSError:
                if not os.path.lexists(path):
                    self._drop(rel)
                    continue
                # A dangling link: kept, stamped by the link itself, so the parser's
                # "cannot read" reaches the skips instead of the file vanishing unseen.
                st = os.lstat(path)
            try:
                raw = read_file(self._root, rel)
            except ContentError:
                if not os.path.lexists(path):
                    self._drop(rel)
                    continue
                raw = None  # the parser tries again and reports why it cannot be used
            digest = b"" if raw is None else hashlib.blake2b(raw, digest_size=16).digest()
            old = self._files.get(rel)
            if old is not None and raw is not None and old.digest == digest:
                parsed = old.parsed
            else:
                parsed = self._parse(self.root, rel, raw)
                self._dirty = True
            if old is None:
                self._order = None
                parent = self._dirs.get(rel.rpartition("/")[0])
                if parent is not None:
                    parent.children.add(rel)
            self._files[rel] = _File(path, st.st_mtime_ns, st.st_size, digest, parsed)
            _mark(self._racy_files, rel, now - st.st_mtime_ns < _RACY_NS)

    def _drop(self, rel: str) -> None:
        """Forget a file, or a folder and everything under it."""
        parent = self._dirs.get(rel.rpartition("/")[0])
        if parent is not None:
            parent.children.discard(rel)
        if self._files.pop(rel, None) is not None:
            self._racy_files.discard(rel)
            self._order = None
            self._dirty = True
            return
        folder = self._dirs.pop(rel, None)
        if folder is not None:
            self._racy_dirs.discard(rel)
            for child in list(folder.children):
                self._drop(child)

    def _assemble(self) -> Brain:
        if self._order is None:
            self._order = sorted(self._files)
        files = self._files
        return build_snapshot(self.root, (files[rel].parsed for rel in self._order))

    def _abs(self, rel: str) -> str:
        return f"{self._root}/{rel}" if rel else self._root


def _mark(racy: set[str], rel: str, is_racy: bool) -> None:
    if is_racy:
        racy.add(rel)
    else:
        racy.discard(rel)


def _relevant(rel: str) -> bool:
    """Whether an event path can matter to the brain: not under .keel/, .git, caches...

    Only folder names are judged here; a file's own name is left to `location_of`, as the
    stat probe does, so both modes see the same files.
    """
    parts = rel.split("/")
    if parts[0] not in TOPS:
        return False
    return not any(p in IGNORED_DIRS or p.startswith(".") for p in parts[1:-1])


class _Watcher:
    """A watchfiles thread handing the brain-relative paths that changed to a callback.

    It drives watchfiles' RustNotify directly rather than `watchfiles.watch()`: the
    constructor sets up every inotify watch before it returns (so no edit made after
    `BrainSource()` returns is missed) and raises there if it cannot, which is when the
    source falls back to stat probing.
    """

    def __init__(
        self,
        root: str,
        on_events: Callable[[set[str]], None],
        on_failure: Callable[[BaseException], None],
    ) -> None:
        self._root = root
        self._on_events = on_events
        self._on_failure = on_failure
        self._stop = threading.Event()
        self._notify = RustNotify([root], False, False, 300, True, True)
        self._thread = threading.Thread(target=self._run, name="keel-brain-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        prefix = len(self._root) + 1
        try:
            while not self._stop.is_set():
                raw = self._notify.watch(_DEBOUNCE_MS, _STEP_MS, _TIMEOUT_MS, self._stop)
                if raw == "stop":
                    break
                if isinstance(raw, set):
                    paths = {
                        rel
                        for _, path in raw
                        if _relevant(rel := path[prefix:].replace(os.sep, "/"))
                    }
                    if paths:
                        self._on_events(paths)
        except (OSError, RuntimeError) as exc:
            self._on_failure(exc)
        finally:
            self._notify.close()
