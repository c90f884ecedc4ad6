"""The walk of one chat turn: which of Keel's functions it steps into, in how many files,
and how often it goes back to a module it had already left.

    uv run python bench/turn_walk.py [--json] [--list]

One plain chat turn on the reference brain (examples/brain, copied to a temporary
directory, on its embedded SQLite file): nova in the family group, "Add oat milk" (the
role carries its `always` shopping list). The engine is opened and the same turn prepared
once untraced, so the walk is a warm turn's (the brain loaded, the tables migrated), not
the first load's. Then a profiler (`sys.setprofile`) follows `Engine.prepare(request)` and
`first_request(assembly, "openai")`: from the engine call to the provider payload.

It counts functions in Keel's own source (`src/keel`), on this thread. A *step* is a call
into a function of another package than the nearest Keel function below it on the stack:
the walk moving from one stage to the next (turn → link → budget → assemble → payload). A
call within a package is read along with the function that makes it, and so is a
generator expression, comprehension or lambda with the function that holds it.

- `places`: distinct functions the walk steps into;
- `files`: distinct files those functions are in;
- `returns`: times the walk steps into a module it had stepped into before, after
  stepping elsewhere in between (a run of calls into one module counts once). A pipeline
  that calls each stage once, each in its own module, returns nowhere; a setting resolved
  anew by every stage returns to the settings' module each time;
- `functions`: for context, every distinct Keel function entered, steps or not.

These are counts, not times: the same code gives the same figures on any machine.
`--list` prints the walk itself, each module stepped into in order (returns marked), and
the places.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

import keel
from keel.payload.providers import first_request

REFERENCE = Path(__file__).resolve().parent.parent / "examples" / "brain"
SOURCE = Path(keel.__file__).resolve().parent
NOW = datetime(2025, 4, 14, 19, 30, tzinfo=UTC)
TARGETS = {"places": 35, "files": 14, "returns": 4}
ANONYMOUS = ("<genexpr>", "<lambda>", "<listcomp>", "<dictcomp>", "<setcomp>")


@dataclass(slots=True)
class Walk:
    """What the profiler saw: the steps between packages, and where each went."""

    stack: list[str | None] = field(default_factory=list)  # None: not Keel's frame
    places: set[tuple[str, str]] = field(default_factory=set)
    functions: set[tuple[str, str]] = field(default_factory=set)  # every one, steps or not
    order: list[str] = field(default_factory=list)  # the modules stepped into, in order
    files: dict[str, str] = field(default_factory=dict)  # co_filename → module, cached

    def module(self, filename: str) -> str | None:
        found = self.files.get(filename)
        if found is None:
            path = Path(filename).resolve()
            found = path.relative_to(SOURCE).as_posix() if path.is_relative_to(SOURCE) else ""
            self.files[filename] = found
        return found or None

    def profile(self, frame: FrameType, event: str, _arg: Any) -> None:
        if event == "call":
            module = self.module(frame.f_code.co_filename)
            if module is not None:
                self.enter(module, frame.f_code.co_qualname)
            self.stack.append(module)
        elif event == "return" and self.stack:
            self.stack.pop()

    def enter(self, module: str, name: str) -> None:
        place = name.split(".<locals>.")
        while len(place) > 1 and place[-1] in ANONYMOUS:
            place.pop()
        function = (module, ".<locals>.".join(place))
        self.functions.add(function)
        here = next((m for m in reversed(self.stack) if m is not None), None)
        if here is not None and package(here) == package(module):
            return  # within a stage: read along with the function that called it
        self.places.add(function)
        if not self.order or self.order[-1] != module:
            self.order.append(module)

    def figures(self) -> dict[str, int]:
        return {
            "places": len(self.places),
            "files": len({module for module, _ in self.places}),
            "returns": len(self.order) - len(set(self.order)),
            "functions": len(self.functions),
        }


def package(module: str) -> str:
    """`link/gather.py` → `link`; `errors.py` → `errors.py`."""
    return module.split("/", 1)[0]


def traced(work: Callable[[], object]) -> Walk:
    """The walk of `work`, counted from its first call in Keel's code."""
    walk = Walk()
    sys.setprofile(walk.profile)
    try:
        work()
    finally:
        sys.setprofile(None)
    return walk


def measure() -> tuple[dict[str, int], Walk]:
    request = keel.TurnRequest(
        conversation=keel.Conversation(bot="nova", chat="tg:chat:-1001000000001"),
        now=NOW,
        input="Add oat milk",
    )
    with tempfile.TemporaryDirectory(prefix="keel-walk-bench-") as tmp:
        brain = Path(tmp) / "brain"
        shutil.copytree(REFERENCE, brain, ignore=shutil.ignore_patterns(".keel"))
        with keel.Engine(brain, watch=False) as engine:
            _, assembly = engine.prepare(request)  # untraced: the load, the migration
            first_request(assembly, "openai")

            def turn() -> None:
                _, assembly = engine.prepare(request)
                first_request(assembly, "openai")

            walk = traced(turn)
    return walk.figures(), walk


def render(figures: dict[str, int], walk: Walk, listing: bool) -> str:
    lines = []
    if listing:
        seen: set[str] = set()
        lines.append("the walk, each module stepped into, in order (<- a return):")
        for module in walk.order:
            lines.append(f"  {module}" + ("  <-" if module in seen else ""))
            seen.add(module)
        lines.append("")
        lines += ["places:", *(f"  {m}: {name}" for m, name in sorted(walk.places)), ""]
    for name, target in TARGETS.items():
        met = "MET" if figures[name] <= target else "MISSED"
        lines.append(f"{name:9} {figures[name]:4}   target ≤ {target} {name}: {met}")
    lines.append(f"{'functions':9} {figures['functions']:4}   (every Keel function entered)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--list", action="store_true", help="print the walk and its places")
    args = parser.parse_args(argv)
    figures, walk = measure()
    print(json.dumps(figures) if args.json else render(figures, walk, args.list))
    return 0


if __name__ == "__main__":
    sys.exit(main())
