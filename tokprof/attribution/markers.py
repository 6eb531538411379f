"""Content markers: each message's text, and the names and argument values of its tool calls, are wrapped in
private-use characters for one extra render of a prompt; where the markers land is where that text is
(:mod:`tokprof.attribution.attributor`, owner 1). Message i gets the opening marker ``OPEN_BASE + i``; every
text closes with :data:`CLOSE`. Markers are used only if removing them gives back exactly the plain render."""

from __future__ import annotations

import bisect
import json
import re

from tokprof.base.textdiff import common_prefix

OPEN_BASE = 0xF0000  # Supplementary Private Use Area-A: one opening marker per message index
CLOSE = "\U0010fffd"
MARKER_RE = re.compile("[\U000f0000-\U000ffffd\U0010fffd]")


def wrap(text: str, index: int) -> str:
    """Put markers around text, inside its leading and trailing whitespace (templates often trim content)."""
    core = text.strip()
    if not core:
        return text
    start = len(text) - len(text.lstrip())
    return "".join((text[:start], chr(OPEN_BASE + index), core, CLOSE, text[start + len(core) :]))  # one copy


def wrap_leaves(value, index: int):
    if isinstance(value, str):
        return wrap(value, index)
    if isinstance(value, dict):
        return {k: wrap_leaves(v, index) for k, v in value.items()}
    if isinstance(value, list):
        return [wrap_leaves(v, index) for v in value]
    return value


def mark(messages: list[dict], with_calls: bool, first: int = 0) -> list[dict] | None:
    """The messages with markers around their content (message ``first`` + i gets opening marker i),
    or None when one already has a marker character."""
    marked = []
    for i, m in enumerate(messages, start=first):
        m = dict(m)
        for key in ("content", "reasoning_content"):
            if isinstance(m.get(key), str):
                if MARKER_RE.search(m[key]):
                    return None
                m[key] = wrap(m[key], i)
        if with_calls and m.get("tool_calls"):
            calls = []
            for call in m["tool_calls"]:
                function = dict(call["function"])
                if MARKER_RE.search(json.dumps(function, ensure_ascii=False)):
                    return None
                function["name"] = wrap(function["name"], i)
                function["arguments"] = wrap_leaves(function.get("arguments"), i)
                calls.append({**call, "function": function})
            m["tool_calls"] = calls
        marked.append(m)
    return marked


def unmark(text: str) -> tuple[str, list[tuple[int, int, int]]] | None:
    """The text without markers, and the spans (start, end, message index) they enclosed."""
    found = unmark_from(text, 0, [], [], None)
    return None if found is None else (found[0], found[1])


def unmark_from(text: str, start: int, spans: list, positions: list, opened: tuple[int, int] | None):
    """:func:`unmark` from ``start`` on, given the spans, marker positions and open marker (message
    index, start) that the markers before ``start`` left: (the text from ``start`` without markers,
    all spans, all marker positions), or None when the markers do not pair up."""
    spans, positions = list(spans), list(positions)
    pieces, removed, last = [], len(positions), start
    for match in MARKER_RE.finditer(text, start):
        pos = match.start()
        pieces.append(text[last:pos])
        last = pos + 1
        clean = pos - removed
        removed += 1
        positions.append(pos)
        char = match.group()
        if char == CLOSE:
            if opened is None:
                return None
            spans.append((opened[1], clean, opened[0]))
            opened = None
        else:
            if opened is not None:
                return None
            opened = (ord(char) - OPEN_BASE, clean)
    if opened is not None:
        return None
    pieces.append(text[last:])
    return "".join(pieces), spans, positions


def unmark_matching(text: str, full: str, previous: tuple | None, common: int):
    """The spans of a marked render ``text`` and its marker positions, if removing its markers gives
    ``full``; else None.

    ``previous`` is (the render without markers, its spans, its marker positions) of a call whose
    render without markers has ``common`` characters in common with ``full`` (its marked render is
    not kept: 4 bytes a character, it is the render with the markers put back at their positions, see
    :func:`common_marked`). Where ``text`` has the same first c
    characters as that marked text, holding j markers, its markers there left the same spans (their
    first j // 2) and the same open marker (when j is odd: markers alternate, since they paired up);
    removed, they leave the first c - j characters of that call's render, which are those of
    ``full`` when c - j <= common. Only the rest is scanned and compared.
    """
    start, spans, positions, opened = 0, [], [], None
    if previous is not None:
        old_plain, old_spans, old_positions = previous
        c = common_marked(old_plain, old_spans, old_positions, text)
        j = bisect.bisect_left(old_positions, c)
        if c - j <= common:
            start, spans, positions = c, old_spans[: j // 2], old_positions[:j]
            if j % 2:
                span_start, _, index = old_spans[j // 2]
                opened = (index, span_start)
    begin = start - len(positions)  # where text[start:] goes in the text without markers
    found = unmark_from(text, start, spans, positions, opened)
    if found is None:
        return None
    tail, spans, positions = found
    if len(full) - begin != len(tail) or full[begin:] != tail:
        return None
    return spans, positions


def common_marked(plain: str, spans: list, positions: list, text: str) -> int:
    """``common_prefix(marked, text)``, where ``marked`` is ``plain`` with its markers put back: marker
    j at ``positions[j]`` of the marked text, the opening marker of span j // 2 when j is even (the
    message index is the span's third field), the closing one when odd (markers pair up in order)."""
    at = 0  # in the marked text and in text
    for j, position in enumerate(positions):
        piece, other = plain[at - j : position - j], text[at:position]
        if piece != other:
            return at + common_prefix(piece, other)
        marker = CLOSE if j % 2 else chr(OPEN_BASE + spans[j // 2][2])
        if position >= len(text) or text[position] != marker:
            return position
        at = position + 1
    return at + common_prefix(plain[at - len(positions) :], text[at:])
