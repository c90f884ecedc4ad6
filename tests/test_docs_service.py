"""docs/service.md runs as written. Its `$ curl` example: the reference brain's skip hook,
fired on `keel serve` started (on a fresh copy of examples/brain, without its seed) with a
scripted model, answers what the page shows. Its logs: `keel serve examples/brain` on a new
database logs the lines the page shows, then lists the runs its table shows; with
`--no-worker`, the seed's note is the page's.

The page cuts its JSON short with `...` (a run's steps, a turn) and lays it out over lines;
the answer is compared with the page's text as one pattern, whitespace outside strings
left out, each `...` standing for anything (in a log line too). Only what truly varies is
normalised: times, a step's milliseconds, the brain's digest, the script's path, and in a
log the process id, the worker's name, the port and how far a seeded run got."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx2
from pydantic import BaseModel
from typer.testing import CliRunner

import keel.cli.serve_cmd  # noqa: F401  (registers the command)
from keel.cli import app
from keel.web import bodies
from keel.web.seed import read_seed
from tests.runtime.driver import copy_reference
from tests.test_docs_tutorial import commands
from tests.web.browsing import free_port
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


# What varies in `keel serve`'s log: its process id, its worker's name, its port, and how
# far a seeded run got by the time the seed logged it (each start waits for its first step).
LOG_VARYING = [
    (re.compile(r"process \[\d+\]"), "process [<pid>]"),
    (re.compile(r"worker-\S+"), "worker-<name>"),
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:<port>"),
    (re.compile(r" is (?:running|waiting|done)$"), " is <status>"),
]


def log_lines(text: str) -> list[str]:
    lines = []
    for line in text.strip("\n").splitlines():
        for pattern, placeholder in LOG_VARYING:
            line = pattern.sub(placeholder, line)
        lines.append(line.rstrip())
    return lines


def log_shown(expected: list[str], actual: list[str]) -> bool:
    """Line for line, each `...` of a page's line standing for anything."""
    if len(expected) != len(actual):
        return False
    return all(
        re.fullmatch(".*".join(re.escape(p) for p in want.split("...")), got) is not None
        for want, got in zip(expected, actual, strict=True)
    )


def plain_blocks_after(marker: str) -> list[str]:
    """The unlabelled blocks of the page that follow the first `marker`."""
    page = DOC.read_text(encoding="utf-8").split(marker, 1)[1]
    return re.findall(r"^```\n(.*?)^```$", page, re.DOTALL | re.MULTILINE)


