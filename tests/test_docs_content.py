"""docs/content.md's files load as written, with the brain's own loader, on a fresh copy of
examples/brain, and do what the page says of them:

- the MANIFEST.yaml block loads whole, each setting read as its comment says;
- the `approvals:` and `people:` blocks load in MANIFEST, each key as the page explains;
- the access.yaml block loads: nova's default and DM templates, and the Acme group's rule
  that binds the client context to acme;
- the scenario's `hooks:` block makes the hook the page names (`knm-practice-knm-exam-
  booked`), run as the scenario's agent with the page's prompt;
- a view that never ends is the page's one-line stub in a real turn, with a warning that
  names the view and the setting;
- the listing of a brain's places is examples/brain's: each place is there, files at any
  depth under `features/` load, and files anywhere else change nothing that loads;
- `keel state apply` and `keel state status` do what the page says: a new database is
  built whole, a second apply runs nothing, status tells applied, changed, new and missing
  apart, a changed file makes apply exit 1 unless it only defines views and
  `--rebuild-views` is given, and `keel doctor` warns about a file not applied yet;
- the widget's frontmatter is the example brain's shopping list, `keel widget show` sends
  the page's message, and a reply to it carries the page's numbered lines;
- a retired widget's message reads in history as the page's replaced-list block.

Nothing here varies between runs; nothing is normalised."""

from __future__ import annotations

import json
import os
import re
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

from keel.brain import Brain, load_brain
from keel.store.history import REPLACED, as_read
from tests.runtime.driver import REFERENCE, copy_reference
from tests.test_docs_tutorial import FENCE, shell

DOC = Path(__file__).parents[1] / "docs" / "content.md"
PAGE = DOC.read_text(encoding="utf-8")
REFERENCE_STATE = REFERENCE / "state"


def yaml_block(start: str) -> str:
    found: list[str] = [
        t for lang, _, t in FENCE.findall(PAGE) if lang == "yaml" and t.startswith(start)
    ]
    assert len(found) == 1, f"the page has one YAML block opening with {start!r}"
    return found[0]


def with_manifest(tmp_path: Path, text: str) -> Brain:
    brain = copy_reference(tmp_path / "brain")
    (brain / "constitution" / "MANIFEST.yaml").write_text(text, encoding="utf-8")
    loaded = load_brain(brain)
    assert loaded.skips == (), loaded.skips
    assert loaded.manifest.broken is None
    return loaded


def test_the_manifest_block_loads_as_its_comments_say(tmp_path: Path) -> None:
    manifest = with_manifest(tmp_path, yaml_block("name: my-brain")).manifest
    assert manifest.name == "my-brain"
    budget = manifest.contexts
    assert (budget.chars, budget.max_active, budget.turn_chars, budget.keep) == (3000, 3, 12000, 3)
    assert budget.code_timeout_ms == 2000
    assert (manifest.state_rows, manifest.state_read_timeout_ms) == (20, 2000)
    assert (manifest.retention_days, manifest.content_probe_seconds) == (365, 2)
    model = manifest.model
    assert (model.name, model.window, model.output_reserve, model.input_allocation) == (
        "any-model",
        200000,
        8000,
        150000,
    )
    assert manifest.sections == (("history", 4000),)
    assert manifest.tenancy is not None
    assert (manifest.tenancy.context, manifest.tenancy.column) == ("client", "client_slug")
    assert dict(manifest.approvals.decisions) == {"dangerous": "required", "context:bind": "none"}
    assert manifest.approvals.timeout == timedelta(days=2)
    assert tuple(manifest.code.env) == ("BRAIN_REGION",)
    assert manifest.code.network is True


