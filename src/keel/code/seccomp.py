"""The seccomp filter a code worker installs on itself: which system calls brain code loses.

A worker (and every process it starts, which inherits the filter) may not:

- signal Keel: `kill` and `rt_sigqueueinfo` aimed at Keel's pid, at its process group's
  leader, at any process group but the worker's own, or at every process (-1); `tgkill`
  and `rt_tgsigqueueinfo` aimed at Keel's threads; `tkill` and `pidfd_send_signal` at all
  (their target cannot be checked here, and Python uses neither);
- trace or write into another process: `ptrace`, `process_vm_readv`, `process_vm_writev`;
- leave the worker's process group: `setsid`, and `setpgid` into any group but the
  worker's — so ending the group ends everything a call started;
- with `network: false` in MANIFEST `code:`, open an IPv4 or IPv6 socket, or set up
  io_uring (which could open one past this filter). The channel to Keel is a socket
  pair it already holds.

A refused call fails with EPERM, so brain code sees `PermissionError`. Everything else is
allowed. The filter checks the architecture it was written for, and refuses every call
made through another ABI (x32 on x86-64, 32-bit calls on a 64-bit kernel). It exists for
x86-64 and AArch64; elsewhere `program` returns None and the worker goes without.

Pure: this builds the program (a list of classic BPF instructions); `keel.code.boundary`
installs it. Standard library only.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

# seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6] (little-endian here:
# the low 32 bits of an argument come first, and pids, groups and families are 32-bit).
_NR, _ARCH, _ARGS = 0, 4, 16
_LD_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ, _JGE = 0x15, 0x35  # BPF_JMP | BPF_JEQ/BPF_JGE | BPF_K
_RET = 0x06  # BPF_RET | BPF_K
ALLOW = 0x7FFF0000
_EPERM = 1
REFUSE = 0x00050000 | _EPERM  # SECCOMP_RET_ERRNO
_X32_BIT = 0x40000000
_NEGATIVE = 0x80000000
_AF_INET, _AF_INET6 = 2, 10


@dataclass(frozen=True, slots=True)
class Arch:
    """One architecture's audit id and the numbers of the calls the filter looks at."""

    audit: int
    numbers: dict[str, int]
    x32: bool = False


ARCHES = {
    "x86_64": Arch(
        audit=0xC000003E,
        x32=True,
        numbers={
            "kill": 62,
            "rt_sigqueueinfo": 129,
            "tgkill": 234,
            "rt_tgsigqueueinfo": 297,
            "tkill": 200,
            "pidfd_send_signal": 424,
            "ptrace": 101,
            "process_vm_readv": 310,
            "process_vm_writev": 311,
            "setsid": 112,
            "setpgid": 109,
            "socket": 41,
            "io_uring_setup": 425,
        },
    ),
    "aarch64": Arch(
        audit=0xC00000B7,
        numbers={
            "kill": 129,
            "rt_sigqueueinfo": 138,
            "tgkill": 131,
            "rt_tgsigqueueinfo": 240,
            "tkill": 130,
            "pidfd_send_signal": 424,
            "ptrace": 117,
            "process_vm_readv": 270,
            "process_vm_writev": 271,
            "setsid": 157,
            "setpgid": 154,
            "socket": 198,
            "io_uring_setup": 425,
        },
    ),
}
ARCHES["arm64"] = ARCHES["aarch64"]
ARCHES["amd64"] = ARCHES["x86_64"]

_ALWAYS_REFUSED = (
    "tkill",
    "pidfd_send_signal",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "setsid",
)


@dataclass(frozen=True, slots=True)
class _Jump:
    k: int
    true: str | None  # a label; None: the next instruction
    false: str | None = None
    op: int = _JEQ


@dataclass(frozen=True, slots=True)
class _Label:
    name: str


_Item = tuple[int, int] | _Jump | _Label  # (opcode, k) for loads and returns


def _u32(value: int) -> int:
    return value & 0xFFFFFFFF


