"""A plain reference implementation of tokprof's attribution rule, for checking and timing tokprof.

Every call is done on its own, from scratch, exactly as the rule is written (README, "How tokens are
attributed"; the docstring of :mod:`tokprof.attribution`):

* the prompt is rendered (the first message shape the template accepts, starting from the shape
  the last call used), with content markers, without the tool catalogue (and with the ``default``
  template of named templates), and once for every prefix of its messages;
* the whole rendered text is tokenized with ``tokenizer.encode``;
* every token is counted in the bucket of the character it starts at.

Nothing is shared between calls but the message shape, which is part of the rule. Only rendering
(:meth:`ChatTemplate.render`), message shaping (:func:`template_messages`) and the line diff
(:func:`tokprof.base.textdiff.inserted_regions`) come from tokprof; the rest is written out here, plainly, so that it does not share tokprof's
caches or its incremental machinery.

``Reference(model).attribute(call)`` returns the same :class:`tokprof.attribution.CallBuckets`
that ``Attributor(model).attribute(call)`` does. ``timings`` adds up where the time went.
"""

from __future__ import annotations

import json
import re
import time
from collections import defaultdict

import jinja2
import numpy as np

from tokprof.attribution.attributor import RenderError
from tokprof.attribution.buckets import (
    CONVERSATION,
    RESULTS,
    SYSTEM,
    TOOLS,
    WARN_MESSAGES_DROPPED,
    WARN_NO_SPANS,
    WARN_RESULTS_DROPPED,
    WARN_SYSTEM_DROPPED,
    WARN_TOOLS_IGNORED,
    WARN_TOOLS_UNRENDERABLE,
    CallBuckets,
)
from tokprof.models.template import SHAPES, template_messages
from tokprof.base.textdiff import inserted_regions

ROLE_BUCKET = {"system": SYSTEM, "developer": SYSTEM, "tool": RESULTS, "user": CONVERSATION, "assistant": CONVERSATION}
OPEN_BASE = 0xF0000  # one opening marker per message index
CLOSE = "\U0010fffd"
MARKER = re.compile("[\U000f0000-\U000ffffd\U0010fffd]")


