"""One call of brain code, inside a worker: load the file, call the function, make it plain.

`Executor.execute` takes a call as the channel carries it and returns the fields of its
`done` message (see `keel.code.protocol`): the value, or what went wrong as facts — the
exception's type, its words and its line in the file, or the load error as `ContentError`
phrased it. Keel turns those facts into a message (`keel.code.replies`), so the wording
lives in one place. Nothing here catches less than everything: a brain function that
raises, even `SystemExit`, only ends its own call.

Every function may be written with or without its `ctx` argument; `async` ones are run to
completion on an event loop of their own. A pipeline is the exception: it is always
`async def run(ctx, vars)`, its ctx calls travel through a `Bridge` to Keel
(`keel.code.pipeline_ctx`), and a `TerminalError` it raises is reported as such.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import weakref
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from keel.code.brain_api import CallLog, Ctx, Query, Record, Signal, Turn, entries
from keel.code.define import CallFailed, ContextCode, EngagePolicy, HookGate, Pipeline
from keel.code.hot import HotCode
from keel.code.modules import CodeKind, Export, line_in, said
from keel.errors import ContentError

# What kind of file each call loads.
FILE_KIND: dict[str, CodeKind] = {
    "match": "context",
    "render": "context",
    "gate": "hook",
    "engage": "engage",
    "pipeline": "pipeline",
}
_MAX_DEPTH = 64
_TAKES_CTX: weakref.WeakKeyDictionary[Callable[..., Any], bool] = weakref.WeakKeyDictionary()


class Unplain(Exception):
    """A value that is not plain data; the message says what and where."""


class Executor:
    """Runs calls against one brain's code files (thread-safe: one call per thread)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.hot = HotCode(root)

    def execute(
        self,
        call: Mapping[str, Any],
        *,
        signal: Signal,
        log: CallLog,
        bridge: Any = None,
        query: Query | None = None,
    ) -> dict[str, Any]:
        """Run one call; `bridge` carries a pipeline's ctx calls (`keel.code.pipeline_ctx`),
        `query` a render's statements (`keel.code.ctx_query`)."""
        path: str = call["path"]
        kind: str = call["kind"]
        args: Mapping[str, Any] = call["args"]
        file = path
        try:
            file = self.hot.file(path)
            if kind == "inspect":
                return {"value": self._inspect(path, args["kind"], file)}
            fn = _function(self.hot.export(path, FILE_KIND[kind]), kind)
            if fn is None:
                return {"absent": True}
            reply: dict[str, Any] = {"line": def_line(fn, file)}
            if kind == "pipeline":
                result = _run_pipeline(fn, args, signal=signal, log=log, bridge=bridge)
            else:
                result = self._call(fn, kind, args, signal=signal, log=log, query=query)
        except ContentError as exc:
            return {"load": {"reason": exc.reason, "line": exc.line}}
        # The fail-closed rule: whatever brain code raises ends its call, and is reported.
        except BaseException as exc:  # noqa: BLE001
            if kind == "pipeline" and _terminal(exc):
                return {"terminal": {"said": said(exc), "line": line_in(exc, file)}}
            return _raised(exc, file)
        try:
            reply["value"] = plain(result)
        except Unplain as exc:
            reply["unplain"] = str(exc)
        return reply

    def _call(
        self,
        fn: Callable[..., Any],
        kind: str,
        args: Mapping[str, Any],
        *,
        signal: Signal,
        log: CallLog,
        query: Query | None,
    ) -> Any:
        subject: Any
        if kind == "match":
            subject = Turn.of(args["turn"])
            ctx = Ctx(owner="match", log=log, signal=signal, context=args["context"])
        elif kind == "render":
            subject = args["entity"]
            ctx = Ctx(
                owner="render",
                log=log,
                signal=signal,
                context=args["context"],
                entity=args["entity"],
                query=query or _no_database,
            )
        elif kind == "gate":
            subject = Record(args["event"], name="event")
            ctx = Ctx(
                owner="the gate",
                log=log,
                signal=signal,
                hook=args["hook"],
                reach=entries(args["reach"]),
            )
        else:
            subject = Record(args["message"], name="message")
            ctx = Ctx(owner="engage", log=log, signal=signal, bot=args["bot"])
        result = fn(subject, ctx) if takes_ctx(fn) else fn(subject)
        if inspect.isawaitable(result):
            result = _run_to_end(result)
        return result

    def _inspect(self, path: str, kind: CodeKind, file: str) -> dict[str, Any]:
        export = self.hot.export(path, kind)
        named = _functions(export)
        return {
            "functions": list(named),
            "async": [n for n, fn in named.items() if inspect.iscoroutinefunction(fn)],
            "lines": {n: def_line(fn, file) for n, fn in named.items()},
        }


