"""A brain editing its own files: a heartbeat, hook or scenario's frontmatter and body, and
`constitution/access.yaml`.

An edit is checked the way the loader will read it before anything is written: the new
text is parsed by the loader's own parser for its kind, then the whole brain is assembled
with it, and an edit that would leave the file skipped is refused with the loader's
message (file, line, reason). Nothing is written then.

A file is written atomically (a temporary file beside it, then `os.replace`), only
through real folders inside the brain, and never through a symbolic link: a link could
lead the write out of the brain, where the loader would not read it either. When the brain
lies in a git repository, the file is committed with the role as its author and the tool
call as its message, so every change the brain makes to itself has a history.

Comments and key order are kept (ruamel's round trip); a scenario's inline `hooks:` are
not edited here.
"""

from __future__ import annotations

import io
import os
import shutil
import stat
import subprocess
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import YAMLError

from keel.brain.document import FENCE, decode, parse_yaml
from keel.brain.files import ACCESS_PATH, MARKDOWN_KINDS
from keel.brain.loader import build_snapshot, load_brain, parse_path, scan
from keel.brain.problems import did_you_mean
from keel.brain.reading import inside, read_file
from keel.brain.snapshot import Brain
from keel.brain.specs import ENTITY_KINDS
from keel.errors import ContentError, Refused

# The frontmatter keys an entity edit may set; `body` is the text after the frontmatter.
ENTITY_KEYS = ("description", "agent", "reach", "schedule", "event", "bot", "chat", "thread")
_SUFFIX = {kind: suffix for suffix, kind in MARKDOWN_KINDS.items()}
_GIT_TIMEOUT_S = 30


@dataclass(frozen=True, slots=True)
class Edited:
    """What one edit did: the file, the keys it changed, and whether git recorded it."""

    path: str
    changed: tuple[str, ...]
    # "committed", "not a git repository", or why the commit failed (the file is written).
    git: str = "not a git repository"


# Where a run's pinned snapshots of the brain lie, below the live brain (the runs' commit
# cache, `keel.runs.commits.CACHE_DIR`): `<brain>/.keel/commits/<pin>/`.
PINNED_DIR = (".keel", "commits")


def live_brain(brain: Brain) -> Brain:
    """The brain to edit: the live one on disk, also when `brain` is a run's pinned snapshot.

    A run reads the brain as it was when it started, from a copy kept below the live brain.
    An edit made there would be lost (and would change what the run's replay reads), so it
    goes to the live brain, checked against the live brain as it is now.
    """
    root = brain.root
    if (root.parent.parent.name, root.parent.name) != PINNED_DIR:
        return brain
    return load_brain(root.parent.parent.parent)


# -- heartbeats, hooks and scenarios ---------------------------------------------------


def entity_path(brain: Brain, kind: str, ident: str) -> str:
    """The brain-relative path of a heartbeat, hook or scenario, or `Refused` saying why not.

    A file that did not load is found by its name among the skips, so an edit can fix it.
    """
    if kind not in ENTITY_KINDS:
        raise Refused(f"'{kind}' is not a heartbeat, hook or scenario")
    spec = brain.entity(kind, ident)
    if spec is not None:
        if spec.scenario is not None:
            raise Refused(
                f"{kind} '{ident}' is written inline in scenario '{spec.scenario}' (its "
                "`hooks:`), which this tool does not edit — edit that scenario's file"
            )
        return spec.path
    name = f"/{ident}{_SUFFIX[kind]}"
    for skip in brain.skips:
        if skip.path.startswith("features/") and skip.path.endswith(name):
            return skip.path
    known = {e.id: e for e in brain.entities.values() if e.kind == kind}
    raise Refused(f"no {kind} '{ident}' in this brain{did_you_mean(ident, known)}")


