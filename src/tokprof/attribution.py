"""Attribute every token of a call's prompt to one of four buckets.

The prompt is rendered once with the model's chat template and tokenized once. Each character of
the rendered text gets an owner, and each token is counted in the bucket of the character it starts
at, so the buckets are never negative and always add up to the prompt's token count.

Owners, strongest first:

1. **Message content.** Each message's content is wrapped in private-use marker characters for one
   extra render; where the markers land is where that content is. (The markers are used only if
   removing them gives back exactly the plain render, so they can never change a count.)
2. **Tool definitions.** The prompt is rendered again without the tool catalogue (``tools=None``,
   or ``tools=[]`` for templates that fail on None); whatever the full render has that this one
   lacks (the tool JSON, and the instructions and headers a template adds for tools) is owned by
   the tool catalogue.
3. **Message scaffolding.** Rendering the first k messages (no generation prompt) gives the point
   where message k starts: the length of the longest common prefix of that render and the full one.
   Text from there to the start of message k+1 (role markers, separators) belongs to message k.
4. **Preamble and generation prompt.** Text before the first message (a template's default system
   prompt, a date line, BOS) belongs to ``system``; text after the last message (the generation
   prompt) belongs to ``conversation``.

A message's bucket follows its role: system and developer → ``system``; tool → ``tool_results``;
user and assistant (with its tool calls) → ``conversation``.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field

import jinja2
import numpy as np

from tokprof.models.model import ChatModel
from tokprof.models.template import template_messages
from tokprof.textdiff import common_prefix, inserted_regions
from tokprof.trace import Call

BUCKETS = ("system", "tool_definitions", "tool_results", "conversation")
SYSTEM, TOOLS, RESULTS, CONVERSATION = range(4)
ROLE_BUCKET = {"system": SYSTEM, "developer": SYSTEM, "tool": RESULTS, "user": CONVERSATION, "assistant": CONVERSATION}

_OPEN_BASE = 0xF0000  # Supplementary Private Use Area-A: one opening marker per message index
_CLOSE = "\U0010fffd"
_MARKER_RE = re.compile("[\U000f0000-\U000ffffd\U0010fffd]")

#: Warning texts, keyed so that a profile can count how many calls each applies to.
WARN_TOOLS_IGNORED = "tools-ignored"
WARN_TOOLS_UNRENDERABLE = "tools-unrenderable"
WARN_RESULTS_DROPPED = "results-dropped"
WARNINGS = {
    WARN_TOOLS_IGNORED: "the chat template does not render tool definitions: tool_definitions is 0 "
    "because the template ignores the tools, not because they cost nothing",
    WARN_TOOLS_UNRENDERABLE: "the chat template fails without tools (both tools=None and tools=[]): "
    "tool definition scaffolding could not be separated and is counted with the messages around it",
    WARN_RESULTS_DROPPED: "the chat template drops the content of some tool results: they are not in the "
    "prompt, so tool_results does not count them",
}


class RenderError(Exception):
    """The chat template failed on a call's prompt."""


@dataclass
class CallBuckets:
    system: int = 0
    tool_definitions: int = 0
    tool_results: int = 0
    conversation: int = 0
    warnings: list[str] = field(default_factory=list)
    spans: bool = True  # whether content markers were used

    @property
    def total(self) -> int:
        return self.system + self.tool_definitions + self.tool_results + self.conversation

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in BUCKETS}


def _render(model: ChatModel, messages, tools, generation: bool, day, lenient=False, template_tools=None) -> str:
    return model.template.render(
        messages, tools, add_generation_prompt=generation, day=day, lenient=lenient, template_tools=template_tools
    )


