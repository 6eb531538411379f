"""Token counters: a Hugging Face fast tokenizer, used segment by segment where that is exact."""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field

from typing import TYPE_CHECKING

import numpy as np

from tokprof.base.errors import ModelError
from tokprof.models.base import TokenCounter, Tokens
from tokprof.base.textdiff import common_prefix, common_suffix

if TYPE_CHECKING:
    from tokenizers import Tokenizer  # loaded by whoever makes the tokenizer: a tiktoken count needs none

#: Pre-tokenizers that treat every stretch of text between added tokens on its own, with no
#: "start of text" behaviour (SentencePiece's Metaspace prepends a space to the first piece only).
_SEGMENT_SAFE_PRE_TOKENIZERS = {
    "ByteLevel",
    "Split",
    "Whitespace",
    "WhitespaceSplit",
    "Punctuation",
    "Digits",
    "Sequence",
}


def _spec(tokenizer: Tokenizer) -> dict:
    """The parts of the tokenizer's JSON that :func:`_segmentable` reads (model type, pre-tokenizer,
    added tokens), without serialising the whole vocabulary when the tokenizer can tell them."""
    try:
        added = [
            {
                "content": t.content,
                "lstrip": t.lstrip,
                "rstrip": t.rstrip,
                "single_word": t.single_word,
                "normalized": t.normalized,
            }
            for t in tokenizer.get_added_tokens_decoder().values()
        ]
        pre = tokenizer.pre_tokenizer
        normalizer = tokenizer.normalizer
        return {
            "model": {"type": type(tokenizer.model).__name__},
            "pre_tokenizer": None if pre is None else json.loads(pre.__getstate__()),
            "normalizer": None if normalizer is None else json.loads(normalizer.__getstate__()),
            "added_tokens": added,
        }
    except (AttributeError, TypeError, ValueError):
        return json.loads(tokenizer.to_str())


def _segmentable(tokenizer: Tokenizer) -> tuple[re.Pattern, int] | None:
    """A regex that finds added tokens and the length of the longest one, when the tokenizer encodes the
    text between them independently.

    Hugging Face tokenizers extract added tokens before normalisation and pre-tokenisation, so the
    tokens of a text are the tokens of each stretch between added tokens, put together, provided
    no added token strips neighbouring whitespace or matches only whole words, and the
    pre-tokenizer does nothing special at the start of the text.
    """
    spec = _spec(tokenizer)
    if spec.get("model", {}).get("type") not in ("BPE", "WordLevel", "WordPiece"):
        return None

    def safe(pre) -> bool:
        if pre is None:
            return True
        kind = pre.get("type")
        if kind not in _SEGMENT_SAFE_PRE_TOKENIZERS:
            return False
        if kind == "ByteLevel" and pre.get("add_prefix_space"):
            return False
        if kind == "Sequence":
            return all(safe(p) for p in pre.get("pretokenizers", []))
        return True

    if not safe(spec.get("pre_tokenizer")):
        return None
    added = spec.get("added_tokens") or []
    normalizer = spec.get("normalizer")
    # an added token matched after normalisation is matched as written when nothing normalises (DeepSeek's)
    plain = normalizer is None or (normalizer.get("type") == "Sequence" and not normalizer.get("normalizers"))
    if not added or any(
        t.get("lstrip") or t.get("rstrip") or t.get("single_word") or (t.get("normalized") and not plain) for t in added
    ):
        return None
    contents = sorted({t["content"] for t in added}, key=len, reverse=True)
    return re.compile("|".join(re.escape(c) for c in contents)), len(contents[0])


#: The longest run of one white-space character a text may hold: tokenizers' pre-tokenizer patterns
#: (``\s+(?!\S)``) backtrack over such a run; Hugging Face's takes 17 s on 3 million spaces and aborts
#: the process on 12 million, tiktoken's gives up. Longer runs are a one-line error instead.
LONGEST_BLANK_RUN = 2_000_000


