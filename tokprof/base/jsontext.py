"""JSON text of large values without holding every piece of it at once.

``json.dumps(value, indent=2)`` encodes in pure Python and keeps every piece it makes (a key, a
comma, an indent) in one list before joining them: about six times the text's size in small
strings (13 kB per call of a profile, measured at 5,000 calls: about 2.6 GB at 200,000). :func:`dumps` joins the same
pieces as they come, a batch at a time: the same text, at about twice its size.
:func:`object_chunks` gives the same text in pieces, to be written as it is made, never whole.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable, Iterator

BATCH = 4096  # pieces joined at a time
NOT_WRITTEN = "the report holds a number JSON cannot write (NaN or infinity): not written"


def same_json(a: Any, b: Any) -> bool:
    """Whether two JSON values are the same: equal, of the same types, with keys in the same order
    (``1 == True`` and ``{"a": 1, "b": 2} == {"b": 2, "a": 1}``, but templates may render them apart)."""
    if a is b:
        return True
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is dict:
        return len(a) == len(b) and list(a) == list(b) and all(same_json(a[k], b[k]) for k in a)
    if kind is list:
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b))
    return bool(a == b)


def dumps(value: Any, indent: int | None = 2) -> str:
    """``json.dumps(value, indent=indent, ensure_ascii=False)``, byte for byte; a NaN or an infinity
    (which JSON has no form for) is a :class:`tokprof.base.errors.TokprofError`, never invalid JSON."""
    from tokprof.base.errors import TokprofError

    encoder = json.JSONEncoder(ensure_ascii=False, indent=indent, allow_nan=False)
    try:
        return _joined(encoder, value)
    except ValueError:
        raise TokprofError(NOT_WRITTEN) from None


def object_chunks(
    fields: Iterable[tuple[str, Callable[[], Any]]], streamed: str, items: Iterable[Any]
) -> Iterator[str]:
    """The text ``dumps`` gives an object (indent 2), a few thousand pieces at a time, for writing it as
    it is made: ``fields`` are its keys, each with a function that makes its value when it is written,
    and the field named ``streamed`` is the list of ``items``, each made (and dropped) in turn. So
    neither the whole text nor the whole value is ever held: a profile's rows become a dict each
    only while that row is written. A NaN or an infinity raises TokprofError, as in :func:`dumps`."""
    from tokprof.base.errors import TokprofError

    encoder = json.JSONEncoder(ensure_ascii=False, indent=2, allow_nan=False)
    try:
        yield "{"
        for n, (key, make) in enumerate(fields):
            yield ("," if n else "") + "\n  " + encoder.encode(key) + ": "
            if key == streamed:
                yield from _list_chunks(encoder, items)
            else:
                yield from _shifted(encoder, make(), 1)
        yield "\n}"
    except ValueError:
        raise TokprofError(NOT_WRITTEN) from None


def _list_chunks(encoder: json.JSONEncoder, items: Iterable[Any]) -> Iterator[str]:
    """A list at indent level 1, an item at a time (``[]`` when it is empty, as json writes it)."""
    empty = True
    for item in items:
        yield ("[" if empty else ",") + "\n    "
        empty = False
        yield from _shifted(encoder, item, 2)
    yield "[]" if empty else "\n  ]"


def _shifted(encoder: json.JSONEncoder, value: Any, level: int) -> Iterator[str]:
    """``value``'s text as it is written ``level`` levels deep: every line break of the text is an
    indent (a string's line breaks are escaped), so each gains the level's indent."""
    indent = "\n" + "  " * level
    batch: list[str] = []
    for piece in encoder.iterencode(value):
        batch.append(piece)
        if len(batch) >= BATCH:
            yield "".join(batch).replace("\n", indent)
            batch.clear()
    yield "".join(batch).replace("\n", indent)


def _joined(encoder: json.JSONEncoder, value: Any) -> str:
    joined: list[str] = []
    batch: list[str] = []
    for piece in encoder.iterencode(value):
        batch.append(piece)
        if len(batch) >= BATCH:
            joined.append("".join(batch))
            batch.clear()
    joined.append("".join(batch))
    return "".join(joined)
