"""Text from logs and files, made safe to show: on one line, with nothing a terminal acts on, at a
readable length. Used by renderers and by error messages alike."""

from __future__ import annotations

import re

from tokprof.base.errors import TokprofError

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


def home_shown(path: str) -> str:
    """A path as a user types it, the home folder as ``~`` (``~/.claude/projects``): for text output;
    JSON keeps the whole path."""
    import os

    home = os.path.expanduser("~").rstrip(os.sep)
    if home and (path == home or path.startswith(home + os.sep)):
        return "~" + path[len(home) :]
    return path


def shorten(text: str, limit: int = 400) -> str:
    """Text cut to about ``limit`` characters, keeping its start and its end."""
    if len(text) <= limit:
        return text
    head, tail = limit * 2 // 3, limit // 4
    return f"{text[:head]}…({len(text) - head - tail:,} characters)…{text[-tail:]}"


#: A line that a GitHub runner would read as a workflow command (``::error ...``, ``::add-mask::``,
#: ``::stop-commands::``, or the older ``##[error]``), whatever blanks lead it.
_COMMAND_START = re.compile(r"^([ \t]*)(?=::|##\[)(.)", re.M)


def no_workflow_commands(text: str) -> str:
    """Report text with no line a runner would obey: a line that starts (after blanks) as a workflow
    command does (a tool named ``::error file=app.py::...`` starting a table row) gets its first
    character replaced by its full-width form (U+FF1A for ``:``, U+FF03 for ``#``), so that it reads
    the same and commands nothing. tokprof's own annotations are written apart."""
    return _COMMAND_START.sub(lambda m: m.group(1) + chr(ord(m.group(2)) + 0xFEE0), text)


def did_you_mean(value: str, choices: list[str] | tuple[str, ...]) -> str:
    """`` (did you mean X?)`` for the choice closest to a mistyped ``value``, or nothing."""
    import difflib

    close = difflib.get_close_matches(value, list(choices), n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def percentages(value: str, option: str) -> tuple[float, ...]:
    """A command-line list of percentages (``"70,80"``) as shares of 1, in the order given; anything
    else is a :class:`TokprofError` naming ``option``."""
    try:
        levels = tuple(float(p) / 100 for p in value.split(",") if p.strip())
    except ValueError:
        levels = ()
    if not levels or not all(0 < level <= 1 for level in levels):
        raise TokprofError(f"{option}: expected percentages from 1 to 100 like 70,80, found {value!r}")
    return levels


def json_text(value: object, indent: int | None = 2) -> str:
    """A report's JSON, strictly: a NaN or an infinity (which JSON has no form for, and Python would
    write as ``NaN``) is a :class:`tokprof.base.errors.TokprofError`, never invalid JSON written out."""
    from tokprof.base.jsontext import dumps

    return dumps(value, indent) + "\n"
