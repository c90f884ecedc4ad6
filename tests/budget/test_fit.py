"""Fitting a turn: strongest first within maxActive and turnChars; stubs name the knob."""

from __future__ import annotations

from dataclasses import replace

from keel.brain.knobs import TurnKnobs
from keel.budget.fit import fit_turn
from keel.budget.render import Block
from keel.link import Link


def link(context: str, kind: str = "run", entity: str | None = None) -> Link:
    return Link(context=context, entity=entity, kind=kind, feature="f")  # type: ignore[arg-type]


def knobs(max_active: int = 3, turn_chars: int = 12000) -> TurnKnobs:
    return TurnKnobs(max_active=max_active, turn_chars=turn_chars, rows=20, code_timeout_ms=2000)


def test_past_max_active_the_weakest_are_stubbed() -> None:
    links = [link("a"), link("b", "chat"), link("c", "ask")]
    blocks = {k.pair: Block(text="x" * 10) for k in links}
    fitted = fit_turn(links, lambda k: blocks.get(k.pair), knobs(max_active=2), can_open=True)
    assert [a.link.context for a in fitted.attached] == ["a", "b"]
    assert [(s.link.context, s.knob) for s in fitted.stubs] == [("c", "contexts.maxActive")]
    assert fitted.stubs[0].text == (
        '<context-stub name="c">left out for room; context_open("c") reads it</context-stub>'
    )
    assert "maxActive" not in fitted.stubs[0].text, "the knob is the operator's, not the model's"


def test_past_turn_chars_a_smaller_weaker_one_may_still_fit() -> None:
    links = [link("a"), link("big", "chat"), link("small", "ask", "k1")]
    blocks = {
        links[0].pair: Block(text="x" * 60),
        links[1].pair: Block(text="x" * 60),
        links[2].pair: Block(text="x" * 30),
    }
    fitted = fit_turn(links, lambda k: blocks.get(k.pair), knobs(turn_chars=100), can_open=False)
    assert [a.link.context for a in fitted.attached] == ["a", "small"]
    assert fitted.stubs[0].knob == "contexts.turnChars"
    assert fitted.stubs[0].text.endswith(">left out for room</context-stub>")
    assert "context_open" not in fitted.stubs[0].text, "a role that cannot open is not told to"
    assert fitted.chars == 90


def test_a_context_too_big_for_its_own_chars_names_chars() -> None:
    links = [link("a", entity="T-1")]
    fitted = fit_turn(links, lambda _link: None, knobs(), can_open=False)
    assert fitted.attached == ()
    assert fitted.stubs[0].knob == "chars"
    assert fitted.stubs[0].text == (
        '<context-stub name="a" entity="T-1">left out: too large to attach</context-stub>'
    )


def test_a_stub_too_big_for_its_chars_says_opening_it_by_name_delivers_it() -> None:
    # Opened by name, it is delivered whole (instructions whole, views cut): the stub says so.
    links = [link("a", "always", entity="T-1")]
    fitted = fit_turn(links, lambda _link: None, knobs(), can_open=True)
    assert fitted.stubs[0].knob == "chars"
    assert fitted.stubs[0].text == (
        '<context-stub name="a" entity="T-1">left out: too large to attach; '
        'context_open("a", "T-1") reads it whole</context-stub>'
    )


def test_no_views_are_read_for_links_past_max_active() -> None:
    links = [link(c) for c in "abcdef"]
    rendered: list[str] = []

    def render(k: Link) -> Block:
        rendered.append(k.context)
        return Block(text="x")

    fitted = fit_turn(links, render, knobs(max_active=2), can_open=True)
    assert rendered == ["a", "b"]
    assert [s.knob for s in fitted.stubs] == ["contexts.maxActive"] * 4


def test_a_block_and_a_link_carry_their_size_and_pair_as_made() -> None:
    block = Block(text="x" * 10)
    assert block.chars == 10
    assert replace(block, text="y" * 4).chars == 4, "a changed text is measured again"
    keyed = link("a", entity="k1")
    assert keyed.pair == ("a", "k1")
    assert replace(keyed, entity="k2").pair == ("a", "k2")
    assert keyed == link("a", entity="k1"), "the pair takes no part in equality"
