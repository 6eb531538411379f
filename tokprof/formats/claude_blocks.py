"""The content blocks of a Claude Code line (an Anthropic Messages API message), checked and kept as
the parts a prompt is built from: :class:`Text`, :class:`Thinking`, :class:`ToolUse` and
:class:`ToolResult` (see :mod:`tokprof.formats.claude_code` for the rules)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Union

from tokprof.base.errors import InputError
from tokprof.formats.jsonfile import kind_of as _kind
from tokprof.formats.neutral import assistant_message, check_text

TOOL_CALL_BLOCKS = ("tool_use", "server_tool_use", "mcp_tool_use")


@dataclass(frozen=True, slots=True)
class Text:
    """A text block (user or assistant)."""

    text: str


@dataclass(frozen=True, slots=True)
class Thinking:
    """An assistant's thinking block: its ``reasoning_content``."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolUse:
    """An assistant's tool call, as the neutral trace has it (``{"id", "type", "function"}``)."""

    call: dict

    @property
    def id(self) -> str:
        return self.call["id"]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A user line's tool result: the call it answers and its text (text blocks joined by newlines)."""

    call_id: str
    text: str


Part = Union[Text, Thinking, ToolUse, ToolResult]


def blocks(path: str, where: str, content: Any) -> list[tuple[str, dict]]:
    """Content as (place, block) pairs; a string is one text block (none when empty)."""
    if isinstance(content, str):
        return [(where, {"type": "text", "text": content})] if content else []
    if content is None:
        raise InputError(path, where, "missing: expected a string or a list of content blocks")
    if not isinstance(content, list):
        raise InputError(path, where, f"expected a string or a list of content blocks, found {_kind(content)}")
    out = []
    for j, block in enumerate(content):
        at = f"{where}[{j}]"
        if not isinstance(block, dict):
            raise InputError(path, at, f"expected a content block object, found {_kind(block)}")
        if not isinstance(block.get("type"), str):
            raise InputError(path, at + ".type", "missing or not a string")
        out.append((at, block))
    return out


def user_part(path: str, place: str, skipped: list[str], where: str, block: dict) -> Part | None:
    """A user line's block as a part; a block that is not text is named in ``skipped`` (None)."""
    kind = block["type"]
    if kind == "text":
        return Text(_text(path, where, block, "text"))
    if kind == "tool_result":
        return tool_result(path, place, skipped, where, block)
    if kind in TOOL_CALL_BLOCKS or kind == "thinking":
        raise InputError(path, where + ".type", f"a {kind} block belongs in an assistant message")
    skipped.append(f"{place} ({kind})")
    return None


def tool_result(path: str, place: str, skipped: list[str], where: str, block: dict) -> ToolResult:
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str):
        raise InputError(path, where + ".tool_use_id", f"expected a string, found {_kind(call_id)}")
    content = block.get("content")
    texts = []
    if isinstance(content, str):
        texts.append(check_text(path, where + ".content", content))
    elif content is not None:
        for at, part in blocks(path, where + ".content", content):
            if part["type"] == "text":
                texts.append(_text(path, at, part, "text"))
            else:
                skipped.append(f"{place} ({part['type']} in a tool result)")
    return ToolResult(call_id, "\n".join(texts))


def assistant_part(path: str, place: str, skipped: list[str], where: str, block: dict) -> Part | None:
    """An assistant line's block as a part; a block that is not text is named in ``skipped`` (None)."""
    kind = block["type"]
    if kind == "text":
        return Text(_text(path, where, block, "text"))
    if kind == "thinking":
        return Thinking(_text(path, where, block, "thinking"))
    if kind in TOOL_CALL_BLOCKS:
        return ToolUse(_tool_call(path, where, block))
    if kind == "tool_result":
        raise InputError(path, where + ".type", "a tool_result block belongs in a user message")
    skipped.append(f"{place} ({kind})")
    return None


def _text(path: str, where: str, block: dict, key: str) -> str:
    value = block.get(key)
    if not isinstance(value, str):
        raise InputError(path, f"{where}.{key}", f"expected a string, found {_kind(value)}")
    return check_text(path, f"{where}.{key}", value)


def _tool_call(path: str, where: str, block: dict) -> dict:
    call_id, name, arguments = block.get("id"), block.get("name"), block.get("input", {})
    if not isinstance(call_id, str):
        raise InputError(path, where + ".id", f"expected a string, found {_kind(call_id)}")
    if not isinstance(name, str) or not name:
        raise InputError(path, where + ".name", "missing or not a string")
    if not isinstance(arguments, dict):
        raise InputError(path, where + ".input", f"expected an object, found {_kind(arguments)}")
    text = check_text(path, where + ".input", json.dumps(arguments, ensure_ascii=False))
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


def assistant(parts: "tuple[Part, ...] | list[Part]") -> dict:
    """The assistant message of a response's parts: texts joined as content, thinking as reasoning."""
    texts = [p.text for p in parts if isinstance(p, Text)]
    thoughts = [p.text for p in parts if isinstance(p, Thinking)]
    calls = [p.call for p in parts if isinstance(p, ToolUse)]
    return assistant_message(texts, thoughts, calls)


def stand_in(call_ids: list[str]) -> dict:
    """An assistant message declaring tool calls, so that results answering them pass the check."""
    calls = [{"id": i, "type": "function", "function": {"name": "_", "arguments": "{}"}} for i in call_ids]
    return {"role": "assistant", "content": None, "tool_calls": calls}
