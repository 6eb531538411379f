"""The neutral messages and tool definitions every reader produces, and the checks they pass.

Readers of other formats convert their messages into this shape (OpenAI Chat Completions messages,
``{"type": "function", "function": {...}}`` tools) and pass them through the same checks, so the
trace always holds text a template can render. Errors name the file and the place in it.
"""

from __future__ import annotations

import heapq
import json
from datetime import date, datetime, timezone
from typing import Any, Callable, Mapping, Sequence

from tokprof.base.errors import InputError
from tokprof.formats.fields import (
    check_text,
    expect_list,
    expect_object,
    nonempty_string,
    objects,
    optional_object,
    optional_string,
    string,
)
from tokprof.formats.jsonfile import TOO_DEEP, too_deep
from tokprof.formats.jsonfile import kind_of as _kind
from tokprof.trace import ROLES, Call, Usage


def check_model(path: str, prefix: str, obj: dict) -> str | None:
    return optional_string(path, prefix + "model", obj.get("model"))


def parse_day(obj: dict) -> date | None:
    """The day the call was made, to pin templates that print today's date."""
    for key in ("timestamp", "created", "created_at"):
        value = obj.get(key)
        try:
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                seconds = value / 1000 if value > 1e11 else value
                return datetime.fromtimestamp(seconds, tz=timezone.utc).date()
            if isinstance(value, str):
                return datetime.fromisoformat(value.replace("Z", "+00:00")).date()
        except (ValueError, OverflowError, OSError):
            continue
    return None


def parse_time(value: Any) -> datetime | None:
    """When a call was made, from a log's timestamp: an ISO 8601 string (``Z`` or an offset; none
    means UTC) or seconds (or milliseconds) since the epoch. Always timezone-aware, in UTC; None
    when there is no timestamp or it cannot be read."""
    try:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            seconds = value / 1000 if value > 1e11 else value
            return datetime.fromtimestamp(seconds, tz=timezone.utc)
        if isinstance(value, str) and value:
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=timezone.utc)
            return parsed.astimezone(timezone.utc)
    except (ValueError, OverflowError, OSError):
        return None
    return None


def in_time_order(sequences: Sequence[Sequence[Call]]) -> list[Call]:
    """Calls of several threads (a session file's, each subagent's), each already in its own order,
    merged into one list in time order and renumbered. The order within a sequence is kept whatever
    the timestamps say (a clock that steps back does not reorder a thread); a call without a time
    goes where the call before it in its sequence went (the first ones of a sequence, at the start);
    calls made at the same moment keep the order of their sequences."""
    heads: list[tuple[tuple, int, int]] = []
    carried: list[tuple] = [(0,)] * len(sequences)

    def key(s: int, position: int) -> tuple:
        time = sequences[s][position].time
        if time is not None:
            carried[s] = (1, time)
        return carried[s]

    for s, sequence in enumerate(sequences):
        if sequence:
            heads.append((key(s, 0), s, 0))
    heapq.heapify(heads)
    out: list[Call] = []
    while heads:
        _, s, position = heapq.heappop(heads)
        out.append(sequences[s][position])
        if position + 1 < len(sequences[s]):
            heapq.heappush(heads, (key(s, position + 1), s, position + 1))
    for index, call in enumerate(out):
        call.index = index
    return out


def check_tools(path: str, prefix: str, tools: Any) -> list[dict] | None:
    if tools is None:
        return None
    names = set()
    for where, tool in objects(path, prefix + "tools", tools, "a tool object", "a list of tool definitions"):
        function = tool.get("function")
        if not isinstance(function, dict):
            raise InputError(path, where + ".function", "missing: expected {'type': 'function', 'function': {...}}")
        name = nonempty_string(path, where + ".function.name", function.get("name"))
        if name in names:
            raise InputError(path, where + ".function.name", f"duplicate tool name {name!r}")
        names.add(name)
        optional_string(path, where + ".function.description", function.get("description"))
        optional_object(path, where + ".function.parameters", function.get("parameters"))
        check_text(path, where, json.dumps(tool, ensure_ascii=False))
    return tools


#: A callback ``(place, kind)`` for content parts that are not text, which a reader notes and leaves out.
SkipPart = Callable[[str, str], None]


