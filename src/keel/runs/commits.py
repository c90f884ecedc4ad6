"""Pinning a run to the brain it started on: a git commit, or a hash of the brain's files.

A run reads its contexts, code and pipeline as they were when it started, for its whole
life, replays included, while new runs and chat turns read the working tree.

- `brain_commit(root)` says what the brain is right now. Inside a git work tree whose
  `HEAD` holds the brain directory, that is the commit (`git rev-parse HEAD`), the
  brain's path in the repository, and whether its files (`features/`, `constitution/`,
  `state/`) differ from the commit — edited, added or deleted, not yet committed. Without
  git (no repository, no git program, a repository with no commit yet, or one whose
  commit does not hold the brain) it is a hash of the content of the files the loader
  reads: the same bytes give the same hash, whatever their times.
- `snapshot(root, pin)` gives the directory to load the pinned brain from. For a clean
  commit, the brain directory as that commit has it, extracted once with `git archive`
  into a cache (`<brain>/.keel/commits/<sha>/` by default). For a content pin, or a commit
  with edits not yet committed (`dirty`), a copy of the working files as they were when
  the run started, named by their content hash (`.../tree-<hex>/`): a run started to try
  an edit reads that edit, and keeps reading it after the next one. Either is made once,
  in a temporary directory renamed into place, so a reader never sees half a snapshot and
  two processes making the same one both end with it.

Git is a plain call of the `git` program; nothing here needs a library. `Pin.to_json` is
JSON-native, so a durable workflow can journal it and a replay read it back.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from keel.brain.loader import TOPS, check_root, scan
from keel.brain.reading import read_file
from keel.errors import ContentError, KeelError

PinKind = Literal["git", "content"]
CONTENT_PREFIX = "sha256:"
# Where snapshots go unless the caller names a cache: beside the brain's own database.
CACHE_DIR = (".keel", "commits")
# No git call that reads a brain's repository should take long; one that hangs (a locked
# network file system, a credential prompt) must not hold a run forever.
GIT_TIMEOUT_S = 120.0
_SHA = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_CONTENT = re.compile(r"^sha256:[0-9a-f]{64}$")
# Variables that would point git at another repository than the brain's own.
_GIT_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX")


class CommitError(KeelError):
    """git could not say which commit the brain is at, or give the brain at a commit."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Pin:
    """What a run is pinned to: a git commit, or a content hash of the brain's files.

    `id` is the commit's sha (`git`) or `sha256:<hex>` (`content`); `path` is the brain's
    directory inside the repository, POSIX, "" at its top; `dirty` says the brain's files
    differed from the commit when the pin was taken, and `tree` is then their content hash
    (what the run reads).
    """

    kind: PinKind
    id: str
    path: str = ""
    dirty: bool = False
    tree: str = ""

    @property
    def files(self) -> str | None:
        """The content hash of the working files the run reads; None: it reads a commit."""
        if self.kind == "content":
            return self.id
        return self.tree or None

    @property
    def label(self) -> str:
        """One word for a run record: `git:<sha>`, `git:<sha>+dirty` or `sha256:<hex>`."""
        if self.kind == "content":
            return self.id
        return f"git:{self.id}{'+dirty' if self.dirty else ''}"

    def to_json(self) -> dict[str, Any]:
        """The pin as JSON-native values (what a workflow step journals)."""
        data: dict[str, Any] = {
            "kind": self.kind,
            "id": self.id,
            "path": self.path,
            "dirty": self.dirty,
        }
        if self.tree:
            data["tree"] = self.tree
        return data

    @classmethod
    def from_json(cls, data: Any) -> Pin:
        """A pin from `to_json`'s output; `CommitError` when it is not one."""
        if not isinstance(data, dict):
            raise CommitError(f"a pin is a mapping, got {type(data).__name__} — pass to_json()")
        kind, ident = data.get("kind"), data.get("id")
        path, dirty, tree = data.get("path", ""), data.get("dirty", False), data.get("tree", "")
        shape = {"git": _SHA, "content": _CONTENT}.get(kind) if isinstance(kind, str) else None
        if (
            shape is None
            or not isinstance(ident, str)
            or not shape.match(ident)
            or not isinstance(path, str)
            or not isinstance(dirty, bool)
            or not (tree == "" or (isinstance(tree, str) and _CONTENT.match(tree)))
        ):
            raise CommitError(
                f"{data!r} is not a pin — expected kind 'git' with a commit sha or 'content' "
                "with sha256:<hex>, as Pin.to_json() writes"
            )
        return cls(
            kind="git" if kind == "git" else "content", id=ident, path=path, dirty=dirty, tree=tree
        )


