"""Running `keel mcp` / `keel agent-hook` as the agent's host does: a separate process.

The command modules are imported before `keel.cli.main()` runs, so the commands exist
whether or not `keel.cli` registers them itself. The child gets only the environment
given (as `stdio_client` does), with this checkout's `src` on its path.
"""

from __future__ import annotations

import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
LAUNCH = "import keel.cli.mcp_cmd, keel.cli.hook_cmd; from keel.cli import main; main()"


def keel_command(*args: str) -> list[str]:
    """The argv that runs `keel ARGS...` with this interpreter."""
    return [sys.executable, "-c", LAUNCH, *args]


def child_env() -> dict[str, str]:
    """The environment a child `keel` needs beyond the host's few safe variables."""
    return {"PYTHONPATH": str(SRC)}
