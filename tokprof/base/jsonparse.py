"""Parsing JSON text that comes from outside (a log, a request body, JSON kept inside a string):
:func:`parse` never raises anything but :class:`ValueError` (a syntax error is a
:class:`json.JSONDecodeError`; a value nested more than :data:`NESTING_LIMIT` deep, or a number too long
to convert, is a :class:`JSONError`: Python's own limits would raise ``RecursionError`` in the parser
or, for a value just under them, anywhere later), and :func:`too_deep` checks text before it is parsed,
in time linear in its length. The readers use it through :mod:`tokprof.formats.jsonfile`; `serve` uses
it for request bodies.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: How deep a JSON value from a log may nest (objects and lists). JSON Schemas, Inspect's events and
#: tool inputs nest a few dozen levels at most; Python's recursion limit (1,000 frames) is shared by
#: the parser and everything that walks the value later (JSON encoding, templates), so a value just
#: under what the parser accepts could still fail further on.
NESTING_LIMIT = 200
TOO_DEEP = f"nested too deeply (more than {NESTING_LIMIT} levels)"


class JSONError(ValueError):
    """JSON text that cannot be used: nested too deeply, or a number too long to convert."""


#: What the nesting scanner stops at outside a string: a bracket or a string's opening quote.
_OUTSIDE = re.compile(r'["\[\]{}]')
#: A string's rest after its opening quote, up to (not including) its closing quote or the text's end.
#: Matched once at one position, with no alternative that could backtrack: linear in what it reads
#: (a search for whole strings, as before, restarted at every quote of an unterminated string and
#: took time quadratic in its length). Possessive (``*+``): nothing is kept to backtrack into, so a
#: long run of escapes is read at the speed of a plain one (the greedy form kept a backtracking
#: entry per escape: 40-190 ns a byte against 4-8).
_STRING_REST = re.compile(r'[^"\\]*+(?:\\.[^"\\]*+)*+(?:\\\Z)?', re.S)


def _too_deep_index(text: str) -> int | None:
    """Where JSON text first nests more than :data:`NESTING_LIMIT` deep (the offset of the bracket
    that goes too deep), brackets inside strings not counting; None when it does not. One pass,
    linear in the text's length whatever it holds."""
    depth, pos, end = 0, 0, len(text)
    search, rest = _OUTSIDE.search, _STRING_REST.match
    while pos < end:
        found = search(text, pos)
        if found is None:
            return None
        char, pos = found.group(), found.end()
        if char == '"':
            pos = rest(text, pos).end() + 1  # type: ignore[union-attr]  # always matches
        elif char in "[{":
            depth += 1
            if depth > NESTING_LIMIT:
                return found.start()
        else:
            depth -= 1
    return None


def too_deep(text: str) -> bool:
    """Whether JSON text nests objects and lists more than :data:`NESTING_LIMIT` deep (brackets
    inside strings do not count). Cheap when the text has fewer brackets than the limit, and linear
    in its length otherwise."""
    if text.count("[") + text.count("{") <= NESTING_LIMIT:
        return False
    return _too_deep_index(text) is not None


def parse(text: str) -> Any:
    """``json.loads`` for text from a log: :class:`json.JSONDecodeError` for bad syntax,
    :class:`JSONError` for a value nested too deeply or a number too long; never anything else
    (``MemoryError`` aside)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise JSONError(TOO_DEEP) from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise JSONError(str(exc).split(";")[0]) from None
    if text.count("[") + text.count("{") > NESTING_LIMIT and _nests_deeper(value):
        raise JSONError(TOO_DEEP)
    return value


def _nests_deeper(value: Any) -> bool:
    """Whether a parsed value nests deeper than :data:`NESTING_LIMIT` (a walk without recursion,
    much faster than scanning the text of a large document)."""
    stack = [(value, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        node, depth = pop()
        if depth > NESTING_LIMIT:
            return True
        for child in node.values() if type(node) is dict else node if type(node) is list else ():
            if type(child) is dict or type(child) is list:
                push((child, depth + 1))
    return False


def parse_or(text: str, default: Any = None) -> Any:
    """The JSON value of a text from a log, or ``default`` when it is not usable JSON."""
    try:
        return parse(text)
    except ValueError:
        return default


def kind_of(value: Any) -> str:
    """How an error message names a JSON value's type."""
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def too_deep_at(text: str) -> str | None:
    """Where JSON text first nests more than :data:`NESTING_LIMIT` deep ("line L, column C"), brackets
    inside strings not counting; None when it does not (for an error message: a pass over the text)."""
    index = _too_deep_index(text)
    if index is None:
        return None
    line = text.count("\n", 0, index) + 1
    return f"line {line}, column {index - (text.rfind(chr(10), 0, index) + 1) + 1}"