def brain_commit(root: Path) -> Pin:
    """What the brain at `root` is now: its git commit if it has one, else its content hash.

    Raises `CommitError` only when git is there and the brain is in a repository git
    refuses to read (say, one owned by another user): quietly hashing instead would hide
    that runs are not pinned to commits as intended.
    """
    root = check_root(root)
    if not _in_repository(root):
        return _content_pin(root)  # no git process to start for a brain outside any repository
    # The common case in one call: a work tree, its HEAD, and the brain in it (`HEAD:./` is
    # the brain's own directory at HEAD). Any failure is sorted out step by step below.
    try:
        quick = _git(
            root,
            "rev-parse",
            "--is-inside-work-tree",
            "--show-prefix",
            "HEAD",
            "HEAD:./",
            check=False,
        )
    except FileNotFoundError:
        return _content_pin(root)
    lines = quick.stdout.splitlines() if quick.returncode == 0 else []
    if len(lines) == 4 and lines[0] == "true":
        return _git_pin(root, sha=lines[2].strip(), prefix=lines[1].rstrip("/"))
    where = _git_or_none(root, "rev-parse", "--is-inside-work-tree", "--show-prefix")
    if where is None:
        return _content_pin(root)
    lines = where.splitlines()
    if not lines or lines[0] != "true":
        return _content_pin(root)  # inside a .git directory, not a work tree
    prefix = lines[1].rstrip("/") if len(lines) > 1 else ""
    sha = _git_or_none(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    if sha is None:
        return _content_pin(root)  # a repository with no commit yet
    sha = sha.strip()
    if prefix and _git_or_none(root, "rev-parse", "--verify", "--quiet", f"{sha}:{prefix}") is None:
        return _content_pin(root)  # the commit does not hold the brain (never added)
    return _git_pin(root, sha=sha, prefix=prefix)


def _git_pin(root: Path, *, sha: str, prefix: str) -> Pin:
    changed = _git(root, "status", "--porcelain", "-z", "--untracked-files=all", "--", *TOPS).stdout
    if not changed:
        return Pin(kind="git", id=sha, path=prefix)
    return Pin(kind="git", id=sha, path=prefix, dirty=True, tree=content_hash(root))


def _in_repository(root: Path) -> bool:
    """Whether a `.git` is in the brain's directory or above it (git's own search, without
    starting git: most brains outside a repository never pay for a process)."""
    return any((folder / ".git").exists() for folder in (root, *root.parents))


def content_hash(root: Path) -> str:
    """`sha256:<hex>` over every file the loader reads under `root`: its path and bytes.

    Times play no part, so touching a file changes nothing; a file that cannot be read
    counts by its reason, so a broken link is part of what the brain is.
    """
    return _hashed(check_root(root), copy_to=None)


def _hashed(root: Path, *, copy_to: Path | None) -> str:
    """The content hash of the brain at `root`, copying each readable file into `copy_to`
    on the way (so the copy holds exactly the bytes the hash covers)."""
    files, _ = scan(root)
    total = hashlib.sha256()
    for rel in sorted(files):
        try:
            data = read_file(str(root), rel)
        except ContentError as exc:
            data = b"\0unreadable: " + exc.reason.encode("utf-8", "replace")
        else:
            if copy_to is not None:
                target = copy_to.joinpath(*rel.split("/"))
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
        total.update(rel.encode("utf-8", "surrogateescape") + b"\0")
        total.update(hashlib.sha256(data).digest())
    return CONTENT_PREFIX + total.hexdigest()


def snapshot(root: Path, pin: Pin, cache: Path | None = None) -> Path:
    """The directory holding the brain as `pin` has it (see the module's docstring).

    `cache` is where commit snapshots go, `<root>/.keel/commits` unless given; each is a
    directory named after its commit. Raises `CommitError` when git cannot give the commit
    (it was garbage-collected after a rebase, say).
    """
    root = check_root(root)
    folder = cache if cache is not None else root.joinpath(*CACHE_DIR)
    files = pin.files
    if files is not None:
        return _cached(folder, f"tree-{files.removeprefix(CONTENT_PREFIX)}", root, pin)
    if not _SHA.match(pin.id) or ".." in pin.path.split("/"):
        raise CommitError(
            f"{pin.id!r} at {pin.path!r} is not a commit and path git can read — pass a pin "
            "from brain_commit()"
        )
    return _cached(folder, pin.id, root, pin)


def _cached(folder: Path, name: str, root: Path, pin: Pin) -> Path:
    """The snapshot `folder/name`, made now (atomically) unless it is there already."""
    target = folder / name
    if target.is_dir():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{name[:12]}-", dir=folder))
    try:
        if pin.files is None:
            _extract(root, pin, work)
        else:
            _copy(root, pin.files, work)
        try:
            work.rename(target)
        except OSError:
            # Another process put the same commit in place first: theirs is as good.
            if not target.is_dir():
                raise
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    return target


def _copy(root: Path, files: str, into: Path) -> None:
    if _hashed(root, copy_to=into) != files:
        raise CommitError(
            f"{root}: the brain's files are no longer those this run started on ({files[:19]}…) "
            "and no copy of them was kept — start the run again"
        )


def _extract(root: Path, pin: Pin, into: Path) -> None:
    # From the repository's top: in a subdirectory, git archive would take that
    # subdirectory of the tree named, not the tree itself.
    top = Path(_git(root, "rev-parse", "--show-toplevel").stdout.strip())
    tree = f"{pin.id}:{pin.path}" if pin.path else pin.id
    done = _git(top, "archive", "--format=tar", tree, check=False, text=False)
    if done.returncode != 0:
        said = _first_line(done.stderr)
        raise CommitError(
            f"{root}: git cannot give the brain at commit {pin.id[:12]} ({said}) — the commit "
            "is gone from the repository (rewritten history, a shallow clone?); a run pinned "
            "to it cannot read its brain: start the run again"
        )
    with tarfile.open(fileobj=io.BytesIO(done.stdout), mode="r:") as archive:
        archive.extractall(into, filter=_member)


def _member(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    # tarfile's "data" rules (no absolute paths, no links out of the snapshot, no device
    # files); a member they refuse is left out, as the loader would refuse it in the tree.
    try:
        return tarfile.data_filter(member, dest)
    except tarfile.FilterError:
        return None


def _content_pin(root: Path) -> Pin:
    return Pin(kind="content", id=content_hash(root))


def _environ() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV}
    # `git status` would otherwise refresh the index, taking its lock under the owner's feet.
    env["GIT_OPTIONAL_LOCKS"] = "0"
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["LC_ALL"] = "C"  # git's messages in English, which _git_or_none reads
    return env


def _git_or_none(root: Path, *args: str) -> str | None:
    """git's output, or None when git is missing or the brain is not in a repository.

    Other refusals (a repository git will not read) are a `CommitError`.
    """
    try:
        done = _git(root, *args, check=False)
    except FileNotFoundError:
        return None
    if done.returncode == 0:
        return str(done.stdout)
    said = _first_line(done.stderr)
    if args[:2] != ("rev-parse", "--is-inside-work-tree") or "not a git repository" in said:
        return None
    raise CommitError(
        f"{root}: git cannot read the repository the brain is in ({said}) — fix that (for a "
        "repository owned by another user, `git config --global --add safe.directory "
        "<its path>`), or move the brain out of it"
    )


def _git(
    root: Path, *args: str, check: bool = True, text: bool = True
) -> subprocess.CompletedProcess[Any]:
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=root,
            env=_environ(),
            capture_output=True,
            text=text,
            encoding="utf-8" if text else None,
            errors="surrogateescape" if text else None,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise CommitError(
            f"{root}: `git {' '.join(args[:2])}` took over {GIT_TIMEOUT_S:.0f} s — check the "
            "repository (a lock, a slow disk) and start the run again"
        ) from None
    if check and done.returncode != 0:
        raise CommitError(
            f"{root}: `git {' '.join(args[:2])}` failed ({_first_line(done.stderr)}) — check "
            "the repository with `git status`"
        )
    return done


def _first_line(stderr: str | bytes) -> str:
    text = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else stderr
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "no message")
    return line if len(line) <= 200 else line[:197] + "..."
