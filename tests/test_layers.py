"""Imports run one way: no package of Keel imports one that imports it back.

Each package may import only packages of lower layers (or its own); the pure core — link,
budget, assemble, tokens — imports no database driver. A runtime import inside a function
counts as much as one at the top: the rule is about which package knows which.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).parents[1] / "src" / "keel"
# Lowest first: a package may import only those before it, and `errors`, `log` anywhere.
LAYERS = [
    {"errors", "log"},
    {"brain"},
    {"link"},
    {"budget"},
    {"tokens"},
    {"assemble"},
    {"payload"},
    {"store"},
    {"state"},
    {"code"},
    {"turn"},
    {"doctor"},
    {"ledger"},
    {"tools"},
    {"runtime"},
    {"models"},
    {"importers"},
    {"telegram"},
    {"runs", "mcp", "web"},
    {"cli"},
    # Fakes for the tests only: no package of Keel may import them.
    {"testing"},
    {"__init__", "__main__"},
]
RANK = {package: rank for rank, group in enumerate(LAYERS) for package in group}
PURE = {"link", "budget", "assemble", "tokens", "payload"}


def imports() -> dict[tuple[str, str], set[str]]:
    """(package, file) → the keel packages that file imports (not counting type-only)."""
    found: dict[tuple[str, str], set[str]] = {}
    for file in SRC.rglob("*.py"):
        parts = file.relative_to(SRC).parts
        package = parts[0] if len(parts) > 1 else parts[0].removesuffix(".py")
        tree = ast.parse(file.read_text(encoding="utf-8"))
        names: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                node.body = []  # type-only imports do not couple packages at run time
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
        found[(package, str(file.relative_to(SRC)))] = names
    return found


def test_every_package_has_a_layer() -> None:
    packages = {package for package, _ in imports()}
    assert packages <= set(RANK), f"give these a layer: {sorted(packages - set(RANK))}"


def test_imports_only_go_down_the_layers() -> None:
    wrong = []
    for (package, file), names in imports().items():
        for name in names:
            parts = name.split(".")
            if parts[0] != "keel" or len(parts) < 2:
                continue
            target = parts[1]
            if target != package and RANK.get(target, 0) > RANK[package]:
                wrong.append(f"{file} imports {name}")
    assert wrong == []


def test_the_pure_core_imports_no_database_layer() -> None:
    heavy = ("sqlalchemy", "psycopg", "keel.state", "keel.store")
    wrong = [
        f"{file} imports {name}"
        for (package, file), names in imports().items()
        if package in PURE
        for name in names
        if name.startswith(heavy)
    ]
    assert wrong == []


def module_imports(package: str) -> dict[str, set[str]]:
    """Module → the modules of the same package it imports (at any depth in the file, as
    above; type-only imports do not count)."""
    found: dict[str, set[str]] = {}
    for (owner, file), names in imports().items():
        if owner != package:
            continue
        module = "keel." + file.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
        found[module] = {n for n in names if n.startswith(f"keel.{package}.")}
    return found


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """The modules `start` imports, directly or through others."""
    seen: set[str] = set()
    todo = list(graph.get(start, ()))
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(graph.get(node, ()))
    return seen


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of `graph`: each set of modules that reach one another (or a
    module that imports itself), sorted."""
    reach = {node: reachable(graph, node) for node in graph}
    groups = {
        tuple(sorted(other for other in graph if other in reach[node] and node in reach[other]))
        for node in graph
        if node in reach[node]
    }
    return sorted(list(group) for group in groups)


def test_cycles_finds_a_cycle_and_only_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert cycles(graph) == [["a", "b", "c"], ["e"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_modules_of_runs_import_each_other_one_way() -> None:
    # The workflows register by an explicit call (keel.runs.workflows.register), not by
    # being imported from the module that launches DBOS.
    assert cycles(module_imports("runs")) == []


def runs_modules(tree: ast.AST) -> set[str]:
    """The modules of `keel.runs` a file imports, type-only imports included (a type named
    by a door is part of the door's contract too): `from keel.runs import service` names
    `keel.runs.service`, `from keel.runs.app import Runtime` names `keel.runs.app`."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "keel.runs":
            found.update(f"keel.runs.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {".".join(name.split(".")[:3]) for name in found if name.startswith("keel.runs.")}


def test_runs_modules_reads_each_form_of_import() -> None:
    tree = ast.parse(
        "from keel.runs import service as runs, app\n"
        "import keel.runs.records\n"
        "from keel.runs.values import RunOrder\n"
        "from keel.runtime.engine import Engine\n"
        "if TYPE_CHECKING:\n    from keel.runs.worker import WorkerReport\n"
    )
    assert runs_modules(tree) == {
        "keel.runs.service",
        "keel.runs.app",
        "keel.runs.records",
        "keel.runs.values",
        "keel.runs.worker",
    }


def test_the_doors_reach_runs_only_through_its_facade() -> None:
    # The CLI and the HTTP service start, fire, wait for, decide and read runs through
    # keel.runs.service alone, so its internals can move without the doors noticing.
    wrong = [
        f"{file.relative_to(SRC)} imports {name}"
        for file in sorted(SRC.rglob("*.py"))
        if file.relative_to(SRC).parts[0] != "runs"
        for name in sorted(runs_modules(ast.parse(file.read_text(encoding="utf-8"))))
        if name != "keel.runs.service"
    ]
    assert wrong == [], "import these from keel.runs.service (add them to its __all__)"
