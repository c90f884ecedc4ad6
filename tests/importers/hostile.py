"""Hostile repositories for `keel import`, each imported into a fresh brain, then used.

Run as a script (`python -m tests.importers.hostile CASE ...`), in a process of its own: a
regression here can block for ever (a FIFO), eat the machine's memory (`/dev/zero`) or run
the payload of a file name, so `test_hostile.py` runs it in a subprocess with a timeout and
a memory limit. A case is one of `CASES` (each hostile thing alone) or `tree-<seed>`: a
repository built from several of them at random (seeded, so the same seed builds the same
tree), with hostile folder names around them.

For each case: the repository, a brain beside it (some cases damage the brain too) and a
folder outside both holding a secret are made in a temporary folder; everything there but
the brain is listed; `import_rules` runs, then the brain is loaded, checked by doctor and
asked for a turn whose input names files the rules' globs match (every piece of generated
code is loaded and called). Printed, one JSON line per case: what the import reported,
what each bad file should have been reported as (`expected`), anything changed outside
the brain, whether the secret reached the brain, whether a payload ran (its canary file
exists), and what the brain and doctor refused.
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

CANARY = "PWNED"
SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- hostile-import-secret"
# A name that is a YAML key and a Python statement once a line break ends the line before.
PAYLOAD = f"x\nentity: __import__('os').system('touch {CANARY}')\n#"
NAMES = (
    PAYLOAD,
    "a\nb",
    "cr\rhere",
    "tab\there",
    "line\u2028sep",
    "nel\x85next",
    "\x1b[31mred",
    'quote"s',
    "back\\slash",
    "#hash",
    "--- fence",
    "é ü",
    "plain",
)
FEATURE = "repo"
GLOB_RULE = '---\nglobs: "*.ts"\n---\nTypeScript rule.\n'


@dataclass
class Tree:
    """One case's folders, and what its bad files must be reported as."""

    repo: Path
    brain: Path
    outside: Path
    rng: random.Random
    # (skipped or refused, path as reported, a piece of the reason)
    expected: list[tuple[str, str, str]] = field(default_factory=list)
    imported: list[str] = field(default_factory=list)  # sources that must be imported

    def write(self, rel: str, content: str | bytes) -> Path:
        target = self.repo / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
        return target

    def link(self, rel: str, target: str | Path) -> None:
        (self.repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (self.repo / rel).symlink_to(target)

    def name(self) -> str:
        return self.rng.choice(NAMES)

    def expect(self, how: str, path: str, reason: str) -> None:
        self.expected.append((how, path, reason))


def _shown(path: str) -> str:
    from keel.importers.quoting import shown

    return shown(path)


# -- each hostile thing, alone -----------------------------------------------------------


def link_to_secret(tree: Tree) -> None:
    tree.link("CLAUDE.md", tree.outside / "id_rsa")
    tree.expect("skipped", "CLAUDE.md", "a symbolic link to a file outside the repository")


def relative_link_out(tree: Tree) -> None:
    tree.link(".claude/rules/keys.md", "../../../outside/id_rsa")
    tree.expect("skipped", ".claude/rules/keys.md", "outside the repository")


def link_to_dev_zero(tree: Tree) -> None:
    tree.link(".cursor/rules/zero.mdc", "/dev/zero")
    tree.expect("skipped", ".cursor/rules/zero.mdc", "outside the repository")


def link_inside(tree: Tree) -> None:
    tree.write("docs/shared.md", "Shared rule, linked in.\n")
    tree.link(".windsurf/rules/shared.md", "../../docs/shared.md")
    tree.imported.append(".windsurf/rules/shared.md")


def link_loop(tree: Tree) -> None:
    tree.link(".github/instructions/loop.instructions.md", "loop.instructions.md")
    tree.expect("skipped", ".github/instructions/loop.instructions.md", "cannot read")


def fifo(tree: Tree) -> None:
    os.mkfifo(tree.repo / "AGENTS.md")
    tree.expect("skipped", "AGENTS.md", "a named pipe (FIFO)")


def deep_yaml(tree: Tree) -> None:
    tree.write(".cursor/rules/deep.mdc", "---\nglobs: " + "[" * 500 + "]" * 500 + "\n---\nx\n")
    tree.expect("skipped", ".cursor/rules/deep.mdc", "nested more than 64 lists deep")


def late_nul(tree: Tree) -> None:
    tree.write(".windsurf/rules/nul.md", b"Rules.\n" + b"x" * 9000 + b"\x00\n")
    tree.expect("skipped", ".windsurf/rules/nul.md", "binary, not text")


def too_big(tree: Tree) -> None:
    tree.write(".cursorrules", "x" * (2 << 20))
    tree.expect("skipped", ".cursorrules", "over the limit")


def not_utf8(tree: Tree) -> None:
    name = os.fsdecode(b"caf\xe9" + tree.name().encode("utf-8", "replace") + b".mdc")
    rel = f".cursor/rules/{name}"
    tree.write(rel, GLOB_RULE)
    tree.expect("skipped", _shown(rel), "not valid UTF-8")


def payload_folder(tree: Tree) -> None:
    rel = f".cursor/rules/{PAYLOAD}/r.mdc"
    tree.write(rel, GLOB_RULE)
    tree.imported.append(rel)


def payload_values(tree: Tree) -> None:
    """The payload in every value the import copies: description, globs, a folder rule."""
    quoted = json.dumps(PAYLOAD)
    rel = ".github/instructions/values.instructions.md"
    tree.write(rel, f"---\napplyTo: {quoted}\ndescription: {quoted}\n---\n# {PAYLOAD}\nBody.\n")
    tree.write(f"{PAYLOAD}/CLAUDE.md", "A folder's rules.\n")
    tree.imported.extend([rel, f"{PAYLOAD}/CLAUDE.md"])


def hostile_names(tree: Tree) -> None:
    for _ in range(3):
        name = tree.name()
        for rel, text in (
            (f".cursor/rules/{name}/r.mdc", GLOB_RULE),
            (f"{name}/AGENTS.md", "Rules for a folder.\n"),
            (f".claude/skills/{name}/SKILL.md", "---\ndescription: A skill.\n---\nSteps.\n"),
            (f".claude/skills/{name}/{name}.md", "Beside the skill.\n"),
        ):
            if not (tree.repo / rel).exists():
                tree.write(rel, text)
                tree.imported.append(rel)


def feature_linked_out(tree: Tree) -> None:
    (tree.brain / f"features/{FEATURE}").symlink_to(tree.outside, target_is_directory=True)
    tree.expect("error", "", f"features/{FEATURE} is a symbolic link out of the brain")


def imported_file_linked_out(tree: Tree) -> None:
    tree.write("CLAUDE.md", "Use pnpm.\n")
    (tree.brain / f"features/{FEATURE}").mkdir(parents=True, exist_ok=True)
    (tree.brain / f"features/{FEATURE}/claude-md.context.md").symlink_to(tree.outside / "id_rsa")
    tree.expect("refused", f"features/{FEATURE}/claude-md.context.md", "a symbolic link")


def role_fifo(tree: Tree) -> None:
    tree.write(".claude/CLAUDE.md", "Use pnpm.\n")
    (tree.brain / "features/team").mkdir(parents=True)
    os.mkfifo(tree.brain / "features/team/coder.agent.md")
    tree.expect("refused", "features/team/coder.agent.md", "a named pipe (FIFO)")


CASES: dict[str, Callable[[Tree], None]] = {
    f.__name__.replace("_", "-"): f
    for f in (
        link_to_secret,
        relative_link_out,
        link_to_dev_zero,
        link_inside,
        link_loop,
        fifo,
        deep_yaml,
        late_nul,
        too_big,
        not_utf8,
        payload_folder,
        payload_values,
        hostile_names,
        feature_linked_out,
        imported_file_linked_out,
        role_fifo,
    )
}
# What a random tree is made of: the source side only (a brain-side case refuses the whole
# import, or fights another for the same file), each at most once.
MIXABLE = [
    f for n, f in CASES.items() if n not in {"feature-linked-out", "imported-file-linked-out"}
]


def build(case: str, root: Path) -> Tree:
    from keel.brain.scaffold import scaffold_files

    seed = int(case.removeprefix("tree-")) if case.startswith("tree-") else 0
    tree = Tree(root / "repo", root / "brain", root / "outside", random.Random(seed))
    for path in (tree.repo, tree.outside):
        path.mkdir()
    (tree.outside / "id_rsa").write_text(SECRET, encoding="utf-8")
    for rel, text in dict(scaffold_files("hostile")).items():
        (tree.brain / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree.brain / rel).write_text(text, encoding="utf-8")
    if case in CASES:
        CASES[case](tree)
    else:
        for make in tree.rng.sample(MIXABLE, k=tree.rng.randint(2, 6)):
            make(tree)
    return tree


def listing(root: Path, skip: Path) -> dict[str, str]:
    """Every entry under `root` but `skip`: its kind, size and time, never opened."""
    found: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if Path(folder, d) != skip]
        for name in dirs + files:
            st = os.lstat(Path(folder, name))
            found[_shown(os.path.relpath(Path(folder, name), root))] = (
                f"{st.st_mode:o} {st.st_size} {st.st_mtime_ns}"
            )
    return found


