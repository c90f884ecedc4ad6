"""The prompt hook's warm server, as its client and the server both see it: where its
socket is, who may talk to it, and the one exchange they have.

`keel agent-hook` runs as a new process on every prompt, and importing the engine costs
many times the turn itself. So one server per brain keeps the engine open
(`keel.cli.hook_server`) and the command asks it first (`keel.cli.hook_client`). This
module is the part both import. It imports nothing but built-in modules: the client pays
for each module it loads on every prompt, and `json` alone (through `re`) or `socket`
(through `enum` and `selectors`) would cost it half an interpreter start each — hence the
C `_socket` module and a framing of its own instead of JSON.

- **Where**: a UNIX socket in `<brain>/.keel/hook/`, a folder only its owner may enter
  (mode 0700), the socket itself 0600. A path longer than a socket address can hold
  (`MAX_SOCKET_PATH`), or a system without `SO_PEERCRED`, has no server: every prompt runs
  the cold path.
- **Who**: each side checks the other's user with `SO_PEERCRED`: a process of another user
  is never answered and never believed.
- **What**: the client sends one request (`request`) and closes its side; the server sends
  one answer (`answer` or `refusal`) and closes. Both name Keel's version, where this
  Keel is installed and the brain, and each side refuses a peer that names another: a
  server left by an older Keel, or another install, is never used.

A message is a sequence of byte strings, each after its length (4 bytes, big-endian); a
list inside is one such field, packed the same way. Text is UTF-8 with `surrogatepass`,
so a string with undecodable bytes (an argument, a path) arrives as the same string.
What the agent piped to the hook is one field of raw bytes: data, parsed only as the
command parses it.
"""

from __future__ import annotations

import _socket
import os
import stat
import sys

from keel import __version__

FOLDER = os.path.join(".keel", "hook")  # in the brain's own folder
SOCKET = "server.sock"
LOCK = "server.lock"  # held by the live server for as long as it lives
# What a socket address holds on Linux (108 bytes, the last one the terminating NUL).
MAX_SOCKET_PATH = 107
# Where this Keel is installed: a server of another install (another virtualenv, a
# checkout) would answer with other code.
HOME = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
MAGIC = b"keel-hook/1"
ANSWER, REFUSED = b"answer", b"refused"
# The largest message read; a prompt is text, far below this.
MAX_BYTES = 64 * 1024 * 1024
_LENGTH = 4
_TEXT = ("utf-8", "surrogatepass")


class Malformed(ValueError):
    """Bytes that are not a message of this wire."""


class OtherKeel(Malformed):
    """A message of this wire from another version or install of Keel."""


def folder(brain: str) -> str:
    """The server's folder in the brain at `brain` (its real path)."""
    return os.path.join(brain, FOLDER)


def socket_path(brain: str) -> str | None:
    """The server's socket for the brain at `brain`; None when no server can listen there
    (a path too long for a socket address, a system without UNIX sockets or peer checks)."""
    path = os.path.join(folder(brain), SOCKET)
    usable = hasattr(_socket, "AF_UNIX") and hasattr(_socket, "SO_PEERCRED")
    return path if usable and len(os.fsencode(path)) <= MAX_SOCKET_PATH else None


