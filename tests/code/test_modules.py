"""Loading `*.context.py` and `*.hook.py` files: fresh every time, failing closed."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest

from keel.code import (
    ContextCode,
    EngagePolicy,
    HookGate,
    Pipeline,
    define_engage,
    define_gate,
    define_pipeline,
    load_context_code,
    load_gate,
    load_module,
)
from keel.code.modules import load_export, module_name
from keel.errors import ContentError

PATH = "features/desk/ticket.context.py"
GOOD = """\
from keel.code import define_context


def match(turn):
    return {"entity": "T-1"}


context = define_context(match=match)
"""


def _write(root: Path, text: str, path: str = PATH) -> Path:
    file = root / path
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(text, encoding="utf-8")
    return file


def test_a_context_file_exports_its_code(tmp_path: Path) -> None:
    _write(tmp_path, GOOD)
    code = load_context_code(tmp_path, PATH)
    assert isinstance(code, ContextCode)
    assert code.match is not None
    assert code.match(None) == {"entity": "T-1"}
    assert code.render is None


def test_a_loaded_module_is_not_left_in_sys_modules(tmp_path: Path) -> None:
    _write(tmp_path, GOOD)
    module = load_module(tmp_path, PATH)
    assert module.__name__ == module_name(tmp_path, PATH)
    assert module.__name__ not in sys.modules
    assert module.__file__ == str(tmp_path / PATH)


def test_each_path_gets_its_own_module_name(tmp_path: Path) -> None:
    names = {
        module_name(tmp_path, "features/a/x.context.py"),
        module_name(tmp_path, "features/b/x.context.py"),
        module_name(tmp_path / "other", "features/a/x.context.py"),
    }
    assert len(names) == 3


def test_an_edit_is_seen_by_the_next_load_and_no_bytecode_is_written(tmp_path: Path) -> None:
    _write(tmp_path, GOOD)
    first = load_context_code(tmp_path, PATH)
    # Same size, same second: a bytecode cache keyed on mtime and size would serve the old one.
    _write(tmp_path, GOOD.replace('"T-1"', '"T-2"'))
    second = load_context_code(tmp_path, PATH)
    assert first.match is not None
    assert second.match is not None
    assert first.match(None) == {"entity": "T-1"}
    assert second.match(None) == {"entity": "T-2"}
    assert not list(tmp_path.rglob("__pycache__"))


def test_brain_code_may_define_dataclasses(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "from __future__ import annotations\n"
        "import dataclasses\n"
        "from keel.code import define_context\n\n"
        "@dataclasses.dataclass\n"
        "class Hit:\n"
        "    entity: str\n\n"
        "context = define_context(match=lambda turn: dataclasses.asdict(Hit('T-9')))\n",
    )
    code = load_context_code(tmp_path, PATH)
    assert code.match is not None
    assert code.match(None) == {"entity": "T-9"}


FAILURES = [
    pytest.param(
        "from keel.code import define_context\n\ndef match(turn)\n    return None\n",
        3,
        r"^features/desk/ticket\.context\.py:3: syntax error: expected ':' — fix the code",
        id="syntax-error",
    ),
    pytest.param(
        "import json\n\ndef boom():\n    raise ValueError('no ticket table')\n\nboom()\n",
        4,
        r":4: raised ValueError while loading: no ticket table — fix the code",
        id="raises-at-import",
    ),
    pytest.param(
        "from keel.code import define_context\n\ncontext = define_context(match=3)\n",
        3,
        r":3: raised TypeError while loading: define_context: match must be a function",
        id="bad-define-call",
    ),
    pytest.param(
        "import sys\nsys.exit(2)\n",
        2,
        r":2: raised SystemExit while loading: 2",
        id="exits-at-import",
    ),
    pytest.param(
        "def match(turn):\n    return None\n",
        None,
        r"^features/desk/ticket\.context\.py: exports no 'context', so it links and renders "
        r"nothing — end the file with context = define_context\(",
        id="missing-export",
    ),
    pytest.param(
        "from keel.code import define_context\n\nx = 1\ncontxt = define_context(match=len)\n",
        4,
        r":4: exports its ContextCode as 'contxt', not 'context' — rename it",
        id="misnamed-export",
    ),
    pytest.param(
        "def match(turn):\n    return None\n\ncontext = match\n",
        4,
        r":4: 'context' is not what define_context returns \(it holds a value of type function\)",
        id="wrong-type",
    ),
]


@pytest.mark.parametrize(("source", "line", "pattern"), FAILURES)
def test_failures_come_back_as_content_errors_with_their_line(
    tmp_path: Path, source: str, line: int | None, pattern: str
) -> None:
    _write(tmp_path, source)
    with pytest.raises(ContentError, match=pattern) as err:
        load_context_code(tmp_path, PATH)
    assert err.value.path == PATH
    assert err.value.line == line
    assert module_name(tmp_path, PATH) not in sys.modules


def test_a_missing_file_is_a_content_error(tmp_path: Path) -> None:
    with pytest.raises(ContentError, match=r"the code file is not there"):
        load_context_code(tmp_path, PATH)


HOOK = "features/desk/escalate.hook.py"


def test_a_hook_file_exports_its_gate(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "from keel.code import define_gate\n\n"
        "hook = define_gate(lambda event, ctx: {'entity': event['id']})\n",
        HOOK,
    )
    gate = load_gate(tmp_path, HOOK)
    assert isinstance(gate, HookGate)
    assert gate.gate({"id": "T-5"}, None) == {"entity": "T-5"}


def test_a_hook_file_exporting_a_context_is_refused(tmp_path: Path) -> None:
    _write(tmp_path, GOOD, HOOK)
    with pytest.raises(ContentError, match=r"exports no 'hook'.*hook = define_gate\(gate\)"):
        load_gate(tmp_path, HOOK)


def test_a_syntax_error_in_an_imported_module_points_at_the_import(tmp_path: Path) -> None:
    _write(tmp_path, "x = (\n", "helpers_broken.py")
    sys.path.insert(0, str(tmp_path))
    try:
        _write(tmp_path, "import os\nimport helpers_broken\n")
        with pytest.raises(ContentError, match=r"syntax error") as err:
            load_context_code(tmp_path, PATH)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("helpers_broken", None)
    assert err.value.line == 2


def test_a_policy_and_a_pipeline_export_what_their_kind_needs(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "from keel.code import define_engage\n\nengage = define_engage(lambda m: None)\n",
        "constitution/nova.engage.py",
    )
    _write(
        tmp_path,
        "from keel.code import define_pipeline\n\n@define_pipeline\nasync def pipeline(ctx, vars):\n    return vars\n",
        "features/a/go.pipeline.py",
    )
    assert isinstance(load_export(tmp_path, "constitution/nova.engage.py", "engage"), EngagePolicy)
    assert isinstance(load_export(tmp_path, "features/a/go.pipeline.py", "pipeline"), Pipeline)


def test_a_file_exporting_another_kind_says_which(tmp_path: Path) -> None:
    _write(tmp_path, "from keel.code import define_gate\n\ncontext = define_gate(print)\n")
    with pytest.raises(
        ContentError,
        match=r":3: 'context' is not what define_context returns \(it holds what define_gate returns\)",
    ):
        load_context_code(tmp_path, PATH)


@pytest.mark.parametrize(
    ("call", "pattern"),
    [
        pytest.param(
            lambda: define_engage(cast(Any, 3)),
            r"define_engage needs a function, got int",
            id="engage",
        ),
        pytest.param(
            lambda: define_pipeline(cast(Any, "run")),
            r"define_pipeline needs a function, got str",
            id="pipeline",
        ),
        pytest.param(
            lambda: define_gate(cast(Any, None)),
            r"define_gate needs a function, got NoneType",
            id="gate",
        ),
    ],
)
def test_define_functions_need_functions(call: Callable[[], object], pattern: str) -> None:
    with pytest.raises(TypeError, match=pattern):
        call()
