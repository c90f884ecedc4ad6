"""What a code worker gives up at start-up, before any brain code loads, and how it ends
what brain code started.

Keel starts each worker in a session and process group of its own, with a scrubbed
environment and no database connection string (`keel.code.process`). The worker then
asks Linux, without any privilege, to take away what brain code never needs (`confine`):

- no new privileges: nothing it runs gains rights (a set-uid program runs as the user);
- a parent-death signal: if Keel's process ends, the worker is killed at once, even if
  brain code holds it busy (the pool starts workers from its own thread, which lives as
  long as the pool: the signal follows the thread that started the process);
- child subreaper: whatever a call starts and orphans becomes the worker's child, so
  `end_strays` can find and end it;
- the seccomp filter of `keel.code.seccomp`: no signal to Keel or its group, no way out of
  the worker's process group, and with `network: false` no IPv4/IPv6 socket;
- Landlock, where the kernel has it (Linux 5.13+, enabled): the worker cannot ptrace or
  read the memory of a process outside its own domain (Keel's included) and, from Landlock
  ABI 6 (Linux 6.12), cannot signal one either, nor reach an abstract UNIX socket made
  outside; with `network: false` and ABI 4 (Linux 6.7), no TCP connect or bind.

What could not be applied is returned as notes: the worker sends them with its `ready`
message and Keel logs them once. Nothing here is a sandbox against a determined author:
brain code runs as Keel's OS user and can still read the files that user can read (a
SQLite database among them). It is a boundary against accidents and curiosity: a
context file is handed no secret, no connection, and no way to end Keel.

Standard library only; only the worker imports this (and with it ctypes), never Keel.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from pathlib import Path

from keel.code.seccomp import packed, program

_PR_SET_PDEATHSIG = 1
_PR_SET_SECCOMP = 22
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_NO_NEW_PRIVS = 38
_SECCOMP_MODE_FILTER = 2
# Landlock's system calls have the same numbers on every architecture.
_LANDLOCK_CREATE_RULESET, _LANDLOCK_RESTRICT_SELF = 444, 446
_LANDLOCK_VERSION = 1
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1 << 0, 1 << 1
# How many rounds `end_strays` makes before it gives up on a process that keeps forking.
_ROUNDS = 64


def confine(*, keel: int, keel_group: int, network: bool) -> list[str]:
    """Take from this process what brain code does not need; notes on what could not be.

    Call it before any thread starts: seccomp and Landlock bind the calling thread, and
    the threads it starts afterwards.
    """
    if not sys.platform.startswith("linux"):
        return [f"brain code is not confined on {sys.platform}: only Linux offers it"]
    linux = _Linux()
    if not linux.prctl(_PR_SET_NO_NEW_PRIVS, 1):
        # Without it an unprivileged process may apply neither seccomp nor Landlock.
        return [f"brain code is not confined: no_new_privs was refused ({linux.error()})"]
    notes: list[str] = []
    if not linux.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL)):
        notes.append(f"a worker does not die with Keel ({linux.error()})")
    elif os.getppid() != keel:
        os._exit(0)  # Keel ended before the signal was set: nothing to work for
    if not linux.prctl(_PR_SET_CHILD_SUBREAPER, 1):
        notes.append(f"what a call starts and orphans may outlive it ({linux.error()})")
    machine = os.uname().machine.lower()
    instructions = program(
        machine, worker=os.getpid(), keel=keel, keel_group=keel_group, network=network
    )
    if instructions is None:
        notes.append(
            f"no seccomp filter for {machine}: brain code may signal Keel and leave its "
            "process group" + ("" if network else ", and network: false is not enforced")
        )
    elif not linux.seccomp(packed(instructions), len(instructions)):
        notes.append(f"no seccomp filter ({linux.error()}): brain code may signal Keel")
    return notes + _landlock(linux, network=network)


def _landlock(linux: _Linux, *, network: bool) -> list[str]:
    abi = linux.syscall(_LANDLOCK_CREATE_RULESET, None, 0, _LANDLOCK_VERSION)
    if abi < 1:
        return [
            f"no Landlock ({linux.error()}): other processes are kept from brain code "
            "by the seccomp filter alone"
        ]
    net = _NET_BIND_TCP | _NET_CONNECT_TCP if not network and abi >= 4 else 0
    scoped = _SCOPE_ABSTRACT_UNIX | _SCOPE_SIGNAL if abi >= 6 else 0
    if not net and not scoped:
        # Landlock refuses a ruleset that handles nothing, and these kernels offer nothing
        # more a worker should lose.
        return [f"Landlock ABI {abi} cannot scope signals (6 can): not used"]
    fd = linux.ruleset(net=net, scoped=scoped)
    if fd < 0:
        return [f"Landlock was refused ({linux.error()})"]
    try:
        if linux.syscall(_LANDLOCK_RESTRICT_SELF, fd, 0) != 0:
            return [f"Landlock was refused ({linux.error()})"]
    finally:
        os.close(fd)
    return [] if scoped else [f"Landlock ABI {abi} cannot scope signals (6 can)"]


class _SockFprog(ctypes.Structure):
    """struct sock_fprog: a BPF program's length and its instructions."""

    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


