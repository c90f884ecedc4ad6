"""Loading brain code by path: `<id>.context.py` and `<id>.hook.py` files.

Brain code is hot like the content beside it, so every load reads the file afresh: no
module is kept in `sys.modules` between loads and no bytecode is written into the brain
(a stale `__pycache__` could otherwise serve an old version after a quick edit).

Brain code fails closed. Whatever goes wrong — a syntax error, an exception while the module
runs, a missing or wrong export — comes back as one `ContentError` naming the file, the line
where it is known, and what to write instead.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.machinery
import importlib.util
import re
import sys
import traceback
import types
from pathlib import Path
from typing import TypeVar

from keel.code.define import ContextCode, HookGate
from keel.errors import ContentError

T = TypeVar("T", ContextCode, HookGate)

_EXPORTS: dict[type[ContextCode | HookGate], tuple[str, str]] = {
    ContextCode: ("context", "context = define_context(match=..., render=...)"),
    HookGate: ("hook", "hook = define_gate(gate)"),
}


class _FreshLoader(importlib.machinery.SourceFileLoader):
    """Compiles from the source every time and never writes bytecode beside it."""

    def get_code(self, fullname: str) -> types.CodeType:  # noqa: ARG002 - the loader's API
        source = self.get_data(self.path)
        return compile(source, self.path, "exec", dont_inherit=True)


def module_name(root: Path, path: str) -> str:
    """A module name of its own for each brain file, readable in tracebacks."""
    digest = hashlib.sha1(f"{root}\0{path}".encode()).hexdigest()[:10]
    stem = re.sub(r"\W", "_", path.rsplit("/", 1)[-1])
    return f"keel_brain_{stem}_{digest}"


def load_module(root: Path, path: str) -> types.ModuleType:
    """Import the brain file at `root/path` (a brain-relative POSIX path) as a fresh module."""
    file = root / path
    if not file.is_file():
        raise ContentError(path, "the code file is not there — it was moved or deleted")
    name = module_name(root, path)
    spec = importlib.util.spec_from_file_location(name, file, loader=_FreshLoader(name, str(file)))
    if spec is None or spec.loader is None:
        raise ContentError(path, "not a Python file Keel can load — name it <id>.context.py")
    module = importlib.util.module_from_spec(spec)
    # Present while it runs (dataclasses and typing look a class's module up there), gone
    # after: the next load of the file must run its new text, not find this one.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        line = exc.lineno if _same_file(exc.filename, file) else _line_in(exc, file)
        raise ContentError(
            path, f"syntax error: {exc.msg} — fix the code; until then it does nothing", line=line
        ) from None
    # Brain code is the owner's and may raise anything at import; catching all of it is the
    # fail-closed rule (the error is reported with its line, not hidden).
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - fail closed, reported below
        raise ContentError(
            path,
            f"raised {type(exc).__name__} while loading: {_said(exc)} — fix the code; until "
            "then it does nothing",
            line=_line_in(exc, file),
        ) from None
    finally:
        sys.modules.pop(name, None)
    return module


def load_context_code(root: Path, path: str) -> ContextCode:
    """The `context = define_context(...)` a `<id>.context.py` file exports."""
    return _export(root, path, ContextCode)


def load_gate(root: Path, path: str) -> HookGate:
    """The `hook = define_gate(...)` a `<id>.hook.py` file exports."""
    return _export(root, path, HookGate)


def _export(root: Path, path: str, kind: type[T]) -> T:
    module = load_module(root, path)
    name, example = _EXPORTS[kind]
    source = _source(root / path)
    value = getattr(module, name, None)
    if isinstance(value, kind):
        return value
    if value is None:
        misnamed = [k for k, v in vars(module).items() if isinstance(v, kind)]
        if misnamed:
            raise ContentError(
                path,
                f"exports its {kind.__name__} as '{misnamed[0]}', not '{name}' — rename it: "
                f"{example}",
                line=assignment_line(source, misnamed[0]),
            )
        raise ContentError(
            path,
            f"exports no '{name}', so it links and renders nothing — end the file with {example}",
        )
    raise ContentError(
        path,
        f"'{name}' is not what {'define_context' if kind is ContextCode else 'define_gate'} "
        f"returns (it holds a value of type {type(value).__name__}) — write {example}",
        line=assignment_line(source, name),
    )


def assignment_line(source: str, name: str) -> int | None:
    """The line of the last top-level assignment to `name`, if the source says."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    line: int | None = None
    for node in tree.body:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
        elif isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name == name:
            line = node.lineno
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            line = node.lineno
    return line


def _source(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def _line_in(exc: BaseException, file: Path) -> int | None:
    """The line of the innermost frame of the traceback that ran in `file`."""
    line: int | None = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if _same_file(frame.filename, file):
            line = frame.lineno
    return line


def _same_file(name: str | None, file: Path) -> bool:
    return name is not None and Path(name) == file


def _said(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or "(no message)"
