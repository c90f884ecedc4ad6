"""The worker's seccomp filter, decided call by call without installing it."""

from __future__ import annotations

import pytest

from keel.code.seccomp import ALLOW, ARCHES, REFUSE, program, run

WORKER, KEEL, KEEL_GROUP, OTHER = 4100, 4000, 3900, 5123


def _u32(value: int) -> int:
    return value & 0xFFFFFFFF


def _decide(machine: str, name: str, *args: int, network: bool = True) -> int:
    arch = ARCHES[machine]
    instructions = program(
        machine, worker=WORKER, keel=KEEL, keel_group=KEEL_GROUP, network=network
    )
    assert instructions is not None
    return run(instructions, arch=arch.audit, nr=arch.numbers[name], args=args)


CASES = [
    pytest.param("kill", (KEEL, 9), REFUSE, id="kill-keel"),
    pytest.param("kill", (KEEL_GROUP, 9), REFUSE, id="kill-keels-group-leader"),
    pytest.param("kill", (_u32(-KEEL_GROUP), 9), REFUSE, id="killpg-keels-group"),
    pytest.param("kill", (_u32(-1), 9), REFUSE, id="kill-everyone"),
    pytest.param("kill", (_u32(-7777), 9), REFUSE, id="killpg-another-group"),
    pytest.param("kill", (0, 15), ALLOW, id="kill-own-group"),
    pytest.param("kill", (_u32(-WORKER), 15), ALLOW, id="killpg-own-group"),
    pytest.param("kill", (WORKER, 9), ALLOW, id="kill-itself"),
    pytest.param("kill", (OTHER, 15), ALLOW, id="kill-a-child"),
    # A pid passed sign-extended in a 64-bit register is read by its low 32 bits.
    pytest.param("kill", ((1 << 64) - 1, 9), REFUSE, id="kill-everyone-sign-extended"),
    pytest.param("rt_sigqueueinfo", (KEEL, 10), REFUSE, id="sigqueue-keel"),
    pytest.param("tgkill", (KEEL, KEEL + 3, 9), REFUSE, id="tgkill-keels-thread"),
    pytest.param("tgkill", (WORKER, WORKER + 1, 10), ALLOW, id="tgkill-own-thread"),
    pytest.param("rt_tgsigqueueinfo", (KEEL, KEEL, 9), REFUSE, id="tgsigqueue-keel"),
    pytest.param("tkill", (KEEL + 3, 9), REFUSE, id="tkill"),
    pytest.param("pidfd_send_signal", (3, 9, 0, 0), REFUSE, id="pidfd"),
    pytest.param("ptrace", (16, KEEL), REFUSE, id="ptrace"),
    pytest.param("process_vm_writev", (KEEL,), REFUSE, id="vm-write"),
    pytest.param("setsid", (), REFUSE, id="setsid"),
    pytest.param("setpgid", (0, 0), REFUSE, id="setpgid-new-group"),
    pytest.param("setpgid", (OTHER, WORKER), ALLOW, id="setpgid-own-group"),
    pytest.param("socket", (2, 1, 0), ALLOW, id="inet-socket-network-on"),
]


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
@pytest.mark.parametrize(("name", "args", "decision"), CASES)
def test_each_call_is_allowed_or_refused(
    machine: str, name: str, args: tuple[int, ...], decision: int
) -> None:
    assert _decide(machine, name, *args) == decision


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
@pytest.mark.parametrize(
    ("name", "args", "decision"),
    [
        pytest.param("socket", (2, 1, 0), REFUSE, id="inet"),
        pytest.param("socket", (10, 1, 0), REFUSE, id="inet6"),
        pytest.param("socket", (1, 1, 0), ALLOW, id="unix"),
        pytest.param("io_uring_setup", (8, 0), REFUSE, id="io-uring"),
    ],
)
def test_network_false_refuses_ip_sockets_only(
    machine: str, name: str, args: tuple[int, ...], decision: int
) -> None:
    assert _decide(machine, name, *args, network=False) == decision


def test_a_call_through_another_abi_is_refused() -> None:
    instructions = program("x86_64", worker=WORKER, keel=KEEL, keel_group=KEEL_GROUP, network=True)
    assert instructions is not None
    getpid = 39
    x86_64 = ARCHES["x86_64"].audit
    assert run(instructions, arch=x86_64, nr=getpid, args=()) == ALLOW
    assert run(instructions, arch=0x40000003, nr=getpid, args=()) == REFUSE, "i386"
    assert run(instructions, arch=x86_64, nr=0x40000000 | getpid, args=()) == REFUSE, "x32"


def test_there_is_no_filter_for_an_unknown_machine() -> None:
    assert program("riscv64", worker=WORKER, keel=KEEL, keel_group=KEEL_GROUP, network=True) is None
