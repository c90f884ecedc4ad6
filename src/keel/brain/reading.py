"""Reading one brain file safely: a regular file inside the brain, of bounded size, or why not.

Every read of brain content goes through `read_file` — the loader's and the live
source's — so a symlink to `/dev/zero`, a FIFO that never gets a writer, a directory named
like a file, or a link to a file outside the brain is a skip with its reason, never a
hang, a crash or a silent read of something that is not the brain's.

Symbolic links: a link to a file inside the brain is followed (the file is read where the
link resolves); a link whose target lies outside the brain, or does not exist, is not.
Links to folders are followed only for the three top folders (`features/`,
`constitution/`, `state/`) and only when they stay inside the brain; a link to a folder
deeper down is reported and not followed (following it could loop, and its files would
have two paths). See docs/limits.md.

`keel import` reads a repository's rule files through the same `read_file`, with the
repository as the tree (`Tree`): a rule file that links out of the repository is never
copied into a brain.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from keel.brain.limits import MAX_FILE_BYTES, MAX_SQL_BYTES
from keel.errors import ContentError

# Never block on a FIFO or a device, never follow a link swapped in after the check, never
# make a terminal ours. (Windows has none of these flags; its files are plain files.)
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Tree:
    """A tree of files `read_file` reads: what its messages call it, and its size limit."""

    name: str = "the brain"  # what a symbolic link must stay inside
    file: str = "brain file"
    limit: int | None = None  # bytes a file may hold; None: by its place in a brain
    split: str = "split it, or move data into state views"  # the fix for a file too big


BRAIN = Tree()


def size_limit(rel: str) -> int:
    """The most bytes a brain file at `rel` may hold."""
    return MAX_SQL_BYTES if rel.startswith("state/") else MAX_FILE_BYTES


def _noun(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a file" if stat.S_ISREG(mode) else "not a file"


def _not_a_file(mode: int, tree: Tree) -> str:
    fix = "rename the folder" if stat.S_ISDIR(mode) else "replace it with a file"
    return f"this is {_noun(mode)}, not a regular file — {tree.file}s are plain files; {fix}"


def inside(real: str, root: str) -> bool:
    """Whether the resolved path `real` lies inside the resolved brain root."""
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def _outside(rel: str, what: str, tree: Tree = BRAIN) -> ContentError:
    return ContentError(
        rel,
        f"a symbolic link to {what} outside {tree.name} — Keel reads only what lies inside "
        f"{tree.name} directory; copy it in, or point the link inside {tree.name}",
    )


def _cannot(rel: str, exc: OSError) -> ContentError:
    return ContentError(rel, f"cannot read: {exc.strerror or exc}")


def read_file(root: str, rel: str, *, tree: Tree = BRAIN) -> bytes:
    """The bytes of the brain file at `rel` (POSIX, relative to the resolved `root`).

    Raises `ContentError` for anything that is not a regular file inside the brain within
    its size limit (`size_limit`). Never blocks: a FIFO is refused before it is opened.
    `tree` names another tree read by the same rules (a repository, for `keel import`).
    """
    limit = tree.limit if tree.limit is not None else size_limit(rel)
    path = os.path.join(root, rel)
    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            path = os.path.realpath(path)
            if not inside(path, root):
                raise _outside(rel, "a file", tree)
            st = os.stat(path)
    except OSError as exc:
        raise _cannot(rel, exc) from None
    _check(rel, st, limit, tree)
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        raise _cannot(rel, exc) from None
    try:
        # The file checked may not be the file opened (a rename in between): check again.
        st = os.fstat(fd)
        _check(rel, st, limit, tree)
        return _read_at_most(rel, fd, st.st_size, limit, tree)
    finally:
        os.close(fd)


def _read_at_most(rel: str, fd: int, size: int, limit: int, tree: Tree) -> bytes:
    # One read of a byte more than the stat said takes a regular file whole (a short read
    # is its end). A file still being written may have grown since: read on to its end,
    # but never past the limit.
    ask = min(size, limit) + 1
    data = os.read(fd, ask)
    if len(data) == ask:
        chunks = [data]
        total = ask
        while total <= limit and (chunk := os.read(fd, limit + 1 - total)):
            chunks.append(chunk)
            total += len(chunk)
        data = b"".join(chunks)
    if len(data) > limit:
        raise _too_big(rel, len(data), limit, tree, growing=True)
    return data


def _check(rel: str, st: os.stat_result, limit: int, tree: Tree) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise ContentError(rel, _not_a_file(st.st_mode, tree))
    if st.st_size > limit:
        raise _too_big(rel, st.st_size, limit, tree)


def _too_big(rel: str, size: int, limit: int, tree: Tree, *, growing: bool = False) -> ContentError:
    held = "grew past" if growing else f"holds {size:,} bytes, over"
    return ContentError(
        rel,
        f"the file {held} the limit of {limit:,} bytes for a {tree.file} (docs/limits.md) "
        f"— {tree.split}",
    )


def folder_problem(root: str, rel: str, *, top: bool) -> ContentError | None:
    """Why the folder entry at `rel` is not walked, or None when it may be.

    `top` marks the three top folders, which may be links that stay inside the brain.
    A name that is neither a folder nor a link to one is not a folder problem (None).
    """
    path = os.path.join(root, rel)
    try:
        st = os.lstat(path)
        if not stat.S_ISLNK(st.st_mode):
            if top and not stat.S_ISDIR(st.st_mode):
                return ContentError(
                    rel, f"'{rel}' must be a folder, but this is {_noun(st.st_mode)} — move it"
                )
            return None
        real = os.path.realpath(path)
        target_is_dir = os.path.isdir(real)
    except OSError as exc:
        return _cannot(rel, exc)
    if not target_is_dir:
        return ContentError(rel, f"'{rel}' must be a folder, but it is a link to no folder")
    if not top:
        return ContentError(
            rel,
            "a symbolic link to a folder — Keel does not follow folder links inside a top "
            "folder (they could loop); move the files here, or link each file",
        )
    if not inside(real, root):
        return _outside(rel, "a folder")
    return None
