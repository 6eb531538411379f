"""A tiktoken encoding that counts its first short ASCII texts without building tiktoken's encoder.

Building tiktoken's ``CoreBPE`` for a vocabulary takes 0.07-0.15 s (per entry: Qwen's 151,643
ranks, o200k's 199,998; it holds the GIL, so nothing overlaps it), which is most of what a one-call
profile or a status line spends on its model. A short text needs none of it: byte-pair encoding
is a few dictionary lookups per pre-token. :class:`LazyEncoding` has the attributes of
``tiktoken.Encoding`` that need no encoder (the ranks, the special tokens, ``n_vocab``) and encodes
texts with :func:`encode` while they are ASCII and, together, short (:data:`BUDGET` characters);
the first text that is not, and any other use, builds the real encoding, which does everything from
then on.

:func:`encode` is tiktoken's algorithm, restricted to ASCII where it can be written with Python's
``re``: the text is split at the special tokens (leftmost first; no special token here is the
start of another, so the order of the alternatives does not matter), each piece between them by
the pre-tokenizer's pattern, and each pre-token is its rank if it has one, else the result of
merging the lowest-ranked adjacent pair (the leftmost of equals) until no pair has a rank. The
patterns are those of :data:`ASCII_PATTERNS`, each the vocabulary's pattern with its Unicode classes
written for ASCII (``\\p{L}`` is ``A-Za-z``, ``\\p{N}`` ``0-9``, ``\\p{Lu}`` ``A-Z``, ``\\p{Ll}``
``a-z``, marks and the other letter classes have no ASCII member, ``\\s`` under ``re.ASCII`` is
Unicode's White_Space within ASCII): on an ASCII text each matches what the original matches.
``tests/test_smallbpe.py`` compares both with tiktoken on hand-made and generated texts.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

#: Characters the encodings here count without tiktoken's encoder, all their texts together
#: (about 0.3 us a character, 0.015 s for all of them, lost where the encoder is built after all;
#: building it costs 0.07-0.15 s).
BUDGET = 50_000

_QWEN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_QWEN_ASCII = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\nA-Za-z0-9]?[A-Za-z]+|[0-9]| ?[^\sA-Za-z0-9]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_O200K = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
    r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_O200K_ASCII = (
    r"[^\r\nA-Za-z0-9]?[A-Z]*[a-z]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
    r"[^\r\nA-Za-z0-9]?[A-Z]+[a-z]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
    r"[0-9]{1,3}| ?[^\sA-Za-z0-9]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
#: The pre-tokenizer patterns known here (Qwen2.5's and Qwen3's, o200k's), each with its ASCII form.
ASCII_PATTERNS = {_QWEN: _QWEN_ASCII, _O200K: _O200K_ASCII}


def encode(
    text: str, ranks: dict[bytes, int], special: dict[str, int], split: re.Pattern, specials: re.Pattern | None
) -> list[int]:
    """The tokens of an ASCII text, every special token allowed, as tiktoken encodes it (see the
    module's docstring); ``split`` is the ASCII pattern, ``specials`` the special tokens' alternation."""
    ids: list[int] = []
    start = 0
    for match in specials.finditer(text) if specials is not None else ():
        _ordinary(text[start : match.start()], ranks, split, ids)
        ids.append(special[match.group()])
        start = match.end()
    _ordinary(text[start:], ranks, split, ids)
    return ids


def _ordinary(text: str, ranks: dict[bytes, int], split: re.Pattern, ids: list[int]) -> None:
    for piece in split.findall(text):
        data = piece.encode("ascii")
        rank = ranks.get(data)
        if rank is None:
            ids.extend(_merged(data, ranks))
        else:
            ids.append(rank)


def _merged(data: bytes, ranks: dict[bytes, int]) -> list[int]:
    """Byte-pair merges of a pre-token with no rank of its own: the lowest-ranked adjacent pair (the
    leftmost of equals) merged until no adjacent pair has a rank."""
    parts = [data[i : i + 1] for i in range(len(data))]
    while len(parts) > 1:
        best, at = -1, -1
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and (best < 0 or rank < best):
                best, at = rank, i
        if at < 0:
            break
        parts[at : at + 2] = [parts[at] + parts[at + 1]]
    return [ranks[part] for part in parts]  # a byte without a rank: KeyError, the real encoder's turn


class LazyEncoding:
    """A ``tiktoken.Encoding`` built when first needed (see the module's docstring). ``build`` makes
    the real one (``tiktoken.Encoding(name, pat_str=..., mergeable_ranks=..., special_tokens=...)``)."""

    def __init__(
        self, name: str, pattern: str, ranks: dict[bytes, int], special: dict[str, int], build: Callable[[], Any]
    ):
        self.name = name
        self._pat_str = pattern
        self._mergeable_ranks = ranks
        self._special_tokens = special
        self.max_token_value = max(max(ranks.values()), max(special.values(), default=0))
        self._build = build
        self._real: Any = None
        self._lock = threading.Lock()
        self._left = BUDGET
        self._split = re.compile(ASCII_PATTERNS[pattern], re.ASCII)
        names = sorted(special, key=len, reverse=True)
        if any(a != b and a.startswith(b) for a in names for b in names) or not all(n.isascii() for n in names):
            self._left = 0  # the order of the alternatives would matter: the real encoder only
        self._specials = re.compile("|".join(map(re.escape, names))) if names else None

    def __repr__(self) -> str:
        return f"<LazyEncoding {self.name!r}>"

    @property
    def n_vocab(self) -> int:
        return self.max_token_value + 1

    @property
    def special_tokens_set(self) -> set[str]:
        return set(self._special_tokens)

    @property
    def built(self) -> bool:
        """Whether the real encoding has been made."""
        return self._real is not None

    def real(self) -> Any:
        """The real ``tiktoken.Encoding``, made once."""
        with self._lock:
            if self._real is None:
                self._real = self._build()
            return self._real

    def encode_to_numpy(self, text: str, *, allowed_special: Any = frozenset(), **kwargs: Any) -> np.ndarray:
        if self._real is None and allowed_special == "all" and not kwargs and text.isascii():
            with self._lock:
                ready = self._real is None and len(text) <= self._left
                if ready:
                    self._left -= len(text)
            if ready:
                try:
                    ids = encode(text, self._mergeable_ranks, self._special_tokens, self._split, self._specials)
                except KeyError:  # a byte the vocabulary has no rank for: tiktoken says what it does
                    pass
                else:
                    return np.array(ids, dtype=np.uint32)
        return self.real().encode_to_numpy(text, allowed_special=allowed_special, **kwargs)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:  # pickled as the real encoding (a lock does not pickle)
        return _real_encoding, (self.name, self._pat_str, self._mergeable_ranks, self._special_tokens)

    def __getattr__(self, name: str) -> Any:  # anything else is the real encoding's
        if name.startswith("__") or name in ("_real", "_lock", "_build"):
            raise AttributeError(name)
        return getattr(self.real(), name)


def _real_encoding(name: str, pattern: str, ranks: dict[bytes, int], special: dict[str, int]) -> Any:
    """A ``tiktoken.Encoding`` (what an unpickled :class:`LazyEncoding` becomes)."""
    import tiktoken

    return tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens=special)
