"""The README's library example runs as written (on a copy of the reference brain)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


def test_the_python_example_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, re.DOTALL)
    assert blocks, "the README has a Python example"
    brain = tmp_path / "brain"
    shutil.copytree(ROOT / "examples" / "brain", brain, ignore=shutil.ignore_patterns(".keel"))
    code = blocks[0].replace("examples/brain", brain.as_posix())
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "('client', 'acme', 'chat')" in out
    assert out.rstrip().endswith("True")