class Attributor:
    """Attributes calls of one log; caches prefix renders shared between calls."""

    def __init__(self, model: ChatModel):
        self.model = model
        self._messages: dict[int, tuple[dict, dict, bytes]] = {}  # id(original) -> (original, templated, digest)
        self._lengths: dict[bytes, int] = {}  # prefix key -> length of its render
        self._links: dict[bytes, bool] = {}  # key of prefix k+1 -> render k is a prefix of render k+1

    # -- messages and keys -------------------------------------------------------------------
    def _prepare(self, call: Call) -> tuple[list[dict], list[bytes]]:
        templated, keys = [], []
        base = hashlib.blake2b(digest_size=16)
        base.update(self.model.template.sha256.encode())
        base.update(json.dumps(call.tools, sort_keys=True).encode())
        base.update(str(call.day).encode())
        key = base.digest()
        keys.append(key)
        for message in call.messages:
            entry = self._messages.get(id(message))
            if entry is None or entry[0] is not message:
                tm = template_messages([message], self.model.template)[0]
                digest = hashlib.blake2b(json.dumps(tm, sort_keys=True).encode(), digest_size=16).digest()
                entry = (message, tm, digest)
                self._messages[id(message)] = entry
            templated.append(entry[1])
            key = hashlib.blake2b(key + entry[2], digest_size=16).digest()
            keys.append(key)
        return templated, keys

    # -- the parts ---------------------------------------------------------------------------
    def _prefix(self, messages, k: int, tools, day) -> str | None:
        try:
            if k == 0:
                return _render(self.model, [], tools, False, day, lenient=True, template_tools=bool(tools))
            try:
                return _render(self.model, messages[:k], tools, False, day)
            except jinja2.TemplateError:
                return _render(self.model, messages[:k], tools, False, day, lenient=True)
        except Exception:
            return None

    def _probe(self, messages, k: int, tools, day, full: str) -> int:
        stand_in = {"role": messages[k]["role"], "content": _CLOSE}
        if "tool_call_id" in messages[k]:
            stand_in["tool_call_id"] = messages[k]["tool_call_id"]
        try:
            text = _render(self.model, messages[:k] + [stand_in], tools, False, day)
        except Exception:
            return 0
        reach = common_prefix(text, full)
        # The common prefix runs through message k's role header. Find that header from the stand-in
        # rendered alone (its text before the content, after what an empty conversation renders);
        # when full has exactly that header there, message k starts before it.
        try:
            alone = _render(self.model, [stand_in], tools, False, day)
            empty = _render(self.model, [], tools, False, day, lenient=True, template_tools=bool(tools))
        except Exception:
            return reach
        if alone.count(_CLOSE) != 1:
            return reach
        header = alone[common_prefix(empty, alone) : alone.index(_CLOSE)]
        if header and full[reach - len(header) : reach] == header:
            return reach - len(header)
        return reach

    def _boundaries(self, messages, keys, tools, day, full: str) -> list[int]:
        """b[k]: where message k starts in ``full``; b[n]: where the generation prompt starts."""
        n = len(messages)
        b = [0] * (n + 1)
        top = self._prefix(messages, n, tools, day)
        if top is None:
            b[n] = len(full)
            chain = False
        else:
            self._lengths[keys[n]] = len(top)
            chain = full.startswith(top)
            b[n] = len(top) if chain else common_prefix(top, full)
        upper = top  # the render of messages[:k+1], when known
        for k in range(n - 1, -1, -1):
            link = self._links.get(keys[k + 1])
            known = keys[k] in self._lengths
            current = None
            if link is None or not known:
                if upper is None:
                    upper = self._prefix(messages, k + 1, tools, day)
                current = self._prefix(messages, k, tools, day)
                if current is not None:
                    self._lengths[keys[k]] = len(current)
                link = upper is not None and current is not None and upper.startswith(current)
                self._links[keys[k + 1]] = link
            chain = chain and link
            if chain:
                b[k] = self._lengths[keys[k]]
            else:
                if current is None:
                    current = self._prefix(messages, k, tools, day)
                b[k] = common_prefix(current, full) if current is not None else b[k + 1]
                if k > 0 and (current is None or b[k] < len(current)):
                    # The template renders message k-1 differently when it is the last one (Qwen3's
                    # empty think block, for instance). Render message k-1 followed by a stand-in
                    # for message k instead: the common prefix then runs to message k's content,
                    # so message k-1 keeps all of its text and message k's role header goes with it.
                    b[k] = max(b[k], self._probe(messages, k, tools, day, full))
            b[k] = min(b[k], b[k + 1])
            upper = current
        return b

    def _marked(self, messages, tools, day, full: str):
        """Content spans (start, end, message index) in ``full``, or None when markers cannot be used."""
        marked = []
        for i, m in enumerate(messages):
            content = m.get("content")
            if isinstance(content, str) and content:
                if _MARKER_RE.search(content):
                    return None
                m = {**m, "content": chr(_OPEN_BASE + i) + content + _CLOSE}
            marked.append(m)
        if len(messages) >= 0xFFFD:
            return None
        try:
            text = _render(self.model, marked, tools, True, day)
        except Exception:
            return None
        spans, pieces, removed, last = [], [], 0, 0
        opened: dict[int, int] = {}
        for match in _MARKER_RE.finditer(text):
            pos = match.start()
            pieces.append(text[last:pos])
            last = pos + 1
            clean = pos - removed
            removed += 1
            char = match.group()
            if char == _CLOSE:
                if len(opened) != 1:
                    return None
                index, start = opened.popitem()
                spans.append((start, clean, index))
            else:
                if opened:
                    return None
                opened[ord(char) - _OPEN_BASE] = clean
        pieces.append(text[last:])
        if opened or "".join(pieces) != full:
            return None
        return spans

    # -- the whole call ----------------------------------------------------------------------
    def attribute(self, call: Call) -> CallBuckets:
        messages, keys = self._prepare(call)
        tools = call.tools
        day = call.day
        try:
            full = _render(self.model, messages, tools, True, day)
        except Exception as exc:
            raise RenderError(f"{call.where}: the chat template failed: {exc}") from None
        result = CallBuckets()
        labels = np.full(len(full), CONVERSATION, dtype=np.int8)

        b = self._boundaries(messages, keys, tools, day, full)
        labels[: b[0]] = SYSTEM
        for k, m in enumerate(messages):
            labels[b[k] : b[k + 1]] = ROLE_BUCKET[m["role"]]

        if tools:
            without = None
            for empty in (None, []):
                try:
                    without = _render(self.model, messages, empty, True, day, template_tools=True)
                    break
                except Exception:
                    continue
            if without is None:
                result.warnings.append(WARN_TOOLS_UNRENDERABLE)
            elif without == full:
                result.warnings.append(WARN_TOOLS_IGNORED)
            else:
                for start, end in inserted_regions(without, full):
                    labels[start:end] = TOOLS

        spans = self._marked(messages, tools, day, full)
        result.spans = spans is not None
        if spans is not None:
            seen = set()
            for start, end, index in spans:
                labels[start:end] = ROLE_BUCKET[messages[index]["role"]]
                seen.add(index)
            if any(m["role"] == "tool" and m.get("content") and i not in seen for i, m in enumerate(messages)):
                result.warnings.append(WARN_RESULTS_DROPPED)
        elif any(m["role"] == "tool" and m.get("content") and b[i] == b[i + 1] for i, m in enumerate(messages)):
            result.warnings.append(WARN_RESULTS_DROPPED)

        starts = np.minimum(self.model.token_starts(full), max(len(full) - 1, 0))
        counts = np.bincount(labels[starts], minlength=4) if len(starts) else np.zeros(4, dtype=np.int64)
        result.system, result.tool_definitions, result.tool_results, result.conversation = (int(c) for c in counts)
        return result
