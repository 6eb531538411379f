"""Loading JSON and JSONL files with errors that name the file and line."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from tokprof.errors import InputError


@dataclass
class Document:
    """What a file held: one JSON value, or a list of values with the line each came from."""

    value: Any = None
    lines: list[tuple[int, Any]] | None = None  # set for JSONL: (1-based line, value)
    truncated_line: int | None = None  # a cut-off last JSONL line that was skipped


#: The rule for a JSONL line that does not parse: a truncated *last* line (a log still being
#: written, or cut off) is skipped and reported as a warning; any other bad line is an error.
TRUNCATED_LAST_LINE = "the last line is truncated JSON (the log was cut off while being written): it was skipped"


def read_text(path: str) -> str:
    if not os.path.exists(path):
        raise InputError(path, None, "no such file")
    if os.path.isdir(path):
        raise InputError(path, None, "is a directory, not a file")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise InputError(path, None, f"cannot read: {exc.strerror}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(path, f"byte {exc.start}", "not UTF-8 text") from None
    if not text.strip():
        raise InputError(path, None, "file is empty")
    return text


def kind_of(value: Any) -> str:
    """How an error message names a JSON value's type."""
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def _reason(exc: Exception) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc).split(";")[0]


def _cut_off(exc: json.JSONDecodeError, text: str) -> bool:
    """Whether JSON failed because the text ends too soon (a cut inside a string fails where the
    string starts, not at the end)."""
    return exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")


def load(path: str) -> Document:
    """Parse a file as one JSON value, or as JSONL when it holds one value per line."""
    text = read_text(path)
    if not path.endswith(".jsonl"):
        try:
            return Document(value=json.loads(text))
        except json.JSONDecodeError as exc:
            if not exc.msg.startswith("Extra data"):
                what = "truncated JSON" if _cut_off(exc, text) else f"invalid JSON: {exc.msg}"
                raise InputError(path, f"line {exc.lineno}, column {exc.colno}", what) from None
        except (ValueError, RecursionError) as exc:  # numbers too long, nesting too deep
            raise InputError(path, None, f"invalid JSON: {_reason(exc)}") from None
    lines: list[tuple[int, Any]] = []
    truncated = None
    # split on newlines only: U+2028 and friends are valid inside JSON strings
    numbered = [(n, line.rstrip("\r")) for n, line in enumerate(text.split("\n"), start=1)]
    numbered = [(n, line) for n, line in numbered if line.strip()]
    for i, (number, line) in enumerate(numbered):
        try:
            lines.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            # a record always ends with } or ], so a last line that does not was cut off
            cut_off = _cut_off(exc, line)
            last = i == len(numbered) - 1
            if last and i > 0 and (cut_off or not line.rstrip().endswith(("}", "]"))):
                truncated = number
                continue
            what = "truncated JSON" if cut_off else f"invalid JSON: {exc.msg}"
            raise InputError(path, f"line {number}, column {exc.colno}", what) from None
        except (ValueError, RecursionError) as exc:
            raise InputError(path, f"line {number}", f"invalid JSON: {_reason(exc)}") from None
    return Document(lines=lines, truncated_line=truncated)
