"""Exact token counts: tiktoken with a rank file on disk, or toktok's compiled-in vocabulary.

Nothing is downloaded. Building a `TiktokenCounter` reads and checks its rank file, so do it
at start-up, not inside assembly; `counter_from_settings` picks the counter a setting names.
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Final, Protocol

from keel.errors import UsageError
from keel.tokens.counter import Encoding, TokenCounter, framed
from keel.tokens.estimate import Estimator


@dataclass(frozen=True, slots=True)
class _EncodingSpec:
    pattern: str
    special_tokens: Mapping[str, int]
    sha256: str


# Facts copied from tiktoken's own tiktoken_ext/openai_public.py (0.14.0).
_O200K_PATTERN: Final = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_CL100K_PATTERN: Final = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_ENCODINGS: Final[Mapping[str, _EncodingSpec]] = {
    "o200k_base": _EncodingSpec(
        pattern=_O200K_PATTERN,
        special_tokens={"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    "cl100k_base": _EncodingSpec(
        pattern=_CL100K_PATTERN,
        special_tokens={
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
}


def _spec(encoding: str) -> _EncodingSpec:
    spec = _ENCODINGS.get(encoding)
    if spec is None:
        known = ", ".join(_ENCODINGS)
        raise UsageError(f"unknown encoding {encoding!r}: use one of {known}")
    return spec


class _Encoder(Protocol):
    def encode_ordinary(self, text: str) -> list[int]: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class TiktokenCounter:
    """Exact counts with `tiktoken`, built from a rank file already on disk.

    Text is counted as ordinary text: a special-token string such as ``<|endoftext|>`` in
    a message counts as the characters it is made of, and never raises.
    """

    name: str
    encoder: _Encoder = field(repr=False, compare=False)

    @classmethod
    def from_ranks(cls, data: bytes, encoding: Encoding = "o200k_base") -> TiktokenCounter:
        """A counter from the rank file's bytes, checked against the published hash."""
        spec = _spec(encoding)
        digest = hashlib.sha256(data).hexdigest()
        if digest != spec.sha256:
            raise UsageError(
                f"the rank file given for {encoding} has sha256 {digest[:12]}…, not "
                f"{spec.sha256[:12]}… — use the {encoding}.tiktoken file tiktoken publishes"
            )
        tiktoken = _import_tiktoken()
        ranks = {
            base64.b64decode(token): int(rank)
            for token, rank in (line.split() for line in data.splitlines() if line)
        }
        encoder = tiktoken.Encoding(
            encoding,
            pat_str=spec.pattern,
            mergeable_ranks=ranks,
            special_tokens=dict(spec.special_tokens),
        )
        return cls(name=encoding, encoder=encoder)

    @classmethod
    def from_file(cls, path: Path, encoding: Encoding = "o200k_base") -> TiktokenCounter:
        """A counter from a local rank file such as ``o200k_base.tiktoken``."""
        _spec(encoding)
        _import_tiktoken()
        try:
            data = path.read_bytes()
        except OSError as error:
            raise UsageError(
                f"{path}: cannot read the {encoding} rank file ({error.strerror}) — put "
                f"{encoding}.tiktoken there, or use the estimate"
            ) from error
        return cls.from_ranks(data, encoding)

    def count(self, text: str) -> int:
        return len(self.encoder.encode_ordinary(text))

    def count_each(self, texts: Sequence[str]) -> list[int]:
        return [len(self.encoder.encode_ordinary(text)) for text in texts]

    def count_messages(self, messages: Sequence[tuple[str, str]]) -> int:
        return framed([self.count(text) for _, text in messages])


def _import_tiktoken() -> ModuleType:
    try:
        return importlib.import_module("tiktoken")
    except ImportError as error:
        raise UsageError(
            "exact token counts need tiktoken, which is not installed — "
            "`pip install 'keel-engine[exact]'`, or use the estimate"
        ) from error


@dataclass(frozen=True, slots=True, kw_only=True)
class ToktokCounter:
    """Exact counts with `toktok`, whose binary carries the vocabularies: no file needed.

    Like `TiktokenCounter`, special-token strings count as the ordinary text they are, and
    lone surrogates are replaced (as tiktoken does) instead of raising.
    """

    name: str
    total: Callable[[str], int] = field(repr=False, compare=False)

    @classmethod
    def load(cls, encoding: Encoding = "o200k_base") -> ToktokCounter:
        _spec(encoding)
        toktok = _import_toktok()

        def total(text: str) -> int:
            # `truncate` with no real limit reports the whole text's count, and unlike
            # `batch_count` it costs about a microsecond per call, not tens.
            try:
                counted: int = toktok.truncate(text, sys.maxsize, encoding)[1]
            except UnicodeEncodeError:
                fixed = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
                counted = toktok.truncate(fixed, sys.maxsize, encoding)[1]
            return counted

        return cls(name=encoding, total=total)

    def count(self, text: str) -> int:
        return self.total(text)

    def count_each(self, texts: Sequence[str]) -> list[int]:
        return [self.total(text) for text in texts]

    def count_messages(self, messages: Sequence[tuple[str, str]]) -> int:
        return framed([self.total(text) for _, text in messages])


def _import_toktok() -> ModuleType:
    try:
        return importlib.import_module("toktok")
    except ImportError as error:
        raise UsageError(
            "exact token counts without a rank file need toktok, which is not installed — "
            "`pip install 'keel-engine[toktok]'`, or give the folder holding the .tiktoken "
            "rank files"
        ) from error


_SETTINGS: Final[Mapping[str, Encoding]] = {"o200k": "o200k_base", "cl100k": "cl100k_base"}


def counter_from_settings(name: str | None, rank_dir: Path | None) -> TokenCounter:
    """The counter a setting names: ``estimate`` (the default), ``o200k`` or ``cl100k``.

    An exact counter reads ``<encoding>.tiktoken`` from `rank_dir` with tiktoken; without a
    folder it uses toktok's compiled-in vocabulary. Nothing is downloaded.
    """
    if name is None or name == "estimate":
        return Estimator()
    encoding = _SETTINGS.get(name)
    if encoding is None:
        raise UsageError(f"unknown token counter {name!r}: use estimate, o200k or cl100k")
    if rank_dir is None:
        return ToktokCounter.load(encoding)
    return TiktokenCounter.from_file(rank_dir / f"{encoding}.tiktoken", encoding)