def check_blank_runs(text: str, origin: str) -> None:
    """Raise :class:`ModelError` for a text with a run of one blank character over :data:`LONGEST_BLANK_RUN`
    (a few passes of ``str.find`` over texts that long, none over shorter ones)."""
    if len(text) <= LONGEST_BLANK_RUN:
        return
    for blank in " \n\t\r":
        if text.find(blank * (LONGEST_BLANK_RUN + 1)) >= 0:
            raise ModelError(
                f"the tokenizer ({origin}) cannot split a text with a run of over "
                f"{LONGEST_BLANK_RUN:,} {blank!r} characters (its pattern backtracks over it)"
            )


@dataclass
class HFCounter:
    """A :class:`tokprof.models.base.TokenCounter` over a Hugging Face fast tokenizer."""

    tokenizer: Tokenizer
    origin: str
    _segments: dict = field(default_factory=dict, repr=False)
    _splitter: "re.Pattern[str] | bool | None" = field(default=None, repr=False)  # False: not segment by segment
    _checked: bool = field(default=False, repr=False)
    _longest: int = field(default=0, repr=False)  # the longest added token, in characters

    def count(self, text: str) -> int:
        check_blank_runs(text, self.origin)
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def _encode_starts(self, text: str) -> np.ndarray:
        check_blank_runs(text, self.origin)
        offsets = self.tokenizer.encode(text, add_special_tokens=False).offsets
        return np.fromiter((start for start, _ in offsets), dtype=np.int64, count=len(offsets))

    def token_starts(self, text: str) -> np.ndarray:
        """The character offset at which each token of ``text`` starts.

        Text between added tokens is tokenized once and remembered, so a log whose prompts repeat
        the same messages call after call tokenizes each message once. The first use checks this
        against tokenizing the whole text, and falls back to that if they ever differ.
        """
        if not self.segmentable():
            return self._encode_starts(text)
        starts = self._segmented_starts(text)
        if not self._checked:
            whole = self._encode_starts(text)
            self._checked = True
            if not np.array_equal(whole, starts):
                self._splitter = False
                return whole
        return starts

    def segmentable(self) -> bool:
        if self._splitter is None:
            found = _segmentable(self.tokenizer)
            self._splitter, self._longest = found if found else (False, 0)
        return self._splitter is not False

    def _segmented_starts(self, text: str) -> np.ndarray:
        return self._scan(text, 0)[0]

    def _scan(self, text: str, pos: int) -> tuple[np.ndarray, np.ndarray]:
        """Token starts of ``text[pos:]`` and the positions of its added tokens, both as offsets in
        ``text``, segment by segment (``pos`` 0, or the position of an added token)."""
        splitter = self._splitter
        if not self.segmentable() or not isinstance(splitter, re.Pattern):
            raise ValueError("this tokenizer cannot be used segment by segment")
        parts: list[np.ndarray] = []
        added: list[int] = []
        last = pos
        for match in splitter.finditer(text, pos):
            start = match.start()
            if start > last:
                parts.append(self._piece(text[last:start]) + last)
            parts.append(np.array([start], dtype=np.int64))
            added.append(start)
            last = match.end()
        if last < len(text):
            parts.append(self._piece(text[last:]) + last)
        starts = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        return starts, np.array(added, dtype=np.int64)

    def token_starts_reusing(self, text: str, previous: Tokens | None, common: int) -> Tokens:
        """Token starts of ``text`` and the positions of its added tokens (None when the tokenizer
        is not used segment by segment), reusing ``previous``: what this returned for another text
        that has the same first ``common`` characters.

        The added-token scan decides at each position from the next ``longest`` characters only,
        so every added token of the other text that starts at least ``longest`` characters before
        ``common`` is found at the same place in ``text``, and the tokens before it are the same.
        The tokens of ``text`` are those, followed by the tokens from that added token on.
        """
        if not self.segmentable():
            return self._encode_starts(text), None
        if not self._checked:
            starts = self.token_starts(text)  # checked against the whole text's encoding
            return (starts, self._scan(text, 0)[1]) if self.segmentable() else (starts, None)
        if previous is None or previous[1] is None:
            return self._scan(text, 0)
        before, added = previous
        assert added is not None
        i = int(np.searchsorted(added, common - self._longest, side="right")) - 1
        if i < 0:
            return self._scan(text, 0)
        cut = int(added[i])
        starts, new_added = self._scan(text, cut)
        j = int(np.searchsorted(before, cut))
        return np.concatenate([before[:j], starts]), np.concatenate([added[:i], new_added])

    def split_tail(self, text: str, common: int) -> int | None:
        """The last point of ``text`` at or before ``common`` (0 when there is none) where the tokens of
        every text with these first ``common`` characters split: where an added token starts, at least
        the longest added token's length before ``common`` (the scan decides there from the next
        ``longest`` characters). ``text`` starts where the scan can start (a split point). None when
        this tokenizer is not used segment by segment, or before its first check."""
        if not self._checked or not self.segmentable() or not isinstance(self._splitter, re.Pattern):
            return None
        cut = 0
        for match in self._splitter.finditer(text, 0, common):
            if match.start() <= common - self._longest:
                cut = match.start()
        return cut

    def _piece(self, piece: str) -> np.ndarray:
        cached = self._segments.get(piece)
        if cached is None:
            cached = self._encode_starts(piece)
            self._segments[piece] = cached
        return cached


