"""docs/service.md's `$ curl` example runs as written: the reference brain's skip hook,
fired on `keel serve` started (on a fresh copy of examples/brain, without its seed) with a
scripted model, answers what the page shows.

The page cuts its JSON short with `...` (a run's steps, a turn) and lays it out over lines;
the answer is compared with the page's text as one pattern, whitespace outside strings
left out, each `...` standing for anything. Only what truly varies is normalised: times,
a step's milliseconds, the brain's digest and the script's path."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from tests.runtime.driver import copy_reference
from tests.test_docs_tutorial import commands
from tests.web.test_serve_cmd import serving

DOC = Path(__file__).parents[1] / "docs" / "service.md"
CURL = re.compile(r"^```\n(\$ curl .*?)^```$", re.DOTALL | re.MULTILINE)
# The answer the page shows the scripted model giving.
ANSWER = "No problem — want a five-minute listening round tonight instead?"
STRING_OR_SPACE = re.compile(r'("(?:[^"\\]|\\.)*")|\s+')
VARYING = [
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?\+00:00"), "<time>"),
    (re.compile(r'"ms":\d+(?:\.\d+)?'), '"ms":<ms>'),
    (re.compile(r"sha256:[0-9a-f]{64}"), "sha256:<digest>"),
    (re.compile(r'"scripted:[^"]*"'), '"scripted:<path>"'),
]


def compact(text: str) -> str:
    """The text without whitespace outside its strings, what varies replaced."""
    text = STRING_OR_SPACE.sub(lambda m: m[1] or "", text)
    for pattern, placeholder in VARYING:
        text = pattern.sub(placeholder, text)
    return text


def shown(expected: str, actual: str) -> bool:
    """The page's text, each `...` standing for anything, is the whole answer."""
    pattern = ".*".join(re.escape(part) for part in compact(expected).split("..."))
    return re.fullmatch(pattern, compact(actual), re.DOTALL) is not None


def test_the_curl_example_answers_what_the_page_shows(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    script = tmp_path / "skip.json"
    script.write_text(json.dumps([{"text": ANSWER}]), encoding="utf-8")
    (block,) = CURL.findall(DOC.read_text(encoding="utf-8"))
    ran = commands(block)
    assert len(ran) == 2, "the page's two curl commands were found"
    with serving(brain, "--no-seed", "--model", f"scripted:{script}") as server:
        for command in ran:
            line = command.line.replace("localhost:8000", server.base, 1)
            done = subprocess.run(
                ["bash", "-c", line], capture_output=True, text=True, timeout=60, check=False
            )
            assert done.returncode == 0, done.stderr
            if '"status":"running"' in command.expected:
                # The hook's first step is taken before the answer; whether its second one
                # is too depends on the machine's pace, so the page's `running` may be later.
                server.until("hook-skip-skip-2026-12-01", ("done",))
                fired = json.loads(done.stdout)
                (run,) = fired["runs"]
                assert run["status"] in ("running", "done"), run
                run["status"] = "running"
                printed = json.dumps(fired, ensure_ascii=False)
            else:
                printed = done.stdout
            assert shown(command.expected, printed), (
                f"the page's output drifted for:\n$ {line}\n--- not printed\n"
                f"{first_unseen(command.expected, printed)}\n--- printed\n{printed}"
            )


def test_a_drifted_answer_is_seen() -> None:
    """The comparison is not blind: `...` stands for anything, the rest must be there."""
    page = '{"id": "r", "steps": [...],\n "status": "done"}'
    assert shown(page, '{"id":"r","steps":[{"seq":1}],"status":"done"}')
    assert not shown(page, '{"id":"r","steps":[{"seq":1}],"status":"dome"}')
    assert shown('{"at": "2026-12-01T15:47:35.251340+00:00"}', '{"at":"2030-01-01T00:00:00+00:00"}')


def first_unseen(expected: str, actual: str) -> str | None:
    """The first of the page's pieces (between `...`s) not found, in order, in the answer."""
    rest = compact(actual)
    for part in compact(expected).split("..."):
        at = rest.find(part)
        if at < 0:
            return part
        rest = rest[at + len(part) :]
    return None
