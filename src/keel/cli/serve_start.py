"""What `keel serve` says while it starts: the seed's progress, then its address once it
answers.

Playing a brain's seed into a new database takes a few seconds (the reference brain's 70
steps); a terminal shows a bar meanwhile, a pipe gets a line at each quarter. The
dashboard's address is said only once the server's sockets listen — a reader who opens it
at once finds it answering — and with the port it really took (`--port 0` included).
"""

from __future__ import annotations

import logging
import socket
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from keel.cli.terminal import terminal

SeedProgress = Callable[[int, int], None]
# A pipe's lines: at each quarter of the steps (and the last).
_QUARTERS = 4


@contextmanager
def seed_progress(log: logging.Logger) -> Iterator[SeedProgress]:
    """A `(played, of)` callback for the seed: a bar on a terminal (gone when done, the
    log's summary line stays), else a log line per quarter."""
    if not sys.stderr.isatty():
        yield _lines(log)
        return
    bar = Progress(
        TextColumn("seeding the example turns"),
        BarColumn(),
        MofNCompleteColumn(),
        console=terminal(stderr=True),
        transient=True,
    )
    task = bar.add_task("seed", total=None)

    def told(played: int, of: int) -> None:
        if not bar.live.is_started:  # shown from the first step: a refusal before, none
            bar.start()
        bar.update(task, completed=played, total=of)

    try:
        with _above(bar):
            yield told
    finally:
        bar.stop()


@contextmanager
def _above(bar: Progress) -> Iterator[None]:
    """The log's lines printed above the bar while it shows, not through it."""
    handlers = [h for h in logging.getLogger().handlers if isinstance(h, logging.StreamHandler)]
    writer = _Printer(bar)
    before = [h.setStream(writer) for h in handlers]
    try:
        yield
    finally:
        for handler, stream in zip(handlers, before, strict=True):
            if stream is not None:
                handler.setStream(stream)


class _Printer:
    """A stream whose lines go to the bar's console, above the bar."""

    def __init__(self, bar: Progress) -> None:
        self._console = bar.console

    def write(self, text: str) -> int:
        self._console.print(text.rstrip("\n"), markup=False, highlight=False, soft_wrap=True)
        return len(text)

    def flush(self) -> None:
        """Each line is printed as it is written."""


def _lines(log: logging.Logger) -> SeedProgress:
    def told(played: int, of: int) -> None:
        marks = {of * q // _QUARTERS for q in range(1, _QUARTERS + 1)}
        if played in marks and played < of:
            log.info("seed: played %s of %s steps", played, of)

    return told


class AnnouncingServer(uvicorn.Server):
    """A uvicorn server that says where it answers once its sockets listen."""

    def __init__(self, config: uvicorn.Config, announce: Callable[[str], None]) -> None:
        super().__init__(config)
        self._announce = announce

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.should_exit:  # the port was taken, or start-up failed: uvicorn said why
            return
        self._announce(_address(self.servers, self.config.host))


def _address(servers: list[Any], host: str) -> str:
    """`http://HOST:PORT/` of the first listening socket (the port it really took)."""
    for server in servers:
        for sock in server.sockets:
            port = sock.getsockname()[1]
            shown = f"[{host}]" if ":" in host else host
            return f"http://{shown}:{port}/"
    return f"http://{host}/"