def _no_database(*_statement: object) -> list[dict[str, Any]]:
    raise CallFailed(
        "ctx.query cannot read the database: this render was called without one (Keel's "
        "turns give it theirs)",
        call="query",
        kind="Refused",
    )


def _raised(exc: BaseException, file: str) -> dict[str, Any]:
    return {"raised": {"type": type(exc).__name__, "said": said(exc), "line": line_in(exc, file)}}


def _terminal(exc: BaseException) -> bool:
    """Whether a pipeline raised `TerminalError` (or a subclass of it).

    By name and module, not identity: brain code may have reloaded `keel.code.define`.
    """
    return any(
        c.__name__ == "TerminalError" and c.__module__ == "keel.code.define"
        for c in type(exc).__mro__
    )


def _run_pipeline(
    fn: Callable[..., Any],
    args: Mapping[str, Any],
    *,
    signal: Signal,
    log: CallLog,
    bridge: Any,
) -> Any:
    """`run(ctx, vars)` to its end, its ctx calls going through `bridge` to Keel."""
    from keel.code.pipeline_ctx import PipelineCtx  # here: only pipelines pay for it

    ctx = PipelineCtx(bridge=bridge, log=log, signal=signal, args=args)
    given = args.get("vars")
    variables = Record(given, name="vars") if isinstance(given, Mapping) else given
    result = fn(ctx, variables) if takes_ctx(fn) else fn(ctx)
    if not inspect.isawaitable(result):
        raise TypeError(
            f"run returned {type(result).__name__} without awaiting anything — a pipeline is "
            "`async def run(ctx, vars)`, and awaits each ctx call"
        )
    return _run_to_end(result)


def _function(export: Export, kind: str) -> Callable[..., Any] | None:
    return _functions(export).get("run" if kind == "pipeline" else kind)


def _functions(export: Export) -> dict[str, Callable[..., Any]]:
    """The functions an export declares, by the call kind that runs each."""
    if isinstance(export, ContextCode):
        found = {"match": export.match, "render": export.render}
        return {k: v for k, v in found.items() if v is not None}
    if isinstance(export, HookGate):
        return {"gate": export.gate}
    if isinstance(export, EngagePolicy):
        return {"engage": export.engage}
    if isinstance(export, Pipeline):
        return {"run": export.run}
    return {}


def takes_ctx(fn: Callable[..., Any]) -> bool:
    """Whether a brain function accepts a second, `ctx`, argument."""
    try:
        return _TAKES_CTX[fn]
    except (KeyError, TypeError):
        pass
    try:
        inspect.signature(fn).bind(None, None)
        takes = True
    except (TypeError, ValueError):
        takes = False
    # A builtin cannot be weakly referenced; it is asked again next time.
    with contextlib.suppress(TypeError):
        _TAKES_CTX[fn] = takes
    return takes


def def_line(fn: Callable[..., Any], file: str) -> int | None:
    """The line where a brain function is defined, when it is defined in `file`."""
    code = getattr(fn, "__code__", None)
    if code is None:
        code = getattr(inspect.unwrap(fn), "__code__", None)
    if code is None or code.co_filename != file:
        return None
    line: int = code.co_firstlineno
    return line


def _run_to_end(awaitable: Awaitable[Any]) -> Any:
    import asyncio  # here: only code with an async function pays for importing asyncio

    async def until_done() -> Any:
        return await awaitable

    return asyncio.run(until_done())


def plain(value: Any, where: str = "", depth: int = 0) -> Any:
    """The value as JSON-able data; `Unplain` names the first part that is not."""
    if depth > _MAX_DEPTH:
        raise Unplain(f"a value nested more than {_MAX_DEPTH} deep{_at(where)}")
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str | int | float):
        return _scalar(value, where)
    if isinstance(value, list | tuple):
        return [plain(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise Unplain(f"a dict with the key {key!r}, not a string{_at(where)}")
            out[str(key)] = plain(item, f"{where}[{key!r}]", depth + 1)
        return out
    return _unplain(value, where)


def _scalar(value: str | int | float, where: str) -> str | int | float:
    """A str, int or float as itself (a subclass, such as an enum member, as its base)."""
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if not math.isfinite(value):
        raise Unplain(f"a float ({value}){_at(where)}")
    return float(value)


def _unplain(value: Any, where: str) -> Any:
    name = type(value).__name__
    article = "an" if name[:1].lower() in "aeiou" else "a"
    raise Unplain(f"{article} {name}{_at(where)}")


def _at(where: str) -> str:
    return f" at {where}" if where else ""