def byte_lengths(encoding) -> np.ndarray:
    """Each token's length in bytes, by id, of a tiktoken encoding (its special tokens too)."""
    lengths = np.zeros(encoding.n_vocab, dtype=np.int32)  # 4 bytes a token of a text, summed in 8
    for table, size in ((encoding._mergeable_ranks, len), (encoding._special_tokens, lambda t: len(t.encode()))):
        ranks = np.fromiter(table.values(), dtype=np.int64, count=len(table))
        lengths[ranks] = np.fromiter(map(size, table), dtype=np.int32, count=len(table))
    return lengths


def char_starts(byte_starts: np.ndarray, text: str) -> np.ndarray:
    """The character offsets in ``text`` of offsets into its UTF-8 bytes (where tokens start); an
    offset inside a character is that character's, as the Hugging Face tokenizer's offsets say."""
    if text.isascii():
        return byte_starts
    data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    if not len(data):
        return byte_starts
    char_of_byte = np.cumsum((data & 0xC0) != 0x80) - 1
    return char_of_byte[np.minimum(byte_starts, len(data) - 1)]


#: How far :func:`last_word_end` and :func:`first_word_end` search.
WORD_SEARCH = 1 << 16
_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def last_word_end(text: str, lo: int, hi: int) -> int:
    """The last position p in [lo, hi) (0 when there is none) where ``text[p]`` is a space and
    ``text[p - 1]`` an ASCII letter: a point where every text with these first ``hi`` characters
    splits its pre-tokens alike, in the GPT-style patterns of Qwen, Llama 3 and o200k.

    Why: the pre-token holding the letter at p - 1 is a letter run (or a contraction), which a
    space ends, so a pre-token ends at p whatever comes after; and no alternative of those patterns
    tried at a start before p looks past p (letter runs stop at the space, whitespace, number and
    punctuation runs at the letter; contractions are three characters at most and a space breaks
    them; the only look-ahead, ``\\s+(?!\\S)``, looks one past a whitespace run the letter ends). The
    pre-tokens from p on are those of the text from p on (the patterns have no look-behind), and
    BPE merges within a pre-token. A special token, found before the pattern runs, could span p only
    if it held a space (:class:`TiktokenCounter` takes these points only when none does). Only the
    last :data:`WORD_SEARCH` characters before ``hi`` are searched (a text of spaces after digits
    or punctuation would take a step per space)."""
    lo = max(lo, hi - WORD_SEARCH)
    while hi > lo:
        i = text.rfind(" ", lo, hi)
        if i < 1:
            return 0
        if text[i - 1] in _LETTERS:
            return i
        hi = i
    return 0


