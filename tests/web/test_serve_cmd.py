"""`keel serve` as a user runs it: a process that seeds its database and answers on its port.

The command is registered by importing `keel.cli.serve_cmd`; the process is started with
the same interpreter, polled on `/healthz` until it answers (or fails after a deadline),
and stopped with SIGINT as Ctrl-C would.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest
from typer.testing import CliRunner

import keel.cli.serve_cmd  # noqa: F401  (registers the command)
from keel.cli import app
from tests.runtime.driver import copy_reference
from tests.web.test_browser import free_port

LAUNCH = "import keel.cli.serve_cmd; from keel.cli import main; main()"


def test_a_model_that_cannot_be_built_exits_2(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    result = CliRunner().invoke(app, ["serve", str(brain), "--model", "gpt-5", "--no-seed"])
    assert result.exit_code == 2
    assert "not a model spec" in result.output


def test_a_directory_that_is_not_a_brain_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["serve", str(tmp_path / "nothing")])
    assert result.exit_code == 2


def test_serve_seeds_a_new_database_and_asks_for_its_token(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    port = free_port()
    command = [sys.executable, "-c", LAUNCH, "serve", str(brain), "--port", str(port)]
    env = {"KEEL_SERVE_TOKEN": "t0ken", "PATH": "/usr/bin:/bin"}
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                health = httpx2.get(base + "/healthz", timeout=2)
                break
            except httpx2.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"keel serve did not answer: {process.communicate()[0]}")
                time.sleep(0.1)
        assert health.json()["brain"] == "reference"
        assert httpx2.get(base + "/v1/turns", timeout=10).status_code == 401
        turns = httpx2.get(
            base + "/v1/turns", headers={"Authorization": "Bearer t0ken"}, timeout=10
        ).json()["turns"]
        assert len(turns) == 50  # the seed's turns are there (the newest 50 listed)
    finally:
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=30)
    assert "seed: played 70 of 70 steps" in output
    assert (brain / ".keel" / "keel.db").exists()