def check_content(path: str, where: str, content: Any, required: bool, skip: SkipPart | None = None) -> str | None:
    """Content as the template will see it: a string (text parts joined by newlines) or None."""
    if content is None:
        if required:
            raise InputError(path, where, "missing: this role needs content")
        return None
    if isinstance(content, str):
        return check_text(path, where, content)
    if isinstance(content, list):
        texts = []
        for j, part in enumerate(content):
            if isinstance(part, str):
                texts.append(check_text(path, f"{where}[{j}]", part))
                continue
            part = expect_object(path, f"{where}[{j}]", part, "a content part object")
            kind = part.get("type")
            if kind == "refusal" and isinstance(part.get("refusal"), str):
                texts.append(check_text(path, f"{where}[{j}].refusal", part["refusal"]))
                continue
            if kind not in ("text", "input_text", "output_text"):
                if skip is None or not isinstance(kind, str):
                    raise InputError(path, f"{where}[{j}].type", f"unsupported content part {kind!r}: only text parts")
                skip(f"{where}[{j}]", kind)
                continue
            texts.append(string(path, f"{where}[{j}].text", part.get("text")))
        return "\n".join(texts)
    raise InputError(path, where, f"expected a string or a list of text parts, found {_kind(content)}")


def check_messages(
    path: str,
    prefix: str,
    messages: Any,
    skip: SkipPart | None = None,
    call_ids: set[str] | None = None,
    first: int = 0,
) -> list[dict]:
    """Check and normalise messages. To check only the new end of a prompt whose start was checked
    before, give the tool call ids of that start (``call_ids``) and the index of the first message
    given (``first``, for the places in errors)."""
    messages = expect_list(path, prefix + "messages", messages, "a list of messages")
    out: list[dict] = []
    call_ids = set(call_ids or ())
    for i, message in enumerate(messages, start=first):
        where = f"{prefix}messages[{i}]"
        message = expect_object(path, where, message, "a message object")
        role = message.get("role")
        if role not in ROLES:
            raise InputError(path, where + ".role", f"unknown role {role!r} (expected one of {', '.join(ROLES)})")
        clean: dict[str, Any] = {"role": role}
        has_calls = role == "assistant" and bool(message.get("tool_calls"))
        clean["content"] = check_content(
            path, where + ".content", message.get("content"), required=not (role == "assistant"), skip=skip
        )
        if isinstance(message.get("name"), str):
            clean["name"] = check_text(path, where + ".name", message["name"])
        for key in ("reasoning_content", "reasoning"):
            if isinstance(message.get(key), str):
                clean["reasoning_content"] = check_text(path, f"{where}.{key}", message[key])
                break
        if has_calls:
            clean["tool_calls"] = check_tool_calls(path, where + ".tool_calls", message["tool_calls"], call_ids)
        elif role == "assistant" and clean["content"] is None:
            clean["content"] = ""
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id is None:
                raise InputError(path, where + ".tool_call_id", "missing: a tool message must name the call it answers")
            call_id = string(path, where + ".tool_call_id", call_id)
            if call_id not in call_ids:
                raise InputError(path, where + ".tool_call_id", f"{call_id!r} matches no earlier assistant tool call")
            clean["tool_call_id"] = call_id
        out.append(clean)
    return out


def check_tool_calls(path: str, where: str, calls: Any, call_ids: set[str]) -> list[dict]:
    out = []
    for j, call in enumerate(expect_list(path, where, calls)):
        at = f"{where}[{j}]"
        if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
            raise InputError(path, at + ".function", "missing: expected {'id', 'type', 'function': {...}}")
        function = call["function"]
        name = string(path, at + ".function.name", function.get("name"))
        arguments = function.get("arguments", "{}")
        if not isinstance(arguments, (str, dict)):
            raise InputError(path, at + ".function.arguments", f"expected a JSON string, found {_kind(arguments)}")
        if isinstance(arguments, str) and too_deep(arguments):  # templates parse the arguments
            raise InputError(path, at + ".function.arguments", f"invalid JSON: {TOO_DEEP}")
        check_text(path, at + ".function", json.dumps(function, ensure_ascii=False))
        call_id = optional_string(path, at + ".id", call.get("id"))
        if call_id is not None:
            call_ids.add(call_id)
        out.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}})
    return out


#: The largest token count a log may report for one call: more is not a count (and sums of such
#: numbers would soon be too long to print).
MAX_COUNT = 10**12


def describe_number(value: Any) -> str:
    """A number from a log as an error shows it: itself, or its length when it is very long."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        return f"a {len(str(abs(value))):,}-digit number"
    return repr(value)


def check_count(path: str, where: str, value: Any) -> int | None:
    """A token count as a provider reports it: a non-negative integer up to :data:`MAX_COUNT`, or
    None when absent."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(path, where, f"expected a non-negative integer, found {_found(value)}")
    if value > MAX_COUNT:
        raise InputError(path, where, f"expected a token count up to {MAX_COUNT:,}, found {describe_number(value)}")
    return value


