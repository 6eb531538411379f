"""The field checks every reader shares: a value of the expected JSON type or an ``InputError`` that
names the file, the place (``line 4: message.content[2].text``) and what was found.

Each check returns the value with its type narrowed, so a reader reads a field and checks it in one
step: ``text = string(path, at + ".text", part.get("text"))``.
"""

from __future__ import annotations

from typing import Any

from tokprof.base.errors import InputError
from tokprof.formats.jsonfile import kind_of


def check_text(path: str, where: str, text: str) -> str:
    """A string that can be tokenized: valid Unicode (JSON escapes can encode lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(path, where, f"invalid Unicode (a lone surrogate at character {exc.start})") from None
    return text


def expect_object(path: str, where: str | None, value: Any, what: str = "an object") -> dict:
    """``value`` when it is a JSON object; ``what`` names it in the error (``"a part object"``)."""
    if not isinstance(value, dict):
        raise InputError(path, where, f"expected {what}, found {kind_of(value)}")
    return value


def optional_object(path: str, where: str | None, value: Any, what: str = "an object") -> dict | None:
    """``expect_object``, or None when the field is absent or null."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InputError(path, where, f"expected {what} or null, found {kind_of(value)}")
    return value


def object_or_string(path: str, where: str, value: Any) -> dict | str:
    """A tool call's arguments as some logs keep them: an object, or its JSON text."""
    if not isinstance(value, (dict, str)):
        raise InputError(path, where, f"expected an object or a string, found {kind_of(value)}")
    return value


def expect_list(path: str, where: str | None, value: Any, what: str = "a list") -> list:
    if not isinstance(value, list):
        raise InputError(path, where, f"expected {what}, found {kind_of(value)}")
    return value


def objects(
    path: str, where: str, value: Any, what: str = "an object", listed: str = "a list"
) -> list[tuple[str, dict]]:
    """A list of objects, each checked, as (place, object) pairs: ``where[0]``, ``where[1]``, ..."""
    return [
        (f"{where}[{j}]", expect_object(path, f"{where}[{j}]", item, what))
        for j, item in enumerate(expect_list(path, where, value, listed))
    ]


def string(path: str, where: str, value: Any) -> str:
    """A string that can be tokenized; a missing one is said to be missing."""
    if not isinstance(value, str):
        raise InputError(
            path, where, "missing: expected a string" if value is None else f"expected a string, found {kind_of(value)}"
        )
    return check_text(path, where, value)


def nonempty_string(path: str, where: str, value: Any) -> str:
    """``string`` that is not empty, such as a tool's name."""
    text = string(path, where, value)
    if not text:
        raise InputError(path, where, "empty: expected a non-empty string")
    return text


def optional_string(path: str, where: str, value: Any) -> str | None:
    """``string``, or None when the field is absent or null."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InputError(path, where, f"expected a string or null, found {kind_of(value)}")
    return check_text(path, where, value)
