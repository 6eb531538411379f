"""Prompt shapes: a Chat Completions or Anthropic Messages prompt as the neutral messages and tools
the attributor counts (``Model.count``, ``Model.count_prompt``, ``tokprof serve``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tokprof.base.errors import InputError
from tokprof.trace import Note, PromptView

#: Content blocks only the Anthropic Messages shape has.
ANTHROPIC_BLOCKS = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use", "image", "document"}
)
SHAPES = ("auto", "chat", "anthropic")


@dataclass(frozen=True)
class Prompt:
    """One prompt in the neutral form: its messages, its tools (None: no tools field), and the notes
    its conversion made (content that is not text, …)."""

    messages: list[dict]
    tools: list[dict] | None = None
    notes: tuple[Note, ...] = ()


def is_anthropic_shape(messages: Sequence[Any], tools: Any, system: Any) -> bool:
    """Whether a prompt is written in the Anthropic Messages shape: content blocks of its own kinds,
    tools with ``input_schema``, or a system prompt given as blocks."""
    if isinstance(system, list):
        return True
    if tools and any(isinstance(t, dict) and "input_schema" in t for t in tools):
        return True
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") in ANTHROPIC_BLOCKS for b in content
        ):
            return True
    return False


def read_prompt(messages: Any, tools: Any = None, *, system: Any = None, shape: str = "auto") -> Prompt:
    """The neutral prompt of a Chat Completions or an Anthropic Messages prompt: ``shape`` "chat",
    "anthropic" (``system`` a string or text blocks, converted as tokprof reads Anthropic captures),
    or "auto" (told apart by :func:`is_anthropic_shape`). :class:`InputError` names the message and
    field that is wrong."""
    from tokprof.formats.neutral import check_messages

    if shape not in SHAPES:
        raise ValueError(f"shape: expected one of {', '.join(SHAPES)}, found {shape!r}")
    if isinstance(messages, PromptView):  # a call's prompt from a trace (tokprof.read_log)
        messages = list(messages)
    if not isinstance(messages, (list, tuple)):
        raise InputError("request", "messages", f"expected a list of messages, found {type(messages).__name__}")
    if not messages:
        raise InputError("request", "messages", "empty: a prompt needs at least one message")
    if shape == "anthropic" or (shape == "auto" and is_anthropic_shape(messages, tools, system)):
        return _anthropic(messages, tools, system)
    prompt = check_messages("request", "", list(messages))
    if system is not None:
        if not isinstance(system, str):
            raise InputError("request", "system", f"expected a string, found {type(system).__name__}")
        prompt = [{"role": "system", "content": system}, *prompt]
    return Prompt(prompt, _tools(tools))


def _anthropic(messages: Sequence[Any], tools: Any, system: Any) -> Prompt:
    from tokprof.formats.anthropic import request_prompt

    body = {"messages": list(messages), "tools": None if tools is None else list(tools), "system": system}
    prompt, tool_list, notes = request_prompt("request", body)
    return Prompt(prompt, tool_list, tuple(notes))


def extend_prompt(prompt: Prompt, new: Sequence[Any], *, first: int, call_ids: set[str]) -> Prompt:
    """A Chat Completions prompt that continues an earlier one: the earlier messages as converted,
    then ``new`` (the messages from index ``first``) converted with the tool call ids of the earlier
    ones (``call_ids``), which their tool results may answer. Its tools and notes are the earlier
    prompt's."""
    from tokprof.formats.neutral import check_messages

    added = check_messages("request", "", list(new), call_ids=call_ids, first=first)
    return Prompt(prompt.messages + added, prompt.tools, prompt.notes)


def _tools(tools: Any) -> list[dict] | None:
    from tokprof.formats.neutral import check_tools
    from tokprof.formats.toolsfile import normalise_tools

    if tools is None:
        return None
    return check_tools("request", "", normalise_tools("request", "tools", list(tools)))
