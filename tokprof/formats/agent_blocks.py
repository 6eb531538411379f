"""Messages of Anthropic-like content blocks, as several agents keep them in their session files (Amp,
Droid): ``text``, ``thinking``, ``tool_use`` ``{id, name, input}`` and ``tool_result`` blocks, added to a
:class:`~tokprof.formats.conversation.Conversation`. Blocks that are not text (images, redacted
thinking) are left out (``content-not-text``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tokprof.formats.conversation import Conversation, tool_text
from tokprof.formats.fields import object_or_string, objects, string
from tokprof.formats.neutral import assistant_message

#: A tool result block's call id and text: (path, place, block) -> (id, text).
ResultOf = Callable[[str, str, dict], tuple[str, str]]


def anthropic_result(path: str, at: str, block: dict) -> tuple[str, str]:
    """Anthropic's ``{tool_use_id, content}``: a string, or a list of blocks whose text is kept."""
    call_id = string(path, at + ".tool_use_id", block.get("tool_use_id"))
    content = block.get("content", "")
    if isinstance(content, list):
        texts = [
            string(path, place + ".text", part.get("text"))
            for place, part in objects(path, at + ".content", content, "a content block")
            if part.get("type") == "text"
        ]
        return call_id, "\n".join(texts)
    return call_id, tool_text(content)


def add_user(chat: Conversation, path: str, where: str, content: Any, result: ResultOf = anthropic_result) -> None:
    """A user message's content (a string or a list of blocks and strings): its tool results as tool
    messages, then its text as one user message."""
    if isinstance(content, str):
        content = [content]
    texts = []
    for j, block in enumerate(_list(path, where, content)):
        at = f"{where}[{j}]"
        if isinstance(block, str):
            texts.append(string(path, at, block))
            continue
        if not isinstance(block, dict):
            string(path, at, block)  # an error naming what it is
        kind = block.get("type")
        if kind == "text":
            texts.append(string(path, at + ".text", block.get("text")))
        elif kind == "tool_result":
            call_id, text = result(path, at, block)
            chat.add({"role": "tool", "tool_call_id": call_id, "content": text}, at)
        else:
            chat._skip(at, str(kind))
    if texts:
        chat.add({"role": "user", "content": "\n".join(texts)}, where)


def assistant(chat: Conversation, path: str, where: str, content: Any) -> dict:
    """An assistant message's content blocks as one checked assistant message."""
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    texts, thoughts, calls = [], [], []
    for at, block in objects(path, where, content, "a content block"):
        kind = block.get("type")
        if kind == "text":
            texts.append(string(path, at + ".text", block.get("text")))
        elif kind == "thinking":
            thoughts.append(string(path, at + ".thinking", block.get("thinking")))
        elif kind == "tool_use":
            call_id = string(path, at + ".id", block.get("id"))
            name = string(path, at + ".name", block.get("name"))
            arguments = object_or_string(path, at + ".input", block.get("input", {}))
            if isinstance(arguments, dict):
                arguments = json.dumps(arguments, ensure_ascii=False)
            calls.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}})
        else:
            chat._skip(at, str(kind))
    return chat.check(assistant_message(texts, thoughts, calls), where)


def _list(path: str, where: str, value: Any) -> list:
    from tokprof.formats.fields import expect_list

    return expect_list(path, where, value, "a string or a list of content blocks")
