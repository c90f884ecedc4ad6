"""Keel's built-in token estimate: no data file, no package, tuned to o200k_base.

`Estimator` (name ``"estimate"``) is the default counter. On Keel's test corpus its mean
absolute error against o200k_base is a few percent and it is never more than 15 % under
(docs/tokens.md has the measured table). The exact counters are in `keel.tokens.exact`.

How the estimate works. o200k's pre-tokenizer cuts text into pieces — a word with the
space or the single punctuation mark before it, a group of up to three digits, a run of
punctuation, a run of newlines, the part of a long space run that no word takes — and
ordinary pieces are one token each. So the estimate classifies each character as one of
six classes by its first UTF-8 byte (one `bytes.translate`), turns every character and the
two before it into one code with a single multiplication of a big integer, and looks each
code up in a table that says how many pieces start there, plus small measured extras (long
punctuation runs, a mark glued to a word, letter/digit seams). A second table adds what
one character costs beyond its piece: about 0.7 token for a CJK character, 0.08 for a
Cyrillic letter, a little for rare Latin letters, capitals and tabs. Both tables hold
weights in 1/64 token.

A batch of texts is estimated as one: joined with a separator that marks itself in the
weights, split back into one weight string per text with `bytes.split`, and summed with
`zlib.adler32`. No Python code runs per character, and little per text, so it is many
times faster than tokenizing in Python (docs/tokens.md has the timings).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import compress, count, repeat
from operator import and_, gt, rshift
from typing import Final

from keel.tokens.counter import framed

# ---------------------------------------------------------------------------------------
# The estimate

_UNIT: Final = 64  # table weights are in 1/64 token
_ADLER_MODULUS: Final = 65521

_LOWER, _UPPER, _DIGIT, _SPACE, _OTHER, _NL = range(6)
_SEPARATOR: Final = 6  # the class of NUL, which separates the texts of a batch
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


def _pieces_at(a: int, b: int, c: int) -> float:  # noqa: C901 - o200k's rules, one branch each
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
    classes = bytearray(_class_of(byte) for byte in range(256))
    classes[_SEPARATOR_BYTE] = _SEPARATOR
    trigrams = bytearray(256)  # codes from 216 up only occur in a separator: no weight...
    for code in range(216):
        trigrams[code] = _units(_trigram_cost(code % 6, code // 6 % 6, code // 36))
    for before in range(6):  # ...but a text that ends in a space pays at the first NUL
        trigrams[216 + 6 * _SPACE + before] = _UNIT
    trigrams[_MARK_CODE] = _MARK  # and the second NUL is the mark
    costs = bytearray(256)
    for span, cost in _SCRIPT_COST.items():
        for byte in span:
            costs[byte] = _units(cost)
    for chars, cost in _ASCII_COST:
        for char in chars:
            costs[ord(char)] += _units(cost)
    if max(trigrams[:_MARK_CODE]) >= _MARK or max(costs) >= _MARK:
        raise AssertionError("a weight reaches the mark byte: retune it below 4 tokens")
    costs[_SEPARATOR_BYTE] = _MARK
    return bytes(classes), bytes(trigrams), bytes(costs)


# A batch is one text: every text comes after a separator, `\0\n\0\n\n`, and one more
# separator ends it. The two newlines before a text let it start as if alone. NUL, a class
# of its own, pushes the codes of all five separator bytes to 216 or above, which no text
# makes: they weigh nothing, except the first NUL after a text that ends in a space (a
# piece of its own), and the second NUL, always code 252, which the table turns into the
# mark that `bytes.split` cuts the weights at.
_SEPARATOR_BYTE: Final = 0
_SEPARATOR_TEXT: Final = "\0\n\0\n\n"
_MARK_CODE: Final = 36 * _SEPARATOR + 6 * _NL + _SEPARATOR
_MARK: Final = 0xFF
_MARK_BYTE: Final = bytes([_MARK])
_CLASSES, _TRIGRAMS, _CHAR_COSTS = _build_tables()
_CONTINUATION: Final = bytes(range(0x80, 0xC0))
# One multiplication turns byte i into 36·class[i] + 6·class[i-1] + class[i-2]: under 216
# in a text, at most 252 in a separator, so no byte carries into the next.
_LANES: Final = 36 + (6 << 8) + (1 << 16)

# Weights are summed with adler32, whose low half is 1 + the sum of the bytes until it
# wraps at 65521. Started at 63 instead of 1, its low half over 64 is the sum rounded up.
# A text too long for that is summed in chunks that cannot wrap.
_ROUND_UP: Final = _UNIT - 1
_SHORT: Final = (_ADLER_MODULUS - 1 - _ROUND_UP) // (max(_TRIGRAMS[:252]) + max(_CHAR_COSTS[1:]))
_TRIGRAM_CHUNK: Final = (_ADLER_MODULUS - 2) // max(_TRIGRAMS[:252])  # 1 + sum < 65521
_CHAR_CHUNK: Final = (_ADLER_MODULUS - 2) // max(_CHAR_COSTS[1:])


def _byte_sum(weights: bytes, chunk: int) -> int:
    """The sum of the bytes of `weights`, one adler32 per chunk."""
    if len(weights) <= chunk:
        return (zlib.adler32(weights) & 0xFFFF) - 1
    starts = range(0, len(weights), chunk)
    return sum([zlib.adler32(weights[i : i + chunk]) & 0xFFFF for i in starts]) - len(starts)


def _exact_tokens(tri: bytes, chars: bytes, raw: bytes) -> int:
    """One long or refined text's tokens, from its weights and its raw bytes."""
    units = _byte_sum(tri, _TRIGRAM_CHUNK) + _byte_sum(chars, _CHAR_CHUNK)
    if not raw.isascii():
        for pairs, cost in _REFINED:
            units += _units(cost) * sum(raw.count(pair) for pair in pairs)
    return -(-units // _UNIT)


def _refined(
    sizes: list[int], tri: list[bytes], chars: list[bytes], raws: list[bytes]
) -> dict[int, int]:
    """The tokens of the long texts, and of those in scripts whose second byte says more."""
    return {
        i: _exact_tokens(tri[i], chars[i], raw)
        for i, raw in enumerate(raws)
        if sizes[i] > _SHORT or (not raw.isascii() and any(lead in raw for lead in _REFINED_LEADS))
    }


def estimate_tokens(text: str) -> int:
    """The estimated o200k_base token count of `text`, rounded up."""
    return estimate_many((text,))[0]


def estimate_many(texts: Sequence[str]) -> list[int]:
    """The estimated o200k_base token count of each text, from one pass over all of them."""
    if not texts:
        return []
    counts = _estimate_batch(_SEPARATOR_TEXT.join(("", *texts, "")), len(texts))
    if counts is None:  # a NUL inside a text: \1, another control of no cost, reads the same
        clean = (text.replace("\0", "\1") for text in texts)
        counts = _estimate_batch(_SEPARATOR_TEXT.join(("", *clean, "")), len(texts))
        assert counts is not None, "no NUL is left in the texts"
    if counts.count(0) > texts.count(""):  # every text but the empty one is a token at least
        counts = [max(n, 1) if text else 0 for n, text in zip(counts, texts, strict=True)]
    return counts


def _estimate_batch(whole: str, n: int) -> list[int] | None:
    plain = whole.isascii()
    raw = whole.encode("ascii") if plain else whole.encode("utf-8", "surrogatepass")
    drop = b"" if plain else _CONTINUATION  # one class and one cost per character
    chars = raw.translate(_CHAR_COSTS, drop).split(_MARK_BYTE)
    if len(chars) != 2 * n + 3:  # two NULs a separator, n + 1 separators
        return None
    chars = chars[2 : 2 * n + 1 : 2]
    classes = raw.translate(_CLASSES, drop)
    codes = (int.from_bytes(classes, "little") * _LANES).to_bytes(len(classes) + 2, "little")
    tri = codes.translate(_TRIGRAMS).split(_MARK_BYTE)[1:-1]
    # The rare cases first: a long text (summed in chunks that cannot wrap), a refined
    # script; each is then left out of the one adler32 pass over the rest.
    exact: dict[int, int] = {}
    sizes = list(map(len, tri))
    if not plain:
        exact = _refined(sizes, tri, chars, raw.split(_SEPARATOR_TEXT.encode())[1:-1])
    elif max(sizes) > _SHORT:
        exact = {
            i: _exact_tokens(tri[i], chars[i], b"")
            for i in compress(count(), map(gt, sizes, repeat(_SHORT)))
        }
    for i in exact:
        tri[i] = chars[i] = b""
    sums = map(zlib.adler32, tri, map(zlib.adler32, chars, repeat(_ROUND_UP)))
    out = list(map(and_, map(rshift, sums, repeat(6)), repeat(0xFFFF >> 6)))
    for i, tokens in exact.items():
        out[i] = tokens
    return out


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
