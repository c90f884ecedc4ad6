"""The dashboard's forms that act, over HTTP: each one's success lands where it says, and
each refusal comes back on its form with the reason and the fields as typed — never a
500, never a change. A post from another site is refused as an approval decision is."""

from __future__ import annotations

import html as markup
import json
import re
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keel.errors import ContentError, FitOverflow, LinkError, Refused, StoreError, UsageError
from keel.web.forms import problem_of
from keel.web.runs import NoRuns, Run, RunsDown, RunStart, RunsUnavailable
from keel.web.serving import build_service
from tests.runs.conftest import script
from tests.runtime.driver import copy_reference
from tests.web.conftest import Served, serve_copy
from tests.web.memory_runs import MemoryRuns

HOST = {"Origin": "http://testserver"}
MESSAGE = {"bot": "nova", "chat": "tg:user:1", "sender": "tg:user:1", "text": "What is due?"}


def post(served: Served, path: str, data: Mapping[str, str]) -> Any:
    return served.client.post(path, data=dict(data), headers=HOST, follow_redirects=False)


def field_value(page: str, name: str, prefix: str = "") -> str:
    """The value a form's field holds on the page (an input's or a textarea's)."""
    name = prefix + "f-" + name
    found = re.search(
        rf'<input id="{re.escape(name)}" name="[^"]*" type="\w+" value="([^"]*)"', page
    )
    if found is None:
        found = re.search(rf'<textarea id="{re.escape(name)}"[^>]*>([^<]*)</textarea>', page)
    assert found is not None, f"no field {name} on the page"
    return markup.unescape(found.group(1))


def field_problem(page: str, name: str, prefix: str = "") -> str:
    name = prefix + "e-" + name
    found = re.search(rf'<p class="problem" id="{re.escape(name)}" role="alert">([^<]*)</p>', page)
    assert found is not None, f"no reason under the field {name}"
    return markup.unescape(found.group(1))


def refusal(page: str) -> str:
    found = re.search(r'id="refusal">([^<]*)</p>', page)
    assert found is not None, "no refusal above the form"
    return markup.unescape(found.group(1))


def turn_count(served: Served) -> int:
    return len(served.service.engine.turns(limit=1000))


# -- try a message --------------------------------------------------------------------------


def test_a_message_tried_lands_on_its_turns_inspector(served: Served) -> None:
    form = served.client.get("/try")
    assert form.status_code == 200
    # It starts in a room the brain has a rule for, so sending it as it stands works.
    rule = next(r for r in served.service.engine.brain.access.rules if r.is_group and r.role)
    assert (field_value(form.text, "bot"), field_value(form.text, "chat")) == (
        rule.bot,
        rule.scope,
    )
    as_it_stands = post(
        served, "/try", {"bot": rule.bot, "chat": rule.scope, "text": "hello", "dry_run": "on"}
    )
    assert as_it_stands.status_code in (200, 303), as_it_stands.text
    sent = post(served, "/try", MESSAGE)
    assert sent.status_code == 303
    [journal] = served.service.engine.turns(limit=10)
    assert sent.headers["location"] == f"/turns/{journal.id}"
    assert journal.request.input == MESSAGE["text"]
    assert journal.request.sender == MESSAGE["sender"]
    assert journal.conversation.bot == "nova"
    page = served.client.get(sent.headers["location"]).text
    assert f"<h1>Turn {journal.turn} " in page
    assert MESSAGE["text"] in page


def test_a_recorded_turn_and_a_role_link_to_the_form_filled_in(served: Served) -> None:
    sent = post(served, "/try", {**MESSAGE, "thread": "t-1", "role": "coach"})
    assert sent.status_code == 303
    inspector = served.client.get(sent.headers["location"]).text
    again = re.search(r'<a href="(/try\?[^"]+)">Try this message again</a>', inspector)
    assert again is not None
    form = served.client.get(markup.unescape(again.group(1))).text
    for name, value in {**MESSAGE, "thread": "t-1", "role": "coach"}.items():
        assert field_value(form, name) == value, name
    role = served.client.get("/roles/coach").text
    assert '<a href="/try?role=coach">Try a message as coach</a>' in role


def test_with_a_model_the_message_tried_is_answered_and_its_turn_inspected(
    tmp_path: Path,
) -> None:
    brain = copy_reference(tmp_path / "brain")
    model = script(tmp_path, "answer", [{"text": "Invoice 12 is due Friday."}])
    url = f"sqlite:///{(tmp_path / 'keel.db').as_posix()}"
    svc, app = build_service(brain, url, model=model, seed=False, runs=MemoryRuns(), env={})
    with TestClient(app) as client:
        sent = client.post("/try", data=MESSAGE, headers=HOST, follow_redirects=False)
        assert sent.status_code == 303, sent.text
        [journal] = svc.engine.turns(limit=10)
        assert sent.headers["location"] == f"/turns/{journal.id}"
        said = [m.text for m in svc.engine.history(MESSAGE["chat"], bot="nova", limit=10)]
        assert said == [MESSAGE["text"], "Invoice 12 is due Friday."]
        # A dry run asks no model: the script's one answer is not spent on it.
        dry = client.post("/try", data={**MESSAGE, "dry_run": "on"}, headers=HOST)
        assert dry.status_code == 200
        assert 'id="dry-run"' in dry.text
        assert len(svc.engine.turns(limit=10)) == 1
    svc.engine.close()