def edit_entity(
    brain: Brain,
    kind: str,
    ident: str,
    changes: Mapping[str, Any],
    *,
    author: str,
    message: str,
    write: bool = True,
) -> Edited:
    """Set frontmatter keys (None removes one) and/or the body of an entity's file, check the
    result as the loader would, write it and commit it; `Refused` writes nothing. Without
    `write`, only check: what would change, or `Refused` (a card's preview)."""
    unknown = sorted(set(changes) - {*ENTITY_KEYS, "body"})
    if unknown:
        raise Refused(f"cannot change {', '.join(unknown)} — the keys: {', '.join(ENTITY_KEYS)}")
    if not changes:
        raise Refused(f"nothing to change — give one of {', '.join(ENTITY_KEYS)} or body")
    root = brain.root
    rel = entity_path(brain, kind, ident)
    old = _read_text(root, rel)
    head, front, body = _split(rel, old)
    changed = _set_keys(front, changes)
    new_body = changes.get("body")
    if new_body is not None and str(new_body).strip() != body.strip():
        body = str(new_body).strip() + "\n"
        changed.append("body")
    if not changed:
        raise Refused(f"{rel} already says that — nothing changed")
    text = f"{head}{_dump(front)}{FENCE}\n{body}"
    return _commit_edit(
        brain, rel, text, tuple(changed), author=author, message=message, write=write
    )


def _set_keys(front: CommentedMap, changes: Mapping[str, Any]) -> list[str]:
    """Set (or, for None, remove) each frontmatter key given; the keys that changed."""
    changed: list[str] = []
    for key in ENTITY_KEYS:
        if key not in changes:
            continue
        value = changes[key]
        if value is None:
            if key in front:
                del front[key]
                changed.append(key)
        elif front.get(key) != value:
            front[key] = value
            changed.append(key)
    return changed


def _split(rel: str, text: str) -> tuple[str, CommentedMap, str]:
    """The opening fence, the frontmatter (round-trip), and the body after the closing fence."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip() != FENCE:
        raise Refused(f"{rel} has no frontmatter between '---' lines — fix it by hand first")
    close = next((i for i in range(1, len(lines)) if lines[i].rstrip() == FENCE), None)
    if close is None:
        raise Refused(f"{rel}: its frontmatter is never closed — fix it by hand first")
    front_text = "".join(lines[1:close])
    front = _load_round_trip(rel, front_text, first_line=2)
    if not isinstance(front, CommentedMap):
        raise Refused(f"{rel}: its frontmatter is not a mapping of keys — fix it by hand first")
    return lines[0], front, "".join(lines[close + 1 :])


def _load_round_trip(rel: str, text: str, *, first_line: int) -> Any:
    # The brain's bounded parser first (depth, size, aliases): ruamel's round-trip loader,
    # which keeps the comments, has no bounds of its own.
    try:
        parse_yaml(rel, text, first_line=first_line)
        loaded = _yaml().load(text)
    except ContentError as exc:
        raise Refused(f"{exc} — fix it by hand first") from None
    except YAMLError as exc:
        raise Refused(f"{rel}: {str(exc).splitlines()[0]} — fix it by hand first") from None
    return CommentedMap() if loaded is None else loaded


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def _dump(data: Any) -> str:
    out = io.StringIO()
    _yaml().dump(data, out)
    return out.getvalue()


# -- access.yaml -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AccessChange:
    """One change to a rule of access.yaml: `chat` is a chat id, or `default` / `dm` for
    the bot's templates. `bind` adds or re-keys bindings, `unbind` removes them."""

    bot: str
    chat: str
    title: str | None = None
    role: str | None = None
    bind: Mapping[str, str | None] | None = None
    unbind: Sequence[str] = ()


def widening(brain: Brain, change: AccessChange) -> str | None:
    """Why a change lets more reach a room (so it needs `access_widen`), or None when it only
    narrows: a title, a role the file already names, a binding removed."""
    if change.bind:
        return "it adds or changes a binding, which starts a context's data reaching the room"
    rule = next(
        (r for r in brain.access.rules if r.bot == change.bot and r.scope == change.chat), None
    )
    if rule is None:
        return f"bot {change.bot} has no rule for {change.chat}: a new rule opens a room"
    tenancy = brain.manifest.tenancy
    if tenancy is not None and tenancy.context in change.unbind:
        return (
            f"'{tenancy.context}' is the brain's tenancy context: unbinding it unpins the "
            "room's tenant, so its state views would no longer be filtered"
        )
    if change.role is not None and change.role != rule.role:
        named = {r.role for r in brain.access.rules if r.role is not None}
        if change.role not in named:
            return (
                f"role '{change.role}' is named by no rule of access.yaml yet, so giving it a "
                "room lets what it reads reach there"
            )
    return None


