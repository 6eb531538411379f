"""Codebuff (formerly Manicode) chats: ``~/.config/manicode/projects/<project>/chats/<chat>/chat-messages.json``.

Where: ``~/.config/manicode`` and the development channels ``manicode-dev`` and ``manicode-staging``
(below the user's folder on Linux, macOS and Windows), or the folders ``$CODEBUFF_DATA_DIR`` lists
(comma-separated), as ccusage's (``adapter/codebuff``) and codeburn's (``providers/codebuff.ts``)
Codebuff readers find them. The file is the chat as Codebuff's interface keeps it, a JSON list:

* ``{variant: "user", content, timestamp}``: the user's message;
* ``{variant: "ai" | "agent" | "assistant", id, content, blocks[], timestamp, credits, metadata}``:
  one run of the agent, whose ``blocks`` are ``text`` (``content``) and ``tool`` (``toolName``,
  ``input``, ``output``) blocks, and whose ``metadata`` may hold ``model`` and ``usage`` (or
  ``codebuff.usage``).

**Calls.** Codebuff's file records runs, not model calls: each agent message is one call here, whose
prompt is the chat before it as the interface recorded it (note ``runs-not-calls``); a run that made
several model calls is counted as one.

**Usage**, where the run records it: Anthropic's names (``inputTokens`` without the cache, plus
``cacheCreationInputTokens`` and ``cacheReadInputTokens``: ``prompt`` is their sum) or OpenAI's
(``prompt_tokens`` with the cache included, ``prompt_tokens_details.cached_tokens`` read from it). A run
without usage is "not recorded" (``no-usage``), never 0. Codebuff's credits are summed in
``log-credits``. The system prompt and tool definitions are not recorded (``unrecorded``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from tokprof.base.errors import InputError
from tokprof.formats.conversation import Conversation, tool_text
from tokprof.formats.folds import DocumentFold
from tokprof.formats.fields import expect_list, object_or_string, objects, optional_object, string
from tokprof.formats.jsonfile import Document
from tokprof.formats.locations import Location
from tokprof.formats.neutral import anthropic_usage, assistant_message, check_count, optional_text, parse_time
from tokprof.formats.reader import LogFormat, single_record
from tokprof.trace import Trace, Usage

FORMAT = "codebuff"
DESCRIPTION = "Codebuff chats (~/.config/manicode/projects/<project>/chats/<chat>/chat-messages.json)"
FILE = "chat-messages.json"
AGENT_VARIANTS = ("ai", "agent", "assistant")

RUNS = (
    "Codebuff's chat file records the agent's runs, not its model calls: each run is one call here, its prompt "
    "the chat as the interface recorded it (a run that made several model calls counts once)"
)
NO_USAGE = "runs without usage in their metadata: their usage is not recorded"
CREDITS = "the credits Codebuff recorded for these runs"


_STARTS = re.compile(rb"\A\s*\[\s*\{")
_VARIANT = re.compile(rb'"variant"\s*:\s*"(user|ai|agent|assistant)"')


def starts_like_chat(head: bytes) -> bool:
    """A file whose first bytes are a Codebuff chat's (a list whose first message names its ``variant``)."""
    head = head.lstrip(b"\xef\xbb\xbf")
    return _STARTS.match(head) is not None and _VARIANT.search(head[:4096]) is not None


def sniff(doc: Document) -> bool:
    value = doc.single_value()
    if not isinstance(value, list) or not value:
        return False
    return all(
        isinstance(m, dict) and (m.get("variant") in ("user", *AGENT_VARIANTS) or "blocks" in m) for m in value[:5]
    ) and any(isinstance(m, dict) and "variant" in m for m in value[:5])


class CodebuffReader(DocumentFold):
    """A Codebuff chat read as a fold over its one record (#43.1): each run's call given as it is read."""

    def __init__(self, path: str, doc: Document | None) -> None:
        super().__init__(Trace(path=path, format=FORMAT, unrecorded=("system", "tools")))

    def read(self, value: Any) -> Iterator[None]:
        path, trace = self.trace.path, self.trace
        messages = expect_list(path, None, value, "a list of chat messages (Codebuff's chat-messages.json)")
        trace.note("runs-not-calls", RUNS)
        chat = Conversation(trace, self.made)
        credits: list[float] = []
        for where, message in objects(path, "", messages, "a message object"):
            variant = message.get("variant", message.get("role"))
            if variant == "user":
                content = string(path, where + ".content", message.get("content", ""))
                chat.add({"role": "user", "content": content}, where)
            elif variant in AGENT_VARIANTS:
                _run(chat, path, where, message, credits)
            else:
                raise InputError(path, where + ".variant", f"expected user or ai, found {variant!r}")
            yield
        if not self.made.count:
            raise InputError(path, None, "no agent run (ai message) in the chat")
        if credits:
            trace.note("log-credits", CREDITS, f"{sum(credits):g} credits in all")


