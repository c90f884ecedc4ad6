"""`widget:` in a context's frontmatter: accepted as written, refused with its file and line."""

from __future__ import annotations

import pytest

from keel.brain import load_brain
from keel.brain.specs import WidgetSpec
from tests.brain.test_loader import only_skip
from tests.conftest import WriteBrain

LIST = "features/home/list.context.md"


def test_a_widget_names_a_view_of_its_context_and_the_columns_of_a_line(
    write_brain: WriteBrain,
) -> None:
    root = write_brain(
        {
            LIST: (
                "---\nwhen: [always]\ndata: [open_items]\nwidget:\n  view: open_items\n"
                "  line: [item, quantity]\n  title: Shopping\n---\nKeep the list.\n"
            ),
            "features/home/one.context.md": (
                "---\nwhen: [reply]\ndata: [todo]\nwidget: {view: todo, line: task}\n---\nx\n"
            ),
        }
    )
    brain = load_brain(root)
    assert brain.skips == ()
    assert brain.contexts["list"].widget == WidgetSpec(
        view="open_items", line=("item", "quantity"), title="Shopping"
    )
    assert brain.contexts["one"].widget == WidgetSpec(view="todo", line=("task",))


@pytest.mark.parametrize(
    ("front", "line", "reason"),
    [
        pytest.param(
            "when: [always]\ndata: [open_items]\nwidget:\n  view: closed_items\n  line: item\n",
            5,
            "'widget.view': 'closed_items' is not one of this context's whole 'data:' views "
            "(open_items) — add it to 'data:', or name one listed there",
            id="view-not-in-data",
        ),
        pytest.param(
            "when: [always]\ndata: [open_items]\nwidget: {view: open_itms, line: item}\n",
            4,
            "'widget.view': 'open_itms' is not one of this context's whole 'data:' views "
            "(open_items)",
            id="view-misspelt-on-one-line",
        ),
        pytest.param(
            "when: [reply]\nentity: ticket id\ndata:\n  - {view: steps, by: ticket_id}\n"
            "widget: {view: steps, line: step}\n",
            6,
            "this context is keyed by an entity — remove 'widget:'",
            id="keyed-context",
        ),
        pytest.param(
            "when: [always]\ndata: [open_items]\nwidget:\n  view: open_items\n  lines: item\n",
            6,
            "unknown key 'lines' under 'widget' — did you mean 'line'?",
            id="misspelt-key",
        ),
        pytest.param(
            "when: [always]\ndata: [open_items]\nwidget:\n  view: open_items\n  line: []\n",
            6,
            "'widget.line'",
            id="no-columns",
        ),
        pytest.param(
            "when: [always]\ndata: [open_items]\nwidget: lines\n",
            4,
            "'widget' must be a mapping of view, line and title, not 'lines' — write "
            "'view:' and 'line:' under 'widget:'",
            id="not-a-mapping",
        ),
        pytest.param(
            "when: [always]\ndata: [open_items]\nwidget:\n  view: open_items\n",
            4,
            "missing key 'line' under 'widget' — add 'line:' there",
            id="no-line",
        ),
    ],
)
def test_a_bad_widget_skips_its_context_naming_the_line(
    write_brain: WriteBrain, front: str, line: int, reason: str
) -> None:
    root = write_brain(
        {
            LIST: f"---\n{front}---\nKeep the list.\n",
            "features/home/good.context.md": "---\nwhen: [chat]\n---\nx\n",
        }
    )
    brain = load_brain(root)
    path, got_line, got_reason = only_skip(brain)
    assert (path, got_line) == (LIST, line), got_reason
    assert reason in got_reason
    assert "WidgetFront" not in got_reason, "no class of Keel's own in a message"
    assert set(brain.contexts) == {"good"}
