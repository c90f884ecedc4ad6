"""docs/cli.md is what the commands' --help says today."""

from __future__ import annotations

from pathlib import Path

from keel.cli.reference import reference

DOC = Path(__file__).parents[2] / "docs" / "cli.md"


def test_the_cli_reference_matches_the_commands() -> None:
    assert DOC.read_text(encoding="utf-8") == reference(), (
        "docs/cli.md is stale — run scripts/cli-reference and commit the result"
    )
