"""The distribution as the package index sees it: its name, its extras, and the install hints
Keel's errors and docs print, which must name that distribution and an extra it has."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import requires
from pathlib import Path

ROOT = Path(__file__).parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
HINT = re.compile(r"install '?([A-Za-z0-9_.-]+)\[([a-z,]+)\]")


def hints() -> list[tuple[str, str, list[str]]]:
    """(file, distribution, extras) for every `install name[extras]` in the source and docs."""
    files = [*sorted((ROOT / "src").rglob("*.py")), *sorted((ROOT / "docs").glob("*.md"))]
    return [
        (file.name, match[1], match[2].split(","))
        for file in [*files, ROOT / "README.md"]
        for match in HINT.finditer(file.read_text(encoding="utf-8"))
    ]


def test_the_distribution_is_keel_engine() -> None:
    # `keel` on the index is an unrelated project: a hint naming it installs that instead.
    assert PROJECT["name"] == "keel-engine"
    assert PROJECT["scripts"] == {"keel": "keel.cli:main"}


def test_all_names_every_other_extra() -> None:
    extras = PROJECT["optional-dependencies"]
    (everything,) = extras["all"]
    named = HINT.search(f"install {everything}")
    assert named is not None
    assert named[1] == "keel-engine"
    assert sorted(named[2].split(",")) == sorted(set(extras) - {"all"})


def test_every_install_hint_names_this_distribution_and_a_real_extra() -> None:
    extras = set(PROJECT["optional-dependencies"])
    found = hints()
    assert len(found) >= 6  # the errors of serve, mcp, postgres, providers, exact, toktok
    wrong = [(f, d, x) for f, d, x in found if d != "keel-engine" or not set(x) <= extras]
    assert wrong == []


def test_the_readme_says_the_base_install_has_the_postgresql_driver() -> None:
    # psycopg comes with DBOS, a dependency of the base install: the extra only pins it.
    assert any(d.startswith("dbos") for d in PROJECT["dependencies"])
    dbos = requires("dbos") or []
    assert any(re.match(r"psycopg\b", r) and "extra ==" not in r for r in dbos), dbos
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert "The base install already has the PostgreSQL driver" in readme
    assert "`postgres` adds only a pin of psycopg's version" in readme
