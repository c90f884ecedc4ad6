"""`keel explain` on a turn whose brain code failed: the failure with its file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.runtime.driver import Keel, keel_on

SHOPPER = "tg:user:42"
RAISES = (
    "from keel.code import define_context\n\n\n"
    "def match(turn, ctx):\n"
    "    raise ValueError('no ticket table')\n\n\n"
    "context = define_context(match=match)\n"
)


@pytest.fixture
def keel(tmp_path: Path, database_url: str) -> Keel:
    keel = keel_on(tmp_path, database_url)
    folder = keel.brain / "features" / "support"
    (folder / "faulty.context.md").write_text("---\nwhen: [ask]\ndescription: x\n---\nText.\n")
    (folder / "faulty.context.py").write_text(RAISES)
    role = folder / "support.agent.md"
    role.write_text(role.read_text().replace("contexts: [ticket", "contexts: [faulty, ticket"))
    return keel


def test_explain_names_the_file_and_line_of_a_failed_match(keel: Keel) -> None:
    turn = keel.json("turn", "--bot", "desk", "--chat", SHOPPER, "--input", "hello")
    said = (
        "features/support/faulty.context.py:5: match raised ValueError: no ticket table — fix "
        "the code; until then it links nothing"
    )
    assert said in turn["warnings"]
    explained = keel.json("explain", str(turn["id"]))
    (row,) = [r for r in explained["contexts"] if r["context"] == "faulty"]
    assert (row["status"], row["reason"]) == ("not linked", f"its brain code failed: {said}")
    human = keel.invoke("explain", str(turn["id"]), json_out=False)
    assert human.exit_code == 0, human.output
    assert "features/support/faulty.context.py:5: match raised ValueError" in " ".join(
        human.output.split()
    )


BAD_RENDER = (
    "from keel.code import define_context\n\n\n"
    "def match(turn, ctx):\n"
    "    return {}\n\n\n"
    "def render(entity, ctx):\n"
    "    raise RuntimeError('no sla table')\n\n\n"
    "context = define_context(match=match, render=render)\n"
)


def test_explain_says_why_an_attached_contexts_render_failed(keel: Keel) -> None:
    (keel.brain / "features" / "support" / "faulty.context.py").write_text(BAD_RENDER)
    turn = keel.json("turn", "--bot", "desk", "--chat", SHOPPER, "--input", "hello")
    said = (
        "features/support/faulty.context.py:9: render raised RuntimeError: no sla table — fix "
        "the code; until then it renders nothing"
    )
    assert said in turn["warnings"]
    explained = keel.json("explain", str(turn["id"]))
    (row,) = [r for r in explained["contexts"] if r["context"] == "faulty"]
    assert (row["status"], row["reason"]) == ("attached", f"its render failed: {said}")
    human = keel.invoke("explain", str(turn["id"]), json_out=False)
    assert human.exit_code == 0, human.output
    words = " ".join(human.output.split())
    assert "attached code link" in words
    assert "its render failed: features/support/faulty.context.py:9: render raised" in words
