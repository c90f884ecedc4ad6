"""The `keel` entry point: `--version` and `--help` without loading any command, and each
command with only its own module; the command table the help is printed from."""

from __future__ import annotations

import importlib.metadata
import io
import json
import os
import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from keel import __version__
from keel.cli import app, entry
from keel.cli.commands import COMMANDS, SUMMARY
from keel.cli.entry import ASCII_BOX, overview

# What neither `keel --version` nor `keel --help` may import: the CLI framework, the
# terminal UI, validation, YAML, the database layer, and every package of Keel's own
# beyond the errors (each of them pulls in some of the rest).
HEAVY = (
    "typer",
    "click",
    "rich",
    "pydantic",
    "ruamel",
    "sqlalchemy",
    "dbos",
    "fastapi",
    "mcp",
    "keel.brain",
    "keel.runtime",
    "keel.store",
    "keel.cli.root",
)


def run_keel(*args: str, stdin: str = "") -> tuple[int, str, str, set[str]]:
    """`keel ARGS` in a fresh interpreter: its exit status, output, errors, and the
    modules it had loaded when it ended."""
    code = (
        "import atexit, json, sys\n"
        "atexit.register(lambda: sys.stderr.write('\\nMODULES ' + json.dumps(sorted(sys.modules))))\n"
        f"sys.argv = ['keel', *{list(args)!r}]\n"
        "from keel.cli import main\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COLUMNS": "100"},
    )
    errors, _, modules = done.stderr.rpartition("\nMODULES ")
    return done.returncode, done.stdout, errors, set(json.loads(modules))


def heavy(modules: set[str]) -> set[str]:
    return {m for m in modules if m.startswith(HEAVY)}


@pytest.mark.parametrize(
    ("args", "status"),
    [
        pytest.param(["--version"], 0, id="version"),
        pytest.param(["--help"], 0, id="help"),
        pytest.param([], 2, id="nothing"),
        pytest.param(["--help", "doctor"], 0, id="help-first"),
    ],
)
def test_version_and_help_load_nothing_heavy(args: list[str], status: int) -> None:
    code, out, errors, modules = run_keel(*args)
    assert (code, errors) == (status, "")
    assert out.startswith("keel " if args == ["--version"] else " Usage: keel")
    assert heavy(modules) == set()


def test_the_version_is_the_installed_distributions() -> None:
    code, out, _, _ = run_keel("--version")
    assert code == 0
    assert out == f"keel {importlib.metadata.version('keel-engine')}\n"
    assert __version__ == importlib.metadata.version("keel-engine"), (
        "keel.__version__ and pyproject.toml's version differ — change both"
    )


def test_a_command_loads_its_own_module_and_no_other() -> None:
    code, out, _, modules = run_keel("agent-hook", "--help")
    assert code == 0
    assert "Usage: keel agent-hook" in out
    assert "keel.cli.hook_cmd" in modules
    others = {f"keel.cli.{module}" for module, _ in COMMANDS.values()} - {"keel.cli.hook_cmd"}
    assert modules & others == set()
    assert modules & {"dbos", "fastapi", "uvicorn", "mcp", "keel.runs", "keel.web"} == set()


def test_a_name_that_is_no_command_is_answered_by_typer_with_every_command_loaded() -> None:
    code, _, errors, modules = run_keel("doctr")
    assert code == 2
    assert "No such command 'doctr'" in errors
    assert {f"keel.cli.{module}" for module, _ in COMMANDS.values()} <= modules


def first_paragraph(help_text: str) -> str:
    return " ".join(help_text.strip().split("\n\n")[0].split())


def registered() -> dict[str, tuple[str, str]]:
    """Every command of the whole app: the module that registers it, its summary."""
    found: dict[str, tuple[str, str]] = {}
    for info in app.registered_commands:
        assert info.callback is not None
        name = info.name or info.callback.__name__.replace("_", "-")
        module = info.callback.__module__.removeprefix("keel.cli.")
        found[name] = (module, first_paragraph(info.help or info.callback.__doc__ or ""))
    for group in app.registered_groups:
        assert group.name is not None
        assert group.typer_instance is not None
        typer_app = group.typer_instance
        callback = typer_app.registered_commands[0].callback
        assert callback is not None
        module = callback.__module__.removeprefix("keel.cli.")
        found[group.name] = (module, first_paragraph(str(typer_app.info.help)))
    return found


def test_the_table_is_what_the_modules_register() -> None:
    commands = registered()
    assert sorted(COMMANDS) == sorted(commands), (
        "keel.cli.commands.COMMANDS must list every command: add or drop "
        f"{sorted(set(COMMANDS) ^ set(commands))}"
    )
    for name, (module, summary) in commands.items():
        assert COMMANDS[name] == (module, summary), (
            f"keel.cli.commands.COMMANDS[{name!r}] must be ({module!r}, {summary!r})"
        )


def test_the_root_app_says_what_the_entry_point_says() -> None:
    root = typer.main.get_command(app)
    assert root.help == SUMMARY
    result = CliRunner().invoke(app, ["--version"])
    assert result.output == f"keel {__version__}\n"


@pytest.mark.parametrize("width", [60, 80, 100, 160])
def test_the_help_fits_its_width_and_keeps_every_word(width: int) -> None:
    text = overview(width)
    lines = text.splitlines()
    assert max(len(line) for line in lines) == width
    # A command's row starts at the box's edge; the lines its summary wraps onto, further in.
    cells = [line[2:-2] for line in lines if line.startswith("│ ")]
    for name, (_, summary) in COMMANDS.items():
        row = next(i for i, cell in enumerate(cells) if cell.startswith(f"{name} "))
        said = [cells[row].removeprefix(name).strip()]
        while row + 1 < len(cells) and cells[row + 1].startswith(" "):
            row += 1
            said.append(cells[row].strip())
        assert " ".join(said) == summary


def test_a_narrow_terminal_gets_the_narrowest_box() -> None:
    assert max(len(line) for line in overview(20).splitlines()) == 60


def test_a_stream_that_cannot_write_the_box_gets_ascii() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.argv = ['keel', '--help']\nfrom keel.cli import main\nmain()",
        ],
        capture_output=True,
        check=False,
        env={**os.environ, "PYTHONIOENCODING": "ascii", "COLUMNS": "80"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode("ascii") == overview(80, box=ASCII_BOX)


@pytest.mark.parametrize(
    ("args", "status", "starts"),
    [
        (["--version"], 0, f"keel {__version__}\n"),
        (["--help"], 0, " Usage: keel"),
        ([], 2, " Usage: keel"),
    ],
)
def test_the_entry_point_answers_in_process(
    args: list[str],
    status: int,
    starts: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(sys, "argv", ["keel", *args])
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit) as ended:
        entry.main()
    assert ended.value.code == status
    assert capsys.readouterr().out.startswith(starts)


def test_the_width_is_columns_else_the_terminals_else_80(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "123")
    assert entry.width() == 123
    monkeypatch.setenv("COLUMNS", "wide")
    monkeypatch.setattr(sys, "stdout", io.StringIO())  # no file number: not a terminal
    assert entry.width() == entry.DEFAULT_WIDTH
