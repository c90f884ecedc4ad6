"""How a worker process is started: its environment is not Keel's."""

from __future__ import annotations

import os

from keel.code.process import environment


def test_the_environment_keeps_the_basics_and_the_declared_names_only() -> None:
    source = {
        "PATH": "/bin",
        "LC_ALL": "C.UTF-8",
        "DATABASE_URL": "postgresql://x",
        "KEEL_TOKEN": "t",
        "keel_lower": "k",
        "REGION": "eu",
        "PYTHONPATH": "/extra",
    }
    env = environment(("REGION", "KEEL_TOKEN", "keel_lower", "MISSING"), source)
    assert set(env) == {"PATH", "LC_ALL", "REGION", "PYTHONPATH"}
    assert env["PYTHONPATH"].endswith(os.pathsep + "/extra")