def _check_bindings(brain: Brain, bind: Mapping[str, str | None]) -> None:
    """`Refused` for a binding no turn could use: an unknown context, or a key that does not
    fit whether the context is keyed."""
    for ident, key in bind.items():
        context = brain.contexts.get(ident)
        if context is None:
            raise Refused(
                f"no context '{ident}' in this brain{did_you_mean(ident, brain.contexts)}"
            )
        if context.keyed and key is None:
            raise Refused(f"'{ident}' is keyed by {context.entity}: bind it to a key")
        if not context.keyed and key is not None:
            raise Refused(f"'{ident}' names no entity, so it takes no key ('{key}' given)")


def edit_access(
    brain: Brain, change: AccessChange, *, author: str, message: str, write: bool = True
) -> Edited:
    """Apply one rule change to access.yaml, check it as the loader would, write, commit
    (without `write`, only check)."""
    _check_bindings(brain, change.bind or {})
    root, rel = brain.root, ACCESS_PATH
    try:
        old = _read_text(root, rel)
    except Refused:
        if os.path.lexists(root / rel):
            raise
        old = "bots: {}\n"
    data = _load_round_trip(rel, old, first_line=1)
    if not isinstance(data, CommentedMap):
        raise Refused(f"{rel} is not a mapping with `bots:` — fix it by hand first")
    bots = data.setdefault("bots", CommentedMap())
    bot = _child(bots, change.bot, f"bots.{change.bot}")
    if change.chat in ("default", "dm"):
        if change.bind or change.unbind:
            raise Refused(
                f"the {change.chat} rule is a template for many chats: it binds no contexts"
            )
        rule = _child(bot, change.chat, f"bots.{change.bot}.{change.chat}")
    else:
        chats = _child(bot, "chats", f"bots.{change.bot}.chats")
        rule = _child(chats, change.chat, f"bots.{change.bot}.chats.{change.chat}")
    changed = _apply(rule, change)
    if not changed:
        raise Refused(f"{rel} already says that — nothing changed")
    # Whoever approves must see which room's access changes, not only how.
    where = f"{change.chat} rule" if change.chat in ("default", "dm") else f"chat {change.chat}"
    changed.insert(0, f"for bot {change.bot}, {where}")
    return _commit_edit(
        brain, rel, _dump(data), tuple(changed), author=author, message=message, write=write
    )


def _child(parent: Any, key: str, where: str) -> CommentedMap:
    """The mapping at `key` (matching a numeric chat id by its text), created when absent."""
    if not isinstance(parent, dict):
        raise Refused(f"{ACCESS_PATH}: the parent of {where} is not a mapping — fix it by hand")
    found = next((k for k in parent if str(k) == key), None)
    if found is None:
        parent[key] = CommentedMap()
        found = key
    value = parent[found]
    if value is None:
        value = parent[found] = CommentedMap()
    if not isinstance(value, dict):
        raise Refused(f"{ACCESS_PATH}: {where} is not a mapping — fix it by hand")
    return value  # type: ignore[return-value]


def _apply(rule: CommentedMap, change: AccessChange) -> list[str]:
    changed: list[str] = []
    for key, value in (("title", change.title), ("role", change.role)):
        if value is not None and rule.get(key) != value:
            was = _was(rule.get(key))
            rule[key] = value
            changed.append(f"{key} {value}{was}")
    contexts = rule.get("contexts")
    for ident in change.unbind:
        if not isinstance(contexts, dict) or ident not in contexts:
            raise Refused(f"the rule binds no context '{ident}' — nothing to remove")
        was = _was(contexts[ident])
        del contexts[ident]
        changed.append(f"unbound {ident}{was}")
    if isinstance(contexts, dict) and not contexts and change.unbind:
        del rule["contexts"]
    for ident, entity in (change.bind or {}).items():
        if contexts is None:
            contexts = rule["contexts"] = CommentedMap()
        if not isinstance(contexts, dict):
            raise Refused(f"{ACCESS_PATH}: the rule's contexts: is not a mapping — fix it by hand")
        if ident not in contexts or contexts[ident] != entity:
            was = _was(contexts[ident]) if ident in contexts else ""
            contexts[ident] = entity
            bound = f"={entity}" if entity is not None else ""
            changed.append(f"bound {ident}{bound}{was}")
    return changed


def _was(value: Any) -> str:
    """What a changed key held, as its change line says it (nothing when it held nothing)."""
    return "" if value is None else f" (was {value})"


# -- checking, writing, committing ------------------------------------------------------


