"""A property-based fuzz of the API from its own OpenAPI document: no input is a 500.

schemathesis reads `/openapi.json`, generates bodies, paths and queries for every
operation — valid ones and, within each operation, ones that break its schema — and sends
them through the ASGI app (no socket). The only check is the one the issue sets: no
server error. The server holds the reference brain with its seed played and the in-memory
runs backend, so turn ids, chats and runs exist to be hit. Examples are bounded and
derandomized, so a run is the same every time and takes seconds.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.generation.case import Case
from schemathesis.generation.modes import GenerationMode
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
