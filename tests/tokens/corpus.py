"""The token corpus: texts of many kinds, built deterministically, to measure the estimator.

Each `Sample` has a category (the row of the error table), a name and its text (200 B to
20 KB of UTF-8). Prose comes from the hand-written sentence banks in `corpus_samples.py`;
code, JSON, tables, logs and the rest are generated here from fixed seeds, so the corpus is
the same on every machine and any change to it shows up in review.

`rank_dir()` is a folder holding the real tokenizer rank files, o200k_base.tiktoken and
cl100k_base.tiktoken: `KEEL_TIKTOKEN_DIR` when set, else the official files the
`bpe-openai` wheel ships (gzipped; the dev environment installs it), unpacked once into a
cache folder and checked against the hashes tiktoken pins.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.util
import json
import os
import random
import string
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from tests.tokens.corpus_samples import (
    EMOJI,
    PYTHON_MODULE,
    README_MD,
    SENTENCES,
    SUPPORT_CHAT,
)

RANK_DIR_VARIABLE = "KEEL_TIKTOKEN_DIR"
RANK_FILES = ("o200k_base.tiktoken", "cl100k_base.tiktoken")
# The published digests of the two files (the ones tiktoken checks its downloads against).
RANK_SHA256 = {
    "o200k_base.tiktoken": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base.tiktoken": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}


def rank_dir() -> Path:
    """The folder holding the rank files: `$KEEL_TIKTOKEN_DIR`, else bpe-openai's, unpacked."""
    configured = os.environ.get(RANK_DIR_VARIABLE)
    if configured:
        return Path(configured)
    return _unpacked()


@cache
def _unpacked() -> Path:
    # The package is only located, never imported: its native module is large and unused.
    spec = importlib.util.find_spec("bpe_openai")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "the bpe-openai package is not installed: `uv sync` installs it with the dev "
            f"group, or set {RANK_DIR_VARIABLE} to a folder holding {', '.join(RANK_FILES)}"
        )
    data = Path(next(iter(spec.submodule_search_locations))) / "data"
    folder = Path(tempfile.gettempdir()) / "keel-test-ranks"
    folder.mkdir(exist_ok=True)
    for name, digest in RANK_SHA256.items():
        target = folder / name
        if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == digest:
            continue
        raw = gzip.decompress((data / f"{name}.gz").read_bytes())
        if hashlib.sha256(raw).hexdigest() != digest:
            raise ValueError(f"{data / name}.gz is not the official {name}: its hash differs")
        # Written aside, then renamed: test workers that unpack at once never read half a file.
        partial = folder / f"{name}.{os.getpid()}.partial"
        partial.write_bytes(raw)
        os.replace(partial, target)
    return folder


