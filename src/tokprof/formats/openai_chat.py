"""tokprof's native form: OpenAI Chat Completions requests.

Two shapes are read:

* a transcript, one JSON object ``{"model", "tools", "messages"}``: every ``assistant``
  message marks one model call whose prompt is every message before it;
* request records, a JSON list or a JSONL file of ``{"model", "messages", "tools", "usage"}``,
  one record per call, with ``usage`` as the provider reported it.
"""

from __future__ import annotations

import json
from datetime import date, datetime, timezone
from typing import Any

from tokprof.errors import InputError
from tokprof.formats.jsonfile import kind_of as _kind
from tokprof.formats.jsonfile import load
from tokprof.trace import ROLES, Call, Trace, Usage

FORMAT = "openai-chat"


def read_openai_chat(path: str) -> Trace:
    doc = load(path)
    if doc.lines is not None:
        records = [(f"line {n}", value, "") for n, value in doc.lines]
        return _records(path, records, "jsonl")
    value = doc.value
    if isinstance(value, list):
        if not value:
            raise InputError(path, None, "the list of request records is empty")
        return _records(path, [(f"record {i}", v, "") for i, v in enumerate(value)], "records")
    if isinstance(value, dict):
        if "messages" not in value:
            raise InputError(
                path, None, "expected a transcript object with 'messages', or a list of request records"
            )
        return _transcript(path, value)
    raise InputError(path, None, f"expected a JSON object or list, found {_kind(value)}")


def _transcript(path: str, obj: dict) -> Trace:
    model = _model(path, "", obj)
    tools = _tools(path, "", obj.get("tools"))
    messages = _messages(path, "", obj.get("messages"))
    day = _day(obj)
    calls = []
    for i, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        if i == 0:
            raise InputError(path, "messages[0]", "an assistant message with no prompt before it")
        calls.append(
            Call(
                index=len(calls), messages=messages[:i], tools=tools, model=model, day=day,
                where=f"messages[{i}]", response=message,
            )
        )
    if not calls:
        raise InputError(path, "messages", "no assistant message, so no model call to profile")
    return Trace(path=path, format=FORMAT + "/transcript", calls=calls, model=model)


def _records(path: str, records: list[tuple[str, Any, str]], shape: str) -> Trace:
    calls = []
    for where, record, _ in records:
        if not isinstance(record, dict):
            raise InputError(path, where, f"expected a request record object, found {_kind(record)}")
        prefix = f"{where}: "
        if "messages" not in record:
            raise InputError(
                path, where, "missing field 'messages': not an OpenAI Chat Completions request record "
                "(the only log format tokprof reads so far)"
            )
        messages = _messages(path, prefix, record["messages"])
        if not messages:
            raise InputError(path, prefix + "messages", "empty: a call needs a prompt")
        calls.append(
            Call(
                index=len(calls),
                messages=messages,
                tools=_tools(path, prefix, record.get("tools")),
                model=_model(path, prefix, record),
                reported=_usage(path, prefix, record.get("usage")),
                day=_day(record),
                where=where,
            )
        )
    models = {c.model for c in calls if c.model}
    return Trace(
        path=path,
        format=f"{FORMAT}/{shape}",
        calls=calls,
        model=models.pop() if len(models) == 1 else None,
    )


