"""docs/architecture.md names real places: every file and every dotted name it quotes
exists, so the page cannot drift from the code without a test failing."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
SRC = ROOT / "src" / "keel"
PACKAGES = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
QUOTED = re.findall(r"`([^`\s]+)`", PAGE)
FILES = sorted({q for q in QUOTED if q.endswith(".py") and "/" in q})
DOTTED = sorted(
    {
        q.removesuffix("()")
        for q in QUOTED
        if re.fullmatch(r"[a-z_]+(\.[A-Za-z_]+)+(\(\))?", q)
        and q.split(".")[0] in PACKAGES | {"keel"}
    }
)


def test_the_page_quotes_files_and_names_to_check() -> None:
    assert len(FILES) > 10
    assert len(DOTTED) > 10


@pytest.mark.parametrize("path", FILES)
def test_every_quoted_file_exists(path: str) -> None:
    assert (SRC / path).is_file() or (ROOT / path).is_file(), f"docs/architecture.md: {path}"


@pytest.mark.parametrize("name", DOTTED)
def test_every_quoted_dotted_name_resolves(name: str) -> None:
    parts = name.split(".")
    if parts[0] != "keel":
        parts = ["keel", *parts]
    for split in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:split]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[split:]:
            assert hasattr(found, attribute), f"docs/architecture.md: {name} ({attribute})"
            found = getattr(found, attribute)
        return
    pytest.fail(f"docs/architecture.md: {name} is no module of keel")
