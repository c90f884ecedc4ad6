"""docs/python.md runs as written: each Python block, in order, on a fresh copy of the
reference brain, prints exactly the text block after it. The OpenAI and Anthropic blocks
reach a local server speaking both APIs (`tests.openai_double`) through the SDKs' own
OPENAI_BASE_URL and ANTHROPIC_BASE_URL, as a reader's would reach a provider."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from keel.assemble.values import ModelStep, ToolCall
from tests.openai_double import openai_double
from tests.runtime.driver import copy_reference

DOC = Path(__file__).parents[1] / "docs" / "python.md"
BLOCK = re.compile(r"```python\n(.*?)```\n\n```text\n(.*?)```", re.DOTALL)
# What the local server answers, in the order the blocks ask.
SCRIPT = [
    ModelStep(text="You have 3 open requests."),
    ModelStep(
        calls=(ToolCall(id="s1", name="send_message", arguments={"text": "Tonight: Whiplash"}),)
    ),
    ModelStep(text="I sent you tonight's pick."),
    ModelStep(text="Your main contact is Wile Coyote."),
]


def blocks() -> list[tuple[str, str]]:
    """(code, expected output) for each Python block of the page."""
    return [(m[1], m[2]) for m in BLOCK.finditer(DOC.read_text(encoding="utf-8"))]


def run_blocks(folder: Path) -> list[str]:
    """Each block's output, run in order in `folder` (beside a fresh `examples/brain`)."""
    copy_reference(folder / "examples" / "brain")
    outputs = []
    with openai_double(SCRIPT) as double:
        env = {
            **os.environ,
            "OPENAI_API_KEY": "local",
            "OPENAI_BASE_URL": double.base_url,
            "ANTHROPIC_API_KEY": "local",
            "ANTHROPIC_BASE_URL": double.base_url.removesuffix("/v1"),
        }
        for code, _ in blocks():
            done = subprocess.run(
                [sys.executable, "-c", code],
                cwd=folder,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            assert done.returncode == 0, done.stderr
            outputs.append(done.stdout)
        assert len(double.bodies) == len(SCRIPT), "every scripted answer was asked for"
    return outputs


def test_every_block_prints_what_the_page_shows(tmp_path: Path) -> None:
    expected = [output for _, output in blocks()]
    assert len(expected) == 4
    assert run_blocks(tmp_path) == expected
