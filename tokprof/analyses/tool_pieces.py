"""A catalogue's render without one tool, or with one tool changed, without rendering it again, when
the template writes each tool on its own.

Most templates write the tool list as a head, each tool's text (which depends on that tool alone)
with the same text between two tools, and a tail: ``A + f(t1) + s + f(t2) + ... + s + f(tn) + B``.
Then every catalogue made of some of these tools (or of variants of them) renders as the same head,
their texts joined by ``s``, and the same tail, and a tool's text is read off its render alone:
rendering each tool once replaces rendering the whole catalogue once per tool (which grows with the
square of its size).

Nothing is assumed of a template: :func:`pieces` renders every tool alone (and each variant), takes
the longest head and tail all those renders share (a start or an end every tool's text shares is
taken into the head or tail, which changes nothing: it is written once per tool either way, and the
text between two tools absorbs it), and keeps the split only if the texts joined give the whole
catalogue's render exactly, and if the catalogue without a tool, and with a variant of one, rendered
for real, give the spliced texts exactly, on a sample of tools (the first, the middle, the last).
Otherwise the caller renders every variant (None).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tokprof.base.textdiff import common_prefix, common_suffix


@dataclass(frozen=True)
class Pieces:
    """The split of a catalogue's render: ``head``, each tool's text, ``between`` two tools, ``tail``,
    and each variant's text (by the tool's position)."""

    head: str
    texts: tuple[str, ...]
    between: str
    tail: str
    variants: dict[int, str]
    starts: tuple[int, ...] = ()  # where each tool's text starts in the whole render (made from the rest)

    def __post_init__(self) -> None:
        at, found = len(self.head), []
        for text in self.texts:
            found.append(at)
            at += len(text) + len(self.between)
        object.__setattr__(self, "starts", tuple(found))

    def without(self, k: int) -> str:
        """The render of the catalogue without tool ``k``."""
        return self._joined(self.texts[:k] + self.texts[k + 1 :])

    def span_without(self, k: int) -> tuple[int, int]:
        """The part of the whole render that :meth:`without` drops: tool ``k``'s text and the text
        between it and the next tool (the one before it, for the last tool)."""
        start, end = self.span_of(k)
        if k < len(self.texts) - 1:
            return start, end + len(self.between)
        return start - len(self.between), end

    def span_of(self, k: int) -> tuple[int, int]:
        """The part of the whole render that is tool ``k``'s text (which :meth:`with_variant` replaces)."""
        return self.starts[k], self.starts[k] + len(self.texts[k])

    def with_variant(self, k: int) -> str:
        """The render of the catalogue with tool ``k`` replaced by its variant."""
        return self._joined(self.texts[:k] + (self.variants[k],) + self.texts[k + 1 :])

    def _joined(self, texts: Sequence[str]) -> str:
        return self.head + self.between.join(texts) + self.tail


def _shared_ends(renders: Sequence[str]) -> tuple[int, int]:
    """The length of the start and of the end every render shares (not overlapping in any of them)."""
    first = renders[0]
    head = len(first)
    for text in renders[1:]:
        head = min(head, common_prefix(first, text))
    tail = min(len(text) for text in renders) - head
    for text in renders[1:]:
        tail = common_suffix(first, text, tail)
    return head, tail


def pieces(
    render: Callable[[list[dict]], str], tools: list[dict], variants: dict[int, dict], full: str
) -> Pieces | None:
    """The split of ``full`` (the render of ``tools``) into each tool's text, with ``variants`` (a
    changed copy of some tools, by position), checked as the module says; None when the template
    does not write its tools so (or there are fewer than three)."""
    n = len(tools)
    if n < 3:
        return None
    alone = [render([tool]) for tool in tools]
    changed = {k: render([tool]) for k, tool in variants.items()}
    head, tail = _shared_ends(alone + list(changed.values()))
    texts = tuple(text[head : len(text) - tail] for text in alone)
    start, end = full[:head], (full[len(full) - tail :] if tail else "")
    if start != alone[0][:head] or end != alone[0][len(alone[0]) - tail :]:
        return None
    rest = len(full) - head - tail - sum(map(len, texts))
    if rest < 0 or rest % (n - 1):
        return None
    width = rest // (n - 1)
    between = full[head + len(texts[0]) : head + len(texts[0]) + width]
    split = Pieces(start, texts, between, end, {k: text[head : len(text) - tail] for k, text in changed.items()})
    if split._joined(texts) != full:
        return None
    for k in sorted({0, n // 2, n - 1}):
        if split.without(k) != render(tools[:k] + tools[k + 1 :]):
            return None
        if k in variants and split.with_variant(k) != render(tools[:k] + [variants[k]] + tools[k + 1 :]):
            return None
    return split
