"""Loading brain code by path: `*.context.py`, `*.hook.py`, `*.engage.py`, `*.pipeline.py`.

Brain code is hot like the content beside it, so every load reads the file afresh: no
module is kept in `sys.modules` between loads and no bytecode is written into the brain
(a stale `__pycache__` could otherwise serve an old version after a quick edit). A caller
that has already read the file (to hash it) passes its bytes, so what runs is what it read.

Brain code fails closed. Whatever goes wrong — a syntax error, an exception while the module
runs, a missing or wrong export — comes back as one `ContentError` naming the file, the line
where it is known, and what to write instead.

These functions run brain code in the calling process. Keel itself calls them only inside
its worker processes (`keel.code.worker`), where a module that hangs, exits or prints costs
only that worker.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import re
import sys
import types
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

from keel.code.define import ContextCode, EngagePolicy, HookGate, Pipeline
from keel.errors import ContentError

CodeKind = Literal["context", "hook", "engage", "pipeline"]
Export = ContextCode | HookGate | EngagePolicy | Pipeline
T = TypeVar("T", ContextCode, HookGate, EngagePolicy, Pipeline)


@dataclass(frozen=True, slots=True, kw_only=True)
class ExportRule:
    """What one kind of code file must export, and what its absence costs."""

    type: type[Export]
    name: str
    maker: str
    example: str
    effect: str


EXPORTS: dict[CodeKind, ExportRule] = {
    "context": ExportRule(
        type=ContextCode,
        name="context",
        maker="define_context",
        example="context = define_context(match=..., render=...)",
        effect="it links and renders nothing",
    ),
    "hook": ExportRule(
        type=HookGate,
        name="hook",
        maker="define_gate",
        example="hook = define_gate(gate)",
        effect="every fire of its hook fails",
    ),
    "engage": ExportRule(
        type=EngagePolicy,
        name="engage",
        maker="define_engage",
        example="engage = define_engage(policy)",
        effect="it attaches nothing and the chat rules decide alone",
    ),
    "pipeline": ExportRule(
        type=Pipeline,
        name="pipeline",
        maker="define_pipeline",
        example="pipeline = define_pipeline(run)",
        effect="its scenario cannot run",
    ),
}
_KIND_OF: dict[type[Export], CodeKind] = {rule.type: kind for kind, rule in EXPORTS.items()}


class _FreshLoader(importlib.machinery.SourceFileLoader):
    """Compiles from the source every time and never writes bytecode beside it."""

    def __init__(self, fullname: str, path: str, source: bytes | None) -> None:
        super().__init__(fullname, path)
        self._source = source

    def get_code(self, fullname: str) -> types.CodeType:  # noqa: ARG002 - the loader's API
        source = self._source if self._source is not None else self.get_data(self.path)
        return compile(source, self.path, "exec", dont_inherit=True)


def module_name(root: Path, path: str) -> str:
    """A module name of its own for each brain file, readable in tracebacks."""
    where = f"{root}\0{path}".encode()
    digest = f"{zlib.crc32(where):08x}"
    stem = re.sub(r"\W", "_", path.rsplit("/", 1)[-1])
    return f"keel_brain_{stem}_{digest}"


def load_module(root: Path, path: str, *, source: bytes | None = None) -> types.ModuleType:
    """Import the brain file at `root/path` (a brain-relative POSIX path) as a fresh module.

    `source` is the file's bytes when the caller has read them already.
    """
    file = root / path
    if source is None and not file.is_file():
        raise ContentError(path, "the code file is not there — it was moved or deleted")
    name = module_name(root, path)
    loader = _FreshLoader(name, str(file), source)
    spec = importlib.util.spec_from_file_location(name, file, loader=loader)
    if spec is None or spec.loader is None:
        raise ContentError(path, "not a Python file Keel can load — name it <id>.context.py")
    module = importlib.util.module_from_spec(spec)
    # Present while it runs (dataclasses and typing look a class's module up there), gone
    # after: the next load of the file must run its new text, not find this one.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        line = exc.lineno if _same_file(exc.filename, file) else line_in(exc, file)
        raise ContentError(
            path, f"syntax error: {exc.msg} — fix the code; until then it does nothing", line=line
        ) from None
    # Brain code is the owner's and may raise anything at import; catching all of it is the
    # fail-closed rule (the error is reported with its line, not hidden).
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - fail closed, reported below
        raise ContentError(
            path,
            f"raised {type(exc).__name__} while loading: {said(exc)} — fix the code; until "
            "then it does nothing",
            line=line_in(exc, file),
        ) from None
    finally:
        sys.modules.pop(name, None)
    return module


def load_context_code(root: Path, path: str) -> ContextCode:
    """The `context = define_context(...)` a `<id>.context.py` file exports."""
    return _typed(load_export(root, path, "context"), ContextCode)


def load_gate(root: Path, path: str) -> HookGate:
    """The `hook = define_gate(...)` a `<id>.hook.py` file exports."""
    return _typed(load_export(root, path, "hook"), HookGate)


def load_export(root: Path, path: str, kind: CodeKind, *, source: bytes | None = None) -> Export:
    """The value a code file of this kind exports, or a `ContentError` saying what to write."""
    module = load_module(root, path, source=source)
    return export_of(module, path, kind, text=_text(source) if source is not None else None)


def export_of(module: types.ModuleType, path: str, kind: CodeKind, *, text: str | None) -> Export:
    """The export of a loaded module; `text` is its source, for the line of a wrong export."""
    rule = EXPORTS[kind]
    value = getattr(module, rule.name, None)
    if isinstance(value, rule.type):
        return value
    source = text if text is not None else _source(Path(module.__file__ or ""))
    if value is None:
        misnamed = [k for k, v in vars(module).items() if isinstance(v, rule.type)]
        if misnamed:
            raise ContentError(
                path,
                f"exports its {rule.type.__name__} as '{misnamed[0]}', not '{rule.name}' — "
                f"rename it: {rule.example}",
                line=assignment_line(source, misnamed[0]),
            )
        raise ContentError(
            path,
            f"exports no '{rule.name}', so {rule.effect} — end the file with {rule.example}",
        )
    other = _KIND_OF.get(type(value))
    held = (
        f"it holds what {EXPORTS[other].maker} returns"
        if other is not None
        else f"it holds a value of type {type(value).__name__}"
    )
    raise ContentError(
        path,
        f"'{rule.name}' is not what {rule.maker} returns ({held}) — write {rule.example}",
        line=assignment_line(source, rule.name),
    )


def _typed(value: Export, kind: type[T]) -> T:
    # load_export checked the type against the same table; this only narrows it for mypy.
    if not isinstance(value, kind):
        raise TypeError(f"expected {kind.__name__}, got {type(value).__name__}")
    return value


def assignment_line(source: str, name: str) -> int | None:
    """The line of the last top-level assignment to `name`, if the source says."""
    import ast  # here: only a wrong export needs it, and a worker starts faster without

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


def _text(source: bytes) -> str:
    return source.decode("utf-8", errors="replace")


def line_in(exc: BaseException, file: Path | str) -> int | None:
    """The line of the innermost frame of the traceback that ran in `file`."""
    line: int | None = None
    tb = exc.__traceback__
    while tb is not None:
        if _same_file(tb.tb_frame.f_code.co_filename, file):
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _same_file(name: str | None, file: Path | str) -> bool:
    return name is not None and Path(name) == Path(file)


def said(exc: BaseException) -> str:
    """What an exception says, on one line."""
    text = " ".join(str(exc).split())
    return text or "(no message)"