def first_word_end(text: str, lo: int, hi: int) -> int | None:
    """The first such position in [lo, hi), or None. A point found here also splits a text that
    shares only ``text[lo - 1:]`` (its end): what ends the letter's pre-token is the space after it.
    Only the first :data:`WORD_SEARCH` characters from ``lo`` are searched."""
    hi = min(hi, max(lo, 1) + WORD_SEARCH)
    i = text.find(" ", max(lo, 1), hi)
    while i >= 0:
        if text[i - 1] in _LETTERS:
            return i
        i = text.find(" ", i + 1, hi)
    return None


class TiktokenCounter:
    """A :class:`tokprof.models.base.TokenCounter` over a tiktoken vocabulary, with tiktoken's encoder.

    Where each token starts is worked out from the tokens' byte lengths (a table made once) and the
    text's UTF-8 encoding; a token that starts inside a character starts at that character, as the
    Hugging Face tokenizer's offsets say. ``nfc``: the vocabulary's tokenizer normalises text to NFC
    first (Qwen); a text that NFC changes is tokenized after normalisation and its token starts are
    mapped back by the Hugging Face tokenizer's rule, so such texts go to ``fallback``.

    Reuse (:meth:`token_starts_reusing`): tokens before a point where every text splits the same
    way are the earlier text's. Three kinds of points are such: where an added token starts, and, in
    the pre-tokenizer patterns of Qwen, Llama 3 and o200k (``boundary_after_newline``), a position
    right after a newline whose next character is visible ASCII other than ``/`` (no pre-token runs
    across it, and what decides the tokens before it is the text up to it and that next character),
    and a space right after an ASCII letter (:func:`last_word_end`; a text with no newline has many).
    """

    def __init__(
        self,
        encoding,
        origin: str,
        *,
        nfc: bool = False,
        boundary_after_newline: bool = False,
        fallback: "TokenCounter | None" = None,
    ):
        self.encoding = encoding
        self.origin = origin
        self.nfc = nfc
        self.boundary_after_newline = boundary_after_newline
        self.fallback = fallback
        specials = sorted(encoding.special_tokens_set, key=len, reverse=True)
        self._longest = len(specials[0]) if specials else 0
        self._specials = re.compile("|".join(re.escape(s) for s in specials)) if specials else None
        self._lengths = byte_lengths(encoding)
        #: :func:`last_word_end`'s points hold when no special token has a space in it (none can span one)
        self._word_ends = boundary_after_newline and not any(" " in s for s in specials)
        self._checked = False
        self._like_checked = False

    def _normal(self, text: str) -> bool:
        return not self.nfc or unicodedata.is_normalized("NFC", text)

    def count(self, text: str) -> int:
        if not self._normal(text):
            text = unicodedata.normalize("NFC", text)
        try:
            return len(self.encoding.encode_to_numpy(text, allowed_special="all"))  # 4 bytes a token, not a list
        except ValueError as exc:  # tiktoken's regex out of stack (millions of spaces in a row)
            return self._fallen_back(exc, text).count(text)

    def _fallen_back(self, exc: ValueError, text: str) -> "TokenCounter":
        """The fallback counter for a text tiktoken's encoder gives up on (it is the same vocabulary);
        without one, a one-line error."""
        if "Regex error" not in str(exc):
            raise exc
        check_blank_runs(text, self.origin)  # the fallback's pattern would backtrack too, for minutes
        if self.fallback is None:
            raise ModelError(
                f"the tokenizer ({self.origin}) cannot split a text of {len(text):,} characters: "
                "its pattern ran out of stack (a run of millions of spaces?)"
            ) from None
        return self.fallback

    def _starts(self, text: str) -> np.ndarray:
        """Token starts of a text NFC leaves as it is: each token's start is the sum of the byte
        lengths before it (worked out in place: a huge text holds two arrays of its tokens, not four)."""
        try:
            ids = self.encoding.encode_to_numpy(text, allowed_special="all")
        except ValueError as exc:
            return self._fallen_back(exc, text).token_starts(text)
        lengths = self._lengths[ids]
        del ids
        starts = np.zeros(len(lengths), dtype=np.int64)
        if len(lengths) > 1:
            starts[1:] = lengths[:-1]
            np.cumsum(starts[1:], out=starts[1:])  # in place: a cast on the way would copy the lengths
        del lengths
        return char_starts(starts, text)

    def token_starts(self, text: str) -> np.ndarray:
        if not self._normal(text):
            if self.fallback is None:
                raise ValueError("a text NFC changes needs the fallback counter")
            return self.fallback.token_starts(text)
        return self._starts(text)

    def _cut(self, text: str, common: int) -> int:
        """The last point before ``common`` where the tokens of any text with these first ``common``
        characters split (0 when there is none)."""
        cut = 0
        if self._specials is not None:
            for match in self._specials.finditer(text, max(0, common - 200_000), max(0, common - self._longest)):
                cut = match.start()
        if self.boundary_after_newline:
            end = common - 1  # the character after the point is part of what decides it
            while end > cut:
                i = text.rfind("\n", cut, end)
                if i < 0:
                    break
                following = text[i + 1]
                if "!" <= following <= "~" and following != "/":
                    cut = max(cut, i + 1)
                    break
                end = i
            if self._word_ends:
                cut = max(cut, last_word_end(text, cut + 1, common))
        return cut

    def token_starts_reusing(self, text: str, previous: Tokens | None, common: int) -> Tokens:
        """Token starts of ``text`` (with None: nothing else is kept), reusing those of ``previous``
        (what this returned for a text with the same first ``common`` characters) before the last
        point where both texts split alike. The first use is checked against tokenizing the whole text."""
        if not self._normal(text):
            return self.token_starts(text), None
        if previous is None or not self._checked:
            starts = self._starts(text)
            if previous is not None:
                self._checked = True
                if not self._reused_alike(text, starts, previous[0], common):
                    self.boundary_after_newline = False  # never taken again: whole texts from here on
            return starts, None
        return self._reuse(text, previous[0], common), None

    def split_tail(self, text: str, common: int) -> int | None:
        """The last point of ``text`` before ``common`` where the tokens of every text with these first
        ``common`` characters split (:meth:`_cut`; 0 when there is none). None when ``text`` is one NFC
        changes (its tokens are the fallback's), or before the first check of reuse."""
        if not self._checked or not self._normal(text):
            return None
        return self._cut(text, common)

    def _suffix_cut(self, reference: str, suffix: int) -> int | None:
        """The first point of ``reference`` at which its last ``suffix`` characters (shared with another
        text) split the same way in both: just after a newline, inside the shared end, followed by visible
        ASCII other than '/' (None when there is none)."""
        if not self.boundary_after_newline:
            return None
        found = None
        i = reference.find("\n", len(reference) - suffix)
        while 0 <= i < len(reference) - 1:
            following = reference[i + 1]
            if "!" <= following <= "~" and following != "/":
                found = i + 1
                break
            i = reference.find("\n", i + 1)
        if self._word_ends:  # a space after a letter, both in the shared end
            word = first_word_end(reference, len(reference) - suffix + 1, found or len(reference))
            if word is not None:
                found = word
        return found

    def count_like(self, text: str, reference: str, reference_starts: np.ndarray) -> int:
        """The number of tokens of ``text``: those ``reference`` has before the last point where both
        split alike within their common start, those it has after the first such point within their
        common end, and the middle of ``text`` tokenized."""
        if not self._normal(text) or not self._normal(reference):
            return len(self.token_starts(text))
        found = self._count_like(text, reference, reference_starts)
        if not self._like_checked:  # the first use is checked against tokenizing the whole text
            self._like_checked = True
            if found != len(self._starts(text)):
                self.boundary_after_newline = False
                return len(self._starts(text))
        return found

    def _count_like(self, text: str, reference: str, reference_starts: np.ndarray) -> int:
        prefix = common_prefix(text, reference)
        suffix = common_suffix(text, reference, min(len(text), len(reference)) - prefix)
        start = self._cut(text, prefix)
        j = int(np.searchsorted(reference_starts, start))
        if start and (j >= len(reference_starts) or reference_starts[j] != start):
            return len(self.token_starts(text))
        end = self._suffix_cut(reference, suffix)
        if end is None:
            return j + len(self._starts(text[start:]))
        i = int(np.searchsorted(reference_starts, end))
        shift = len(reference) - len(text)
        if i >= len(reference_starts) or reference_starts[i] != end or end - shift < start:
            return len(self.token_starts(text))
        return j + len(self._starts(text[start : end - shift])) + len(reference_starts) - i

    def _reused_alike(self, text: str, starts: np.ndarray, before: np.ndarray, common: int) -> bool:
        """Whether :meth:`_reuse` gives ``starts`` (the whole text's), part by part rather than with
        both whole at once: where it would tokenize the whole text again, it gives the same."""
        cut = self._cut(text, common)
        j = int(np.searchsorted(before, cut))
        if cut == 0 or j >= len(before) or before[j] != cut:
            return True
        tail = self._starts(text[cut:])
        tail = np.add(tail, cut, out=tail) if tail.flags.owndata and tail.flags.writeable else tail + cut
        return (
            len(starts) == j + len(tail) and np.array_equal(starts[:j], before[:j]) and np.array_equal(starts[j:], tail)
        )

    def _reuse(self, text: str, before: np.ndarray, common: int) -> np.ndarray:
        cut = self._cut(text, common)
        if cut == 0:
            return self._starts(text)
        j = int(np.searchsorted(before, cut))
        if j >= len(before) or before[j] != cut:  # not a token start of the earlier text: tokenize it all
            return self._starts(text)
        return np.concatenate([before[:j], self._starts(text[cut:]) + cut])