def prefix_length(a: str, b: str) -> int:
    """Length of the longest common prefix (binary search on slices)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def suffix_length(a: str, b: str, limit: int) -> int:
    """Length of the longest common suffix, at most ``limit``."""
    lo, hi = 0, min(len(a), len(b), limit)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid :] == b[len(b) - mid :]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def wrap(text: str, index: int) -> str:
    core = text.strip()
    if not core:
        return text
    start = len(text) - len(text.lstrip())
    return text[:start] + chr(OPEN_BASE + index) + core + CLOSE + text[start + len(core) :]


def wrap_leaves(value, index: int):
    if isinstance(value, str):
        return wrap(value, index)
    if isinstance(value, dict):
        return {k: wrap_leaves(v, index) for k, v in value.items()}
    if isinstance(value, list):
        return [wrap_leaves(v, index) for v in value]
    return value


def mark(messages: list[dict], with_calls: bool) -> list[dict] | None:
    """Messages with markers around their content (and tool calls); None if any already has a marker."""
    out = []
    for i, m in enumerate(messages):
        m = dict(m)
        for key in ("content", "reasoning_content"):
            if isinstance(m.get(key), str):
                if MARKER.search(m[key]):
                    return None
                m[key] = wrap(m[key], i)
        if with_calls and m.get("tool_calls"):
            calls = []
            for call in m["tool_calls"]:
                function = dict(call["function"])
                if MARKER.search(json.dumps(function, ensure_ascii=False)):
                    return None
                function["name"] = wrap(function["name"], i)
                function["arguments"] = wrap_leaves(function.get("arguments"), i)
                calls.append({**call, "function": function})
            m["tool_calls"] = calls
        out.append(m)
    return out


def unmark(text: str):
    """(text without markers, [(start, end, message index)]), or None when markers do not pair up."""
    pieces, spans, opened, last, removed = [], [], None, 0, 0
    for match in MARKER.finditer(text):
        pos = match.start()
        pieces.append(text[last:pos])
        last = pos + 1
        here = pos - removed  # the marker's position in the text without markers
        removed += 1
        if match.group() == CLOSE:
            if opened is None:
                return None
            spans.append((opened[1], here, opened[0]))
            opened = None
        else:
            if opened is not None:
                return None
            opened = (ord(match.group()) - OPEN_BASE, here)
    if opened is not None:
        return None
    pieces.append(text[last:])
    return "".join(pieces), spans


def clamp(b: list[int], spans: list[tuple[int, int, int]], n: int) -> list[int]:
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
            high = first[k] if first[k] is not None else out[k]
            if floor <= high:
                out[k] = min(max(out[k], floor), high)
        if last[k] is not None:
            floor = max(floor, last[k])
    out[n] = max(out[n], floor)
    for k in range(1, n + 1):
        out[k] = max(out[k], out[k - 1])
    return out


def hf_tokenizer(model):
    """The Hugging Face tokenizer of a model: its counter's, or the converted one a fast counter falls
    back to (the reference tokenizes with it, independently of tokprof's counter)."""
    counter = model.counter
    return counter.tokenizer if hasattr(counter, "tokenizer") else counter.fallback.tokenizer


class Reference:
    def __init__(self, model):
        self.model = model
        self.tokenizer = hf_tokenizer(model)
        self.shape = SHAPES[0]
        self.timings: dict[str, float] = defaultdict(float)

    def render(self, what: str, messages, tools, generation: bool, day, lenient=False, template_tools=None) -> str:
        start = time.perf_counter()
        try:
            return self.model.prompt_format.render(
                messages,
                tools,
                add_generation_prompt=generation,
                day=day,
                lenient=lenient,
                template_tools=template_tools,
            )
        finally:
            self.timings["render " + what] += time.perf_counter() - start

    # -- the parts of the rule ------------------------------------------------------------------
    def prefix(self, messages, k, tools, day):
        """The render of the first k messages, without the generation prompt (None if it fails)."""
        try:
            if k == 0:
                return self.render("prefixes", [], tools, False, day, lenient=True, template_tools=bool(tools))
            try:
                return self.render("prefixes", messages[:k], tools, False, day)
            except jinja2.TemplateError:
                return self.render("prefixes", messages[:k], tools, False, day, lenient=True)
        except Exception:
            return None

    def probe(self, messages, k, tools, day, full) -> int:
        """Where message k starts, from a stand-in for it rendered after the first k messages."""
        stand_in = {"role": messages[k]["role"], "content": CLOSE}
        if "tool_call_id" in messages[k]:
            stand_in["tool_call_id"] = messages[k]["tool_call_id"]
        try:
            text = self.render("probes", messages[:k] + [stand_in], tools, False, day)
        except Exception:
            return 0
        reach = prefix_length(text, full)
        try:
            alone = self.render("probes", [stand_in], tools, False, day)
        except Exception:
            return reach
        empty = self.prefix(messages, 0, tools, day)
        if empty is None or alone.count(CLOSE) != 1:
            return reach
        header = alone[prefix_length(empty, alone) : alone.index(CLOSE)]
        return reach - suffix_length(header, full[:reach], len(header))

    def boundaries(self, messages, tools, day, full) -> list[int]:
        n = len(messages)
        b = [0] * (n + 1)
        top = self.prefix(messages, n, tools, day)
        b[n] = len(full) if top is None else prefix_length(top, full)
        for k in range(n - 1, -1, -1):
            current = self.prefix(messages, k, tools, day)
            start = prefix_length(current, full) if current is not None else None
            if k > 0 and (start is None or start < len(current)):
                probe = self.probe(messages, k, tools, day, full)
                if probe:
                    start = max(start or 0, probe)
            b[k] = min(start if start is not None else b[k + 1], b[k + 1])
        return b

    def spans(self, messages, tools, day, full):
        if len(messages) >= 0xFFFD:
            return None
        for with_calls in (True, False):
            marked = mark(messages, with_calls)
            if marked is None:
                return None
            try:
                text = self.render("marked", marked, tools, True, day)
            except Exception:
                continue
            start = time.perf_counter()
            unmarked = unmark(text)
            self.timings["unmark"] += time.perf_counter() - start
            if unmarked is not None and unmarked[0] == full:
                return unmarked[1]
        return None

    def without_tools(self, messages, day, attempts):
        for tools, template_tools in attempts:
            try:
                return self.render("without tools", messages, tools, True, day, template_tools=template_tools)
            except Exception:
                continue
        return None

    def tool_regions(self, messages, day, full, b):
        without = self.without_tools(messages, day, [(None, True), ([], True)])
        if without is None:
            return [], WARN_TOOLS_UNRENDERABLE
        if without == full:
            return [], WARN_TOOLS_IGNORED
        regions = inserted_regions(without, full)
        if self.model.prompt_format.has_default():
            default = self.without_tools(messages, day, [(None, False)])
            if default is not None and default != without and default.split("\n", 1)[0] == full.split("\n", 1)[0]:
                cutoff = next((b[k] for k, m in enumerate(messages) if m["role"] not in ("system", "developer")), b[-1])
                regions += [(s, min(e, cutoff)) for s, e in inserted_regions(default, full) if s < cutoff]
        return regions, None

    # -- one call -------------------------------------------------------------------------------
    def attribute(self, call) -> CallBuckets:
        tools, day = call.tools, call.day
        error = None
        for shape in [self.shape] + [s for s in SHAPES if s != self.shape]:
            messages = template_messages(call.messages, self.model.prompt_format, shape)
            try:
                full = self.render("full", messages, tools, True, day)
            except Exception as exc:
                error = error or exc
                continue
            self.shape = shape
            break
        else:
            raise RenderError(f"{call.where}: the chat template failed: {error}")

        result = CallBuckets()
        spans = self.spans(messages, tools, day, full)
        result.spans = spans is not None
        b = self.boundaries(messages, tools, day, full)
        if spans:
            b = clamp(b, spans, len(messages))

        start = time.perf_counter()
        labels = np.full(len(full), CONVERSATION, dtype=np.int8)
        labels[: b[0]] = SYSTEM
        for k, m in enumerate(messages):
            labels[b[k] : b[k + 1]] = ROLE_BUCKET[m["role"]]
        self.timings["labels"] += time.perf_counter() - start
        if tools:
            regions, warning = self.tool_regions(messages, day, full, b)
            if warning:
                result.warnings.append(warning)
            for s, e in regions:
                labels[s:e] = TOOLS
        if spans is not None:
            seen = set()
            for s, e, index in spans:
                labels[s:e] = ROLE_BUCKET[messages[index]["role"]]
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

        start = time.perf_counter()
        offsets = self.tokenizer.encode(full, add_special_tokens=False).offsets
        self.timings["tokenize"] += time.perf_counter() - start
        starts = np.array([s for s, _ in offsets], dtype=np.int64)
        starts = np.minimum(starts, max(len(full) - 1, 0))
        counts = np.bincount(labels[starts], minlength=4) if len(starts) else np.zeros(4, dtype=np.int64)
        result.system, result.tool_definitions, result.tool_results, result.conversation = (int(c) for c in counts)
        return result
