"""The pin of a long-lived process: `brain_commit` again only when something it reads changed.

Deciding a pin reads every brain file (to hash them) or starts git twice (`rev-parse`,
`status`): a few milliseconds a run, most of what Keel adds to a run's turn. A worker or a
server starts many runs on a brain that rarely changes, so `Pinning` keeps the last pin and
gives it again while both of these hold:

- the brain's source gives the very same snapshot (`BrainSource.current()` makes a new one
  whenever a file's bytes change, and a watcher or stat probe keeps it in step with the
  disk, as it does for chat turns);
- git's own files that say which commit is checked out and what is staged — `HEAD`, the
  branch file it names, `packed-refs`, `index` — have the same inode, size and time. Git
  replaces each by renaming a new file over it, so any change gives a new inode.

A repository whose `.git` is a file (a linked worktree, a submodule) keeps those files
elsewhere: there every run asks git, as without this memo.
"""

from __future__ import annotations

import os
import stat
import threading
from dataclasses import dataclass, field
from pathlib import Path

from keel.brain.snapshot import Brain, SnapshotSource
from keel.runs.commits import Pin, brain_commit

Stamp = tuple[int, int, int] | None
# What git's files look like: () outside any repository, None when they cannot be watched.
Marks = tuple[Stamp, ...] | None


@dataclass(slots=True)
class Pinning:
    """`brain_commit` of a source's brain, remembered (see the module docstring)."""

    source: SnapshotSource
    _last: tuple[Brain, Marks, Pin] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def pin(self) -> Pin:
        """What the brain is now, as `brain_commit` says it."""
        # Read what the memo is keyed on before deciding: a change made while git or the
        # hash runs gives a new key next time, never a stale pin under a fresh key.
        brain = self.source.current()
        marks = git_marks(self.source.root)
        with self._lock:
            last = self._last
        if last is not None and marks is not None and last[0] is brain and last[1] == marks:
            return last[2]
        pin = brain_commit(self.source.root)
        with self._lock:
            self._last = (brain, marks, pin)
        return pin


def git_marks(root: Path) -> Marks:
    """The stamps of the files that say what git has checked out and staged for `root`."""
    # Every run's plan asks this: one `stat` per folder up to the root, on plain strings
    # (pathlib's `is_dir` then `exists` cost two, and more time than the calls).
    folder = os.fspath(root)
    while True:
        dot_git = os.path.join(folder, ".git")
        try:
            mode = os.stat(dot_git).st_mode
        except OSError:
            mode = None
        if mode is not None:
            if stat.S_ISDIR(mode):
                return _marks(Path(dot_git))
            return None  # a worktree or submodule: its HEAD and index live elsewhere
        parent = os.path.dirname(folder)
        if parent == folder:
            return ()
        folder = parent


def _marks(git_dir: Path) -> Marks:
    head = git_dir / "HEAD"
    try:
        said = head.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    branch = said.removeprefix("ref:").strip() if said.startswith("ref:") else ""
    names = ["HEAD", "index", "packed-refs"] + ([branch] if branch else [])
    return tuple(_stamp(git_dir / name) for name in names)


def _stamp(path: Path) -> Stamp:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)
