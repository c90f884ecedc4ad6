"""docs/runs.md shows every scripted model file its commands name, and each is one a run
can play: a reader can write the files and run the commands as shown."""

from __future__ import annotations

import json
import re
from pathlib import Path

from keel.runtime.model_specs import scripted_step

DOC = Path(__file__).parents[1] / "docs" / "runs.md"
# `$ cat NAME.json` and the lines under it, up to the next command or the block's end.
SHOWN = re.compile(r"^\$ cat (\S+\.json)\n(.*?)(?=^\$ |^```)", re.DOTALL | re.MULTILINE)


def shown_files() -> dict[str, str]:
    return dict(SHOWN.findall(DOC.read_text(encoding="utf-8")))


def test_every_scripted_file_a_command_names_is_shown() -> None:
    named = set(re.findall(r"scripted:(\S+\.json)", DOC.read_text(encoding="utf-8")))
    assert named, "the page runs scripted models"
    assert named - set(shown_files()) == set(), "show each with `$ cat NAME.json`"


def test_each_shown_file_is_a_script_a_run_can_play() -> None:
    for name, text in shown_files().items():
        steps = json.loads(text)
        assert isinstance(steps, list), name
        assert steps, name
        for number, step in enumerate(steps, 1):
            scripted_step(name, number, step)  # raises UsageError, naming the file and step
