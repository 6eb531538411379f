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


def load(path: str) -> Document:
    """Parse a file as one JSON value, or as JSONL when it holds one value per line."""
    text = read_text(path)
    if not path.endswith(".jsonl"):
        try:
            return Document(value=json.loads(text))
        except json.JSONDecodeError as exc:
            if not exc.msg.startswith("Extra data"):
                raise InputError(
                    path, f"line {exc.lineno}, column {exc.colno}", f"invalid JSON: {exc.msg}"
                ) from None
        except (ValueError, RecursionError) as exc:  # numbers too long, nesting too deep
            raise InputError(path, None, f"invalid JSON: {_reason(exc)}") from None
    lines: list[tuple[int, Any]] = []
    # split on newlines only: U+2028 and friends are valid inside JSON strings
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        try:
            lines.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            what = "truncated JSON" if exc.pos >= len(line.rstrip()) else f"invalid JSON: {exc.msg}"
            raise InputError(path, f"line {number}, column {exc.colno}", what) from None
        except (ValueError, RecursionError) as exc:
            raise InputError(path, f"line {number}", f"invalid JSON: {_reason(exc)}") from None
    return Document(lines=lines)