def _text(path: str, where: str, text: str) -> str:
    """A string that can be tokenized: valid Unicode (JSON escapes can encode lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(path, where, f"invalid Unicode (a lone surrogate at character {exc.start})") from None
    return text


def _model(path: str, prefix: str, obj: dict) -> str | None:
    model = obj.get("model")
    if model is not None and not isinstance(model, str):
        raise InputError(path, prefix + "model", f"expected a string, found {_kind(model)}")
    return model


def _day(obj: dict) -> date | None:
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


def _tools(path: str, prefix: str, tools: Any) -> list[dict] | None:
    if tools is None:
        return None
    if not isinstance(tools, list):
        raise InputError(path, prefix + "tools", f"expected a list of tool definitions, found {_kind(tools)}")
    names = set()
    for i, tool in enumerate(tools):
        where = f"{prefix}tools[{i}]"
        if not isinstance(tool, dict):
            raise InputError(path, where, f"expected a tool object, found {_kind(tool)}")
        function = tool.get("function")
        if not isinstance(function, dict):
            raise InputError(path, where + ".function", "missing: expected {'type': 'function', 'function': {...}}")
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise InputError(path, where + ".function.name", "missing or not a string")
        if name in names:
            raise InputError(path, where + ".function.name", f"duplicate tool name {name!r}")
        names.add(name)
        description = function.get("description")
        if description is not None and not isinstance(description, str):
            raise InputError(path, where + ".function.description", f"expected a string, found {_kind(description)}")
        params = function.get("parameters")
        if params is not None and not isinstance(params, dict):
            raise InputError(path, where + ".function.parameters", f"expected an object, found {_kind(params)}")
        _text(path, where, json.dumps(tool, ensure_ascii=False))
    return tools


def _content(path: str, where: str, content: Any, required: bool) -> str | None:
    """Content as the template will see it: a string (text parts joined by newlines) or None."""
    if content is None:
        if required:
            raise InputError(path, where, "missing: this role needs content")
        return None
    if isinstance(content, str):
        return _text(path, where, content)
    if isinstance(content, list):
        texts = []
        for j, part in enumerate(content):
            if isinstance(part, str):
                texts.append(_text(path, f"{where}[{j}]", part))
                continue
            if not isinstance(part, dict):
                raise InputError(path, f"{where}[{j}]", f"expected a content part object, found {_kind(part)}")
            kind = part.get("type")
            if kind not in ("text", "input_text", "output_text"):
                raise InputError(path, f"{where}[{j}].type", f"unsupported content part {kind!r}: only text parts")
            text = part.get("text")
            if not isinstance(text, str):
                raise InputError(path, f"{where}[{j}].text", f"expected a string, found {_kind(text)}")
            texts.append(_text(path, f"{where}[{j}].text", text))
        return "\n".join(texts)
    raise InputError(path, where, f"expected a string or a list of text parts, found {_kind(content)}")


def _messages(path: str, prefix: str, messages: Any) -> list[dict]:
    if not isinstance(messages, list):
        raise InputError(path, prefix + "messages", f"expected a list of messages, found {_kind(messages)}")
    out: list[dict] = []
    call_ids: set[str] = set()
    for i, message in enumerate(messages):
        where = f"{prefix}messages[{i}]"
        if not isinstance(message, dict):
            raise InputError(path, where, f"expected a message object, found {_kind(message)}")
        role = message.get("role")
        if role not in ROLES:
            raise InputError(
                path, where + ".role", f"unknown role {role!r} (expected one of {', '.join(ROLES)})"
            )
        clean: dict[str, Any] = {"role": role}
        has_calls = role == "assistant" and bool(message.get("tool_calls"))
        clean["content"] = _content(path, where + ".content", message.get("content"), required=not (role == "assistant"))
        if isinstance(message.get("name"), str):
            clean["name"] = _text(path, where + ".name", message["name"])
        for key in ("reasoning_content", "reasoning"):
            if isinstance(message.get(key), str):
                clean["reasoning_content"] = _text(path, f"{where}.{key}", message[key])
                break
        if has_calls:
            clean["tool_calls"] = _tool_calls(path, where + ".tool_calls", message["tool_calls"], call_ids)
        elif role == "assistant" and clean["content"] is None:
            clean["content"] = ""
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id is None:
                raise InputError(path, where + ".tool_call_id", "missing: a tool message must name the call it answers")
            if not isinstance(call_id, str):
                raise InputError(path, where + ".tool_call_id", f"expected a string, found {_kind(call_id)}")
            if call_id not in call_ids:
                raise InputError(
                    path, where + ".tool_call_id", f"{call_id!r} matches no earlier assistant tool call"
                )
            clean["tool_call_id"] = call_id
        out.append(clean)
    return out


def _tool_calls(path: str, where: str, calls: Any, call_ids: set[str]) -> list[dict]:
    if not isinstance(calls, list):
        raise InputError(path, where, f"expected a list, found {_kind(calls)}")
    out = []
    for j, call in enumerate(calls):
        at = f"{where}[{j}]"
        if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
            raise InputError(path, at + ".function", "missing: expected {'id', 'type', 'function': {...}}")
        function = call["function"]
        name = function.get("name")
        if not isinstance(name, str):
            raise InputError(path, at + ".function.name", "missing or not a string")
        arguments = function.get("arguments", "{}")
        if not isinstance(arguments, (str, dict)):
            raise InputError(path, at + ".function.arguments", f"expected a JSON string, found {_kind(arguments)}")
        _text(path, at + ".function", json.dumps(function, ensure_ascii=False))
        call_id = call.get("id")
        if call_id is not None and not isinstance(call_id, str):
            raise InputError(path, at + ".id", f"expected a string, found {_kind(call_id)}")
        if isinstance(call_id, str):
            call_ids.add(call_id)
        out.append(
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        )
    return out


def _usage(path: str, prefix: str, usage: Any) -> Usage | None:
    if usage is None:
        return None
    where = prefix + "usage"
    if not isinstance(usage, dict):
        raise InputError(path, where, f"expected an object, found {_kind(usage)}")

    def number(value: Any, field: str) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InputError(path, f"{where}.{field}", f"expected a non-negative integer, found {value!r}")
        return value

    details = usage.get("prompt_tokens_details") or {}
    if not isinstance(details, dict):
        raise InputError(path, where + ".prompt_tokens_details", f"expected an object, found {_kind(details)}")
    return Usage(
        prompt=number(usage.get("prompt_tokens"), "prompt_tokens"),
        cache_read=number(details.get("cached_tokens"), "prompt_tokens_details.cached_tokens"),
        cache_write=None,
        output=number(usage.get("completion_tokens"), "completion_tokens"),
    )