def test_a_dry_run_shows_the_would_be_turn_and_records_nothing(served: Served) -> None:
    asked = {**MESSAGE, "role": "bookkeeper", "dry_run": "on"}
    shown = post(served, "/try", asked)
    assert shown.status_code == 200
    assert turn_count(served) == 0, "a dry run records nothing"
    assert 'id="dry-run"' in shown.text
    # The same sections the API's dry run answers with, each in the inspector's table.
    api = served.client.post(
        "/v1/turns",
        json={
            "bot": "nova",
            "chat": "tg:user:1",
            "role": "bookkeeper",
            "input": MESSAGE["text"],
            "dry_run": True,
        },
    ).json()
    shown_sections = re.findall(r'<tr data-section="([^"]+)"', shown.text)
    assert shown_sections == [s["id"] for s in api["sections"]]
    assert shown_sections, "a turn has sections"
    assert turn_count(served) == 0


def test_an_unknown_role_or_a_blank_bot_is_refused_on_the_form(served: Served) -> None:
    unknown = post(served, "/try", {**MESSAGE, "role": "nope"})
    assert unknown.status_code == 422
    assert "no role 'nope' in this brain" in refusal(unknown.text)
    assert field_value(unknown.text, "role") == "nope"
    assert field_value(unknown.text, "text") == MESSAGE["text"]
    blank = post(served, "/try", {**MESSAGE, "bot": ""})
    assert blank.status_code == 422
    assert "at least 1 character" in field_problem(blank.text, "bot")
    assert field_value(blank.text, "chat") == MESSAGE["chat"]
    nul = post(served, "/try", {**MESSAGE, "text": "a\x00b"})
    assert nul.status_code == 422
    assert field_problem(nul.text, "text") == "must not contain NUL characters"
    assert turn_count(served) == 0


def test_a_form_posted_from_another_site_is_refused(served: Served) -> None:
    for path, data in (
        ("/try", MESSAGE),
        ("/start", {"run": "heartbeat:morning-plan"}),
        ("/fire", {"event": "ticket.opened"}),
        ("/what-if", {}),
    ):
        answer = served.client.post(
            path, data=dict(data), headers={"Origin": "http://elsewhere.example"}
        )
        assert answer.status_code == 403, path
    assert turn_count(served) == 0
    assert served.runs.fired == []
    assert list(served.runs.runs_by_id) == ["run-1"]


def test_with_a_token_the_forms_ask_to_sign_in_first(tmp_path: Path) -> None:
    svc, client = serve_copy(tmp_path, token="s3cret", seed=False)
    with client:
        for path in ("/try", "/start", "/what-if"):
            assert client.get(path, follow_redirects=False).headers["location"] == "/login"
        sent = client.post("/try", data=MESSAGE, headers=HOST, follow_redirects=False)
        assert sent.status_code == 303
        assert sent.headers["location"] == "/login"
        assert svc.engine.turns(limit=10) == ()
        signed = client.post("/login", data={"token": "s3cret"}, headers=HOST)
        assert signed.status_code == 200
        sent = client.post("/try", data=MESSAGE, headers=HOST, follow_redirects=False)
        assert sent.headers["location"].startswith("/turns/")
    svc.engine.close()


# -- start a run, fire an event -------------------------------------------------------------


class Recording(MemoryRuns):
    """The in-memory runs, keeping each start as it was asked."""

    def __init__(self) -> None:
        super().__init__()
        self.started: list[RunStart] = []

    def start(self, start: RunStart, *, run_id: str | None = None) -> Run:
        self.started.append(start)
        return super().start(start, run_id=run_id)


def test_a_run_started_from_the_form_lands_on_its_page(served: Served) -> None:
    runs = Recording()
    served.service.runs = runs
    page = served.client.get("/start").text
    assert '<option value="heartbeat:morning-plan">' in page
    sent = post(
        served,
        "/start",
        {"run": "scenario:knm-practice", "entity": "", "input": "go", "vars": '{"level": "A2"}'},
    )
    assert sent.status_code == 303
    [start] = runs.started
    assert sent.headers["location"] == "/runs/run-2"
    assert start.run.key == "scenario:knm-practice"
    assert dict(start.vars) == {"level": "A2"}
    assert start.input == "go"
    assert "scenario:knm-practice" in served.client.get("/runs/run-2").text


