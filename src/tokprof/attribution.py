"""Attribute every token of a call's prompt to one of four buckets.

The prompt is rendered once with the model's chat template and tokenized once. Each character of
the rendered text gets an owner, and each token is counted in the bucket of the character it starts
at, so the buckets are never negative and always add up to the prompt's token count.

Owners, strongest first:

1. **Message content.** Each message's content, and the names and argument values of its tool
   calls, are wrapped in private-use marker characters (inside surrounding whitespace, which
   templates often trim) for one extra render; where the markers land is where that text is. (The
   markers are used only if removing them gives back exactly the plain render, so they can never
   change a count.)
2. **Tool definitions.** The prompt is rendered again without the tool catalogue (``tools=None``,
   or ``tools=[]`` for templates that fail on None); whatever the full render has that this one
   lacks (the tool JSON, and the instructions and headers a template adds for tools) is owned by
   the tool catalogue. Named templates are also compared with their ``default`` template before
   the first conversation message (Hermes' function-calling preamble).
3. **Message scaffolding.** Rendering the first k messages (no generation prompt) gives the point
   where message k starts: the length of the longest common prefix of that render and the full one,
   kept between the marked text of message k-1 and that of message k.
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
from tokprof.models.template import SHAPES, template_messages
from tokprof.textdiff import common_prefix, common_suffix, inserted_regions
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
WARN_SYSTEM_DROPPED = "system-dropped"
WARN_MESSAGES_DROPPED = "messages-dropped"
WARN_NO_SPANS = "spans-unavailable"
WARNINGS = {
    WARN_TOOLS_IGNORED: "the chat template does not render tool definitions: tool_definitions is 0 "
    "because the template ignores the tools, not because they cost nothing",
    WARN_TOOLS_UNRENDERABLE: "the chat template fails without tools (both tools=None and tools=[]): "
    "tool definition scaffolding could not be separated and is counted with the messages around it",
    WARN_RESULTS_DROPPED: "the chat template drops the content of some tool results: they are not in the "
    "prompt, so tool_results does not count them",
    WARN_SYSTEM_DROPPED: "the chat template drops a system or developer message: it is not in the prompt, "
    "so system does not count it",
    WARN_MESSAGES_DROPPED: "the chat template drops the content of some user or assistant messages",
    WARN_NO_SPANS: "the chat template changes message content in a way tokprof cannot follow (content markers "
    "could not be used): buckets rest on message boundaries alone and may be less precise",
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


def _wrap(text: str, index: int) -> str:
    """Put markers around text, inside its leading and trailing whitespace (templates often trim content)."""
    core = text.strip()
    if not core:
        return text
    start = len(text) - len(text.lstrip())
    return text[:start] + chr(_OPEN_BASE + index) + core + _CLOSE + text[start + len(core) :]


def _wrap_leaves(value, index: int):
    if isinstance(value, str):
        return _wrap(value, index)
    if isinstance(value, dict):
        return {k: _wrap_leaves(v, index) for k, v in value.items()}
    if isinstance(value, list):
        return [_wrap_leaves(v, index) for v in value]
    return value


def _mark(messages: list[dict], with_calls: bool) -> list[dict] | None:
    marked = []
    for i, m in enumerate(messages):
        m = dict(m)
        for key in ("content", "reasoning_content"):
            if isinstance(m.get(key), str):
                if _MARKER_RE.search(m[key]):
                    return None
                m[key] = _wrap(m[key], i)
        if with_calls and m.get("tool_calls"):
            calls = []
            for call in m["tool_calls"]:
                function = dict(call["function"])
                if _MARKER_RE.search(json.dumps(function, ensure_ascii=False)):
                    return None
                function["name"] = _wrap(function["name"], i)
                function["arguments"] = _wrap_leaves(function.get("arguments"), i)
                calls.append({**call, "function": function})
            m["tool_calls"] = calls
        marked.append(m)
    return marked


def _unmark(text: str) -> tuple[str, list[tuple[int, int, int]]] | None:
    """The text without markers, and the spans (start, end, message index) they enclosed."""
    spans, pieces, removed, last = [], [], 0, 0
    opened: tuple[int, int] | None = None
    for match in _MARKER_RE.finditer(text):
        pos = match.start()
        pieces.append(text[last:pos])
        last = pos + 1
        clean = pos - removed
        removed += 1
        char = match.group()
        if char == _CLOSE:
            if opened is None:
                return None
            spans.append((opened[1], clean, opened[0]))
            opened = None
        else:
            if opened is not None:
                return None
            opened = (ord(char) - _OPEN_BASE, clean)
    if opened is not None:
        return None
    pieces.append(text[last:])
    return "".join(pieces), spans


class Attributor:
    """Attributes calls of one log; caches prefix renders shared between calls."""

    def __init__(self, model: ChatModel):
        self.model = model
        self._messages: dict[tuple[int, str], tuple[dict, dict, bytes]] = {}  # (id, shape) -> (original, templated, digest)
        self._lengths: dict[bytes, int] = {}  # prefix key -> length of its render
        self._links: dict[bytes, bool] = {}  # key of prefix k+1 -> render k is a prefix of render k+1
        self._shape = SHAPES[0]

    # -- messages and keys -------------------------------------------------------------------
    def _prepare(self, call: Call, shape: str | None = None) -> tuple[list[dict], list[bytes]]:
        shape = shape or self._shape
        templated, keys = [], []
        base = hashlib.blake2b(digest_size=16)
        base.update(self.model.template.sha256.encode())
        base.update(shape.encode())
        base.update(json.dumps(call.tools, sort_keys=True).encode())
        base.update(str(call.day).encode())
        key = base.digest()
        keys.append(key)
        for message in call.messages:
            entry = self._messages.get((id(message), shape))
            if entry is None or entry[0] is not message:
                tm = template_messages([message], self.model.template, shape)[0]
                digest = hashlib.blake2b(json.dumps(tm, sort_keys=True).encode(), digest_size=16).digest()
                entry = (message, tm, digest)
                self._messages[(id(message), shape)] = entry
            templated.append(entry[1])
            key = hashlib.blake2b(key + entry[2], digest_size=16).digest()
            keys.append(key)
        return templated, keys

    def _render_call(self, call: Call) -> tuple[list[dict], list[bytes], str]:
        """The call's messages in the first shape the template accepts, and its full render."""
        shapes = [self._shape] + [s for s in SHAPES if s != self._shape]
        error = None
        for shape in shapes:
            messages, keys = self._prepare(call, shape)
            try:
                full = _render(self.model, messages, call.tools, True, call.day)
            except Exception as exc:
                error = error or exc
                continue
            self._shape = shape
            return messages, keys, full
        raise RenderError(f"{call.where}: the chat template failed: {error}")

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
        # message k starts where that header starts in full.
        try:
            alone = _render(self.model, [stand_in], tools, False, day)
        except Exception:
            return reach
        empty = self._prefix(messages, 0, tools, day)
        if empty is None or alone.count(_CLOSE) != 1:
            return reach
        header = alone[common_prefix(empty, alone) : alone.index(_CLOSE)]
        # the header as full has it: the longest end of it that full has right before ``reach``
        # (a BOS that the stand-in alone gets, for instance, is not part of it)
        return reach - common_suffix(header, full[:reach], len(header))

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
                start = common_prefix(current, full) if current is not None else None
                if k > 0 and (start is None or start < len(current)):
                    # The template renders message k-1 differently when it is the last one (Qwen3's
                    # empty think block, for instance), or cannot render the first k messages alone
                    # (Llama 3.1 wants a user message). Render message k-1 followed by a stand-in for
                    # message k instead: the common prefix then runs to message k's content, so
                    # message k-1 keeps all of its text and message k's role header goes with it.
                    probe = self._probe(messages, k, tools, day, full)
                    if probe:
                        start = max(start or 0, probe)
                b[k] = start if start is not None else b[k + 1]
            b[k] = min(b[k], b[k + 1])
            upper = current
        return b

    def _marked(self, messages, tools, day, full: str):
        """Content spans (start, end, message index) in ``full``, or None when markers cannot be used.

        Markers go around message content and, when the template allows it, around tool call
        names and argument values too. They are used only if removing them gives back ``full``.
        """
        if len(messages) >= 0xFFFD:
            return None
        for with_calls in (True, False):
            marked = _mark(messages, with_calls)
            if marked is None:
                return None
            try:
                text = _render(self.model, marked, tools, True, day)
            except Exception:
                continue
            unmarked = _unmark(text)
            if unmarked is not None and unmarked[0] == full:
                return unmarked[1]
        return None

    def _without_tools(self, messages, day, attempts) -> str | None:
        """The call rendered with no tool catalogue, by the first of ``attempts`` (tools, template_tools) that works."""
        for tools, template_tools in attempts:
            try:
                return _render(self.model, messages, tools, True, day, template_tools=template_tools)
            except Exception:
                continue
        return None

    def _tool_regions(self, messages, day, full: str, b: list[int]) -> tuple[list[tuple[int, int]], str | None]:
        """Regions of ``full`` that are there because of the tool catalogue, and a warning code if any.

        Rendered without tools: ``tools=None``, else ``tools=[]``, with the template picked for tools.
        Named templates (Hermes: ``tool_use`` and ``default``) that fail on None are also compared with
        the ``default`` template, whose difference before the first conversation message is the
        tool-use preamble (it stays with ``tools=[]``).
        """
        without = self._without_tools(messages, day, [(None, True), ([], True)])
        if without is None:
            return [], WARN_TOOLS_UNRENDERABLE
        if without == full:
            return [], WARN_TOOLS_IGNORED
        regions = inserted_regions(without, full)
        if self.model.template.has_default():
            default = self._without_tools(messages, day, [(None, False)])
            # only when the default template writes the same kind of prompt (same first line)
            if default is not None and default != without and default.split("\n", 1)[0] == full.split("\n", 1)[0]:
                cutoff = next((b[k] for k, m in enumerate(messages) if m["role"] not in ("system", "developer")), b[-1])
                regions += [(s, min(e, cutoff)) for s, e in inserted_regions(default, full) if s < cutoff]
        return regions, None

    # -- the whole call ----------------------------------------------------------------------
    def attribute(self, call: Call) -> CallBuckets:
        messages, keys, full = self._render_call(call)
        tools = call.tools
        day = call.day
        result = CallBuckets()
        labels = np.full(len(full), CONVERSATION, dtype=np.int8)

        spans = self._marked(messages, tools, day, full)
        result.spans = spans is not None
        b = self._boundaries(messages, keys, tools, day, full)
        if spans:
            b = _clamp(b, spans, len(messages))
        labels[: b[0]] = SYSTEM
        for k, m in enumerate(messages):
            labels[b[k] : b[k + 1]] = ROLE_BUCKET[m["role"]]

        if tools:
            regions, warning = self._tool_regions(messages, day, full, b)
            if warning:
                result.warnings.append(warning)
            for start, end in regions:
                labels[start:end] = TOOLS

        if spans is not None:
            seen = set()
            for start, end, index in spans:
                labels[start:end] = ROLE_BUCKET[messages[index]["role"]]
                seen.add(index)
            dropped = {m["role"] for i, m in enumerate(messages) if (m.get("content") or "").strip() and i not in seen}
        else:
            result.warnings.append(WARN_NO_SPANS)
            dropped = {m["role"] for i, m in enumerate(messages) if m.get("content") and b[i] == b[i + 1]}
        if "tool" in dropped:
            result.warnings.append(WARN_RESULTS_DROPPED)
        if dropped & {"system", "developer"}:
            result.warnings.append(WARN_SYSTEM_DROPPED)
        if dropped & {"user", "assistant"}:
            result.warnings.append(WARN_MESSAGES_DROPPED)

        starts = np.minimum(self.model.token_starts(full), max(len(full) - 1, 0))
        counts = np.bincount(labels[starts], minlength=4) if len(starts) else np.zeros(4, dtype=np.int64)
        result.system, result.tool_definitions, result.tool_results, result.conversation = (int(c) for c in counts)
        return result


def _clamp(b: list[int], spans: list[tuple[int, int, int]], n: int) -> list[int]:
    """Keep each message's content inside its own region: message k starts no later than its first
    marked text, and after the marked text of every earlier message."""
    first = [None] * n
    last = [None] * n
    for start, end, index in spans:
        first[index] = start if first[index] is None else min(first[index], start)
        last[index] = end if last[index] is None else max(last[index], end)
    out = list(b)
    if first[0] is not None:
        out[0] = min(out[0], first[0])
    floor = 0
    for k in range(n):
        if k > 0:
            hi = first[k] if first[k] is not None else out[k]
            if floor <= hi:
                out[k] = min(max(out[k], floor), hi)
        if last[k] is not None:
            floor = max(floor, last[k])
    out[n] = max(out[n], floor)
    for k in range(1, n + 1):
        out[k] = max(out[k], out[k - 1])
    return out