def optional_text(path: str, where: str, value: Any) -> str | None:
    """A recorded string such as where the agent worked (``cwd``, a git branch): None when absent or
    empty, else a checked string."""
    return optional_string(path, where, value) or None


def check_cached(path: str, where: str, usage: Usage, cached: str) -> Usage:
    """Usage whose prompt count includes the cache: the cache reads and writes (``cached`` names their
    field in the log) cannot be more than the prompt."""
    cache = (usage.cache_read or 0) + (usage.cache_write or 0)
    if usage.prompt is not None and cache > usage.prompt:
        raise InputError(
            path,
            f"{where}.{cached}",
            f"{cache:,} cached tokens, more than the prompt's {usage.prompt:,} that include them",
        )
    return usage


def _found(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return describe_number(value)
    if isinstance(value, str):
        return _kind(value) if len(value) > 40 else repr(value)
    return _kind(value)


def check_usage(
    path: str, where: str, usage: Any, prompt: str, details: str, output: str, write: str | None = None
) -> Usage | None:
    """OpenAI-style usage, whose prompt count includes the cached tokens (``details.cached_tokens``):
    Chat Completions' ``prompt_tokens``/``prompt_tokens_details``/``completion_tokens``, the Responses
    API's ``input_tokens``/``input_tokens_details``/``output_tokens``; ``write`` names a cache-write
    count in the details, for those who report one. Usage with none of these keys (``{}``, or another
    provider's) is no usage."""
    usage = optional_object(path, where, usage)
    if usage is None or not {prompt, output} & set(usage):
        return None
    cached = optional_object(path, f"{where}.{details}", usage.get(details)) or {}
    return Usage(
        prompt=check_count(path, f"{where}.{prompt}", usage.get(prompt)),
        cache_read=check_count(path, f"{where}.{details}.cached_tokens", cached.get("cached_tokens")),
        cache_write=check_count(path, f"{where}.{details}.{write}", cached.get(write)) if write else None,
        output=check_count(path, f"{where}.{output}", usage.get(output)),
    )


def assistant_message(texts: list[str], thoughts: list[str], calls: list[dict]) -> dict:
    """An assistant message from its text, reasoning and tool calls (content None when only calls)."""
    message: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts) if texts else None}
    if thoughts:
        message["reasoning_content"] = "\n".join(thoughts)
    if calls:
        message["tool_calls"] = calls
    return message


#: The keys of Anthropic's ``usage.cache_creation`` (the cache writes by lifetime), as
#: :func:`anthropic_usage` takes them: flat, beside ``cache_creation_input_tokens``.
CACHE_CREATION_FIELDS = ("ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens")


def cache_creation(path: str, where: str, usage: Mapping[str, Any]) -> dict[str, int]:
    """The checked counts of Anthropic's ``usage.cache_creation`` object (``where`` names ``usage``),
    keyed as :data:`CACHE_CREATION_FIELDS`; empty when the usage has none."""
    split = optional_object(path, where + ".cache_creation", usage.get("cache_creation"))
    if split is None:
        return {}
    out = {}
    for key in CACHE_CREATION_FIELDS:
        value = check_count(path, f"{where}.cache_creation.{key}", split.get(key))
        if value is not None:
            out[key] = value
    return out


def anthropic_usage(counts: Mapping[str, int | None]) -> Usage:
    """Anthropic's usage, whose ``input_tokens`` excludes cache reads and writes: the prompt is
    ``input_tokens + cache_creation_input_tokens + cache_read_input_tokens`` (a missing cache field is 0).

    ``counts`` may also hold ``ephemeral_5m_input_tokens`` and ``ephemeral_1h_input_tokens`` (from
    ``usage.cache_creation``, see :func:`cache_creation`): the cache writes split by lifetime. When only
    one of them is given the other is the rest of ``cache_creation_input_tokens``; when neither is
    given the split is unknown (None), not 5 minutes."""
    fresh = counts.get("input_tokens")
    write, read = counts.get("cache_creation_input_tokens"), counts.get("cache_read_input_tokens")
    if fresh is not None:
        write, read = write or 0, read or 0
    short, long = counts.get("ephemeral_5m_input_tokens"), counts.get("ephemeral_1h_input_tokens")
    if short is not None or long is not None:
        if write is None:
            write = (short or 0) + (long or 0)
        if short is None:
            short = max(write - (long or 0), 0)
        if long is None:
            long = max(write - short, 0)
    return Usage(
        prompt=None
        if fresh is None
        else fresh + (write or 0) + (read or 0),  # both already ints here: `or 0` is for mypy
        cache_read=read,
        cache_write=write,
        output=counts.get("output_tokens"),
        cache_write_5m=short,
        cache_write_1h=long,
    )
