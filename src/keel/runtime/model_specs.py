"""Which model answers a turn: a spec string, resolved to a model client (or to none).

    openai:NAME                  OpenAI Chat Completions (key: OPENAI_API_KEY)
    anthropic:NAME               Anthropic Messages (key: ANTHROPIC_API_KEY)
    openai-compatible:NAME@URL   any server speaking the OpenAI API (a local one, say)
    scripted:FILE                a JSON list of steps, played through the real SDK client
    none                         prepare and record the turn, ask no model

A role's `model: {name: ...}` or MANIFEST's may hold a spec (`anthropic:claude-...`); a
plain name there is the model's name only. With no spec anywhere, a turn uses OpenAI when
OPENAI_API_KEY is set, else Anthropic when ANTHROPIC_API_KEY is, else none — so nothing is
ever sent to a provider by surprise, and a brain runs with no key at all.

A scripted file holds steps such as `{"text": "..."}`, `{"tool_calls": [{"name":
"context_open", "arguments": {"name": "policy"}}]}` (arguments may be a string, sent as
is) and `{"sleep_s": 2}` (the answer comes that many seconds late); a step may combine them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from keel.assemble.values import ToolCall
from keel.brain.limits import MAX_FILE_BYTES
from keel.brain.reading import Tree, read_file
from keel.errors import ContentError, UsageError
from keel.runtime.models import AnthropicModel, ModelClient, OpenAIChatModel
from keel.runtime.scripted import RawToolCall, ScriptedModel, ScriptedStep

Provider = Literal["openai", "anthropic", "openai-compatible", "scripted", "none"]
PROVIDERS: tuple[Provider, ...] = ("openai", "anthropic", "openai-compatible", "scripted", "none")
KEYS: Mapping[str, str] = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
FORMS = "openai:NAME, anthropic:NAME, openai-compatible:NAME@URL, scripted:FILE or none"


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelChoice:
    """A parsed model spec."""

    provider: Provider
    name: str | None = None  # the model's own name (None: the role's or MANIFEST's)
    url: str | None = None  # openai-compatible: the server's base URL
    path: Path | None = None  # scripted: the steps file

    @property
    def spec(self) -> str:
        if self.provider == "none":
            return "none"
        if self.provider == "scripted":
            return f"scripted:{self.path}"
        if self.provider == "openai-compatible":
            return f"openai-compatible:{self.name}@{self.url}"
        return f"{self.provider}:{self.name}"


def parse_model(spec: str) -> ModelChoice:
    """A spec string as a `ModelChoice`; `UsageError` naming the forms when it is not one."""
    text = spec.strip()
    if text == "none":
        return ModelChoice(provider="none")
    provider, sep, rest = text.partition(":")
    if not sep or not rest or provider not in PROVIDERS:
        raise UsageError(f"model {spec!r}: not a model spec — write {FORMS}")
    if provider == "scripted":
        return ModelChoice(provider="scripted", path=Path(rest))
    if provider == "openai-compatible":
        name, at, url = rest.rpartition("@")
        if not at or not name or not url.startswith(("http://", "https://")):
            raise UsageError(
                f"model {spec!r}: write openai-compatible:NAME@URL, e.g. "
                "openai-compatible:llama3@http://127.0.0.1:11434/v1"
            )
        return ModelChoice(provider="openai-compatible", name=name, url=url)
    return ModelChoice(provider=provider, name=rest)


def chosen_by_caller(
    spec: str,
    root: Path,
    *,
    server: str | None = None,
    any_server: bool = False,
    read_now: bool = True,
) -> str:
    """A model spec a caller of the service (or a brain's seed) picked for a run, as the run
    will use it; `UsageError` saying why it may not.

    The caller is not the owner of the machine: a provider's named model (with the key
    the server holds), `none` and the server's own spec are allowed; a scripted file only
    inside the brain at `root` (written from there, made absolute here), and another
    OpenAI-compatible server only with `any_server` (a seed, which comes with the brain) —
    either would make the server read a file or send its key where the caller says.
    With `read_now` a scripted file is read here, where its errors can name it as the
    caller wrote it; without, it is read when the run starts.
    """
    choice = parse_model(spec)
    if server is not None and choice.spec == parse_model(server).spec:
        return choice.spec
    if choice.provider == "openai-compatible" and not any_server:
        raise UsageError(
            f"model {spec!r}: a run may not pick another OpenAI-compatible server — start "
            "the server with --model openai-compatible:NAME@URL to use one"
        )
    if choice.provider != "scripted" or choice.path is None:
        return choice.spec
    base = root.resolve()
    path = (base / choice.path).resolve()
    if not path.is_relative_to(base):
        raise UsageError(
            f"model {spec!r}: the scripted file is outside the brain — keep it in the "
            "brain's folder and write its path from there, e.g. scripted:seed/NAME.json"
        )
    if read_now:
        # The caller is told nothing of where the server keeps its brain.
        _scripted(path, shown=choice.path.as_posix())
    return f"scripted:{path}"


def default_model(declared: str | None, env: Mapping[str, str] | None = None) -> ModelChoice:
    """The model when no `--model` is given: a spec in `model.name`, else a provider whose
    key is set (with the declared name), else none."""
    environ = os.environ if env is None else env
    if declared is not None and ":" in declared:
        return parse_model(declared)
    for provider in ("openai", "anthropic"):
        if environ.get(KEYS[provider]):
            return ModelChoice(provider=provider, name=declared)
    return ModelChoice(provider="none")


def model_name(declared: str) -> str:
    """The model's own name from a `model.name` that may be a spec (`anthropic:x` → `x`)."""
    provider, sep, rest = declared.partition(":")
    if not sep or provider not in PROVIDERS:
        return declared
    if provider == "openai-compatible":
        return rest.rpartition("@")[0] or rest
    return rest


