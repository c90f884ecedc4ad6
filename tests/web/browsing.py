"""What the browser tests share: the dashboard served under uvicorn in a thread, over a
copy of the reference brain with its seed played and the in-memory runs backend, and
headless Chromium (Debian's) driven by Playwright. Nothing is downloaded; a missing
browser fails the test, saying how to install it. Screenshots go under test-artifacts/web/.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import uvicorn
from playwright.sync_api import Browser, Page, sync_playwright

from keel.web.service import Service
from tests.web.conftest import serve_copy
from tests.web.memory_runs import MemoryRuns

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# Where the screenshots go: KEEL_TEST_ARTIFACTS, else test-artifacts/ (git-ignored).
ARTIFACTS = (
    Path(
        os.environ.get("KEEL_TEST_ARTIFACTS")
        or Path(__file__).resolve().parents[2] / "test-artifacts"
    )
    / "web"
)


@dataclass(frozen=True)
class Live:
    base: str
    service: Service
    runs: MemoryRuns


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def serving(tmp_path: Path) -> Iterator[Live]:
    """The dashboard under uvicorn on a free loopback port, over a seeded copy of the
    reference brain with the in-memory runs."""
    runs = MemoryRuns()
    svc, client = serve_copy(tmp_path, runs=runs)
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(client.app, host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, name="uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("uvicorn did not start within 20 s")
        time.sleep(0.02)
    yield Live(base=f"http://127.0.0.1:{port}", service=svc, runs=runs)
    server.should_exit = True
    thread.join(timeout=10)
    svc.engine.close()


@contextmanager
def chromium() -> Iterator[Browser]:
    """Debian's Chromium, headless; fails, saying how to install it, when it is missing."""
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: the browser tests drive Debian's Chromium — "
            "apt-get install chromium"
        )
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield launched
        launched.close()


def shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
