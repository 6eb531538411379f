"""How long a string (or list) a chat template's operation would make, worked out before it runs.

A template is code from a model repository; ``'x'.center(10**10)``, ``'%999999999s' % x``,
``x|tojson(indent=10**8)``, ``s.replace('', s)`` or ``{% set s = s ~ s %}`` in a loop make strings
of gigabytes in one step, before any limit on a render's output could see them. Each function here
gives an upper bound of an operation's result size from its arguments, cheaply (at most one pass
over its inputs), so that the sandbox (:mod:`tokprof.models.template`) refuses the operation before
it takes the memory. :data:`HUGE` stands for "too large to work out": always over the limit.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

#: A size larger than any limit.
HUGE = 1 << 62
#: The size assumed for a value that is not a string or a list (its text is short: a number, a name).
_SMALL = 64
_NUMBER = re.compile(r"\d+")


def unit(value: Any) -> int:
    """What one item costs against the output limit: a character 1, a list's item 8 (a pointer)."""
    return 1 if isinstance(value, str) else 8


def size_of(value: Any) -> int:
    """The length of a string, list or tuple; :data:`_SMALL` for anything else."""
    return len(value) if isinstance(value, (str, list, tuple, dict)) else _SMALL


def _widths(text: str) -> int:
    """The largest number written in a format string (a width or precision); :data:`HUGE` for one of
    more than 12 digits."""
    largest = 0
    for match in _NUMBER.finditer(text):
        digits = match.group()
        if len(digits) > 12:
            return HUGE
        largest = max(largest, int(digits))
    return largest


def _arguments(args: Sequence[Any], kwargs: dict) -> tuple[int, int]:
    """The longest argument and the largest number among them (a ``*`` width)."""
    values = list(args) + list(kwargs.values())
    if len(values) == 1 and isinstance(values[0], (tuple, dict)):  # '%s %s' % (a, b), '%(x)s' % {...}
        values = list(values[0].values() if isinstance(values[0], dict) else values[0])
    longest = max((size_of(v) for v in values), default=0)
    numbers = [abs(v) for v in values if type(v) is int]
    return longest, max(numbers, default=0)


def formatted(text: str, args: Sequence[Any], kwargs: dict, marker: str) -> int:
    """``text % args`` (``marker`` "%") or ``text.format(*args, **kwargs)`` (``marker`` "{"): each
    placeholder writes at most the longest argument or the largest width."""
    longest, number = _arguments(args, kwargs)
    return len(text) + text.count(marker) * (longest + max(number, _widths(text)) + _SMALL)


def method_result(name: str, value: str, args: Sequence[Any], kwargs: dict) -> int | None:
    """A string method's result size (None for a method that cannot make a longer string)."""
    if name in ("center", "ljust", "rjust", "zfill"):
        width = args[0] if args else kwargs.get("width", 0)
        return max(len(value), width if type(width) is int else 0)
    if name == "expandtabs":
        size = args[0] if args else kwargs.get("tabsize", 8)
        return len(value) * max(size if type(size) is int else 8, 1) if "\t" in value else len(value)
    if name == "replace":
        return replaced(value, *args, **kwargs)
    if name == "join":
        items = args[0] if args else ()
        return joined(value, items)
    if name in ("format", "format_map"):
        return formatted(value, args, kwargs, "{")
    return None


def replaced(value: Any, old: Any = "", new: Any = "", count: Any = -1, **_: Any) -> int:
    """``value.replace(old, new, count)``: every occurrence of ``old`` made ``new`` (an empty
    ``old`` occurs between every two characters)."""
    if not (isinstance(value, str) and isinstance(old, str) and isinstance(new, str)):
        return size_of(value)
    times = len(value) + 1 if old == "" else value.count(old)
    if type(count) is int and count >= 0:
        times = min(times, count)
    return len(value) + times * max(len(new) - len(old), 0)


def joined(separator: Any, items: Any) -> int:
    """``separator.join(items)`` for items held in a list or tuple (a generator is not looked into)."""
    if not isinstance(items, (list, tuple)):
        return 0
    return sum(size_of(item) for item in items) + size_of(separator) * max(len(items) - 1, 0)


def indented(value: Any, width: Any = 4, *_: Any, **__: Any) -> int:
    """The ``indent`` filter: each line gets ``width`` spaces (or the string ``width``)."""
    text = value if isinstance(value, str) else ""
    per_line = width if type(width) is int else size_of(width)
    return len(text) + (text.count("\n") + 1) * max(per_line, 0)


def concatenated(parts: Sequence[Any]) -> int:
    """``a ~ b ~ c`` and ``a + b``."""
    return sum(size_of(part) for part in parts)


def json_chunks(value: Any, indent: Any, separators: Any, sort_keys: bool, ensure_ascii: bool) -> Iterator[str]:
    """``tojson``'s text a piece at a time, so that its size can be counted as it is made."""
    encoder = json.JSONEncoder(ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)
    return encoder.iterencode(value)