def run(case: str) -> dict[str, Any]:
    """Import one case's repository, use the brain, and say what happened."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        tree = build(case, root)
        os.chdir(root)
        before = listing(root, tree.brain)
        result: dict[str, Any] = {"case": case, "expected": tree.expected}
        result["imported"] = tree.imported
        try:
            result.update(_use(tree))
        except Exception as exc:  # noqa: BLE001 - reported to the test, which fails on it
            result["error"] = f"{type(exc).__name__}: {exc}"
            result["traceback"] = traceback.format_exc()
        after = listing(root, tree.brain)
        result["outside_changed"] = sorted(
            k for k in {*before, *after} if before.get(k) != after.get(k)
        )
        result["canary"] = [_shown(str(p)) for p in root.rglob(CANARY)]
        result["leaked"] = [
            _shown(str(p.relative_to(root)))
            for p in tree.brain.rglob("*")
            if p.is_file() and not p.is_symlink() and SECRET in p.read_text("utf-8", "replace")
        ]
    return result


def _use(tree: Tree) -> dict[str, Any]:
    from keel.brain import load_brain
    from keel.doctor import run_doctor
    from keel.errors import UsageError
    from keel.importers import import_rules
    from keel.link.values import Conversation, TurnRequest
    from keel.runtime.engine import Engine

    try:
        report = import_rules(tree.repo, tree.brain, feature=FEATURE, role="coder")
    except UsageError as exc:
        return {"error": None, "usage_error": str(exc)}
    brain = load_brain(tree.brain)
    doctor = run_doctor(brain, schema=None)
    request = TurnRequest(
        conversation=Conversation(bot="cli", chat="cli"),
        now=datetime.now(UTC),
        role="coder" if "coder" in brain.roles else None,
        input="edit src/app.ts and every file of the rules' folders",
    )
    if request.role is not None:
        with Engine(tree.brain, watch=False) as engine:
            engine.prepare(request, dry_run=True)
    data = report.to_json()
    return {
        "error": None,
        "usage_error": None,
        # A source merged into a parallel rule's context is imported as part of that one.
        "rules": [s for r in data["rules"] for s in (r["source"], *r["also"])],
        "skipped": [[n["path"], n["message"]] for n in data["skipped"]],
        "refused": [[n["path"], n["message"]] for n in data["refused"]],
        "brain_skips": [[s.path, s.reason] for s in brain.skips],
        "doctor_fails": [f"{f.where}: {f.message}" for f in doctor.findings if f.level == "fail"],
    }


def main(args: list[str]) -> None:
    """One JSON line per case named (`tree-<seed>` for a random tree)."""
    import resource

    # A regression that reads /dev/zero fails here, not on the machine's memory.
    limit = 2 << 30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    for case in args:
        sys.stdout.write(json.dumps(run(case), ensure_ascii=True) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
