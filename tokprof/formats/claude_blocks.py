"""The content blocks of a Claude Code line (an Anthropic Messages API message), checked and kept as
the parts a prompt is built from: :class:`Text`, :class:`Thinking`, :class:`ToolUse` and
:class:`ToolResult` (see :mod:`tokprof.formats.claude_code` for the rules)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Union

from tokprof.base.errors import InputError
from tokprof.formats.fields import expect_object, objects, string
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
    listed = objects(path, where, content, "a content block object", "a string or a list of content blocks")
    for at, block in listed:
        string(path, at + ".type", block.get("type"))
    return listed


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
    call_id = string(path, where + ".tool_use_id", block.get("tool_use_id"))
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
    return string(path, f"{where}.{key}", block.get(key))


def _tool_call(path: str, where: str, block: dict) -> dict:
    call_id = string(path, where + ".id", block.get("id"))
    name = string(path, where + ".name", block.get("name") or None)
    arguments = expect_object(path, where + ".input", block.get("input", {}))
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
