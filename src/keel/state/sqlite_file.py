"""A new SQLite file is made whole beside its place, then appears there in one step.

Whoever finds no file builds one under a temporary name in the same directory (`fill`
creates, migrates and applies, in one transaction), syncs it to disk, and hard-links it to
the real name. A link fails when the name is taken, so when several processes start
together the first link wins and the others drop their copies and open the winner's — all
on one complete database. A process killed at any moment leaves no database (the next start
builds one) or a complete one; never a file that exists without its state.

What a killed builder leaves is its temporary file, named after its host and process id;
the next start on the same host removes those of processes that are gone (another host's
or container's process ids mean nothing here, so their files are left alone).

Where the filesystem has no hard links, the copy is renamed into place instead, if the
name is still free: as atomic for one starter, but two starting in the same instant could
both publish, the later replacing the earlier.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import secrets
import socket
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from keel.errors import StoreError

# What link() says on a filesystem without hard links (FAT, some network shares).
_NO_HARD_LINKS = frozenset(
    {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS, errno.EMLINK, errno.EXDEV}
)
_SIDECARS = ("", "-journal", "-wal", "-shm")


def write_ahead(dbapi_connection: Any) -> None:
    """Put a new connection to a SQLite file in write-ahead mode, synced at checkpoints.

    With the default rollback journal every commit waits for the disk two or three times;
    a run commits a few times per step, so that wait was most of what a run cost. In WAL
    mode with `synchronous=NORMAL` a commit is an append: a killed process loses nothing
    that committed, and a power cut can lose only the last commits, never corrupt the
    file. Readers no longer block the writer either. Switching a file that another
    process holds open in the old mode may be refused; it is then left as it is (the mode
    is kept in the file, so the next opener tries again).
    """
    try:
        (mode,) = dbapi_connection.execute("PRAGMA journal_mode=WAL").fetchone()
    except sqlite3.OperationalError:
        return
    if str(mode).lower() == "wal":  # in the old mode, NORMAL could corrupt on a power cut
        dbapi_connection.execute("PRAGMA synchronous=NORMAL")


def make_whole(target: Path, fill: Callable[[Path], None], *, where: str) -> None:
    """Make sure the SQLite file `target` exists, built by `fill(temporary path)` if not.

    `fill` builds a complete database at the path it is given; a `StoreError` from it
    leaves nothing behind and is raised as it is.
    """
    _directory(target, where)
    _sweep(target)
    if target.exists():
        return
    temp = target.with_name(f".{target.name}.{_host()}.{os.getpid()}.{secrets.token_hex(4)}.new")
    try:
        fill(temp)
        _publish(temp, target, where)
    finally:
        _remove(temp)


def temporary(target: Path) -> re.Pattern[str]:
    """The names of the temporary files builders of `target` use (and their journals).

    The groups are the builder's host (a short hash of its name) and process id.
    """
    return re.compile(
        rf"^\.{re.escape(target.name)}\.([0-9a-f]{{8}})\.(\d+)\.[0-9a-f]{{8}}\.new"
        r"(-journal|-wal|-shm)?$"
    )


def _host() -> str:
    return hashlib.sha256(socket.gethostname().encode("utf-8")).hexdigest()[:8]


def _directory(target: Path, where: str) -> None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(
            f"cannot create the directory for {where}: {exc.strerror} — check that "
            f"{target.parent} is writable, or give another database URL"
        ) from None


def _publish(temp: Path, target: Path, where: str) -> None:
    try:
        _sync(temp, os.O_RDWR)
        try:
            os.link(temp, target)
        except FileExistsError:
            return  # another process published first; its file is as whole as this one
        except OSError as exc:
            if exc.errno not in _NO_HARD_LINKS or target.exists():
                raise
            os.replace(temp, target)
        # The new name must survive a power cut too; Windows has no directory handle for it.
        if sys.platform != "win32":
            _sync(target.parent, os.O_RDONLY)
    except OSError as exc:
        if target.exists():
            return
        raise StoreError(
            f"cannot create {where}: {exc.strerror or exc} — check that {target.parent} is "
            "writable and has room, or give another database URL"
        ) from None


def _sync(path: Path, mode: int) -> None:
    fd = os.open(path, mode)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove(temp: Path) -> None:
    for suffix in _SIDECARS:
        temp.with_name(temp.name + suffix).unlink(missing_ok=True)


def _sweep(target: Path) -> None:
    """Remove the temporary files of builders of `target` that are no longer running (one
    killed after it put its file in place leaves its copy beside a complete database)."""
    pattern = temporary(target)
    host = _host()
    try:
        names = os.listdir(target.parent)
    except OSError:
        return
    for name in names:
        found = pattern.match(name)
        if found is not None and found[1] == host and not _running(int(found[2])):
            (target.parent / name).unlink(missing_ok=True)


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    if sys.platform == "win32":
        # os.kill(pid, 0) would interrupt that process there, not probe it: keep its file.
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists, and belongs to someone else
    return True
