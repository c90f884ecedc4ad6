"""`keel mcp` refuses a room it cannot serve before it serves; the commands load no SDK."""

from __future__ import annotations

import socket
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.server import Server
from typer.testing import CliRunner

import keel.cli.mcp_cmd  # noqa: F401  (registers the command)
from keel.cli import app
from keel.mcp import transports
from tests.runtime.driver import copy_reference
from tests.test_import import loaded_after

runner = CliRunner()


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        pytest.param(
            ["--bot", "nobody"], 2, "no role given and access.yaml has no rule", id="no-role"
        ),
        pytest.param(["--role", "devv"], 2, "no role 'devv' in this brain", id="unknown-role"),
    ],
)
def test_a_room_without_a_role_is_refused_before_serving(
    dev_brain: Path, args: list[str], code: int, said: str
) -> None:
    result = runner.invoke(app, ["mcp", str(dev_brain), *args])
    assert (result.exit_code, result.stdout) == (code, "")
    assert said in result.stderr


def test_not_a_brain_is_a_usage_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["mcp", str(tmp_path / "nowhere")])
    assert (result.exit_code, result.stdout) == (2, "")
    assert "error:" in result.stderr


def test_a_port_out_of_range_is_a_usage_error(dev_brain: Path) -> None:
    result = runner.invoke(app, ["mcp", str(dev_brain), "--http", "70000"])
    assert result.exit_code == 2
    assert "65535" in result.stderr


def test_the_commands_and_the_hook_load_no_mcp_sdk() -> None:
    loaded = loaded_after("import keel.cli.mcp_cmd, keel.cli.hook_cmd, keel.mcp.hook")
    assert "mcp" not in loaded
    assert "mcp" in loaded_after("import keel.mcp.server")


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, object]]:
    """Serving replaced by a record of what would have been served, and how."""
    calls: list[tuple[str, object]] = []

    async def stdio(server: Server[Any]) -> None:
        calls.append(("stdio", server.name))

    async def http(server: Server[Any], sock: socket.socket) -> None:
        calls.append(("http", (server.name, sock.getsockname())))

    monkeypatch.setattr(transports, "serve_stdio", stdio)
    monkeypatch.setattr(transports, "serve_http", http)
    return calls


def test_a_room_with_a_role_is_served_over_stdio(
    dev_brain: Path, served: list[tuple[str, object]]
) -> None:
    result = runner.invoke(app, ["mcp", str(dev_brain)])
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")
    assert served == [("stdio", "keel")]


@pytest.fixture
def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A loopback port something else listens on, for the test's length."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


def test_http_says_where_it_serves(
    dev_brain: Path, served: list[tuple[str, object]], free_port: int
) -> None:
    result = runner.invoke(app, ["mcp", str(dev_brain), "--http", str(free_port)])
    assert result.exit_code == 0
    assert result.stderr == (
        f"keel mcp: serving bot cli in cli on http://127.0.0.1:{free_port}/mcp\n"
    )
    assert served == [("http", ("keel", ("127.0.0.1", free_port)))], "the port bound first"


def test_a_busy_port_is_a_usage_error_before_anything_claims_to_serve(
    dev_brain: Path, served: list[tuple[str, object]], busy_port: int
) -> None:
    result = runner.invoke(app, ["mcp", str(dev_brain), "--http", str(busy_port)])
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == f"error: port {busy_port} is in use — pick another --http PORT\n"
    assert served == []


def test_a_role_that_is_not_a_cli_agent_is_served_with_a_warning(
    tmp_path: Path, served: list[tuple[str, object]], caplog: pytest.LogCaptureFixture
) -> None:
    brain = copy_reference(tmp_path / "brain")
    acme = ["--bot", "nova", "--chat", "tg:chat:-1002000000101"]
    result = runner.invoke(app, ["mcp", str(brain), *acme])
    assert result.exit_code == 0
    assert "role 'client-desk' is agent: api" in caplog.text
    assert served == [("stdio", "keel")]


def test_a_database_out_of_reach_fails_before_serving(
    dev_brain: Path, served: list[tuple[str, object]]
) -> None:
    nowhere = "postgresql://keel@127.0.0.1:1/none"
    result = runner.invoke(app, ["mcp", str(dev_brain), "--db", nowhere])
    assert (result.exit_code, result.stdout) == (1, "")
    assert "cannot reach the database" in result.stderr
    assert served == []


def test_a_room_access_yaml_refuses_exits_3(
    write_brain: Callable[[dict[str, str | bytes]], Path], served: list[tuple[str, object]]
) -> None:
    brain = write_brain(
        {
            "constitution/access.yaml": "bots:\n  cli:\n    default: { role: 7 }\n",
            "features/f/r.agent.md": "---\ncontexts: []\n---\nR.\n",
        }
    )
    result = runner.invoke(app, ["mcp", str(brain), "--role", "r"])
    assert (result.exit_code, result.stdout) == (3, "")
    assert "refused: constitution/access.yaml" in result.stderr
    assert served == []


@pytest.mark.parametrize("args", [[], ["--bot", "nobody"]], ids=["role", "no-role"])
def test_without_the_sdk_it_says_which_extra_to_install(
    dev_brain: Path, args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("keel.mcp.server", "keel.mcp.transports"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    for name in [m for m in sys.modules if m == "mcp" or m.startswith("mcp.")]:
        monkeypatch.setitem(sys.modules, name, None)
    # The hint comes first: a room without a role would be refused only after it.
    result = runner.invoke(app, ["mcp", str(dev_brain), *args])
    assert (result.exit_code, result.stdout) == (2, "")
    assert "keel mcp needs the MCP SDK — pip install 'keel-engine[mcp]'" in result.stderr