def _run(chat: Conversation, path: str, where: str, message: dict, credits: list[float]) -> None:
    texts, calls, results = [], [], []
    blocks = message.get("blocks")
    if blocks is None and message.get("content") is not None:
        texts.append(string(path, where + ".content", message["content"]))
    for at, block in objects(path, where + ".blocks", blocks or [], "a block object"):
        kind = block.get("type")
        if kind == "text":
            texts.append(string(path, at + ".content", block.get("content", "")))
        elif kind == "tool":
            call_id = f"{where}.{at.rsplit('.', 1)[-1]}"
            name = string(path, at + ".toolName", block.get("toolName"))
            arguments = object_or_string(path, at + ".input", block.get("input", {}))
            if isinstance(arguments, dict):
                arguments = json.dumps(arguments, ensure_ascii=False)
            calls.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}})
            results.append({"role": "tool", "tool_call_id": call_id, "content": tool_text(block.get("output", ""))})
        else:
            chat._skip(at, str(kind))
    metadata = optional_object(path, where + ".metadata", message.get("metadata")) or {}
    usage = _usage(path, where + ".metadata", metadata)
    if usage is None:
        chat.trace.note("no-usage", NO_USAGE, where)
    value = message.get("credits")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1e9:
        credits.append(float(value))
    model = optional_text(path, where + ".metadata.model", metadata.get("model"))
    clean = chat.check(assistant_message(texts, [], calls), where)
    chat.call(where, model, usage, clean, parse_time(message.get("timestamp")))
    chat.messages.append(clean)
    for result in results:
        chat.add(result, where)


def _usage(path: str, where: str, metadata: dict) -> Usage | None:
    usage = optional_object(path, where + ".usage", metadata.get("usage"))
    at = where + ".usage"
    if usage is None:
        nested = optional_object(path, where + ".codebuff", metadata.get("codebuff")) or {}
        usage = optional_object(path, where + ".codebuff.usage", nested.get("usage"))
        at = where + ".codebuff.usage"
    if usage is None:
        return None
    if "prompt_tokens" in usage:  # OpenAI's names: the prompt includes the cached tokens
        prompt = check_count(path, at + ".prompt_tokens", usage.get("prompt_tokens"))
        output = check_count(path, at + ".completion_tokens", usage.get("completion_tokens"))
        details = optional_object(path, at + ".prompt_tokens_details", usage.get("prompt_tokens_details")) or {}
        cached = check_count(path, at + ".prompt_tokens_details.cached_tokens", details.get("cached_tokens"))
        if not prompt and not output:
            return None
        return Usage(prompt=prompt, cache_read=cached, output=output)
    counts: dict[str, Any] = {
        key: check_count(path, f"{at}.{key}", usage.get(key))
        for key in ("inputTokens", "outputTokens", "cacheCreationInputTokens", "cacheReadInputTokens")
    }
    if not any(counts.values()):
        return None
    return anthropic_usage(
        {
            "input_tokens": counts["inputTokens"] or 0,
            "output_tokens": counts["outputTokens"],
            "cache_creation_input_tokens": counts["cacheCreationInputTokens"] or 0,
            "cache_read_input_tokens": counts["cacheReadInputTokens"] or 0,
        }
    )


CHATS = f"projects/*/chats/*/{FILE}"

LOCATIONS = (
    Location("codebuff", ".config/manicode", (CHATS,), env="CODEBUFF_DATA_DIR", project_depth=3, several=True),
    Location("codebuff", ".config/manicode-dev", (CHATS,), project_depth=3),
    Location("codebuff", ".config/manicode-staging", (CHATS,), project_depth=3),
)

LOG_FORMAT = LogFormat(
    FORMAT,
    DESCRIPTION,
    "agent",
    sniff,
    CodebuffReader,
    records=single_record,
    sessions=True,
    locations=LOCATIONS,
    starts=starts_like_chat,
    records_what="the agent's runs, with usage and credits where the run recorded them",
)
