"""Every file `keel import` writes or removes: inside the brain, and nowhere else.

The brain's loader reads only what lies inside the brain, and never follows a folder link
below `features/`; the import holds its writes to the same rule. `Writes` is the one way
the import touches a brain file. A write or a removal is refused — a `refused` notice with
the reason, never an abort — when:

- a folder on the way is a link that leads out of the brain, or is not a folder;
- the file itself is a symbolic link (never written through, never removed: its target is
  not the import's), or is not a regular file (a FIFO, a device, a folder);
- the file system refuses it.

Folders are created one at a time, each checked before the next, so not even an empty
folder is made outside the brain; a file is opened without following a link
(`O_NOFOLLOW`) and without waiting on a FIFO (`O_NONBLOCK`). `feature_problem` refuses
the whole import up front when `features/<feature>` is itself a link.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from keel.brain.reading import inside, read_file
from keel.errors import ContentError
from keel.importers.rules import Notice

_WRITE_FLAGS = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_TRUNC
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


class Unwritable(Exception):
    """A brain file the import may not write or remove, and why."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


def feature_problem(root: Path, feature: str) -> str | None:
    """Why the import may not write into `features/<feature>` of the brain at `root` (resolved),
    or None. `features` may link inside the brain, as for the loader; `features/<feature>`
    may not be a link at all: the loader does not follow it."""
    top = os.path.realpath(root / "features")
    if not inside(top, str(root)):
        return (
            f"features is a symbolic link out of the brain ({top}) — keel import writes only "
            "inside the brain (the loader does not read it either); replace the link with a "
            "folder"
        )
    rel = f"features/{feature}"
    path = root / rel
    if not path.is_symlink():
        if path.exists() and not path.is_dir():
            return f"{rel} is not a folder — move it away, or import with another --feature"
        return None
    real = os.path.realpath(path)
    where = "out of the brain" if not inside(real, str(root)) else "elsewhere in the brain"
    return (
        f"{rel} is a symbolic link {where} ({real}) — keel import writes only into real "
        "folders of the brain (the loader does not follow a folder link there either); "
        f"replace the link with a folder, or import with another --feature"
    )


@dataclass
class Writes:
    """The writes and removals of one run, each sorted by what it did, or refused."""

    root: Path  # the brain, resolved
    written: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    refused: list[Notice] = field(default_factory=list)

    def problem(self, rel: str) -> str | None:
        """Why `rel` could not be written, without writing it; None when it can be."""
        try:
            self._target(rel, create=False)
        except Unwritable as exc:
            return exc.reason
        return None

    def put(self, rel: str, text: str) -> bool:
        """Write `text` as the brain file `rel`; False (and a refused notice) when refused."""
        data = text.encode("utf-8")
        try:
            path, present = self._target(rel, create=True)
            if present and self._holds(rel, data):
                self.unchanged.append(rel)
                return True
            _write(path, data)
        except Unwritable as exc:
            return self._refuse(rel, exc.reason)
        except OSError as exc:
            return self._refuse(rel, f"cannot write it: {exc.strerror or exc}")
        (self.updated if present else self.written).append(rel)
        return True

    def remove(self, rel: str) -> bool:
        """Remove the brain file `rel` (gone already is fine); False when refused."""
        try:
            path, present = self._target(rel, create=False)
            if present:
                os.unlink(path)
        except Unwritable as exc:
            return self._refuse(rel, exc.reason)
        except OSError as exc:
            return self._refuse(rel, f"cannot remove it: {exc.strerror or exc}")
        self.removed.append(rel)
        return True

    def _refuse(self, rel: str, reason: str) -> bool:
        self.refused.append(Notice(path=rel, message=reason))
        return False

    def _holds(self, rel: str, data: bytes) -> bool:
        try:
            return read_file(str(self.root), rel) == data
        except ContentError:
            return False

    def _target(self, rel: str, *, create: bool) -> tuple[str, bool]:
        """The file's path through the real path of its folder, and whether it is there."""
        folder, _, name = rel.rpartition("/")
        real = self._folder(folder, create=create)
        path = os.path.join(real, name)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return path, False
        if stat.S_ISLNK(st.st_mode):
            raise Unwritable(
                f"a symbolic link (to {os.path.realpath(path)}) — keel import never writes "
                "through a link nor removes one; remove the link, then re-run"
            )
        if not stat.S_ISREG(st.st_mode):
            raise Unwritable(
                "not a regular file (a folder, a FIFO or a device) — keel import writes only "
                "plain files; move it away, then re-run"
            )
        return path, True

    def _folder(self, folder: str, *, create: bool) -> str:
        """The real path of the brain folder `folder`, created a step at a time when asked."""
        root = str(self.root)
        path = root
        for part in folder.split("/") if folder else ():
            path = os.path.join(path, part)
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                if not create:
                    return path  # nothing below it exists: nothing to refuse
                os.mkdir(path)
                st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                real = os.path.realpath(path)
                if not inside(real, root):
                    raise Unwritable(
                        f"{os.path.relpath(path, root)} is a symbolic link out of the brain "
                        f"({real}) — keel import writes only inside the brain; replace the "
                        "link with a folder, then re-run"
                    )
                if not os.path.isdir(real):
                    raise Unwritable(f"{os.path.relpath(path, root)} is a link to no folder")
            elif not stat.S_ISDIR(st.st_mode):
                raise Unwritable(f"{os.path.relpath(path, root)} is not a folder — move it away")
        real = os.path.realpath(path)
        if not inside(real, root):  # the brain's own folders moved under the import
            raise Unwritable(f"{folder} resolves outside the brain ({real})")
        return real


def _write(path: str, data: bytes) -> None:
    fd = os.open(path, _WRITE_FLAGS, 0o666)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Unwritable("not a regular file — keel import writes only plain files")
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
