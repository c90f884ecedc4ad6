"""A property-based fuzz of the API from its own OpenAPI document: no input is a 500.

schemathesis reads `/openapi.json`, generates bodies, paths and queries for every
operation — valid ones and, within each operation, ones that break its schema — and sends
them through the ASGI app (no socket). The only check is the one the issue sets: no
server error. The server holds the reference brain with its seed played and the in-memory
runs backend, so turn ids, chats and runs exist to be hit. Examples are bounded and
derandomized, so a run is the same every time and takes seconds.

Beside the generated cases: the inputs that once were a 500 or a lost run, sent as
explicit cases (each with the status it must get), and a state machine that follows the
document's links — a turn recorded by `POST /v1/turns` read back by `GET /v1/turns/{id}`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.core.transport import Response
from schemathesis.generation.case import Case
from schemathesis.generation.modes import GenerationMode
from schemathesis.generation.stateful.state_machine import StepInput, StepOutput
from schemathesis.hooks import HookContext
from schemathesis.schemas import BaseSchema

from keel.web.serving import build_service
from tests.runtime.driver import copy_reference
from tests.web.memory_runs import MemoryRuns

EXAMPLES = 20


@pytest.fixture(scope="module")
def fuzzed_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FastAPI]:
    root = tmp_path_factory.mktemp("fuzz")
    brain = copy_reference(root / "brain")
    url = f"sqlite:///{(root / 'fuzz.db').as_posix()}"
    svc, app = build_service(brain, url, runs=MemoryRuns(), env={})
    yield app
    svc.engine.close()


@pytest.fixture(scope="module")
def api_schema(fuzzed_app: FastAPI) -> BaseSchema:
    return schemathesis.openapi.from_asgi("/openapi.json", fuzzed_app)


# Every operation, and whether it takes any input a negative case could break.
OPERATIONS = [
    ("GET", "/healthz", False),
    ("POST", "/v1/turns", True),
    ("GET", "/v1/turns", True),
    ("GET", "/v1/turns/{ident}", True),
    ("GET", "/v1/turns/{ident}/explain", True),
    ("POST", "/v1/explain", True),
    ("POST", "/v1/send", True),
    ("POST", "/v1/bind", True),
    ("POST", "/v1/unbind", True),
    ("POST", "/v1/open", True),
    ("GET", "/v1/report", True),
    ("GET", "/v1/context", True),
    ("POST", "/v1/what-if", True),
    ("GET", "/v1/history", True),
    ("GET", "/v1/bindings", True),
    ("GET", "/v1/doctor", False),
    ("GET", "/v1/runs", True),
    ("POST", "/v1/runs", True),
    ("GET", "/v1/runs/{run_id}", True),
    ("POST", "/v1/events/{event}", True),
    ("GET", "/v1/approvals", False),
    ("POST", "/v1/approvals/{card}", True),
    ("POST", "/v1/widgets", True),
    ("POST", "/v1/widgets/refresh", True),
]
CASES = [
    pytest.param(method, path, mode, id=f"{mode.value}-{method}-{path}")
    for method, path, takes_input in OPERATIONS
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    if takes_input or mode is GenerationMode.POSITIVE
]


@pytest.mark.parametrize(("method", "path", "mode"), CASES)
def test_no_input_is_a_server_error(
    api_schema: BaseSchema, method: str, path: str, mode: GenerationMode
) -> None:
    operation = api_schema[path][method]

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def check(case: Case[Any]) -> None:
        case.call_and_validate(checks=[not_a_server_error])

    check()


def test_the_document_lists_every_operation(api_schema: BaseSchema) -> None:
    listed = {
        (method.upper(), path)
        for path, item in api_schema.raw_schema["paths"].items()
        for method in item
    }
    assert listed == {(method, path) for method, path, _ in OPERATIONS}


def nested(levels: int) -> Any:
    value: Any = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


Where = tuple[str, str, dict[str, str]]  # method, path, path parameters
TICKET: Where = ("POST", "/v1/events/{event}", {"event": "ticket.opened"})
TURN: Where = ("POST", "/v1/turns", {})
# Inputs that were once a 500 (or a run answered and lost), and what each is now.
ONCE_BROKEN = [
    pytest.param(*TURN, {"at": "0001-01-01T00:00:00+14:00"}, None, 422, id="at-before-year-1"),
    pytest.param(*TURN, {"at": "9999-12-31T23:59:59-14:00"}, None, 422, id="at-after-9999"),
    pytest.param(*TICKET, {"payload": nested(900)}, None, 422, id="payload-900-deep"),
    pytest.param(*TICKET, {"payload": {"a": "\ud800"}}, None, 422, id="payload-surrogate"),
    pytest.param(*TICKET, {"payload": {"blob": "x" * (50 << 20)}}, None, 413, id="payload-50-mb"),
    pytest.param(*TURN, None, b'{"input": ', 422, id="json-cut-short"),
    pytest.param(*TURN, None, b"[" * 5000 + b"]" * 5000, 422, id="json-past-the-parser"),
    pytest.param(*TURN, None, b'{"input": "\xff"}', 422, id="json-not-utf-8"),
]


@pytest.mark.parametrize(("method", "path", "where", "body", "raw", "status"), ONCE_BROKEN)
def test_what_once_broke_the_server_is_answered(
    api_schema: BaseSchema,
    method: str,
    path: str,
    where: dict[str, str],
    body: Any,
    raw: bytes | None,
    status: int,
) -> None:
    operation = api_schema[path][method]
    if raw is None:
        case = operation.Case(path_parameters=where, body=body, media_type="application/json")
        answer = case.call_and_validate(checks=[not_a_server_error])
    else:
        case = operation.Case(path_parameters=where, headers={"content-type": "application/json"})
        answer = case.call_and_validate(checks=[not_a_server_error], data=raw)
    assert answer.status_code == status, answer.text[:300]


# The seed's forum, where the reference brain's support role answers: a turn there records.
FORUM = {"bot": "desk", "chat": "tg:chat:-1003000000001"}


def test_a_turn_recorded_over_the_api_is_read_back_by_its_link(fuzzed_app: FastAPI) -> None:
    schema = schemathesis.openapi.from_asgi("/openapi.json", fuzzed_app)
    followed: list[tuple[str, int]] = []

    @schema.hook
    def map_body(context: HookContext, body: Any) -> Any:
        # Generated turns name bots and roles the brain does not have (422, no id to
        # follow): these speak where the brain answers, and record.
        operation = context.operation
        if operation is None or operation.label != "POST /v1/turns" or not isinstance(body, dict):
            return body
        kept = {k: v for k, v in body.items() if k in ("input", "thread", "format")}
        return {**kept, **FORUM}

    class Machine(schema.as_state_machine()):  # type: ignore[misc]
        def step(self, input: StepInput) -> StepOutput:
            output: StepOutput = super().step(input)
            if input.transition is not None:
                followed.append((input.case.operation.label, output.response.status_code))
            return output

        def validate_response(
            self, response: Response, case: Case[Any], *_: Any, **__: Any
        ) -> None:
            case.validate_response(response, checks=[not_a_server_error])

    Machine.run(
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=6,
            derandomize=True,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
    )
    assert ("GET /v1/turns/{ident}", 200) in followed, followed
