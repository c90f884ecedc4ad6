"""Driving the real `keel` command against a copy of the reference brain, and reading blocks.

`Keel` invokes `keel.cli.app` through typer's test runner with `--db` and `--json`, and
`Turn` reads what `keel turn --json` printed: the links, and the rows each view showed.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from keel.cli import app

REFERENCE = Path(__file__).resolve().parents[2] / "examples" / "brain"
# The default time of every turn and send, so tests never depend on the wall clock.
AT = "2026-11-29T19:00:00Z"
# Commands that take --at.
TIMED = {"turn", "send"}

runner = CliRunner()

_MARKER = re.compile(r"^\(\d+ more rows? not shown\)$")


def copy_reference(target: Path) -> Path:
    """A copy of the reference brain, without any database the original may hold."""
    shutil.copytree(REFERENCE, target, ignore=shutil.ignore_patterns(".keel"))
    return target


def view_rows(text: str, view: str) -> list[list[str]] | None:
    """The rows a view shows in a block, cells split; None when the view is a stub.

    Raises `LookupError` when the block has no such view.
    """
    found = re.search(rf'<view name="{re.escape(view)}"[^>]*>(.*?)</view>', text, re.DOTALL)
    if found is None:
        raise LookupError(f"no view {view!r} in block:\n{text}")
    body = found.group(1)
    if not body.startswith("\n"):
        return None
    lines = body.strip("\n").split("\n")
    return [re.split(r" \| | \|$", line) for line in lines[1:] if not _MARKER.match(line)]


def view_stub(text: str, view: str) -> str:
    """The one-line text a stubbed view shows instead of rows."""
    found = re.search(rf'<view name="{re.escape(view)}"[^>]*>([^\n]*?)</view>', text)
    if found is None:
        raise LookupError(f"view {view!r} is not a stub in block:\n{text}")
    return found.group(1)


@dataclass(frozen=True)
class Turn:
    """The JSON `keel turn` printed."""

    data: dict[str, Any]

    @property
    def number(self) -> int:
        return int(self.data["turn"])

    @property
    def role(self) -> str:
        return str(self.data["role"])

    @property
    def pairs(self) -> list[tuple[str, str | None, str]]:
        """(context, entity, link) of every attached context, in the order given."""
        return [(a["context"], a["entity"], a["link"]) for a in self.data["attached"]]

    @property
    def stubbed(self) -> list[tuple[str, str | None, str]]:
        return [(s["context"], s["entity"], s["knob"]) for s in self.data["stubbed"]]

    @property
    def refused(self) -> list[dict[str, Any]]:
        return list(self.data["refused"])

    @property
    def catalog(self) -> list[str]:
        return [c["context"] for c in self.data["catalog"]]

    @property
    def texts(self) -> list[str]:
        return [b["text"] for b in self.data["blocks"]]

    def mentions(self, context: str) -> bool:
        """Whether the context appears anywhere in the turn: attached, stubbed or refused."""
        return any(
            item["context"] == context
            for key in ("attached", "stubbed", "refused")
            for item in self.data[key]
        )

    def block(self, context: str, entity: str | None = None) -> str:
        found = [
            b["text"]
            for b in self.data["blocks"]
            if b["context"] == context and (entity is None or b["entity"] == entity)
        ]
        if len(found) != 1:
            raise LookupError(f"{len(found)} blocks of {context}@{entity}: {self.data}")
        return str(found[0])

    def rows(self, context: str, view: str, entity: str | None = None) -> list[list[str]]:
        shown = view_rows(self.block(context, entity), view)
        if shown is None:
            raise LookupError(f"view {view!r} of {context} is a stub: {self.block(context)}")
        return shown

    def column(self, context: str, view: str, entity: str | None = None) -> list[str]:
        """The first cell of every row the view shows."""
        return [row[0] for row in self.rows(context, view, entity)]


@dataclass(frozen=True)
class Keel:
    """`keel` on one brain and one database."""

    brain: Path
    db: str

    def invoke(
        self, command: str, *args: str, at: str | None = AT, json_out: bool = True
    ) -> Result:
        words = command.split()
        extra = ["--at", at] if at is not None and words[0] in TIMED else []
        line = [*words, str(self.brain), *args, *extra, "--db", self.db]
        if json_out:
            line.append("--json")
        return runner.invoke(app, line)

    def json(self, command: str, *args: str, exit_code: int = 0, at: str | None = AT) -> Any:
        result = self.invoke(command, *args, at=at)
        assert result.exit_code == exit_code, (result.exit_code, result.output)
        return json.loads(result.stdout)

    def turn(self, *args: str, at: str | None = AT) -> Turn:
        return Turn(self.json("turn", *args, at=at))

    def refused(self, command: str, *args: str, at: str | None = AT) -> str:
        """Run a command that must be refused (exit 3); return the reason it printed."""
        data = self.json(command, *args, exit_code=3, at=at)
        assert set(data) == {"refused"}, data
        return str(data["refused"])

    def apply_state(self) -> None:
        applied = self.json("state apply")
        assert applied["applied"], applied


def keel_on(tmp_path: Path, url: str) -> Keel:
    """A copy of the reference brain on `url`, its state applied where Keel does not."""
    keel = Keel(brain=copy_reference(tmp_path / "brain"), db=url)
    if not url.startswith("sqlite"):
        # A new SQLite file gets the brain's SQL when Keel creates it; a server does not.
        keel.apply_state()
    return keel