def missing_rank_files() -> str | None:
    """None when both rank files are present, else a message saying where to put them."""
    folder = rank_dir()
    missing = [name for name in RANK_FILES if not (folder / name).is_file()]
    if not missing:
        return None
    return (
        f"tokenizer rank files {', '.join(missing)} not found in {folder}: put "
        f"o200k_base.tiktoken and cl100k_base.tiktoken in that folder, or set "
        f"{RANK_DIR_VARIABLE} to the folder that has them"
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Sample:
    category: str
    name: str
    text: str


WORDS = [
    "account",
    "order",
    "refund",
    "parcel",
    "invoice",
    "customer",
    "support",
    "ticket",
    "answer",
    "delivery",
    "carrier",
    "status",
    "warehouse",
    "payment",
    "card",
    "credit",
    "receipt",
    "warranty",
    "message",
    "reply",
    "team",
    "week",
    "month",
    "quickly",
    "carefully",
    "please",
    "thanks",
    "however",
    "because",
    "although",
    "therefore",
    "meanwhile",
    "instead",
    "configuration",
    "authentication",
    "synchronisation",
    "responsibility",
    "internationalization",
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "that",
    "for",
    "it",
    "as",
    "with",
    "was",
    "on",
    "be",
    "by",
    "at",
    "this",
    "from",
    "or",
    "an",
    "are",
    "not",
    "have",
    "which",
    "but",
    "had",
    "one",
    "all",
    "their",
    "there",
    "been",
    "has",
    "were",
    "when",
    "more",
    "will",
    "would",
    "who",
    "so",
    "if",
    "out",
    "up",
    "about",
    "into",
    "than",
    "them",
    "can",
    "only",
    "other",
    "new",
    "some",
    "could",
    "time",
    "these",
    "two",
    "may",
    "then",
    "do",
    "first",
]

IDENTS = [
    "user",
    "order",
    "item",
    "cart",
    "total",
    "price",
    "count",
    "index",
    "value",
    "result",
    "config",
    "client",
    "request",
    "response",
    "payload",
    "token",
    "budget",
    "section",
    "message",
    "history",
    "window",
    "reserve",
    "limit",
    "offset",
    "cursor",
    "buffer",
    "retry",
    "deadline",
    "handler",
    "session",
    "context",
    "render",
    "view",
    "state",
    "key",
    "id",
    "name",
]


def _words(rng: random.Random, nbytes: int) -> str:
    out: list[str] = []
    size = 0
    while size < nbytes:
        word = rng.choice(WORDS)
        if rng.random() < 0.1:
            word = word.capitalize()
        if rng.random() < 0.12:
            word += rng.choice([".", ",", ";", ":", "?", "!"])
        out.append(word)
        size += len(word) + 1
    return " ".join(out)


def _prose(lang: str, rng: random.Random, nbytes: int) -> str:
    bank = SENTENCES[lang]
    joiner = "" if lang in {"zh", "ja", "th"} else " "
    paragraphs: list[str] = []
    size = 0
    while size < nbytes:
        paragraph = joiner.join(rng.choice(bank) for _ in range(rng.randint(2, 5)))
        paragraphs.append(paragraph)
        size += len(paragraph.encode()) + 2
    return "\n\n".join(paragraphs)


def _snake(rng: random.Random, parts: int = 2) -> str:
    return "_".join(rng.choice(IDENTS) for _ in range(parts))


def _camel(rng: random.Random, parts: int = 2) -> str:
    head, *tail = (rng.choice(IDENTS) for _ in range(parts))
    return head + "".join(t.capitalize() for t in tail)


def _python(rng: random.Random, nbytes: int) -> str:
    out = ["from __future__ import annotations\n", "import json\nimport logging\n"]
    size = 0
    while size < nbytes:
        name, arg, other = _snake(rng), _snake(rng, 1), _snake(rng)
        limit = rng.randint(2, 5000)
        body = (
            f"\n\ndef {name}({arg}: dict[str, int], *, {other}: int = {limit}) -> list[str]:\n"
            f'    """Return the {rng.choice(WORDS)} {rng.choice(WORDS)} of `{arg}`."""\n'
            f"    result: list[str] = []\n"
            f"    for key, value in sorted({arg}.items()):\n"
            f"        if value > {other} and not key.startswith('_'):\n"
            f'            result.append(f"{{key}}={{value!r}}")\n'
            f"        elif value < 0:\n"
            f'            logging.warning("negative %s: %d", key, value)\n'
            f"    return result\n"
        )
        out.append(body)
        size += len(body)
    return "".join(out)


def _javascript(rng: random.Random, nbytes: int) -> str:
    out = ["'use strict';\n\nimport { fetchJson } from './http.js';\n"]
    size = 0
    while size < nbytes:
        fn, arg, field = _camel(rng, 3), _camel(rng), _camel(rng)
        body = (
            f"\nexport async function {fn}({arg}, options = {{}}) {{\n"
            f"  const {{ {field} = {rng.randint(1, 99)}, retries = 3 }} = options;\n"
            f"  const url = `/api/v1/${{encodeURIComponent({arg}.id)}}?limit=${{{field}}}`;\n"
            f"  for (let i = 0; i < retries; i += 1) {{\n"
            f"    const res = await fetchJson(url);\n"
            f"    if (res?.ok && Array.isArray(res.items)) return res.items.map((x) => x.{field});\n"
            f"  }}\n"
            f"  throw new Error(`{fn} failed after ${{retries}} tries`);\n"
            f"}}\n"
        )
        out.append(body)
        size += len(body)
    return "".join(out)


def _sql(rng: random.Random, nbytes: int) -> str:
    out: list[str] = []
    size = 0
    while size < nbytes:
        table, col, other = _snake(rng), _snake(rng, 1), _snake(rng, 1)
        body = (
            f"SELECT o.{col}, COUNT(*) AS n, SUM(o.amount_cents) / 100.0 AS total\n"
            f"FROM {table} AS o\n"
            f"JOIN customers c ON c.id = o.customer_id\n"
            f"WHERE o.created_at >= '2024-0{rng.randint(1, 9)}-01' AND o.{other} IS NOT NULL\n"
            f"GROUP BY o.{col}\nHAVING COUNT(*) > {rng.randint(1, 50)}\n"
            f"ORDER BY total DESC\nLIMIT {rng.randint(5, 500)};\n\n"
        )
        out.append(body)
        size += len(body)
    return "".join(out)


def _json(rng: random.Random, nbytes: int, *, indent: int | None, ascii_only: bool) -> str:
    records: list[dict[str, object]] = []
    names = ["Ana Lima", "Bo Chen", "Chloé Durand", "Дмитрий Орлов", "佐藤 花子", "Élodie", "Omar"]
    while len(json.dumps(records, indent=indent, ensure_ascii=ascii_only)) < nbytes:
        records.append(
            {
                "id": rng.randint(10_000, 99_999),
                "customer": rng.choice(names),
                "email": f"{_snake(rng, 1)}.{rng.randint(1, 999)}@example.com",
                "status": rng.choice(["open", "paid", "refunded", "disputed"]),
                "amount": round(rng.uniform(1, 2500), 2),
                "tags": rng.sample(IDENTS, rng.randint(0, 3)),
                "shipped": rng.random() < 0.5,
                "note": None if rng.random() < 0.6 else rng.choice(SENTENCES["en"]),
            }
        )
    return json.dumps(records, indent=indent, ensure_ascii=ascii_only)


def _csv(rng: random.Random, nbytes: int, *, sep: str = ",") -> str:
    lines = [sep.join(["order_id", "date", "sku", "qty", "unit_price", "country", "status"])]
    size = len(lines[0])
    while size < nbytes:
        line = sep.join(
            [
                str(rng.randint(100000, 999999)),
                f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
                f"{rng.choice(string.ascii_uppercase)}{rng.choice(string.ascii_uppercase)}-"
                f"{rng.randint(100, 9999)}",
                str(rng.randint(1, 40)),
                f"{rng.uniform(0.5, 900):.2f}",
                rng.choice(["DE", "FR", "US", "JP", "BR", "IN"]),
                rng.choice(["shipped", "pending", "cancelled"]),
            ]
        )
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def _markdown_table(rng: random.Random, nbytes: int) -> str:
    lines = [
        "| Ticket | Customer | Opened | Priority | Summary |",
        "|--------|----------|--------|----------|---------|",
    ]
    size = 0
    while size < nbytes:
        line = (
            f"| T-{rng.randint(1000, 9999)} | {_camel(rng, 1).title()} | "
            f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} | "
            f"{rng.choice(['low', 'normal', 'high', 'urgent'])} | "
            f"{rng.choice(SENTENCES['en'])[: rng.randint(20, 60)].strip()} |"
        )
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def _box_table(rng: random.Random, nbytes: int) -> str:
    lines = ["┌──────────┬────────────┬─────────┐", "│ region   │ revenue    │ change  │"]
    lines.append("├──────────┼────────────┼─────────┤")
    size = 0
    while size < nbytes:
        line = (
            f"│ {rng.choice(['north', 'south', 'east', 'west', 'central']):<8} │ "
            f"{rng.uniform(1000, 99999):>10.2f} │ {rng.uniform(-20, 20):>+6.1f}% │"
        )
        lines.append(line)
        size += len(line.encode()) + 1
    lines.append("└──────────┴────────────┴─────────┘")
    return "\n".join(lines)


