"""The walk of one chat turn stays within bench/turn_walk.py's targets.

The walk's figures are counts of functions and files, not times: the same code gives the
same figures on any machine, so a change that sends a turn through one more module fails
here, not only when someone runs the benchmark.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_a_chat_turns_walk_meets_its_targets() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "turn_walk.py"), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    walk = json.loads(done.stdout)
    assert walk["places"] <= 35, walk
    assert walk["files"] <= 14, walk
    assert walk["returns"] <= 4, walk
