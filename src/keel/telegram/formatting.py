"""Markdown answers as Telegram formatting: plain text plus message entities.

A model writes common Markdown (bold, italic, inline code, fenced code, links, lists,
headings). Telegram shows formatting either by parsing markup (a parse mode) or from
entities sent beside plain text. Keel sends entities, computed by `telegramify-markdown`:
with no parse mode, Telegram parses nothing, so no character the model writes (a stray
`*`, `_`, `<` or `[`) can open markup, reach another message, or make the send fail.
What Markdown does not mean, the reader sees as written.

Entities are kept only of the kinds a bot may send without more rights, and links only
to http(s) addresses — a `tg://user?id=…` or `javascript:` link from a model keeps its
text and loses the link. A long answer is cut into parts of at most `LIMIT` UTF-16 units
(Telegram counts in those) at paragraph, then line, then word boundaries (in the second
half of a part when there is one); an entity
across a cut is clipped into both parts, so each part's entities lie inside its text.

Keel's own messages (`/help`, `/context`, approval cards) are not Markdown: they go as
`plain` parts, shown exactly as written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

from aiogram.types import MessageEntity
from telegramify_markdown import RenderConfig, convert

LIMIT = 4096  # Telegram's longest message, in UTF-16 units

# Kinds a model's Markdown may become. Mentions, custom emoji and the like need ids or
# rights a model's text cannot vouch for, and Telegram refuses a bad one.
_KINDS = frozenset(
    {
        "bold",
        "italic",
        "underline",
        "strikethrough",
        "spoiler",
        "code",
        "pre",
        "text_link",
        "blockquote",
        "expandable_blockquote",
    }
)
_LINK_SCHEMES = frozenset({"http", "https"})
_SEPARATORS = ("\n\n", "\n", " ")

# Private-use characters: the one absent from a text stands in for its `<` while it is
# converted, so `List<String>` is not read as an HTML tag and dropped. One UTF-16 unit,
# like `<`, so the entities' offsets hold once it is put back.
_STAND_INS = range(0xE000, 0xF900)


def _config() -> RenderConfig:
    """Headings as bold text without the library's emoji; bullets as Keel writes them."""
    config = RenderConfig.isolated()
    symbols = config.markdown_symbol
    for level in range(1, 7):
        setattr(symbols, f"heading_level_{level}", "")
    symbols.unordered_list_item = "•"
    return config


_CONFIG = _config()


@dataclass(frozen=True, slots=True)
class Part:
    """One Telegram message: its text and the entities that format it (none: plain)."""

    text: str
    entities: tuple[MessageEntity, ...] = field(default=())

    @property
    def plain(self) -> Part:
        """This part without its formatting: what goes when Telegram refuses the entities."""
        return Part(self.text)


def formatted(markdown: str, limit: int = LIMIT) -> list[Part]:
    """`markdown` as Telegram messages: plain text and entities, cut within `limit`."""
    stand_in = next((chr(c) for c in _STAND_INS if chr(c) not in markdown), None)
    source = markdown.replace("<", stand_in) if stand_in else markdown
    text, found = convert(source, config=_CONFIG)
    if stand_in:
        text = text.replace(stand_in, "<")
    entities = tuple(kept for kept in map(_kept, found) if kept is not None)
    return split(Part(text, entities), limit)


def plain(text: str, limit: int = LIMIT) -> list[Part]:
    """`text` as Telegram messages shown exactly as written, cut within `limit`."""
    return split(Part(text), limit)


def _kept(entity: object) -> MessageEntity | None:
    """The library's entity as aiogram's, or None when Keel does not send its kind."""
    kind = str(getattr(entity, "type", ""))
    url = getattr(entity, "url", None)
    if kind not in _KINDS:
        return None
    if kind == "text_link" and (url is None or urlsplit(url).scheme.lower() not in _LINK_SCHEMES):
        return None
    return MessageEntity(
        type=kind,
        offset=int(getattr(entity, "offset", 0)),
        length=int(getattr(entity, "length", 0)),
        url=url if kind == "text_link" else None,
        language=getattr(entity, "language", None) if kind == "pre" else None,
    )


def utf16_len(text: str) -> int:
    """`text`'s length as Telegram counts it."""
    return len(text.encode("utf-16-le")) // 2


def split(part: Part, limit: int = LIMIT) -> list[Part]:
    """`part` in pieces of at most `limit` UTF-16 units, cut at the last paragraph break,
    else line break, else space before the limit — one in the piece's second half first —
    (mid-word only when there is none),
    each piece with the entities inside it, clipped at the cut."""
    text = part.text
    units = _units(text)
    pieces: list[Part] = []
    start = 0
    while start < len(text):
        end = _cut(text, units, start, limit)
        first, last = _trimmed(text, start, end)
        if first < last:
            inside = _clipped(part.entities, units[first], units[last])
            pieces.append(Part(text[first:last], inside))
        start = end
    return pieces


def _units(text: str) -> list[int]:
    """For each index of `text` (and its end), how many UTF-16 units come before it."""
    table = [0]
    for char in text:
        table.append(table[-1] + (2 if ord(char) > 0xFFFF else 1))
    return table


def _cut(text: str, units: list[int], start: int, limit: int) -> int:
    """Where the piece starting at `start` ends."""
    budget = units[start] + limit
    if units[-1] <= budget:
        return len(text)
    end = start
    while units[end + 1] <= budget:
        end += 1
    head = text[start:end]
    # A paragraph break near the start would leave a stub ("Here:" before a long code
    # block): a break counts first only in the second half of the piece.
    for least in (len(head) // 2, 1):
        for separator in _SEPARATORS:
            at = head.rfind(separator)
            if at >= least:
                return start + at
    return max(end, start + 1)  # no break at all: cut mid-word, always moving on


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    """`start`..`end` without the whitespace at either edge (Telegram drops it anyway)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _clipped(
    entities: tuple[MessageEntity, ...], first: int, last: int
) -> tuple[MessageEntity, ...]:
    """The entities over UTF-16 units `first`..`last`, moved to start at `first`."""
    inside = []
    for entity in entities:
        begin = max(entity.offset, first)
        end = min(entity.offset + entity.length, last)
        if end > begin:
            moved = {"offset": begin - first, "length": end - begin}
            inside.append(entity.model_copy(update=moved))
    return tuple(inside)
