"""Counting tokens: a built-in estimate, or an exact count from a tokenizer's rank file.

One `TokenCounter` measures everything a turn is judged by — each section's `used_tokens`,
the budgets, and the request as it is finally sent, chat framing included — so the fit
check and the provider see the same numbers.

- `Estimator` (the default, name ``"estimate"``) needs no data file and no package. It is
  tuned to o200k_base; on Keel's test corpus its mean absolute error is a few percent and
  it is never more than 15 % under (docs/tokens.md has the measured table).
- `keel.assemble.exact` has the exact counters: `TiktokenCounter` (tiktoken with a rank
  file already on disk; nothing is ever downloaded) and `ToktokCounter` (the `toktok`
  package carries both vocabularies compiled in), and `counter_from_settings`.

How the estimate works. o200k's pre-tokenizer cuts text into pieces — a word with the
space or the single punctuation mark before it, a group of up to three digits, a run of
punctuation, a run of newlines, the part of a long space run that no word takes — and
ordinary pieces are one token each. So the estimate classifies each character as one of
six classes by its first UTF-8 byte (one `bytes.translate`), turns every three
consecutive classes into one code with a single multiplication of a big integer, and
looks each code up in a table that says how many pieces start there, plus small measured
extras (long punctuation runs, a mark glued to a word, letter/digit seams). A second
table adds what one character costs beyond its piece: about 0.7 token for a CJK
character, 0.08 for a Cyrillic letter, a little for rare Latin letters, capitals and
tabs. Both tables hold weights in 1/64 token, summed with `zlib.adler32` on chunks small
enough not to wrap. No Python code runs per character, so it is many times faster than
tokenizing (docs/tokens.md has the timings).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate, repeat
from operator import add
from typing import Final, Literal, Protocol

MESSAGE_FRAME_TOKENS: Final = 4
"""Tokens each chat message costs beyond its text (role and delimiters)."""
REPLY_PRIMING_TOKENS: Final = 3
"""Tokens every chat request costs for the start of the reply."""

Encoding = Literal["o200k_base", "cl100k_base"]


class TokenCounter(Protocol):
    """Counts tokens in texts and in whole chat requests, framing included."""

    @property
    def name(self) -> str: ...

    def count(self, text: str) -> int: ...

    def count_each(self, texts: Sequence[str]) -> list[int]:
        """One count per text; a counter may do them in one pass."""
        ...

    def count_messages(self, messages: Sequence[tuple[str, str]]) -> int: ...


def framed(text_tokens: Sequence[int]) -> int:
    """A chat request's tokens from its messages' text tokens: those + 4 each + 3."""
    return sum(text_tokens) + MESSAGE_FRAME_TOKENS * len(text_tokens) + REPLY_PRIMING_TOKENS


# ---------------------------------------------------------------------------------------
# The estimate

_UNIT: Final = 64  # table weights are in 1/64 token
_ADLER_MODULUS: Final = 65521

_NL, _LOWER, _UPPER, _DIGIT, _SPACE, _OTHER = range(6)  # newline first: text starts "after" one
_LETTERS = (_LOWER, _UPPER)
_SPACES: Final = " \t\v\f"  # Unicode White_Space in ASCII, newlines apart (not \x1c-\x1f)

# Extras measured against o200k_base (tokens per occurrence), beyond one token per piece.
_PUNCT_RUN: Final = 0.12  # each punctuation mark after two others: `"]}),` costs more than one
_GLUED_MARK: Final = 0.03  # a word glued to one mark (`/path`, `?key`) sometimes splits
_LETTER_DIGIT: Final = 0.023  # a seam between letters and digits (ids, hashes)
_SPACE_RUN: Final = 1 / 64  # a long run of spaces is one token per hundred or so
_NEWLINE_RUN: Final = 1 / 16  # blank lines: one token per sixteen newlines or so

# What one character costs beyond its piece, by its first UTF-8 byte.
_SCRIPT_COST: Final[Mapping[range, float]] = {
    range(0xC2, 0xC3): 0.25,  # Latin-1 symbols and no-break space
    range(0xC3, 0xC4): 0.54,  # Western European accented letters
    range(0xC4, 0xCC): 0.92,  # Central European letters (Polish, Czech, Turkish...), IPA
    range(0xCC, 0xCE): 0.20,  # combining marks
    range(0xCE, 0xD0): 0.23,  # Greek
    range(0xD0, 0xD4): 0.08,  # Cyrillic (Russian is cheap; see the Ukrainian letters below)
    range(0xD4, 0xD8): 0.20,  # Armenian, Hebrew
    range(0xD8, 0xE0): 0.16,  # Arabic, Persian, Syriac
    range(0xE0, 0xE1): 0.24,  # Indic scripts and Thai (refined below)
    range(0xE1, 0xE2): 0.27,  # Georgian, Khmer, Vietnamese letters (refined below), ...
    range(0xE2, 0xE3): 0.22,  # typographic punctuation, arrows, box drawing, dingbats
    range(0xE3, 0xE4): 0.76,  # kana and CJK punctuation
    range(0xE4, 0xEA): 0.67,  # CJK ideographs
    range(0xEA, 0xEE): 0.37,  # Hangul
    range(0xEE, 0xF0): 0.25,  # private use, fullwidth forms
    range(0xF0, 0xF8): 1.04,  # emoji and other four-byte characters
}
# ASCII characters' extra costs add up: a capital Q pays for being rare and for being a capital.
_ASCII_COST: Final[Sequence[tuple[str, float]]] = (
    ("vkxjqzVKXJQZ", 0.60),  # rare letters mark names, codes and other rare words
    ("ABCDEFGHIJKLMNOPQRSTUVWXYZ", 0.064),
    ("\t", 0.17),
    ("/@&?=+#%~^|\\", 0.10),
)
# Second-byte refinements: (first two bytes, tokens per character beyond the first byte's).
_REFINED: Final = (
    ((b"\xd1\x94", b"\xd1\x96", b"\xd1\x97", b"\xd2\x91"), 1.38),  # Ukrainian є і ї ґ
    ((b"\xe0\xa4", b"\xe0\xa5"), -0.15),  # Devanagari: cheaper than the other Indic scripts
    ((b"\xe0\xb8", b"\xe0\xb9"), 0.18),  # Thai: dearer
    ((b"\xe1\xba", b"\xe1\xbb"), -0.27),  # Vietnamese letters: no dearer than a Latin one
    (tuple(b"\xe1" + bytes([second]) for second in range(0x88, 0x8E)), 1.5),  # Ethiopic
)
_REFINED_LEADS: Final = b"\xd1\xd2\xe0\xe1"


def _class_of(byte: int) -> int:
    if byte >= 0x80:
        # Letters of every script by default; symbols, emoji and private use are marks.
        return _OTHER if byte in (0xC2, 0xE2, 0xEE, 0xEF) or byte >= 0xF0 else _LOWER
    char = chr(byte)
    if char in "\n\r":
        return _NL
    if char in _SPACES:
        return _SPACE
    if char.isdigit():
        return _DIGIT
    if char.isalpha():
        return _UPPER if char.isupper() else _LOWER
    return _OTHER


def _pieces_at(a: int, b: int, c: int) -> float:
    """Pieces that start at a character of class `c` after classes `a`, `b` (o200k's rules)."""
    if c in _LETTERS:
        if b in _LETTERS:
            return 1.0 if (b, c) == (_LOWER, _UPPER) else 0.0  # camelCase splits
        if b == _OTHER:
            # A single mark joins the word (`.name`, `(x`), unless a space or mark is before it.
            return 1.0 if a in (_SPACE, _OTHER) else 0.0
        if b == _SPACE:
            return 2.0 if a == _SPACE else 1.0  # a long space run leaves a piece behind
        return 1.0
    if c == _DIGIT:
        if b == _DIGIT:
            return 1 / 3 if a == _DIGIT else 0.0  # digits go in threes
        if b == _SPACE:
            return 3.0 if a == _SPACE else 2.0  # a space before digits stays its own piece
        return 1.0
    if c == _OTHER:
        if b == _OTHER:
            return 0.0
        return 2.0 if (a, b) == (_SPACE, _SPACE) else 1.0
    if c == _NL:
        if b in (_NL, _OTHER):
            return 0.0  # newlines join the run, or the punctuation just before them
        return 0.0 if (a, b) == (_NL, _SPACE) else 1.0
    return 0.0


def _trigram_cost(a: int, b: int, c: int) -> float:
    cost = _pieces_at(a, b, c)
    if a == b == c == _OTHER:
        cost += _PUNCT_RUN
    if a not in (_SPACE, _OTHER) and b == _OTHER and c in _LETTERS:
        cost += _GLUED_MARK
    if (b == _DIGIT and c in _LETTERS) or (b in _LETTERS and c == _DIGIT):
        cost += _LETTER_DIGIT
    if a == b == c == _SPACE:
        cost += _SPACE_RUN
    if a == b == c == _NL:
        cost += _NEWLINE_RUN
    return cost


def _units(tokens: float) -> int:
    return round(tokens * _UNIT)


def _build_tables() -> tuple[bytes, bytes, bytes]:
    classes = bytes(_class_of(byte) for byte in range(256))
    trigrams = bytearray(256)
    for code in range(216):
        trigrams[code] = _units(_trigram_cost(code // 36, code // 6 % 6, code % 6))
    costs = bytearray(256)
    for span, cost in _SCRIPT_COST.items():
        for byte in span:
            costs[byte] = _units(cost)
    for chars, cost in _ASCII_COST:
        for char in chars:
            costs[ord(char)] += _units(cost)
    return classes, bytes(trigrams), bytes(costs)


_CLASSES, _TRIGRAMS, _CHAR_COSTS = _build_tables()
_CONTINUATION: Final = bytes(range(0x80, 0xC0))
_TRAILING_SPACE: Final = _SPACES.encode()


def _chunk_for(table: bytes) -> int:
    """How many weights from `table` can be summed before adler32's modulus wraps."""
    return (_ADLER_MODULUS - 1) // max(table)


_TRIGRAM_CHUNK: Final = _chunk_for(_TRIGRAMS)
_CHAR_CHUNK: Final = _chunk_for(_CHAR_COSTS)
_LANES: Final = 1 + (6 << 8) + (36 << 16)


def _byte_sum(weights: bytes, chunk: int) -> int:
    """The sum of the bytes of `weights`: adler32's low half is 1 + that sum, per chunk."""
    if len(weights) <= chunk:
        return (zlib.adler32(weights) & 0xFFFF) - 1
    view = memoryview(weights)
    starts = range(0, len(view), chunk)
    return sum([zlib.adler32(view[i : i + chunk]) & 0xFFFF for i in starts]) - len(starts)


def estimate_tokens(text: str) -> int:
    """The estimated o200k_base token count of `text`, rounded up."""
    if not text:
        return 0
    raw = text.encode("utf-8", "surrogatepass")
    classes = raw.translate(_CLASSES, _CONTINUATION)  # one byte per character
    n = len(classes)
    # One multiplication turns byte i into 36·class[i-2] + 6·class[i-1] + class[i]: at most
    # 215, so no byte carries into the next.
    codes = (int.from_bytes(classes, "little") * _LANES).to_bytes(n + 2, "little")[:n]
    units = _byte_sum(codes.translate(_TRIGRAMS), _TRIGRAM_CHUNK)
    units += _byte_sum(raw.translate(_CHAR_COSTS, _CONTINUATION), _CHAR_CHUNK)
    if not raw.isascii() and any(lead in raw for lead in _REFINED_LEADS):
        for pairs, cost in _REFINED:
            units += _units(cost) * sum(raw.count(pair) for pair in pairs)
    if raw[-1] in _TRAILING_SPACE:
        units += _UNIT  # spaces that end the text are a piece of their own
    return max(1, -(-units // _UNIT))


def estimate_many(texts: Sequence[str]) -> list[int]:
    """estimate_tokens for each text, from one pass over all of them (ASCII fast path)."""
    raws = [t.encode("utf-8", "surrogatepass") for t in texts]
    joined = b"\n\n".join(raws)  # two newlines: each text starts as if alone
    if not joined.isascii():
        return [estimate_tokens(t) for t in texts]
    n = len(joined)
    classes = joined.translate(_CLASSES)
    codes = (int.from_bytes(classes, "little") * _LANES).to_bytes(n + 2, "little")[:n]
    tri = codes.translate(_TRIGRAMS)
    chars = joined.translate(_CHAR_COSTS)
    sizes = [len(raw) for raw in raws]
    starts = list(accumulate((size + 2 for size in sizes), initial=0))
    # A short text's two weight sums come from one chain of adler32 calls (the low half is
    # 1 + the sum while nothing wraps), in C through map(); a text that ends in spaces gets
    # a unit more; a long text is summed in chunks, as `estimate_tokens` does.
    ends = list(map(add, starts, map(min, sizes, repeat(_SHORT))))
    spans = list(map(slice, starts, ends))
    trailing = b"\0" + joined.translate(_TRAILING_UNIT)  # trailing[end]: the last byte's
    sums = map(
        zlib.adler32,
        map(tri.__getitem__, spans),
        map(zlib.adler32, map(chars.__getitem__, spans)),
    )
    unit = _UNIT
    out = [
        max(1, -(-((total & 0xFFFF) - 1 + trailing[end]) // unit))
        for total, end in zip(sums, ends, strict=True)
    ]
    for index, size in enumerate(sizes):
        if size == 0:
            out[index] = 0
        elif size > _SHORT:
            out[index] = _estimate_at(raws[index], tri, chars, starts[index])
    return out


# Texts up to this many bytes are summed in one adler32 chain without wrapping.
_SHORT: Final = 65520 // (max(_TRIGRAMS) + max(_CHAR_COSTS))
# A unit for a space that may end a text (spaces that end a text are a piece of their own).
_TRAILING_UNIT: Final = bytes(_UNIT if chr(b) in _SPACES else 0 for b in range(256))


def _estimate_at(raw: bytes, tri: bytes, chars: bytes, at: int) -> int:
    if not raw:
        return 0
    end = at + len(raw)
    units = _byte_sum(tri[at:end], _TRIGRAM_CHUNK)
    units += _byte_sum(chars[at:end], _CHAR_CHUNK)
    if raw[-1] in _TRAILING_SPACE:
        units += _UNIT
    return max(1, -(-units // _UNIT))


@dataclass(frozen=True, slots=True, kw_only=True)
class Estimator:
    """Keel's built-in estimate: no data file, no package, tuned to o200k_base."""

    name: str = "estimate"

    def count(self, text: str) -> int:
        return estimate_tokens(text)

    def count_each(self, texts: Sequence[str]) -> list[int]:
        return estimate_many(texts)

    def count_messages(self, messages: Sequence[tuple[str, str]]) -> int:
        return framed(estimate_many([text for _, text in messages]))


# ---------------------------------------------------------------------------------------
# Exact counters
