"""A model's Markdown as Telegram text and entities: what each construct becomes, what
hostile text cannot do, and cuts that keep every part's entities inside its text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from keel.telegram.formatting import LIMIT, Part, formatted, plain, split, utf16_len


def shown(part: Part) -> list[tuple[str, str]]:
    """Each entity as (kind, the text it covers), counting in UTF-16 as Telegram does."""
    units = part.text.encode("utf-16-le")
    return [
        (e.type, units[2 * e.offset : 2 * (e.offset + e.length)].decode("utf-16-le"))
        for e in part.entities
    ]


def one(markdown: str) -> Part:
    (part,) = formatted(markdown)
    return part


def assert_inside(part: Part, limit: int = LIMIT) -> None:
    units = utf16_len(part.text)
    assert 0 < units <= limit
    assert part.text == part.text.strip()
    for entity in part.entities:
        assert entity.offset >= 0
        assert entity.length > 0
        assert entity.offset + entity.length <= units


def test_common_markdown_becomes_entities_over_plain_text() -> None:
    part = one(
        "# Your parcel\n\n**Shipped** on _Monday_, tracking `TR-55`.\n\n"
        "- see [the tracker](https://example.com/t?id=55)\n- reply here\n\n"
        "```python\nprint('a * b')\n```"
    )
    assert part.text == (
        "Your parcel\n\nShipped on Monday, tracking TR-55.\n\n"
        "• see the tracker\n• reply here\n\nprint('a * b')"
    )
    assert ("bold", "Your parcel") in shown(part)
    assert [s for s in shown(part) if s[0] != "underline"][1:] == [
        ("bold", "Shipped"),
        ("italic", "Monday"),
        ("code", "TR-55"),
        ("text_link", "the tracker"),
        ("pre", "print('a * b')"),
    ]
    link = next(e for e in part.entities if e.type == "text_link")
    assert link.url == "https://example.com/t?id=55"
    code = next(e for e in part.entities if e.type == "pre")
    assert code.language == "python"


def test_offsets_count_utf16_units_past_emoji_and_astral_characters() -> None:
    part = one("😀 𝒳 **bold** after")
    assert part.text == "😀 𝒳 bold after"
    (bold,) = part.entities
    assert (bold.offset, bold.length) == (6, 4)  # 😀 and 𝒳 are two units each
    assert shown(part) == [("bold", "bold")]


def test_stray_markup_characters_are_text_and_make_no_entity() -> None:
    text = "a * b _ c ` d [ e ] f **unclosed __also ~x 3 < 4 > 2 & so on \\"
    part = one(text)
    assert part.entities == ()
    assert part.text == text


def test_angle_brackets_are_kept_not_read_as_html() -> None:
    part = one("Use List<String> here, not <b>bold</b> or <tg-spoiler>x</tg-spoiler>.")
    assert part.text == "Use List<String> here, not <b>bold</b> or <tg-spoiler>x</tg-spoiler>."
    assert part.entities == ()


def test_links_a_model_cannot_vouch_for_keep_their_text_and_lose_the_link() -> None:
    part = one(
        "[Ana](tg://user?id=5513001) [run](javascript:alert(1)) "
        "[mail](mailto:a@b.c) [ok](http://example.com)"
    )
    assert part.text == "Ana run mail ok"
    assert [(e.type, e.url) for e in part.entities] == [("text_link", "http://example.com")]


def test_a_custom_emoji_link_makes_no_entity() -> None:
    part = one("![👍](tg://emoji?id=5368324170671202286) fine")
    assert all(e.type != "custom_emoji" for e in part.entities)
    assert "fine" in part.text


def test_empty_and_blank_answers_make_no_message() -> None:
    assert formatted("") == []
    assert formatted("  \n\n ") == []
    assert plain("") == []


def test_plain_text_keeps_every_character_as_written() -> None:
    text = "**not bold** _nor italic_ `nor code`"
    assert plain(text) == [Part(text)]


def test_a_long_answer_is_cut_at_paragraphs_with_each_part_formatted() -> None:
    paragraph = "**Step {n}** — check the `label` then " + "the box " * 120
    markdown = "\n\n".join(paragraph.format(n=n) for n in range(12))
    parts = formatted(markdown)
    assert len(parts) == 3
    for part in parts:
        assert_inside(part)
        assert part.text.startswith("Step ")
        assert shown(part)[0][0] == "bold"
        assert ("code", "label") in shown(part)
    bold = [s for part in parts for s in shown(part) if s[0] == "bold"]
    assert bold == [("bold", f"Step {n}") for n in range(12)]


def test_a_code_block_across_a_cut_is_code_in_both_parts() -> None:
    lines = "\n".join(f"line {n:04} = value()" for n in range(400))
    first, second = formatted(f"Here:\n\n```\n{lines}\n```\n\nDone.")
    assert_inside(first)
    assert_inside(second)
    assert first.text.startswith("Here:\n\nline 0000")  # no stub part of "Here:" alone
    assert [e.type for e in first.entities] == ["pre"]
    assert [e.type for e in second.entities] == ["pre"]
    assert shown(first)[0][1].startswith("line 0000 = value()")
    assert shown(second)[0][1].endswith("line 0399 = value()")
    assert second.text.endswith("line 0399 = value()\n\nDone.")


def test_emoji_text_is_cut_by_utf16_units_never_inside_a_character() -> None:
    parts = plain("😀" * 3000)
    assert [len(p.text) for p in parts] == [2048, 952]
    assert all(utf16_len(p.text) <= LIMIT for p in parts)


def test_an_entity_is_clipped_to_the_part_it_falls_in() -> None:
    long_bold = "**" + "word " * 30 + "end**"
    (first, second) = split(one(long_bold), 100)
    assert shown(first) == [("bold", first.text)]
    assert shown(second) == [("bold", second.text)]
    assert utf16_len(first.text) <= 100


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.sampled_from("ab *_`[]()<>~|#-\n😀é\\!:/."), max_size=400),
    st.integers(min_value=8, max_value=120),
)
def test_any_text_cuts_into_parts_whose_entities_lie_inside_them(text: str, limit: int) -> None:
    for part in formatted(text, limit):
        assert_inside(part, limit)
    pieces = plain(text, limit)
    for part in pieces:
        assert_inside(part, limit)
    assert "".join("".join(p.text.split()) for p in pieces) == "".join(text.split())