def served_log(folder: Path, *flags: str, runs: int) -> tuple[str, list[dict[str, Any]]]:
    """`keel serve examples/brain FLAGS`'s log, run from `folder` as the page runs it, and
    its runs once each of the `runs` it was asked for has settled."""
    port = free_port()
    keel = Path(sys.executable).parent / "keel"
    env = {**os.environ, "KEEL_HOOK_SERVER": "off"}
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "KEEL_SERVE_TOKEN"):
        env.pop(name, None)
    process = subprocess.Popen(
        [str(keel), "serve", "examples/brain", "--port", str(port), *flags],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    listed: list[dict[str, Any]] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            try:
                if runs == 0:
                    httpx2.get(base + "/healthz", timeout=2)
                    break
                listed = httpx2.get(base + "/v1/runs", timeout=5).json()["runs"]
                if len(listed) >= runs and all(
                    r["status"] not in ("pending", "running") for r in listed
                ):
                    break
            except httpx2.TransportError:
                pass
            time.sleep(0.2)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            output, _ = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()  # a server that does not end must not outlive the test
            output, _ = process.communicate()
    return output, listed


def test_serve_on_a_new_database_logs_and_lists_what_the_page_shows(tmp_path: Path) -> None:
    copy_reference(tmp_path / "examples" / "brain")
    log, listed = served_log(tmp_path, runs=4)
    started, runs_table = plain_blocks_after("`keel serve examples/brain` on a new database")[:2]
    page = log_lines(started.replace(":8000", ":<port>"))
    printed = log_lines(log)
    last = next(n for n, line in enumerate(printed) if "keel.serve: dashboard:" in line)
    assert log_shown(page, printed[: last + 1]), "\n".join(printed)
    table = [
        f"{r['id']} {r['status']} {r['role']} {r['chat']} "
        + "["
        + ", ".join(c["status"] for c in r["cards"])
        + "]"
        for r in listed
    ]
    assert table == [" ".join(line.split()) for line in runs_table.strip().splitlines()]


def test_serve_without_the_worker_logs_what_the_page_shows(tmp_path: Path) -> None:
    copy_reference(tmp_path / "examples" / "brain")
    log, _ = served_log(tmp_path, "--no-worker", runs=0)
    (shown,) = plain_blocks_after("skips these with one note:")[:1]
    page = log_lines(shown)
    printed = [line for line in log_lines(log) if line.startswith("INFO keel.seed: seed.yaml")]
    assert log_shown(page, printed), "\n".join(log_lines(log))


# The body each route of the page's bodies block takes (the route's own parameter type).
BODIES: dict[str, type[BaseModel]] = {
    "/v1/turns": bodies.TurnBody,
    "/v1/explain": bodies.TurnFields,
    "/v1/send": bodies.SendBody,
    "/v1/bind": bodies.BindBody,
    "/v1/unbind": bodies.UnbindBody,
    "/v1/open": bodies.OpenBody,
    "/v1/what-if": bodies.WhatIfBody,
    "/v1/runs": bodies.RunBody,
    "/v1/events/E": bodies.EventBody,
    "/v1/approvals/C": bodies.DecisionBody,
    "/v1/widgets": bodies.WidgetBody,
    "/v1/widgets/refresh": bodies.RefreshBody,
}
# A body's field: a quoted name opening an object or following a comma (not a value).
FIELD = re.compile(r'[{,]\s*"(\w+)"')


def page_bodies() -> dict[str, str]:
    """Each `POST ROUTE  {...}` of the page's bodies block, its continuation lines joined."""
    (block,) = re.findall(r"```json\n(POST /v1/turns .*?)^```$", DOC.read_text(), re.S | re.M)
    found: dict[str, str] = {}
    for line in block.splitlines():
        if line.startswith("POST "):
            route, _, text = line[5:].partition(" ")
            found[route] = text
        else:
            found[route] += line
    return found


def test_each_body_names_the_fields_its_route_takes() -> None:
    shown = page_bodies()
    assert set(shown) == set(BODIES), "the page shows a body for each route that takes one"
    turn = json.loads(shown["/v1/turns"])  # the one written out whole, as a reader pastes it
    assert set(turn) == set(bodies.TurnBody.model_fields)
    bodies.TurnBody.model_validate(turn)
    for route, text in shown.items():
        if route == "/v1/explain":
            named = re.search(r"\(no ([^)]*)\)", text)
            assert named, "the explain body says which turn fields it leaves out"
            left_out = set(named[1].split(", "))
            fields = set(bodies.TurnBody.model_fields) - left_out
        elif route == "/v1/turns":
            continue
        else:
            fields = set(FIELD.findall(text))
        assert fields == set(BODIES[route].model_fields), route


def test_the_synopsis_names_every_option_of_keel_serve() -> None:
    synopsis = DOC.read_text(encoding="utf-8").split("```\n", 1)[1].split("```", 1)[0]
    assert synopsis.startswith("keel serve BRAIN")
    helped = CliRunner().invoke(app, ["serve", "--help"], env={"COLUMNS": "200"}).output
    options = set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", helped)) - {"--help"}
    # A switch of two forms (`--seed/--no-seed`) is shown by the one that changes the default.
    options -= {"--" + o.removeprefix("--no-") for o in options if o.startswith("--no-")}
    assert set(re.findall(r"--[a-z][a-z-]+", synopsis)) == options


def test_the_seed_example_is_a_seed_the_reference_brain_plays(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    (example,) = re.findall(r"```yaml\n(version: 1\n.*?)^```$", DOC.read_text(), re.S | re.M)
    (brain / "seed.yaml").write_text(example, encoding="utf-8")
    seed = read_seed(brain)
    assert seed is not None
    assert [n for n, _ in seed.numbered(runs=True)] == [4, 5]


# A role, said as the page's Errors table and the README say it: in a turn's body, and named
# by a read. Each is asked of the API, and the row of the status it answers must name it.
ROLE_ASKED: list[tuple[str, str, dict[str, Any], str]] = [
    ("POST", "/v1/turns", {"json": {"bot": "nova", "chat": "c", "role": "nosuch"}}, "in a body"),
    ("GET", "/v1/report", {"params": {"role": "nosuch"}}, "the role of `GET /v1/report`"),
]


def error_rows() -> dict[int, str]:
    """The Errors table's rows, each status's texts joined."""
    table = DOC.read_text(encoding="utf-8").split("### Errors", 1)[1].split("\n\n", 2)[1]
    rows: dict[int, str] = {}
    for line in table.splitlines()[2:]:
        status, when = line.split("|")[1:3]
        rows[int(status)] = rows.get(int(status), "") + when
    return rows


def test_the_errors_table_and_the_readme_give_a_role_the_status_the_api_answers(
    tmp_path: Path,
) -> None:
    from fastapi.testclient import TestClient

    from keel.web.serving import build_service

    brain = copy_reference(tmp_path / "brain")
    url = f"sqlite:///{(tmp_path / 'k.db').as_posix()}"
    svc, application = build_service(brain, url, seed=False, worker=False, env={})
    rows = error_rows()
    try:
        with TestClient(application) as client:
            for method, path, request, said in ROLE_ASKED:
                status = client.request(method, path, **request).status_code
                assert said in rows[status], (method, path, status, rows[status])
    finally:
        svc.engine.close()
    readme = " ".join((DOC.parents[1] / "README.md").read_text(encoding="utf-8").split())
    assert "a bad body a 422 naming the field (an unknown role or run in a turn's body" in readme
    assert "missing turn or role a 404" not in readme