def test_a_run_the_form_cannot_start_is_refused_with_its_fields_kept(served: Served) -> None:
    runs = Recording()
    served.service.runs = runs
    for vars_, reason in (
        ('{"level": ', "is not JSON: Expecting value at line 1 column 11"),
        ("[1, 2]", "must be a JSON object"),
    ):
        refused = post(served, "/start", {"run": "scenario:knm-practice", "vars": vars_})
        assert refused.status_code == 422
        assert reason in field_problem(refused.text, "vars")
        assert field_value(refused.text, "vars") == vars_
        assert field_value(refused.text, "run") == "scenario:knm-practice"
    hook = post(served, "/start", {"run": "hook:ticket-opened"})
    assert hook.status_code == 422
    assert "a hook runs when its event fires" in refusal(hook.text)
    kind = post(served, "/start", {"run": "banana"})
    assert kind.status_code == 422
    assert "write KIND:ID" in field_problem(kind.text, "run")
    assert runs.started == []


def test_an_event_fired_from_the_form_lands_on_the_run_it_started(served: Served) -> None:
    sent = post(served, "/fire", {"event": "ticket.opened", "payload": '{"ticket": "T-9"}'})
    assert sent.status_code == 303
    [(event, payload, where, _, _)] = served.runs.fired
    assert (event, dict(payload), where.chat) == ("ticket.opened", {"ticket": "T-9"}, None)
    assert sent.headers["location"] == "/runs/run-2"
    quiet = post(served, "/fire", {"event": "nobody.listens", "payload": ""})
    assert quiet.status_code == 422
    assert "no hook listens to &#39;nobody.listens&#39;" in quiet.text
    assert len(served.runs.fired) == 1


def test_a_bad_payload_or_event_is_refused_on_the_form(served: Served) -> None:
    deep: Any = "leaf"
    for _ in range(40):
        deep = {"a": deep}

    for fields, name, reason in (
        ({"event": "ticket.opened", "payload": "{oops"}, "payload", "is not JSON"),
        ({"event": "ticket.opened", "payload": '"text"'}, "payload", "must be a JSON object"),
        ({"event": "ticket.opened", "payload": json.dumps(deep)}, "payload", "nests deeper"),
        ({"event": "", "payload": "{}"}, "event", "the event is empty"),
        ({"event": "a/b", "payload": "{}"}, "event", "may not hold a slash"),
    ):
        refused = post(served, "/fire", fields)
        assert refused.status_code == 422, fields
        assert reason in field_problem(refused.text, name, "ev-"), fields
        assert field_value(refused.text, "payload", "ev-") == fields["payload"]
    assert served.runs.fired == []


def test_a_server_without_runs_says_so_on_the_form(served: Served) -> None:
    served.service.runs = NoRuns("no runs here, for the test")
    for path, data in (
        ("/start", {"run": "heartbeat:morning-plan"}),
        ("/fire", {"event": "ticket.opened"}),
    ):
        refused = post(served, path, data)
        assert refused.status_code == 501, path
        assert refusal(refused.text) == "no runs here, for the test"


# -- what-if --------------------------------------------------------------------------------


def test_what_if_shows_each_context_before_and_after_as_the_api_does(tmp_path: Path) -> None:
    svc, client = serve_copy(tmp_path, runs=MemoryRuns())  # the seed's turns, in the window
    knobs = {"contexts.maxActive": "1", "more": "contexts.turnChars=2000\n", "since": "30d"}
    with client:
        shown = client.post("/what-if", data=knobs, headers=HOST)
        api = client.post(
            "/v1/what-if",
            json={"set": {"contexts.maxActive": 1, "contexts.turnChars": 2000}, "since": "30d"},
        ).json()
    svc.engine.close()
    assert shown.status_code == 200
    rows = re.findall(
        r'<tr data-context="([^"]+)"[^>]*><td>[^<]*</td><td class="num">(\d+)</td>'
        r'<td class="num">(\d+)</td><td class="num">(\d+)</td><td class="num">(\d+)</td>',
        shown.text,
    )
    expected = [
        (
            c["context"],
            str(c["attached"]["before"]),
            str(c["attached"]["after"]),
            str(c["stubbed"]["before"]),
            str(c["stubbed"]["after"]),
        )
        for c in api["contexts"]
    ]
    assert rows == expected
    assert any(r[1] != r[2] for r in rows), ("a lower maxActive stubs what attached before", rows)
    assert field_value(shown.text, "contexts.maxActive") == "1"


