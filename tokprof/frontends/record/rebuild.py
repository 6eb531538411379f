"""A streamed response rebuilt from its server-sent events: the body the provider would have sent
without ``stream``, with usage, so a recording reads like a plain capture.

Anthropic Messages (``message_start``, ``content_block_*``, ``message_delta``), OpenAI Chat
Completions (``chat.completion.chunk`` deltas, usage in the last chunk) and Responses (the
``response.completed`` event's response, else the last event that carries one). A stream that stops
early rebuilds to what it held; a stream of none of these gives None.
"""

from __future__ import annotations

import json
from typing import Any


def events(text: str) -> list[tuple[str | None, Any]]:
    """``(event name, data)`` per event of a stream; data parsed when JSON, else text."""
    out: list[tuple[str | None, Any]] = []
    name: str | None = None
    data: list[str] = []
    for line in text.replace("\r\n", "\n").split("\n") + [""]:
        if line == "":
            if data:
                joined = "\n".join(data)
                try:
                    out.append((name, json.loads(joined)))
                except ValueError:
                    out.append((name, joined))
            name, data = None, []
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    return out


def rebuild(text: str) -> dict | None:
    """The response body a stream amounts to, or None when it is no stream of a known API."""
    found = [(name, data) for name, data in events(text) if isinstance(data, dict)]
    kinds = {data.get("type") for _, data in found} | {name for name, _ in found}
    if "message_start" in kinds:
        return _anthropic(found)
    if any(data.get("object") == "chat.completion.chunk" for _, data in found):
        return _chat(found)
    if any(isinstance(data.get("response"), dict) for _, data in found):
        return _responses(found)
    return None


def _anthropic(found: list[tuple[str | None, dict]]) -> dict | None:
    message: dict | None = None
    blocks: dict[int, dict] = {}
    partial: dict[int, list[str]] = {}
    for _, data in found:
        kind = data.get("type")
        if kind == "message_start" and isinstance(data.get("message"), dict):
            message = dict(data["message"])
        elif kind == "content_block_start" and isinstance(data.get("content_block"), dict):
            blocks[data.get("index", len(blocks))] = dict(data["content_block"])
        elif kind == "content_block_delta" and isinstance(data.get("delta"), dict):
            _delta(
                blocks.setdefault(data.get("index", 0), {"type": "text", "text": ""}),
                partial,
                data.get("index", 0),
                data["delta"],
            )
        elif kind == "message_delta" and message is not None:
            message.update({k: v for k, v in (data.get("delta") or {}).items() if v is not None})
            usage = dict(message.get("usage") or {})
            usage.update({k: v for k, v in (data.get("usage") or {}).items() if v is not None})
            message["usage"] = usage
        elif kind == "error":
            return {"type": "error", "error": data.get("error")}
    if message is None:
        return None
    for index, parts in partial.items():
        try:
            blocks[index]["input"] = json.loads("".join(parts)) if "".join(parts).strip() else {}
        except ValueError:
            blocks[index]["input"] = "".join(parts)  # a stream that stopped mid-argument
    message["content"] = [blocks[i] for i in sorted(blocks)]
    return message


def _delta(block: dict, partial: dict[int, list[str]], index: int, delta: dict) -> None:
    kind = delta.get("type")
    if kind == "text_delta":
        block["text"] = block.get("text", "") + str(delta.get("text", ""))
    elif kind == "thinking_delta":
        block["thinking"] = block.get("thinking", "") + str(delta.get("thinking", ""))
    elif kind == "signature_delta":
        block["signature"] = block.get("signature", "") + str(delta.get("signature", ""))
    elif kind == "input_json_delta":
        partial.setdefault(index, []).append(str(delta.get("partial_json", "")))


def _chat(found: list[tuple[str | None, dict]]) -> dict:
    body: dict = {"object": "chat.completion", "choices": []}
    choices: dict[int, dict] = {}
    for _, chunk in found:
        for key in ("id", "model", "created", "system_fingerprint"):
            if chunk.get(key) is not None:
                body[key] = chunk[key]
        if chunk.get("usage"):
            body["usage"] = chunk["usage"]
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict):
                continue
            into = choices.setdefault(
                choice.get("index", 0),
                {
                    "index": choice.get("index", 0),
                    "message": {"role": "assistant", "content": None},
                    "finish_reason": None,
                },
            )
            if choice.get("finish_reason") is not None:
                into["finish_reason"] = choice["finish_reason"]
            _chat_delta(into["message"], choice.get("delta") or {})
    body["choices"] = [choices[i] for i in sorted(choices)]
    return body


def _chat_delta(message: dict, delta: dict) -> None:
    for key in ("content", "reasoning_content", "refusal"):
        if isinstance(delta.get(key), str):
            message[key] = (message.get(key) or "") + delta[key]
    for call in delta.get("tool_calls") or []:
        if not isinstance(call, dict):
            continue
        calls = message.setdefault("tool_calls", [])
        index = call.get("index", len(calls))
        while len(calls) <= index:
            calls.append({"id": None, "type": "function", "function": {"name": "", "arguments": ""}})
        into = calls[index]
        if call.get("id"):
            into["id"] = call["id"]
        function = call.get("function") or {}
        if function.get("name"):
            into["function"]["name"] += function["name"]
        if isinstance(function.get("arguments"), str):
            into["function"]["arguments"] += function["arguments"]


def _responses(found: list[tuple[str | None, dict]]) -> dict | None:
    last = None
    for name, data in found:
        response = data.get("response")
        if isinstance(response, dict):
            last = response
            if (data.get("type") or name) == "response.completed":
                return response
    return last