def _markdown_doc(rng: random.Random, nbytes: int) -> str:
    out: list[str] = []
    size = 0
    section = 1
    while size < nbytes:
        block = (
            f"## {section}. {rng.choice(WORDS).capitalize()} {rng.choice(WORDS)}\n\n"
            f"{_prose('en', rng, 300)}\n\n"
            f"- **{rng.choice(IDENTS)}**: {rng.choice(SENTENCES['en'])}\n"
            f"- `{_snake(rng)}` — see [{rng.choice(WORDS)}](https://docs.example.org/"
            f"{rng.choice(IDENTS)}/{rng.choice(IDENTS)}#{rng.choice(IDENTS)})\n"
            f"- _{rng.choice(WORDS)}_ and ~~{rng.choice(WORDS)}~~\n\n"
            f"```python\n{_snake(rng)} = {rng.choice(IDENTS)}({rng.randint(0, 99)})\n```\n\n"
        )
        out.append(block)
        size += len(block.encode())
        section += 1
    return "# Handbook\n\n" + "".join(out)


def _emoji_chat(rng: random.Random, nbytes: int, *, density: float) -> str:
    lines: list[str] = []
    size = 0
    while size < nbytes:
        words = rng.choice(SENTENCES["en"]).split()
        line = " ".join(
            w + (" " + rng.choice(EMOJI) if rng.random() < density else "") for w in words
        )
        line = f"{rng.choice(['ana', 'bo', 'kim'])}: {line}"
        lines.append(line)
        size += len(line.encode()) + 1
    return "\n".join(lines)