class _Linux:
    """The few libc entry points confining needs, through ctypes."""

    def __init__(self) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._libc.syscall.restype = ctypes.c_long

    def prctl(self, option: int, value: int) -> bool:
        zero = ctypes.c_ulong(0)
        args = (ctypes.c_int(option), ctypes.c_ulong(value), zero, zero, zero)
        return int(self._libc.prctl(*args)) == 0

    def seccomp(self, code: bytes, count: int) -> bool:
        buffer = ctypes.create_string_buffer(code, len(code))
        prog = _SockFprog(count, ctypes.cast(buffer, ctypes.c_void_p))
        zero = ctypes.c_ulong(0)
        mode = (ctypes.c_int(_PR_SET_SECCOMP), ctypes.c_ulong(_SECCOMP_MODE_FILTER))
        return int(self._libc.prctl(*mode, ctypes.byref(prog), zero, zero)) == 0

    def ruleset(self, *, net: int, scoped: int) -> int:
        """A Landlock ruleset's descriptor: struct landlock_ruleset_attr {u64
        handled_access_fs, handled_access_net, scoped} (its size says which fields)."""
        attr = (ctypes.c_uint64 * 3)(0, net, scoped)
        size = 24 if scoped else 16
        return self.syscall(_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), size, 0)

    def syscall(self, number: int, *args: object) -> int:
        converted = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
        return int(self._libc.syscall(ctypes.c_long(number), *converted))

    def error(self) -> str:
        return os.strerror(ctypes.get_errno())


def end_strays() -> int:
    """Kill every process this worker started that still runs, and reap it; how many.

    The worker is a child subreaper, so what brain code started and orphaned is its child;
    what still has a parent is in the worker's process group (the filter keeps it there).
    One cheap call says whether there is anything at all: most calls start nothing.
    """
    me = os.getpid()
    ended = 0
    for _ in range(_ROUNDS):
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return ended  # no child at all, running or ended
        if pid:
            continue  # an ended child, now reaped: look again
        strays = _strays(me)
        for stray in strays:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(stray, signal.SIGKILL)
        for stray in strays:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(stray, 0)  # only children can be waited for; the rest are next
        ended += len(strays)
        if not strays:
            return ended  # children that /proc does not show: nothing more to do here
    return ended


def _strays(me: int) -> list[int]:
    """The processes whose parent is this worker or whose process group is its own."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...: comm may hold anything, so split after its ')'.
        fields = stat.rpartition(")")[2].split()
        if len(fields) >= 3 and me in (int(fields[1]), int(fields[2])):
            found.append(int(entry.name))
    return found