def build_model(choice: ModelChoice, env: Mapping[str, str] | None = None) -> ModelClient | None:
    """The client for a choice (None for `none`); a missing key or SDK is a `UsageError`."""
    environ = os.environ if env is None else env
    if choice.provider == "none":
        return None
    if choice.provider == "scripted":
        return _scripted(choice.path or Path())
    if choice.provider == "anthropic":
        anthropic = _sdk("anthropic")
        client = anthropic.Anthropic(api_key=_key("anthropic", environ))
        return AnthropicModel(client=client, model=choice.name)
    openai = _sdk("openai")
    if choice.provider == "openai-compatible":
        # A local server usually wants no key; the SDK insists on one, so send a placeholder.
        key = environ.get(KEYS["openai"]) or "unused"
        client = openai.OpenAI(base_url=choice.url, api_key=key)
    else:
        client = openai.OpenAI(api_key=_key("openai", environ))
    return OpenAIChatModel(client=client, model=choice.name)


def _key(provider: str, environ: Mapping[str, str]) -> str:
    variable = KEYS[provider]
    key = environ.get(variable)
    if not key:
        raise UsageError(
            f"{provider} models need an API key: set {variable}, or pass --model none to "
            "prepare turns without a model"
        )
    return key


def _sdk(name: str) -> Any:
    try:
        return __import__(name)
    except ImportError:
        raise UsageError(
            f"the {name} SDK is not installed — pip install 'keel-engine[providers]'"
        ) from None


# A scripted model is read as a brain file is: a regular file (a FIFO would block the
# command, and its shutdown), not a link out of its folder, of bounded size.
_SCRIPT = Tree(name="its folder", file="scripted model file", limit=MAX_FILE_BYTES)


def _scripted(path: Path, *, shown: str | None = None) -> ModelClient:
    """The scripted model at `path`; its errors name the file `shown` (else `path`)."""
    name = shown if shown is not None else str(path)
    try:
        raw = read_file(str(path.parent.resolve()), path.name, tree=_SCRIPT)
    except ContentError as exc:
        raise UsageError(f"{name}: the scripted model cannot be read — {exc.reason}") from None
    try:
        steps = json.loads(raw.decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{name}: the scripted model is not JSON ({exc})") from None
    if not isinstance(steps, list):
        raise UsageError(f"{name}: a scripted model is a JSON list of steps")
    script = [scripted_step(name, number, step) for number, step in enumerate(steps, 1)]
    return OpenAIChatModel(client=ScriptedModel(script).openai_client())


def scripted_step(name: str, number: int, step: Any) -> ScriptedStep:
    """Step `number` of the scripted model `name` (as its messages call the file)."""
    where = f"{name}: step {number}"
    if not isinstance(step, dict) or not set(step) <= {"text", "tool_calls", "sleep_s"}:
        raise UsageError(f'{where}: write {{"text"}}, {{"tool_calls"}} and/or {{"sleep_s"}}')
    calls: list[ToolCall | RawToolCall] = []
    for index, call in enumerate(step.get("tool_calls", [])):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise UsageError(f'{where}: each tool call is {{"name", "arguments"}}')
        call_id = f"call_{number}_{index}"
        arguments = call.get("arguments", {})
        if isinstance(arguments, str):
            calls.append(RawToolCall(id=call_id, name=call["name"], arguments=arguments))
        elif isinstance(arguments, dict):
            calls.append(ToolCall(id=call_id, name=call["name"], arguments=arguments))
        else:
            raise UsageError(f"{where}: a tool call's arguments are an object or a string")
    sleep = step.get("sleep_s", 0)
    if not isinstance(sleep, int | float) or isinstance(sleep, bool) or sleep < 0:
        raise UsageError(f"{where}: sleep_s is a number of seconds, 0 or more")
    return ScriptedStep(text=str(step.get("text", "")), calls=tuple(calls), sleep_s=float(sleep))