def test_a_knob_what_if_cannot_take_is_refused_under_its_field(served: Served) -> None:
    for fields, name, reason in (
        ({"contexts.maxActive": "x"}, "contexts.maxActive", "is not a whole number"),
        ({"state.rows": "-4"}, "state.rows", "greater than or equal to 0"),
        ({"more": "bogus.knob=1"}, "more", "unknown knob 'bogus.knob'"),
        ({"more": "no equals sign"}, "more", "write KEY=VALUE"),
        ({"since": "yesterday-ish"}, "since", ""),
    ):
        refused = post(served, "/what-if", fields)
        assert refused.status_code == 422, fields
        assert reason in field_problem(refused.text, name), fields
        assert field_value(refused.text, name) == fields[name].strip()
    role = post(served, "/what-if", {"more": "role.nope.contexts_budget.maxActive=1"})
    assert role.status_code == 422
    assert "no role 'nope'" in refusal(role.text)


# -- decisions ------------------------------------------------------------------------------


class SlowToWake(MemoryRuns):
    """Runs whose run goes on a moment after its card is decided, as a woken workflow does."""

    def decide(self, card_id: str, **kwargs: Any) -> Any:
        decided = super().decide(card_id, **kwargs)
        if decided is not None and decided.run_id is not None:
            run_id, went_on = decided.run_id, self.runs_by_id[decided.run_id]
            self.runs_by_id[run_id] = replace(went_on, status="waiting")

            def wake() -> None:
                time.sleep(0.4)
                self.runs_by_id[run_id] = replace(self.runs_by_id[run_id], status="running")

            threading.Thread(target=wake, daemon=True).start()
        return decided


def test_a_decision_lands_on_a_page_where_the_run_no_longer_waits(served: Served) -> None:
    served.service.runs = SlowToWake()
    decided = post(served, "/runs/cards/card-1", {"decision": "approve", "back": "/runs/run-1"})
    assert decided.status_code == 303
    landed = served.client.get(decided.headers["location"]).text
    status = re.search(r'<p class="facts">.*?<span class="status (\w+)">', landed, re.S)
    assert status is not None
    assert status.group(1) == "running"
    assert 'data-card="card-1"' in landed
    assert '<span class="status approved">approved</span> by dashboard' in landed


# -- no input is a 500 ----------------------------------------------------------------------

# Values that once broke, or might: blanks, a NUL, JSON that is not an object, nesting,
# names the brain lacks, numbers past a knob's range, a span that is not one.
ODD = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "{",
    "[]",
    "null",
    '{"a": {"b": {"c": 1}}}',
    "x" * 5000,
    "heartbeat:morning-plan",
    "scenario:",
    "hook:ticket-opened",
    "nope:thing",
    "ticket.opened",
    "a/b",
    "-1",
    "99999999999999999999",
    "7d",
    "0d",
    "2026-13-45T99:00:00",
    "contexts.maxActive=abc",
    "role.nope.sections.history=1",
    "context.nope.chars=10",
    "x=1\n=2",
    "scripted:../../etc/passwd",
    "openai-compatible:m@http://169.254.169.254",
]
FORMS = {
    "/try": ("bot", "chat", "thread", "role", "sender", "text", "reply_to", "dry_run"),
    "/start": ("run", "entity", "chat", "input", "vars", "model"),
    "/fire": ("event", "chat", "payload", "model"),
    "/what-if": (
        "contexts.maxActive",
        "contexts.turnChars",
        "state.rows",
        "model.window",
        "more",
        "since",
        "role",
        "chat",
    ),
}


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    svc, client = serve_copy(tmp_path_factory.mktemp("forms"), runs=MemoryRuns(), seed=False)
    with client:
        yield client
    svc.engine.close()


@pytest.mark.parametrize("path", list(FORMS))
def test_no_form_input_is_a_server_error(fuzzed: TestClient, path: str) -> None:
    value = st.one_of(st.sampled_from(ODD), st.text(max_size=40))

    @settings(
        max_examples=40,
        derandomize=True,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(st.dictionaries(st.sampled_from(FORMS[path]), value))
    def check(fields: dict[str, str]) -> None:
        answer = fuzzed.post(path, data=fields, headers=HOST, follow_redirects=False)
        assert answer.status_code in (200, 303, 409, 422, 501, 503), (
            answer.status_code,
            fields,
        )
        if answer.status_code in (409, 422):
            assert 'id="refusal"' in answer.text or 'class="problem"' in answer.text, fields

    check()


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (FitOverflow("does not fit"), 409),
        (Refused("refused"), 409),
        (LinkError("no link"), 409),
        (UsageError("cannot"), 422),
        (StoreError("database down"), 503),
        (ContentError("MANIFEST.yaml", "broken"), 503),
        (RunsDown("worker stopped"), 503),
        (RunsUnavailable("no runs"), 501),
    ],
)
def test_a_refusal_gets_the_status_the_api_answers_for_it(error: Exception, status: int) -> None:
    problem = problem_of(error)
    assert (problem.status, problem.reason) == (status, str(error))
