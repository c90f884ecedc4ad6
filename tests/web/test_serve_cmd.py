"""`keel serve` as a user runs it: a process that seeds its database, hosts the runs
worker and answers on its port.

The command is registered by importing `keel.cli.serve_cmd`; the process is started with
the same interpreter, polled on `/healthz` until it answers (or fails after a deadline),
and stopped with SIGINT as Ctrl-C would. Which runs backend the command builds is checked
with the server's run replaced, so no server starts.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx2
import pytest
from typer.testing import CliRunner

import keel.cli.serve_cmd  # noqa: F401  (registers the command)
from keel.cli import app
from keel.cli.serve_start import AnnouncingServer
from keel.web.limits import MAX_BODY_BYTES
from tests.runs.brains import RUNS_BRAIN
from tests.runs.conftest import script, write_files
from tests.runtime.driver import copy_reference
from tests.web.browsing import free_port

LAUNCH = "import keel.cli.serve_cmd; from keel.cli import main; main()"


def _serves_nothing(served: list[Any]) -> Any:
    """`AnnouncingServer.run` that keeps the application it was given and starts nothing."""

    def run(server: AnnouncingServer, _sockets: Any = None) -> None:
        served.append(server.config.app)
        server.started = True

    return run


def test_a_model_that_cannot_be_built_exits_2(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    result = CliRunner().invoke(app, ["serve", str(brain), "--model", "gpt-5", "--no-seed"])
    assert result.exit_code == 2
    assert "not a model spec" in result.output


def test_a_directory_that_is_not_a_brain_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["serve", str(tmp_path / "nothing")])
    assert result.exit_code == 2


@dataclass
class Server:
    """A `keel serve` process: where it answers, its first /healthz, its output once ended."""

    base: str
    process: subprocess.Popen[str]
    health: dict[str, Any] = field(default_factory=dict)
    output: str = ""

    def call(self, method: str, path: str, body: Any = None) -> Any:
        answer = httpx2.request(method, self.base + path, json=body, timeout=30)
        assert answer.status_code == 200, (answer.status_code, answer.text)
        return answer.json()

    def until(self, run_id: str, statuses: tuple[str, ...]) -> dict[str, Any]:
        """The run once its status is one of `statuses` (fails after a minute)."""
        deadline = time.monotonic() + 60
        while (run := self.call("GET", f"/v1/runs/{run_id}"))["status"] not in statuses:
            assert time.monotonic() < deadline, run
            time.sleep(0.05)
        found: dict[str, Any] = run
        return found


@contextmanager
def serving(brain: Path, *flags: str, env: dict[str, str] | None = None) -> Iterator[Server]:
    """`keel serve BRAIN FLAGS` as a process, once it answers; stopped with SIGINT after."""
    port = free_port()
    command = [sys.executable, "-c", LAUNCH, "serve", str(brain), "--port", str(port), *flags]
    process = subprocess.Popen(
        command,
        env={"PATH": "/usr/bin:/bin", **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    server = Server(base=f"http://127.0.0.1:{port}", process=process)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                server.health = httpx2.get(server.base + "/healthz", timeout=2).json()
                break
            except httpx2.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"keel serve did not answer: {process.communicate()[0]}")
                time.sleep(0.1)
        yield server
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        try:
            server.output, _ = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()  # a server that does not end must not outlive the test
            server.output, _ = process.communicate()
            pytest.fail(f"keel serve did not end within 30 s of SIGINT: {server.output}")


def test_serve_seeds_a_new_database_and_asks_for_its_token(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    with serving(brain, env={"KEEL_SERVE_TOKEN": "t0ken"}) as server:
        assert server.health["brain"] == "reference"
        assert server.health["runs"] is True  # the worker started with the server
        assert httpx2.get(server.base + "/v1/turns", timeout=10).status_code == 401
        turns = httpx2.get(
            server.base + "/v1/turns", headers={"Authorization": "Bearer t0ken"}, timeout=10
        ).json()["turns"]
        assert len(turns) == 50  # the seed's turns are there (the newest 50 listed)
        # A chunked body declares no length: the server counts it, and stops at the bound.
        chunked = (b"x" * 65_536 for _ in range(32))  # 2 MiB
        answer = httpx2.post(
            server.base + "/v1/turns",
            content=chunked,
            headers={"Authorization": "Bearer t0ken", "content-type": "application/json"},
            timeout=10,
        )
        assert answer.status_code == 413, answer.text
    assert server.process.returncode == 0, server.output
    assert "seed: played 70 of 74 steps; 4 run steps wait" in server.output
    assert (brain / ".keel" / "keel.db").exists()
    # A pipe gets the seed's progress as lines; the refusals the seed shows on purpose are
    # said as such, never warned of; the address comes once the server listens.
    out = server.output
    assert out.index("starting: brain") < out.index("seed: played 18 of 74 steps")
    assert out.count("refused, as the seed expects") == 3, out
    assert "WARNING" not in out, out
    assert out.index("Uvicorn running on") < out.index(f"dashboard: {server.base}/")


def test_serve_says_its_address_once_it_answers_there(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    command = [sys.executable, "-c", LAUNCH, "serve", str(brain), "--port", "0", "--no-seed"]
    process = subprocess.Popen(
        command,
        env={"PATH": "/usr/bin:/bin"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    try:
        said: list[str] = []
        for line in process.stdout:
            said.append(line)
            if "dashboard: " in line:
                break
        else:
            pytest.fail(f"keel serve never said its address: {''.join(said)}")
        url = line.split("dashboard: ", 1)[1].split()[0]
        assert not url.endswith(":0/"), url  # the port it took, not the one asked for
        # Said only once the server listens: the first request is answered, no retry.
        assert httpx2.get(url + "healthz", timeout=10).json()["brain"] == "reference"
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)


def test_serve_ends_while_a_run_waits_and_the_next_server_finishes_it(tmp_path: Path) -> None:
    brain = write_files(tmp_path / "brain", RUNS_BRAIN)
    notice = {"name": "send_message", "arguments": {"text": "The lift is out today."}}
    (brain / "scripts").mkdir()  # a run picked over HTTP reads no script outside the brain
    model = script(brain / "scripts", "notice", [{"tool_calls": [notice]}, {"text": "Done."}])
    with serving(brain, "--no-seed") as first:
        started = first.call("POST", "/v1/runs", {"run": "heartbeat:guarded", "model": model})
        [card] = first.until(started["id"], ("waiting",))["cards"]
    # The run waits in the journal: the server ended at once, without waiting for it.
    assert first.process.returncode == 0, first.output
    with serving(brain, "--no-seed") as second:
        second.call("POST", f"/v1/approvals/{quote(card['id'], safe='')}", {"decision": "approve"})
        done = second.until(started["id"], ("done", "failed"))
    assert done["status"] == "done", done
    assert [m["text"] for m in done["messages"]][1:] == ["The lift is out today."]


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        pytest.param(["--no-worker"], "--no-worker", id="no-worker"),
        pytest.param(["--db", "sqlite://"], "is in memory", id="memory"),
        pytest.param([], None, id="worker"),
    ],
)
def test_serve_hosts_the_runs_worker_unless_told_not_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: list[str], said: str | None
) -> None:
    from keel.web.dbos_runs import DurableRuns

    served: list[Any] = []
    monkeypatch.setattr(AnnouncingServer, "run", _serves_nothing(served))
    brain = copy_reference(tmp_path / "brain")
    result = CliRunner().invoke(app, ["serve", str(brain), "--no-seed", *flags])
    assert result.exit_code == 0, result.output
    [application] = served
    runs = application.state.service.runs
    if said is None:
        assert isinstance(runs, DurableRuns)  # its worker starts with the app's lifespan
    else:
        assert said in runs.unavailable()


@pytest.mark.parametrize(
    ("flags", "bound"),
    [
        pytest.param([], MAX_BODY_BYTES, id="default"),
        pytest.param(["--max-body", "4096"], 4096, id="told"),
    ],
)
def test_serve_bounds_a_body_as_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: list[str], bound: int
) -> None:
    served: list[Any] = []
    monkeypatch.setattr(AnnouncingServer, "run", _serves_nothing(served))
    brain = copy_reference(tmp_path / "brain")
    result = CliRunner().invoke(app, ["serve", str(brain), "--no-seed", "--no-worker", *flags])
    assert result.exit_code == 0, result.output
    assert served[0].state.service.max_body == bound


def test_a_body_bound_out_of_range_exits_2(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    result = CliRunner().invoke(app, ["serve", str(brain), "--max-body", "10"])
    assert result.exit_code == 2
    assert "1024" in result.output


def test_a_port_already_taken_says_to_pick_another(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        command = [sys.executable, "-c", LAUNCH, "serve", str(brain), "--port", port]
        done = subprocess.run(
            [*command, "--no-seed", "--no-worker"],
            env={"PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 1, done.stderr
    said = " ".join(done.stderr.split())
    assert f"the server did not start on 127.0.0.1:{port}" in said
    assert "pick another with --port" in said
