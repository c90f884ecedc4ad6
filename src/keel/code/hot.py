"""Hot brain code in a worker: a file is loaded again when its bytes change, else reused.

Every call looks at its file. When the file's stat (size, inode, modification and change
times) is what it was, and the file had already been left alone for a while when its bytes
were last read, the loaded module is reused. Otherwise the bytes are read and compared
with those of the loaded version. So two edits of the same size within one tick of the
file system's clock are never mistaken for one (the check git calls "racy"): a file that
was that fresh is read again until it has aged. What runs is exactly what was compared
(the bytes are handed to the loader), compiled from source — never from a `__pycache__` —
and no bytecode is written.

While a file loads, its own directory is first on `sys.path`, so it can import a sibling
module (`import helpers`). A sibling is an ordinary module once imported: it stays for
the worker's life, so an edit to it is seen after a restart (the file that imports it is
hot; the sibling is not). Two features' siblings of the same name are the same module.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from keel.code.modules import CodeKind, Export, load_export
from keel.errors import ContentError

# A file whose last change is at least this much older than the read of its bytes cannot
# change again without its stat changing too.
_SETTLED_NS = 2_000_000_000

Stamp = tuple[int, int, int, int]


@dataclass(slots=True)
class _Loaded:
    source: bytes
    kind: CodeKind
    export: Export
    stamp: Stamp
    settled: bool


class HotCode:
    """The exports of a brain's code files, each loaded once per version of its bytes."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._files: dict[str, str] = {}
        self._loaded: dict[str, _Loaded] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def export(self, path: str, kind: CodeKind) -> Export:
        """The file's export; a `ContentError` when it does not load or exports the wrong thing."""
        file = self.file(path)
        stamp = self._stat(path, file)
        hit = self._loaded.get(path)
        if hit is not None and hit.kind == kind and hit.settled and hit.stamp == stamp:
            return hit.export
        read_at = time.time_ns()
        source = self._read(path, file)
        settled = read_at - max(stamp[2], stamp[3]) >= _SETTLED_NS
        with self._lock(path):
            # Another call may have loaded this very version while this one waited.
            hit = self._loaded.get(path)
            if hit is None or hit.kind != kind or hit.source != source:
                hit = _Loaded(
                    source=source,
                    kind=kind,
                    export=self._load(path, kind, source),
                    stamp=stamp,
                    settled=settled,
                )
                self._loaded[path] = hit
            else:
                hit.stamp, hit.settled = stamp, settled
            return hit.export

    def file(self, path: str) -> str:
        """The absolute file name of a brain-relative path (as tracebacks name it)."""
        found = self._files.get(path)
        if found is None:
            if path.startswith("/") or ".." in path.split("/"):
                raise ContentError(
                    path, "a code path must be inside the brain, relative to its root"
                )
            found = self._files.setdefault(path, os.path.join(self._root, path))
        return found

    # Plain strings and os calls: this runs on every call, and pathlib costs more than it.

    def _stat(self, path: str, file: str) -> Stamp:
        try:
            st = os.stat(file)
        except FileNotFoundError:
            raise ContentError(
                path, "the code file is not there — it was moved or deleted"
            ) from None
        except OSError as exc:
            raise ContentError(path, f"the code file cannot be read: {exc.strerror}") from None
        return (st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)

    def _read(self, path: str, file: str) -> bytes:
        try:
            with open(file, "rb") as handle:
                return handle.read()
        except FileNotFoundError:
            raise ContentError(
                path, "the code file is not there — it was moved or deleted"
            ) from None
        except OSError as exc:
            raise ContentError(path, f"the code file cannot be read: {exc.strerror}") from None

    def _load(self, path: str, kind: CodeKind, source: bytes) -> Export:
        folder = os.path.dirname(self.file(path))
        sys.path.insert(0, folder)
        try:
            return load_export(self._root, path, kind, source=source)
        finally:
            with contextlib.suppress(ValueError):  # the module itself took it off
                sys.path.remove(folder)

    def _lock(self, path: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(path, threading.Lock())