def test_the_approvals_and_people_blocks_load_as_the_page_explains(tmp_path: Path) -> None:
    approvals, people = yaml_block("approvals:\n"), yaml_block("people:\n")
    manifest = with_manifest(tmp_path, "name: n\n" + approvals + people).manifest
    assert dict(manifest.approvals.decisions) == {
        "dangerous": "required",
        "moderate": "none",
        "context:bind": "none",
    }
    assert manifest.approvals.timeout == timedelta(days=2)
    assert manifest.people is not None
    assert manifest.people.owners == ("tg:user:1",)
    assert dict(manifest.people.approvers) == {"message:send": ("tg:user:7",), "*": ("owners",)}


def test_the_access_block_binds_the_group_and_keeps_the_templates(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    (brain / "constitution" / "access.yaml").write_text(yaml_block("bots:\n"), encoding="utf-8")
    access = load_brain(brain).access
    assert access.broken is None
    assert access.failed == ()
    rules = {(r.bot, r.scope): r for r in access.rules}
    assert rules[("nova", "default")].role == "concierge"
    assert rules[("nova", "dm")].role == "coach"
    group = rules[("nova", "tg:chat:-1001234567890")]
    assert (group.role, group.title, dict(group.contexts)) == (
        "client-desk",
        "Acme",
        {"client": "acme"},
    )


def test_the_scenario_hooks_block_makes_the_hook_the_page_names(tmp_path: Path) -> None:
    block = yaml_block("# features/dutch/knm/knm-practice.scenario.md\n")
    path = block.split("\n", 1)[0].removeprefix("# ")
    brain = copy_reference(tmp_path / "brain")
    scenario = brain / path
    front, body = scenario.read_text(encoding="utf-8").split("---\n", 2)[1:]
    kept = re.sub(r"^hooks:.*?(?=^\S|\Z)", "", front, flags=re.DOTALL | re.MULTILINE)
    scenario.write_text(f"---\n{kept}{block.split(chr(10), 1)[1]}---\n{body}", "utf-8")
    loaded = load_brain(brain)
    assert loaded.skips == ()
    hook = loaded.entities["hook:knm-practice-knm-exam-booked"]
    assert (hook.kind, hook.event) == ("hook", "knm.exam-booked")
    assert hook.agent == loaded.entities["scenario:knm-practice"].agent
    assert hook.prompt.startswith("The learner booked the KNM exam (the event says when).")


def test_a_view_past_its_read_time_is_the_page_stub(tmp_path: Path) -> None:
    (stub,) = re.findall(r"^(<view name=\"forever\">.*</view>)$", PAGE, re.MULTILINE)
    brain = copy_reference(tmp_path / "brain")
    # A recursive view with no stop, carried by an `always` context of the desk's role.
    (brain / "state" / "99_forever.sql").write_text(
        "CREATE VIEW forever AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n)"
        " SELECT i FROM n;\n",
        encoding="utf-8",
    )
    support = brain / "features" / "support"
    (support / "forever.context.md").write_text(
        "---\nwhen: [always]\ndata: [forever]\n---\nCount.\n", encoding="utf-8"
    )
    role = support / "support.agent.md"
    text = role.read_text(encoding="utf-8")
    role.write_text(
        text.replace("contexts: [ticket, kb, policy]", "contexts: [ticket, kb, policy, forever]"),
        encoding="utf-8",
    )
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "KEEL_HOOK_SERVER": "off",
    }
    done = shell(
        "keel turn brain --bot desk --chat tg:chat:-1003000000001 --input hi --json", tmp_path, env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    turn = json.loads(done.stdout)
    assert stub in json.dumps(turn, ensure_ascii=False).replace("\\n", "\n").replace('\\"', '"')
    assert any("forever" in w and "state.readTimeoutMs" in w for w in turn["warnings"])


def env_for_cli() -> dict[str, str]:
    return {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "KEEL_HOOK_SERVER": "off",
    }


def places() -> list[str]:
    """The first plain block: where a brain's files are, one a line, then what they hold."""
    listing = next(t for lang, _, t in FENCE.findall(PAGE) if lang == "")
    return [line.split()[0] for line in listing.splitlines()]


def loaded(brain: Path) -> tuple[object, ...]:
    """What a brain loads to, by name: its parts, their ids, and what it skipped."""
    got = load_brain(brain)
    return (
        got.manifest.name,
        tuple(r.scope for r in got.access.rules),
        sorted(got.contexts),
        sorted(got.roles),
        sorted(got.entities),
        sorted(got.skills),
        [f.path for f in got.state_sql],
        got.skips,
    )


def test_the_listing_is_where_the_example_brain_keeps_its_files(tmp_path: Path) -> None:
    assert places() == [
        "constitution/MANIFEST.yaml",
        "constitution/access.yaml",
        "state/*.sql",
        "features/<feature>/...",
    ]
    brain = copy_reference(tmp_path / "brain")
    assert (brain / "constitution" / "MANIFEST.yaml").is_file()
    assert (brain / "constitution" / "access.yaml").is_file()
    assert sorted(brain.glob("state/*.sql"))
    assert [f.path for f in load_brain(brain).state_sql] == sorted(
        f"state/{p.name}" for p in brain.glob("state/*.sql")
    ), "applied in name order"
    before = loaded(brain)
    # Anything outside the three places is ignored, whatever its name says it is.
    for stray in ("notes/x.context.md", "x.context.md", "state/x.context.md", "README.md"):
        (brain / stray).parent.mkdir(parents=True, exist_ok=True)
        (brain / stray).write_text("---\nwhen: [always]\n---\nIgnored.\n", encoding="utf-8")
    (brain / "constitution" / "x.agent.md").write_text("---\n---\nIgnored.\n", "utf-8")
    assert loaded(brain) == before
    # Under features/, at any depth.
    deep = brain / "features" / "support" / "a" / "b" / "c"
    deep.mkdir(parents=True)
    (deep / "deep.context.md").write_text("---\nwhen: [chat]\n---\nDeep.\n", encoding="utf-8")
    assert "deep" in load_brain(brain).contexts


def test_every_manifest_key_is_optional(tmp_path: Path) -> None:
    assert "brain-wide settings (every key optional)" in PAGE
    manifest = with_manifest(tmp_path, "{}\n").manifest
    # Loaded without a problem (`with_manifest` checks), each setting left to Keel's default.
    assert (manifest.name, manifest.contexts.chars, manifest.tenancy) == (None, None, None)


def state(command: str, folder: Path) -> tuple[int, dict[str, Any]]:
    done = shell(f"keel state {command} --json", folder, env_for_cli())
    return done.returncode, json.loads(done.stdout)


def statuses(answer: dict[str, Any]) -> dict[str, str]:
    return {f["path"]: f["status"] for f in answer["files"]}


def test_keel_state_apply_and_status_do_what_the_page_says(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    files = sorted(f"state/{p.name}" for p in (brain / "state").glob("*.sql"))
    # A new database is built whole on first use: status finds every file applied.
    code, status = state("status brain", tmp_path)
    assert code == 0
    assert statuses(status) == dict.fromkeys(files, "applied")
    code, again = state("apply brain", tmp_path)
    assert (code, again["ran"]) == (0, []), "a second apply runs nothing"

    (brain / "state" / "90_new.sql").write_text("CREATE TABLE extra (id INTEGER);\n", "utf-8")
    doctor = json.loads(shell("keel doctor brain --json", tmp_path, env_for_cli()).stdout)
    pending = [c for c in doctor["checks"] if c["check"] == "state.pending"]
    assert [c["subject"] for c in pending] == ["state/90_new.sql"]
    views = brain / "state" / "91_views.sql"
    views.write_text("CREATE VIEW extra_count AS SELECT count(*) AS n FROM extra;\n", "utf-8")
    assert statuses(state("status brain", tmp_path)[1])["state/90_new.sql"] == "new"
    code, ran = state("apply brain", tmp_path)
    assert (code, ran["ran"]) == (0, ["state/90_new.sql", "state/91_views.sql"])
    assert state("apply brain", tmp_path)[1]["ran"] == []

    # An applied file that changes: reported, apply exits 1; a views-only one is rebuilt.
    views.write_text("CREATE VIEW extra_count AS SELECT count(*) + 0 AS n FROM extra;\n", "utf-8")
    table = brain / "state" / files[0].removeprefix("state/")
    (tmp_path / "kept.sql").write_bytes(table.read_bytes())
    table.write_text(table.read_text(encoding="utf-8") + "-- edited\n", encoding="utf-8")
    last = brain / "state" / files[-1].removeprefix("state/")
    last.unlink()
    code, status = state("status brain", tmp_path)
    assert code == 0
    seen = statuses(status)
    assert (seen[files[0]], seen[files[-1]], seen["state/91_views.sql"]) == (
        "changed",
        "missing",
        "changed",
    )
    code, _ = state("apply brain", tmp_path)
    assert code == 1
    table.write_bytes((tmp_path / "kept.sql").read_bytes())
    last.write_bytes((REFERENCE_STATE / last.name).read_bytes())
    assert state("apply brain", tmp_path)[0] == 1, "the views file still changed"
    code, rebuilt = state("apply brain --rebuild-views", tmp_path)
    assert (code, rebuilt["rebuilt"]) == (0, ["state/91_views.sql"])
    assert set(statuses(state("status brain", tmp_path)[1]).values()) == {"applied"}


def plain_block(start: str) -> str:
    found: list[str] = [
        t for lang, _, t in FENCE.findall(PAGE) if lang == "" and t.startswith(start)
    ]
    assert len(found) == 1, f"the page has one plain block opening with {start!r}"
    return found[0]


def test_the_widget_is_shown_and_replied_to_as_the_page_shows(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    shopping = brain / "features" / "home" / "shopping.context.md"
    front = yaml_block("---\ndescription: The open shopping list.")
    before = load_brain(brain).contexts["shopping"]
    shopping.write_text(front + "Keep the list.\n", encoding="utf-8")
    after = load_brain(brain).contexts["shopping"]
    assert (after.widget, after.data, after.when) == (before.widget, before.data, before.when)

    shown = plain_block("Shopping list\n1. ")
    show = re.search(
        r"`(keel widget show BRAIN --context shopping --bot nova) --chat tg:chat:-100…`", PAGE
    )
    assert show
    room = "--chat tg:chat:-1001000000001"  # the family's group, whose role admits the list
    done = shell(f"{show[1].replace('BRAIN', 'brain')} {room} --json", tmp_path, env_for_cli())
    assert done.returncode == 0, done.stdout + done.stderr
    sent = json.loads(done.stdout)
    assert sent["text"] == shown.rstrip("\n")

    block = re.search(r"^  ```\n(  The message replied to.*?)^  ```$", PAGE, re.DOTALL | re.M)
    assert block
    lines = [line.removeprefix("  ") for line in block[1].rstrip("\n").split("\n")]
    head, tail = lines[: lines.index("...")], lines[lines.index("...") + 1 :]
    turn = shell(
        f"keel turn brain --bot nova {room} --input '{tail[-1]}' --reply-to {sent['message_id']}",
        tmp_path,
        env_for_cli(),
    )
    assert turn.returncode == 0, turn.stdout + turn.stderr
    printed = turn.stdout.splitlines()
    at = printed.index(head[0])
    assert printed[at : at + len(head)] == head, turn.stdout
    rest = printed[at + len(head) :]
    assert any(rest[n : n + len(tail)] == tail for n in range(len(rest))), turn.stdout


def test_the_replaced_list_block_is_what_history_reads_of_a_retired_list() -> None:
    (block,) = [t for _, _, t in FENCE.findall(PAGE) if REPLACED in t]
    shown = "Shopping list\n1. oat milk · 2 cartons\n2. apples · 1 kg"
    assert block.rstrip("\n") == as_read(shown, "replaced")
