"""A request's body: parsed once, with the JSON text of every message kept; the fields a count
reads, and the checks of its model name and nesting."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable

from tokprof.frontends.serve.answers import ROUTE_MESSAGES, bad, kind_of

#: The body fields each route reads; any other is named in an ``ignored-fields`` warning.
#: (Anthropic's generation options, which a client may send with the body it counts, are read as
#: what they are: they do not change a prompt's tokens; tool_choice, thinking and mcp_servers do.)
READ_FIELDS = {ROUTE_MESSAGES: ("model", "messages", "tools", "system")}
COUNT_FIELDS = ("model", "messages", "tools")
PROVIDER_COUNTS = ("tool_choice", "thinking", "mcp_servers")  # fields Anthropic's count_tokens counts
NOT_COUNTED = {
    ROUTE_MESSAGES: (
        "max_tokens",
        "temperature",
        "top_p",
        "top_k",
        "stop_sequences",
        "stream",
        "metadata",
        "service_tier",
    )
}


def ignored_fields(route: str, value: dict) -> str | None:
    """ "ignored fields: window, stream" for fields of a body that the count does not read (a
    misspelt or unsupported option should not pass in silence), or None."""
    from tokprof.base.text import visible

    read = READ_FIELDS.get(route, COUNT_FIELDS)
    names = [visible(str(name))[:40] for name in value if name not in read and name not in NOT_COUNTED.get(route, ())]
    if not names:
        return None
    shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    counted = [n for n in names if n in PROVIDER_COUNTS]
    why = (
        f"; {', '.join(counted)} change{'s' if len(counted) == 1 else ''} the provider's own count, not tokprof's"
        if counted
        else ""
    )
    return f"ignored fields, not read by this count: {shown}{why}; read: {', '.join(read)}"


_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
#: The C scanner of JSON strings (json.decoder has it; typeshed does not say so).
_SCANSTRING: Callable[[str, int, bool], tuple[str, int]] = getattr(json.decoder, "scanstring")  # noqa: B009 (not in the stubs)


@dataclass
class Body:
    """A request body: its parsed value, the JSON text of each top-level value, and the JSON text of
    each message (None when ``messages`` is not a list)."""

    value: dict
    texts: dict[str, str]
    messages: list[str] | None


def parse_body(raw: bytes) -> Body:
    """A request body, parsed once with the JSON text of every message kept (for matching requests to
    conversations: equal texts are equal values, with the same types and key order). Anything the
    scanner does not take is parsed by :func:`tokprof.base.jsonparse.parse`, which says what is wrong."""
    from tokprof.base import jsonparse

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise bad(f"the body is not UTF-8 text (byte {exc.start})") from None
    try:
        return _scan(text)
    except (ValueError, IndexError, RecursionError):
        pass
    try:
        value = jsonparse.parse(text)
    except json.JSONDecodeError as exc:
        raise bad(f"the body is not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except ValueError as exc:
        raise bad(f"the body's JSON cannot be used: {exc}") from None
    if not isinstance(value, dict):
        raise bad(f"the body must be a JSON object, found {kind_of(value)}")
    messages = value.get("messages")
    return Body(
        value,
        {key: _dumps(item) for key, item in value.items()},
        [_dumps(m) for m in messages] if isinstance(messages, list) else None,
    )


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _skip(text: str, pos: int) -> int:
    match = _WS.match(text, pos)
    assert match is not None  # the pattern matches the empty string
    return match.end()


def _scan(text: str) -> Body:
    """A JSON object parsed key by key (each value by the C parser), ``messages`` element by element."""
    pos = _skip(text, 0)
    if text[pos] != "{":
        raise ValueError("not an object")
    pos = _skip(text, pos + 1)
    value: dict[str, Any] = {}
    texts: dict[str, str] = {}
    messages: list[str] | None = None
    if text[pos] == "}":
        pos += 1
    else:
        while True:
            if text[pos] != '"':
                raise ValueError("expected a key")
            key, pos = _SCANSTRING(text, pos + 1, True)
            pos = _skip(text, pos)
            if text[pos] != ":":
                raise ValueError("expected ':'")
            pos = _skip(text, pos + 1)
            start = pos
            if key == "messages" and text[pos] == "[":
                value[key], messages, pos = _array(text, pos)
            else:
                value[key], pos = _DECODER.raw_decode(text, pos)
                if key == "messages":
                    messages = None
            texts[key] = text[start:pos] if key != "messages" else ""
            pos = _skip(text, pos)
            if text[pos] == ",":
                pos = _skip(text, pos + 1)
                continue
            if text[pos] == "}":
                pos += 1
                break
            raise ValueError("expected ',' or '}'")
    if _skip(text, pos) != len(text):
        raise ValueError("extra data")
    return Body(value, texts, messages)


def _array(text: str, pos: int) -> tuple[list, list[str], int]:
    pos = _skip(text, pos + 1)
    items: list = []
    texts: list[str] = []
    if text[pos] == "]":
        return items, texts, pos + 1
    while True:
        start = pos
        try:
            item, pos = _DECODER.raw_decode(text, pos)
        except RecursionError:  # where the C parser gives up depends on the stack: named as the check names it
            from tokprof.base.jsonparse import TOO_DEEP

            raise bad(TOO_DEEP, f"messages[{len(items)}]") from None
        items.append(item)
        texts.append(text[start:pos])
        pos = _skip(text, pos)
        if text[pos] == ",":
            pos = _skip(text, pos + 1)
            continue
        if text[pos] == "]":
            return items, texts, pos + 1
        raise ValueError("expected ',' or ']'")


#: What no model name holds: control and bidirectional-format characters, and lone surrogates (which
#: cannot be encoded in an answer); a request naming one is refused, so it is never echoed back.
_NOT_IN_A_NAME = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def check_model_name(requested: str | None) -> None:
    if requested is None:
        return
    found = _NOT_IN_A_NAME.search(requested)
    if found is not None:
        what = "a lone surrogate" if "\ud800" <= found.group() <= "\udfff" else f"U+{ord(found.group()):04X}"
        raise bad(
            f"not a model name: it holds {what} (control, bidirectional and surrogate characters are refused)", "model"
        )


def check_depth(text: str, where: str) -> None:
    from tokprof.base.jsonparse import TOO_DEEP, too_deep

    if too_deep(text):
        raise bad(TOO_DEEP, where)


#: A decoder that keeps no object it reads (each becomes None as soon as it is read): to find where
#: values end without holding what they hold.
_SKIPPER = json.JSONDecoder(object_pairs_hook=lambda pairs: None)


def routing_key(route: str, raw: bytes) -> int:
    """What the server routes a request by (to the worker that keeps its conversation), read without
    holding the body's values: a hash of the route and the JSON texts of the body's ``model``,
    ``tools``, ``system`` and first message, the same for every request of a conversation. A body
    that cannot be read so is routed by its first bytes: its worker says what is wrong."""
    try:
        parts = _top_level_texts(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, IndexError, RecursionError):
        return hash((route, raw[:256]))
    return hash((route, parts.get("model"), parts.get("tools"), parts.get("system"), parts.get("messages")))


def _top_level_texts(text: str) -> dict[str, str]:
    """The JSON text of each top-level value of an object, but for ``messages`` its first element's."""
    pos = _skip(text, 0)
    if text[pos] != "{":
        raise ValueError("not an object")
    pos = _skip(text, pos + 1)
    found: dict[str, str] = {}
    if text[pos] == "}":
        return found
    while True:
        if text[pos] != '"':
            raise ValueError("expected a key")
        key, pos = _SCANSTRING(text, pos + 1, True)
        pos = _skip(text, pos)
        if text[pos] != ":":
            raise ValueError("expected ':'")
        start = pos = _skip(text, pos + 1)
        _, pos = _SKIPPER.raw_decode(text, pos)
        found[key] = text[start:pos]
        if key == "messages" and text[start] == "[":
            first = _skip(text, start + 1)
            found[key] = "" if text[first] == "]" else text[first : _SKIPPER.raw_decode(text, first)[1]]
        pos = _skip(text, pos)
        if text[pos] == ",":
            pos = _skip(text, pos + 1)
            continue
        if text[pos] == "}":
            return found
        raise ValueError("expected ',' or '}'")