def _numbers(rng: random.Random, nbytes: int) -> str:
    lines: list[str] = []
    size = 0
    while size < nbytes:
        line = " ".join(
            [
                f"{rng.uniform(-1e6, 1e6):.4f}",
                str(rng.randint(0, 10**12)),
                f"+1-{rng.randint(200, 999)}-{rng.randint(100, 999)}-{rng.randint(1000, 9999)}",
                f"{rng.random():.3e}",
                f"{rng.randint(1, 100)}%",
            ]
        )
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def _ledger(rng: random.Random, nbytes: int) -> str:
    lines: list[str] = []
    size = 0
    balance = 10_000.0
    while size < nbytes:
        amount = round(rng.uniform(-900, 900), 2)
        balance += amount
        line = f"2024-03-{rng.randint(1, 31):02d}  {amount:>10,.2f}  {balance:>12,.2f}  EUR"
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def _urls(rng: random.Random, nbytes: int) -> str:
    lines: list[str] = []
    size = 0
    hosts = ["shop.example.com", "api.example.org", "cdn.static-files.net", "docs.example.io"]
    while size < nbytes:
        path = "/".join(rng.choice(IDENTS) for _ in range(rng.randint(1, 4)))
        query = "&".join(f"{rng.choice(IDENTS)}={rng.randint(1, 9999)}" for _ in range(2))
        line = f"https://{rng.choice(hosts)}/{path}?{query}&utm_source=newsletter"
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def _logs(rng: random.Random, nbytes: int) -> str:
    lines: list[str] = []
    size = 0
    while size < nbytes:
        ip = ".".join(str(rng.randint(1, 254)) for _ in range(4))
        uid = "-".join(
            "".join(rng.choice("0123456789abcdef") for _ in range(n)) for n in (8, 4, 4, 4, 12)
        )
        line = (
            f"{ip} - - [12/Mar/2024:{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:"
            f'{rng.randint(0, 59):02d} +0000] "GET /api/orders/{rng.randint(1, 99999)} HTTP/1.1" '
            f"{rng.choice([200, 200, 304, 404, 500])} {rng.randint(200, 90000)} req={uid} "
            f"latency_ms={rng.uniform(0.5, 900):.1f}"
        )
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def _yaml_nested(rng: random.Random, nbytes: int) -> str:
    lines: list[str] = []
    size = 0
    while size < nbytes:
        depth = rng.randint(0, 6)
        key = _snake(rng, 1)
        value = rng.choice(["", " true", f" {rng.randint(0, 999)}", f' "{rng.choice(WORDS)}"'])
        line = "  " * depth + f"{key}:{value}"
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def _indented_code(rng: random.Random, nbytes: int, *, unit: str) -> str:
    lines: list[str] = []
    size = 0
    depth = 0
    while size < nbytes:
        depth = max(0, min(7, depth + rng.choice([-1, 0, 1])))
        stmt = rng.choice(
            [
                f"{_snake(rng, 1)} = {_snake(rng, 1)} + {rng.randint(1, 9)}",
                f"if {_snake(rng, 1)}:",
                f"return {_camel(rng)}",
                "",
                f"call({_snake(rng, 1)}, {_snake(rng, 1)})   # {rng.choice(WORDS)}",
            ]
        )
        line = unit * depth + stmt + (" " * rng.randint(0, 3) if rng.random() < 0.2 else "")
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def _aligned(rng: random.Random, nbytes: int) -> str:
    lines: list[str] = []
    size = 0
    while size < nbytes:
        line = (
            f"{_snake(rng, 1):<24}{rng.randint(0, 99999):>12}{' ' * rng.randint(4, 20)}"
            f"{rng.choice(WORDS):<16}\n"
        )
        if rng.random() < 0.15:
            line += "\n" * rng.randint(1, 3)
        lines.append(line)
        size += len(line)
    return "".join(lines)