def _commit_edit(
    brain: Brain,
    rel: str,
    text: str,
    changed: tuple[str, ...],
    *,
    author: str,
    message: str,
    write: bool,
) -> Edited:
    root = brain.root
    _check_loads(root, rel, text.encode("utf-8"))
    if not write:
        return Edited(path=rel, changed=changed, git="not written")
    write_atomically(root, rel, text)
    return Edited(path=rel, changed=changed, git=commit(root, rel, author=author, message=message))


def _check_loads(root: Path, rel: str, raw: bytes) -> None:
    """`Refused` with the loader's first message when the brain would skip `rel` as written."""
    parsed = parse_path(root, rel, raw)
    if parsed.errors:
        raise Refused(f"the edit would not load, so nothing was written: {parsed.errors[0]}")
    files, _ = scan(root)
    results = [parsed if p == rel else parse_path(root, p) for p in files]
    if rel not in files:
        results.append(parsed)
    skips = [s for s in build_snapshot(root, results).skips if s.path == rel]
    if skips:
        first = skips[0]
        where = f"{rel}:{first.line}" if first.line is not None else rel
        raise Refused(f"the edit would not load, so nothing was written: {where}: {first.reason}")


def _read_text(root: Path, rel: str) -> str:
    try:
        return decode(rel, read_file(str(root), rel))
    except ContentError as exc:
        raise Refused(f"cannot read it: {exc}") from None


def write_atomically(root: Path, rel: str, text: str) -> None:
    """Replace the brain file `rel` with `text`: a temporary file in the same real folder,
    then `os.replace`. `Refused` (nothing written) when a folder on the way leads out of the
    brain, or the file is a link or not a regular file."""
    real_root = os.path.realpath(root)
    folder, _, name = rel.rpartition("/")
    real = _real_folder(real_root, folder)
    path = os.path.join(real, name)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise Refused(
            f"{rel} is a symbolic link — the brain edits only plain files inside it, never "
            "through a link; replace the link with the file"
        )
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise Refused(f"{rel} is not a regular file — move it away")
    temp = os.path.join(real, f".{name}.{uuid.uuid4().hex[:8]}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(temp, flags, 0o644 if st is None else stat.S_IMODE(st.st_mode))
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(text.encode("utf-8"))
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        if os.path.lexists(temp):
            os.unlink(temp)
        raise


def _real_folder(root: str, folder: str) -> str:
    """The real path of the brain folder `folder`; `Refused` when it is not a folder inside."""
    path = root
    for part in folder.split("/") if folder else ():
        if part in ("", ".", ".."):
            raise Refused(f"{folder}: not a brain folder")
        path = os.path.join(path, part)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            raise Refused(f"{folder} does not exist in the brain") from None
        if stat.S_ISLNK(st.st_mode) and not inside(os.path.realpath(path), root):
            raise Refused(
                f"{os.path.relpath(path, root)} is a symbolic link out of the brain — the brain "
                "edits only files inside it"
            )
    real = os.path.realpath(path)
    if not inside(real, root) or not os.path.isdir(real):
        raise Refused(f"{folder} is not a folder inside the brain")
    return real


def commit(root: Path, rel: str, *, author: str, message: str) -> str:
    """Commit `rel` alone when the brain lies in a git repository: "committed", "not a git
    repository", or why git refused (the file stays written either way)."""
    git = shutil.which("git")
    if git is None:
        return "not a git repository"
    where = str(root)
    inside_repo = _git(git, where, "rev-parse", "--is-inside-work-tree")
    if inside_repo.returncode != 0 or inside_repo.stdout.strip() != "true":
        return "not a git repository"
    env = dict(os.environ)
    if _git(git, where, "config", "user.email").returncode != 0:
        # A brain repository with no identity configured still records the edit.
        env.setdefault("GIT_COMMITTER_NAME", "keel")
        env.setdefault("GIT_COMMITTER_EMAIL", "keel@localhost")
    person = f"{author} <{author}@keel>"
    for step in (
        ["add", "--", rel],
        ["commit", "--quiet", f"--author={person}", "-m", message, "--", rel],
    ):
        done = _git(git, where, *step, env=env)
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip().splitlines()
            return f"not committed: git {step[0]} failed ({said[0] if said else 'no message'})"
    return "committed"


def _git(
    git: str, where: str, *args: str, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [git, "-C", where, *args],
        capture_output=True,
        text=True,
        timeout=_GIT_TIMEOUT_S,
        check=False,
        env=None if env is None else dict(env),
    )
