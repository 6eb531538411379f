"""Text from logs and files, made safe to show: on one line, with nothing a terminal acts on, at a
readable length. Used by renderers and by error messages alike."""

from __future__ import annotations

import re

#: C0 and C1 controls, DEL, and the Unicode bidirectional overrides and isolates.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def visible(text: str) -> str:
    """Text with control characters shown as escapes (``\\n``, ``\\x1b``, ``\\u202e``, lone surrogates
    as ``\\ud800``): one line, nothing a terminal acts on, always encodable."""

    def show(match: re.Match[str]) -> str:
        char = match.group()
        return _NAMED.get(char) or (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")

    return _UNSAFE.sub(show, text)


def shorten(text: str, limit: int = 400) -> str:
    """Text cut to about ``limit`` characters, keeping its start and its end."""
    if len(text) <= limit:
        return text
    head, tail = limit * 2 // 3, limit // 4
    return f"{text[:head]}…({len(text) - head - tail:,} characters)…{text[-tail:]}"