class LazyHFCounter:
    """An :class:`HFCounter` whose tokenizer is built the first time it is needed (a fallback for the
    rare texts a fast counter leaves to it: its conversion takes seconds, and most runs never need it)."""

    def __init__(self, build, origin: str):
        self._build = build
        self._counter: HFCounter | None = None
        self.origin = origin

    def _get(self) -> HFCounter:
        if self._counter is None:
            self._counter = HFCounter(self._build(), self.origin)
        return self._counter

    @property
    def tokenizer(self) -> Tokenizer:
        return self._get().tokenizer

    def count(self, text: str) -> int:
        return self._get().count(text)

    def token_starts(self, text: str) -> np.ndarray:
        return self._get().token_starts(text)

    def token_starts_reusing(self, text: str, previous: Tokens | None, common: int) -> Tokens:
        return self._get().token_starts_reusing(text, previous, common)

    def split_tail(self, text: str, common: int) -> int | None:
        return self._get().split_tail(text, common) if self._counter is not None else None


def count_like(counter: TokenCounter, text: str, reference: str, reference_starts: np.ndarray) -> int:
    """The number of tokens of ``text``, given the token starts of a text it shares a start and an end
    with (a catalogue without one of its tools, beside the whole catalogue): only the middle is
    tokenized when the counter can tell where both texts split alike (:meth:`TiktokenCounter.count_like`)."""
    method = getattr(counter, "count_like", None)
    if method is None:
        return counter.count(text)
    return int(method(text, reference, reference_starts))