def _base64(rng: random.Random, nbytes: int) -> str:
    raw = rng.randbytes(nbytes * 3 // 4)
    encoded = base64.b64encode(raw).decode()
    return "\n".join(encoded[i : i + 76] for i in range(0, len(encoded), 76))


def _hashes(rng: random.Random, nbytes: int) -> str:
    lines: list[str] = []
    size = 0
    while size < nbytes:
        digest = hashlib.sha256(rng.randbytes(16)).hexdigest()
        line = f"{digest}  dist/{_snake(rng)}-{rng.randint(0, 9)}.{rng.randint(0, 20)}.tar.gz"
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def _mixed_chat(rng: random.Random, nbytes: int) -> str:
    lines: list[str] = []
    size = 0
    langs = ["en", "ru", "zh", "de", "ja", "ar", "es"]
    while size < nbytes:
        lang = rng.choice(langs)
        line = f"[{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}] {lang}: " + rng.choice(
            SENTENCES[lang]
        )
        if rng.random() < 0.3:
            line += " " + rng.choice(EMOJI)
        lines.append(line)
        size += len(line.encode()) + 1
    return "\n".join(lines)


def _html(rng: random.Random, nbytes: int) -> str:
    out = ['<!doctype html>\n<html lang="en">\n<head><meta charset="utf-8"><title>Orders</title>']
    out.append('<link rel="stylesheet" href="/static/app.css"></head>\n<body>\n<ul class="list">\n')
    size = sum(len(p) for p in out)
    while size < nbytes:
        item = (
            f'  <li class="item item--{rng.choice(["open", "done"])}" data-id="{rng.randint(1, 9999)}">'
            f'<a href="/orders/{rng.randint(1, 9999)}">{rng.choice(SENTENCES["en"])[:40]}</a>'
            f'<span class="badge">{rng.randint(1, 99)}</span></li>\n'
        )
        out.append(item)
        size += len(item)
    out.append("</ul>\n</body>\n</html>\n")
    return "".join(out)


def _css(rng: random.Random, nbytes: int) -> str:
    out: list[str] = []
    size = 0
    while size < nbytes:
        rule = (
            f".{rng.choice(IDENTS)}-{rng.choice(IDENTS)} > .{rng.choice(IDENTS)}:hover {{\n"
            f"  margin: {rng.randint(0, 32)}px {rng.randint(0, 32)}px;\n"
            f"  color: #{rng.randint(0, 0xFFFFFF):06x};\n"
            f"  transition: opacity {rng.randint(1, 9)}00ms ease-in-out;\n}}\n\n"
        )
        out.append(rule)
        size += len(rule)
    return "".join(out)


def _shell(rng: random.Random, nbytes: int) -> str:
    out = ["#!/usr/bin/env bash\nset -euo pipefail\n\n"]
    size = len(out[0])
    while size < nbytes:
        name = _snake(rng)
        block = (
            f'{name.upper()}="${{{name.upper()}:-/var/lib/app/{name}}}"\n'
            f'if [[ ! -d "${name.upper()}" ]]; then\n'
            f'  mkdir -p "${name.upper()}" && chmod 0750 "${name.upper()}"\n'
            f"fi\n"
            f'find "${name.upper()}" -name "*.log" -mtime +{rng.randint(1, 30)} -print0 '
            f"| xargs -0 rm -f\n\n"
        )
        out.append(block)
        size += len(block)
    return "".join(out)


Build = Callable[[random.Random, int], str]

# (category, name, builder, sizes in bytes); each size becomes one sample.
_PLAN: tuple[tuple[str, str, Build, tuple[int, ...]], ...] = (
    ("prose-en", "en", lambda r, n: _prose("en", r, n), (250, 3000, 15000)),
    ("prose-en", "en-words", _words, (400, 8000)),
    ("prose-latin", "de", lambda r, n: _prose("de", r, n), (300, 6000)),
    ("prose-latin", "fr", lambda r, n: _prose("fr", r, n), (300, 6000)),
    ("prose-latin", "es", lambda r, n: _prose("es", r, n), (2500,)),
    ("prose-latin", "pt", lambda r, n: _prose("pt", r, n), (2500,)),
    ("prose-latin", "pl", lambda r, n: _prose("pl", r, n), (2500,)),
    ("prose-latin", "vi", lambda r, n: _prose("vi", r, n), (2500,)),
    ("cyrillic-greek", "ru", lambda r, n: _prose("ru", r, n), (300, 8000)),
    ("cyrillic-greek", "uk", lambda r, n: _prose("uk", r, n), (3000,)),
    ("cyrillic-greek", "el", lambda r, n: _prose("el", r, n), (3000,)),
    ("cjk", "zh", lambda r, n: _prose("zh", r, n), (300, 9000)),
    ("cjk", "ja", lambda r, n: _prose("ja", r, n), (300, 9000)),
    ("cjk", "ko", lambda r, n: _prose("ko", r, n), (4000,)),
    ("rtl-indic-thai", "ar", lambda r, n: _prose("ar", r, n), (300, 6000)),
    ("rtl-indic-thai", "he", lambda r, n: _prose("he", r, n), (3000,)),
    ("rtl-indic-thai", "hi", lambda r, n: _prose("hi", r, n), (3000,)),
    ("rtl-indic-thai", "th", lambda r, n: _prose("th", r, n), (3000,)),
    ("code", "python", _python, (800, 12000)),
    ("code", "javascript", _javascript, (6000,)),
    ("code", "sql", _sql, (3000,)),
    ("code", "shell", _shell, (3000,)),
    ("code", "html", _html, (5000,)),
    ("code", "css", _css, (3000,)),
    ("json", "json-pretty", lambda r, n: _json(r, n, indent=2, ascii_only=False), (600, 14000)),
    ("json", "json-compact", lambda r, n: _json(r, n, indent=None, ascii_only=False), (5000,)),
    ("json", "json-escaped", lambda r, n: _json(r, n, indent=None, ascii_only=True), (5000,)),
    ("tables", "csv", _csv, (300, 10000)),
    ("tables", "tsv", lambda r, n: _csv(r, n, sep="\t"), (4000,)),
    ("tables", "markdown-table", _markdown_table, (5000,)),
    ("tables", "box-table", _box_table, (3000,)),
    ("markdown", "markdown", _markdown_doc, (4000, 16000)),
    ("emoji", "emoji-light", lambda r, n: _emoji_chat(r, n, density=0.1), (3000,)),
    ("emoji", "emoji-heavy", lambda r, n: _emoji_chat(r, n, density=0.6), (400, 4000)),
    ("numbers", "numbers", _numbers, (300, 6000)),
    ("numbers", "ledger", _ledger, (4000,)),
    ("urls-logs", "urls", _urls, (3000,)),
    ("urls-logs", "access-log", _logs, (8000,)),
    ("urls-logs", "hashes", _hashes, (3000,)),
    ("urls-logs", "base64", _base64, (2000,)),
    ("whitespace", "yaml-nested", _yaml_nested, (4000,)),
    ("whitespace", "indent-spaces", lambda r, n: _indented_code(r, n, unit="    "), (5000,)),
    ("whitespace", "indent-tabs", lambda r, n: _indented_code(r, n, unit="\t"), (4000,)),
    ("whitespace", "aligned-columns", _aligned, (5000,)),
    ("mixed", "mixed-chat", _mixed_chat, (500, 10000)),
)

_HAND_WRITTEN = (
    Sample(category="markdown", name="readme", text=README_MD),
    Sample(category="code", name="python-module", text=PYTHON_MODULE),
    Sample(category="mixed", name="support-chat", text=SUPPORT_CHAT),
)


@cache
def corpus() -> tuple[Sample, ...]:
    """Every sample, in a fixed order; generated texts are cut to at most 20 KB."""
    samples: list[Sample] = []
    for index, (category, name, build, sizes) in enumerate(_PLAN):
        for size in sizes:
            rng = random.Random(f"{index}:{name}:{size}")
            text = _cut(build(rng, size), 20_000)
            samples.append(Sample(category=category, name=f"{name}-{size}", text=text))
    samples.extend(_HAND_WRITTEN)
    return tuple(samples)


def _cut(text: str, limit: int) -> str:
    """At most `limit` UTF-8 bytes, on a character boundary."""
    data = text.encode()
    if len(data) <= limit:
        return text
    return data[:limit].decode(errors="ignore")
