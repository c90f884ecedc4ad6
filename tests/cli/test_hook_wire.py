"""The warm hook server's wire: messages round-trip exactly, anything else is refused,
and the folder and peer checks tell this user's private server from anything else."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from keel import __version__
from keel.cli import hook_wire
from keel.cli.hook_wire import (
    HOME,
    MAGIC,
    Malformed,
    OtherKeel,
    answer,
    pack,
    peer_uid,
    private,
    read_answer,
    read_request,
    refusal,
    request,
    socket_path,
    unpack,
)

BRAIN = "/srv/brains/acme"
# An argument and a variable with bytes that are not UTF-8 (as Python decodes them), a
# character outside the BMP, and an input that is not text at all.
ARGS = [BRAIN, "--chat", "tg:chat:\udcff", "--role", "dev 🐍"]
ENV = {"PATH": "/usr/bin", "ODD": "\udce9t\u00e9", "EMPTY": ""}
STDIN = b'{"prompt": "caf\xc3\xa9"}\xff\x00'


def test_a_request_arrives_as_it_was_sent() -> None:
    data = request(brain=BRAIN, cwd="/home/ana/\udcfesrc", args=ARGS, env=ENV, stdin=STDIN)
    assert read_request(data) == (BRAIN, "/home/ana/\udcfesrc", ARGS, ENV, STDIN)


@pytest.mark.parametrize(
    ("out", "err", "status"),
    [
        pytest.param('{"hookSpecificOutput": {}}\n', "", 0, id="answered"),
        pytest.param("", "keel agent-hook: the hook's input is not JSON\n", 1, id="failed"),
        pytest.param("", "", 0, id="nothing-to-add"),
        pytest.param("\udcff\n", "warning: \u2014\n", 0, id="odd-text"),
    ],
)
def test_an_answer_arrives_as_it_was_sent(out: str, err: str, status: int) -> None:
    assert read_answer(answer(BRAIN, out=out, err=err, status=status), BRAIN) == (
        out,
        err,
        status,
    )


def test_a_refusal_is_no_answer() -> None:
    assert read_answer(refusal(BRAIN, "a request for another brain"), BRAIN) is None


def test_an_answer_about_another_brain_is_not_believed() -> None:
    with pytest.raises(Malformed, match="not an answer about this brain"):
        read_answer(answer("/srv/brains/other", out="x", err="", status=0), BRAIN)


@pytest.mark.parametrize(
    "who",
    [
        pytest.param((MAGIC, b"0.0.1", HOME.encode()), id="another-version"),
        pytest.param((MAGIC, __version__.encode(), b"/elsewhere/keel"), id="another-install"),
    ],
)
def test_a_message_of_another_keel_is_refused_as_such(who: tuple[bytes, ...]) -> None:
    data = request(brain=BRAIN, cwd="/", args=ARGS, env=ENV, stdin=STDIN)
    fields = unpack(data)
    with pytest.raises(OtherKeel):
        read_request(pack(*who, *fields[3:]))
    with pytest.raises(OtherKeel):
        read_answer(pack(*who, *unpack(answer(BRAIN, out="", err="", status=0))[3:]), BRAIN)


def test_another_version_of_this_module_is_another_keel(monkeypatch: pytest.MonkeyPatch) -> None:
    data = request(brain=BRAIN, cwd="/", args=ARGS, env=ENV, stdin=STDIN)
    monkeypatch.setattr(hook_wire, "__version__", "9.9.9")
    with pytest.raises(OtherKeel):
        read_request(data)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"GET / HTTP/1.1\r\n\r\n", id="not-this-wire"),
        pytest.param(pack(MAGIC), id="too-few-fields"),
        pytest.param(b"\x00\x00\x00\x09short", id="a-field-past-the-end"),
        pytest.param(b"\x00\x00", id="a-torn-length"),
    ],
)
def test_anything_else_is_malformed(data: bytes) -> None:
    with pytest.raises(Malformed):
        read_request(data)
    with pytest.raises(Malformed):
        read_answer(data, BRAIN)


def test_text_that_is_not_utf8_is_malformed() -> None:
    fields = unpack(request(brain=BRAIN, cwd="/", args=[], env={}, stdin=b""))
    fields[4] = b"\xff"  # the working folder
    with pytest.raises(Malformed, match="not UTF-8"):
        read_request(pack(*fields))


def test_an_odd_environment_is_malformed() -> None:
    fields = unpack(request(brain=BRAIN, cwd="/", args=[], env={}, stdin=b""))
    fields[6] = pack(b"PATH")  # a name without its value
    with pytest.raises(Malformed, match="without its value"):
        read_request(pack(*fields))


def test_the_socket_is_in_the_brains_own_folder() -> None:
    assert socket_path(BRAIN) == f"{BRAIN}/.keel/hook/server.sock"


def test_a_brain_too_deep_for_a_socket_address_has_no_server() -> None:
    assert socket_path("/" + "d" * 100) is None


def test_a_private_folder_is_one_only_its_owner_may_enter(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    mine.chmod(0o700)  # whatever the umask
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o750)
    link = tmp_path / "link"
    link.symlink_to(mine)
    assert private(str(mine))
    assert not private(str(shared))
    assert not private(str(link))
    assert not private(str(tmp_path / "missing"))


def test_the_peer_is_this_user() -> None:
    one, other = socket.socketpair(socket.AF_UNIX)
    with one, other:
        assert peer_uid(one) == os.getuid()