def private(path: str) -> bool:
    """Whether `path` is a real folder (not a link) of this process's user that no one
    else may enter."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and st.st_mode & 0o077 == 0


def peer(sock: _socket.socket) -> tuple[int, int]:
    """The process id and user of the process at the other end of a connected UNIX socket."""
    raw = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)  # pid, uid, gid
    return int.from_bytes(raw[:4], sys.byteorder), int.from_bytes(raw[4:8], sys.byteorder)


def peer_uid(sock: _socket.socket) -> int:
    """The user of the process at the other end of a connected UNIX socket."""
    return peer(sock)[1]


def read_all(sock: _socket.socket, limit: int = MAX_BYTES) -> bytes:
    """Everything the peer sends until it closes its side; `Malformed` past `limit`."""
    chunks: list[bytes] = []
    size = 0
    while chunk := sock.recv(1 << 16):
        size += len(chunk)
        if size > limit:
            raise Malformed(f"more than {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


# -- messages ---------------------------------------------------------------------------


def request(*, brain: str, cwd: str, args: list[str], env: dict[str, str], stdin: bytes) -> bytes:
    """The client's message: who it is, where it runs, its command line after
    `agent-hook`, its environment (brain code may be handed some of it), the hook's input."""
    pairs = [text for pair in sorted(env.items()) for text in pair]
    return pack(
        *_who(brain),
        _bytes(cwd),
        pack(*(_bytes(a) for a in args)),
        pack(*(_bytes(p) for p in pairs)),
        stdin,
    )


def read_request(data: bytes) -> tuple[str, str, list[str], dict[str, str], bytes]:
    """A request's brain, working folder, arguments, environment and input; `Malformed`
    for anything else, a request of another Keel included."""
    fields = unpack(data)
    if len(fields) != 8:
        raise Malformed("not a hook request")
    brain = _who_of(fields[:4])
    cwd, args, pairs, stdin = fields[4:]
    texts = [_text(p) for p in unpack(pairs)]
    if len(texts) % 2:
        raise Malformed("an environment variable without its value")
    env = dict(zip(texts[::2], texts[1::2], strict=True))
    return brain, _text(cwd), [_text(a) for a in unpack(args)], env, stdin


def answer(brain: str, *, out: str, err: str, status: int) -> bytes:
    """The server's answer: what the hook prints on each stream, and its exit status."""
    return pack(*_who(brain), ANSWER, str(status).encode(), _bytes(out), _bytes(err))


def refusal(brain: str, reason: str) -> bytes:
    """The server's answer when it will not answer: the client runs the hook itself."""
    return pack(*_who(brain), REFUSED, b"", b"", _bytes(reason))


def read_answer(data: bytes, brain: str) -> tuple[str, str, int] | None:
    """An answer's output, errors and status; None for a refusal; `Malformed` for
    anything else, an answer about another brain or from another Keel included."""
    fields = unpack(data)
    if len(fields) != 8 or _who_of(fields[:4]) != brain:
        raise Malformed("not an answer about this brain")
    kind, status, out, err = fields[4:]
    if kind == REFUSED:
        return None
    if kind != ANSWER or not status.isdigit():
        raise Malformed("not a hook answer")
    return _text(out), _text(err), int(status)


def pack(*fields: bytes) -> bytes:
    """Byte strings as one message, each after its length."""
    return b"".join(len(f).to_bytes(_LENGTH, "big") + f for f in fields)


def unpack(data: bytes) -> list[bytes]:
    """The byte strings `pack` made into `data`; `Malformed` for anything else."""
    fields: list[bytes] = []
    at = 0
    while at < len(data):
        end = at + _LENGTH + int.from_bytes(data[at : at + _LENGTH], "big")
        if at + _LENGTH > len(data) or end > len(data):
            raise Malformed("a field runs past the end of the message")
        fields.append(data[at + _LENGTH : end])
        at = end
    return fields


def _who(brain: str) -> tuple[bytes, ...]:
    return MAGIC, _bytes(__version__), _bytes(HOME), _bytes(brain)


def _who_of(fields: list[bytes]) -> str:
    """The brain a message is about, once it is shown to come from this Keel."""
    magic, version, home, brain = fields
    if (magic, version, home) != (MAGIC, _bytes(__version__), _bytes(HOME)):
        raise OtherKeel("a message of another Keel")
    return _text(brain)


def _bytes(text: str) -> bytes:
    return text.encode(*_TEXT)


def _text(raw: bytes) -> str:
    try:
        return raw.decode(*_TEXT)
    except UnicodeDecodeError:
        raise Malformed("text that is not UTF-8") from None
