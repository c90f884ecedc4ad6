"""Every `keel` command: its name, the module that registers it, and its one-line summary.

A command module registers its commands on the root app (`keel.cli.root`) when it is
imported, and imports what its commands need: the engine, the database layer, DBOS, the
web server. Importing all of them costs seconds, so the entry point imports only the
module of the command a command line names (`load`), and answers `keel --help` from the
summaries here without importing any. A test keeps this table equal to what the modules
register: every command listed, in the module that registers it, with the first
paragraph of its own help as its summary.
"""

from __future__ import annotations

import importlib

# What `keel --help` says Keel is.
SUMMARY = "Keel: feature contexts linked to each turn, assembled into budgeted model input."


# Every command in the order `keel --help` lists them: its name, then the module of
# keel.cli that registers it and its summary.
COMMANDS: dict[str, tuple[str, str]] = {
    "doctor": (
        "brain_cmds",
        "Check a brain: files that do not load, bindings, reach, views. Exit 1 on a fail.",
    ),
    "init": ("brain_cmds", "Create a minimal working brain: one feature, one role, one context."),
    "send": ("chat_cmds", "Record a message a run sends, with the origin a reply will bring back."),
    "bind": ("chat_cmds", "context_bind: bind a chat (or thread) to a context and entity."),
    "unbind": ("chat_cmds", "context_unbind: remove a binding made by context_bind."),
    "agent-hook": (
        "hook_cmd",
        "Answer a coding agent's prompt hook: read its JSON on stdin, print the context to add.",
    ),
    "import": (
        "import_cmd",
        "Import Cursor, Claude Code, Copilot and Windsurf rules as contexts of one feature.",
    ),
    "turns": (
        "inspect_cmds",
        "The recorded turns, newest first: id, chat, role, what each carried, its fit.",
    ),
    "history": (
        "inspect_cmds",
        "A chat's recorded messages, oldest first: what later turns see as history.",
    ),
    "bindings": (
        "inspect_cmds",
        "Every chat binding: access.yaml's group rules, then those context_bind stored.",
    ),
    "mcp": (
        "mcp_cmd",
        "Serve the brain to a coding agent over MCP: its tools and contexts, for one room.",
    ),
    "turn": (
        "turn_cmd",
        "Prepare one turn and assemble its model input; record it. With --model, the model "
        "answers too (its tool calls run), and the answer is recorded.",
    ),
    "report": (
        "report_cmds",
        "agent_context: per context, the role's turns it attached to, its stubs, sizes, links.",
    ),
    "context": (
        "report_cmds",
        "/context: what the chat's latest turn carried, the whole window, the kept links.",
    ),
    "explain": ("report_cmds", "Why each context of the brain did or did not reach a turn."),
    "what-if": (
        "report_cmds",
        "Replay the window's recorded turns under changed knobs; nothing is recorded.",
    ),
    "run": ("run_cmds", "Run a heartbeat, hook or scenario now, durably, and wait for it."),
    "fire": (
        "run_cmds",
        "Fire an event: every hook listening to it runs now (its gate decides the reach).",
    ),
    "scenario": (
        "run_cmds",
        "Run a scenario now: its pipeline with these vars, each ctx call a durable step.",
    ),
    "runs": (
        "run_cmds",
        "List the newest runs, or show one (`keel runs BRAIN show ID`) with its steps.",
    ),
    "messages": ("run_cmds", "What the bot sent in a chat, each message with its origin."),
    "worker": (
        "run_cmds",
        "Run the brain's heartbeats on their schedules and finish the runs of dead processes.",
    ),
    "approve": (
        "run_cmds",
        "Approve or deny a pending card; its run goes on (here, when no live process runs it).",
    ),
    "telegram": (
        "telegram_cmd",
        "Run a brain bot as a Telegram bot: each message a turn, each answer a native reply.",
    ),
    "serve": ("serve_cmd", "Serve the HTTP API and the dashboard (http://HOST:PORT/)."),
    "state": ("state_cmds", "The brain's state database."),
    "widget": (
        "widget_cmds",
        "A context's lines as a chat message, edited in place as they change.",
    ),
}


def load(name: str) -> None:
    """Register the command `name` on the root app; every command, for a name that is
    none of them (typer then says what is wrong with it, and suggests the nearest)."""
    if name in COMMANDS:
        importlib.import_module(f"keel.cli.{COMMANDS[name][0]}")
    else:
        load_all()


def load_all() -> None:
    """Register every command on the root app."""
    for module in dict.fromkeys(module for module, _ in COMMANDS.values()):
        importlib.import_module(f"keel.cli.{module}")