def program(
    machine: str, *, worker: int, keel: int, keel_group: int, network: bool
) -> list[tuple[int, int, int, int]] | None:
    """The filter for a worker whose pid (and process group) is `worker`, started by Keel's
    process `keel` in group `keel_group`; None where there is none for `machine`."""
    arch = ARCHES.get(machine)
    if arch is None:
        return None
    nr = arch.numbers
    items: list[_Item] = [(_LD_ABS, _ARCH), _Jump(arch.audit, None, "refuse"), (_LD_ABS, _NR)]
    if arch.x32:
        items.append(_Jump(_X32_BIT, "refuse", None, op=_JGE))
    items += [
        _Jump(nr["kill"], "kill"),
        _Jump(nr["rt_sigqueueinfo"], "kill"),
        _Jump(nr["tgkill"], "thread"),
        _Jump(nr["rt_tgsigqueueinfo"], "thread"),
        _Jump(nr["setpgid"], "group"),
        *(_Jump(nr[name], "refuse") for name in _ALWAYS_REFUSED),
    ]
    if not network:
        items += [_Jump(nr["socket"], "socket"), _Jump(nr["io_uring_setup"], "refuse")]
    items += [(_RET, ALLOW), _Label("kill"), (_LD_ABS, _ARGS)]
    # kill(pid): 0 and -worker are the worker's own group; Keel, its group's leader, other
    # groups and -1 (everyone) are refused; any other single process is allowed.
    items += [_Jump(0, "allow"), _Jump(_u32(-worker), "allow"), _Jump(keel, "refuse")]
    if keel_group > 1:
        items.append(_Jump(keel_group, "refuse"))
    items += [_Jump(_NEGATIVE, "refuse", None, op=_JGE), (_RET, ALLOW)]
    items += [_Label("thread"), (_LD_ABS, _ARGS), _Jump(keel, "refuse")]
    items += [_Jump(_NEGATIVE, "refuse", None, op=_JGE), (_RET, ALLOW)]
    # setpgid(pid, pgid): only into the worker's own group.
    items += [_Label("group"), (_LD_ABS, _ARGS + 8), _Jump(worker, "allow", "refuse")]
    items += [_Label("socket"), (_LD_ABS, _ARGS), _Jump(_AF_INET, "refuse")]
    items += [_Jump(_AF_INET6, "refuse"), (_RET, ALLOW)]
    items += [_Label("allow"), (_RET, ALLOW), _Label("refuse"), (_RET, REFUSE)]
    return _assemble(items)


def _assemble(items: list[_Item]) -> list[tuple[int, int, int, int]]:
    """Lay the instructions out and turn each jump's labels into forward offsets."""
    places: dict[str, int] = {}
    count = 0
    for item in items:
        if isinstance(item, _Label):
            places[item.name] = count
        else:
            count += 1
    out: list[tuple[int, int, int, int]] = []
    for item in items:
        if isinstance(item, _Label):
            continue
        if isinstance(item, _Jump):
            here = len(out) + 1
            true = 0 if item.true is None else places[item.true] - here
            false = 0 if item.false is None else places[item.false] - here
            if not (0 <= true <= 255 and 0 <= false <= 255):
                raise ValueError("a seccomp jump must go forward, at most 255 instructions")
            out.append((item.op, true, false, _u32(item.k)))
        else:
            op, k = item
            out.append((op, 0, 0, k))
    return out


def packed(instructions: list[tuple[int, int, int, int]]) -> bytes:
    """The program as the kernel reads it: struct sock_filter {u16 code; u8 jt, jf; u32 k}."""
    return b"".join(struct.pack("=HBBI", *ins) for ins in instructions)


def run(
    instructions: list[tuple[int, int, int, int]], *, arch: int, nr: int, args: tuple[int, ...]
) -> int:
    """What the program answers for one call: a plain interpreter of the instructions it
    uses, so tests can check the filter's decisions without installing it."""
    data = struct.pack("<iI8x6Q", nr, arch, *(_u64(a) for a in (*args, 0, 0, 0, 0, 0, 0)[:6]))
    acc = 0
    pc = 0
    while True:
        op, jt, jf, k = instructions[pc]
        pc += 1
        if op == _RET:
            return k
        if op == _LD_ABS:
            (acc,) = struct.unpack_from("<I", data, k)
        elif op in (_JEQ, _JGE):
            taken = acc == k if op == _JEQ else acc >= k
            pc += jt if taken else jf
        else:
            raise ValueError(f"an instruction this interpreter does not know: {op:#x}")


def _u64(value: int) -> int:
    return value & 0xFFFFFFFFFFFFFFFF
