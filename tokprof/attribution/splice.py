"""Incremental rendering: a call that extends the previous call of its thread renders and tokenizes
only what it adds.

For most chat templates the prompt of messages ``[:k+m]`` is the prompt of ``[:k]`` (without the
generation prompt) followed by a text that depends only on the last few messages: then a call needs
only its new messages rendered, after a *window* of the messages before them (the conversation's
head, its leading system messages and first other message, and the last :data:`CONTEXT` messages),
and the text the window adds (``D``) is spliced onto the previous call's render. Whether a template
allows it is decided by checking, never by its name:

* on every call, in the window: the render with the new messages starts with the render without
  them (a template that rewrites earlier turns when a turn is added, Qwen3 and gpt-oss dropping
  earlier reasoning, Mistral moving tools or the system prompt before the last user message, fails
  here), each new prefix render is a prefix of it (where each new message starts), the content
  markers of the new messages fall inside ``D`` and removing them gives the plain render, and the
  render without tools adds the same ``D`` (the tool catalogue writes nothing there);
* on the first :data:`CHECK_FIRST` calls of each conversation shape (the roles of the messages the
  call adds, with or without tools): the call is also attributed in full, the rule's own way, and
  the two must agree on every bucket, warning and character of the prompt;
* on a sample throughout, each time a thread's prompt has doubled since its last check: the whole
  prompt is rendered and compared with the spliced text.

A failed check sends the call to the full render (a debug-level log message says why); a failed
first or sampled check turns splicing off for that shape (or, sampled, for the attributor). Tokens:
the previous call's tokens are kept up to the last point before the splice where every text splits
alike (:meth:`tokprof.models.counters.TiktokenCounter.split_tail`), and only the text from there on
is tokenized; the bucket counts are the previous call's less its tokens from that point, plus the
new ones. What a call keeps for the next (:class:`SpliceState`) grows in place, so a call costs what
it adds, not the length of its prompt.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tokprof.attribution.buckets import (
    CONVERSATION,
    ROLE_BUCKET,
    WARN_MESSAGES_DROPPED,
    WARN_RESULTS_DROPPED,
    WARN_SYSTEM_DROPPED,
    CallBuckets,
)
from tokprof.attribution.markers import unmark
from tokprof.attribution.prefix_renders import FAILED_PROBE, FAILED_RENDER, NEVER
from tokprof.base.textdiff import common_prefix

LOG = logging.getLogger("tokprof.attribution.splice")

#: Messages before the new ones that the window renders with them (besides the conversation's head).
CONTEXT = 2
#: A window that has grown past this many messages starts again from the last :data:`CONTEXT`.
WINDOW_MAX = 4
#: A call that adds more messages than this is rendered whole.
NEW_MAX = 64
#: Calls of each conversation shape that are attributed both ways before splicing is trusted.
CHECK_FIRST = 2
#: The reason given when the whole render, rendered to check a splice, differs from the spliced text.
CHECK_FAILED = "the whole render differs from the spliced one (a sampled check)"
#: A sampled check renders the whole prompt once the prompt has doubled since the thread's last check
#: and at least its length divided by this many characters of calls have been spliced since: about a
#: quarter of the splices' own time goes to checking (a whole render writes about 20 million
#: characters a second, a splice takes about a millisecond).
CHECK_CHARS_PER_CALL = 5000
#: Characters of the previous render searched back from the splice for a point where tokens split.
TAIL = 4096


class Grow:
    """A numpy array that grows in place (capacity doubling): a call's arrays are the previous call's,
    cut at a point and extended, without copying what stays. It starts as the array it is given,
    shared with whoever holds that one (the full render's call), and copies it when first written."""

    def __init__(self, values: np.ndarray, dtype) -> None:
        self.size = len(values)
        self.data = np.asarray(values, dtype=dtype)
        self.owned = False  # data is the caller's: copied before it is written

    def view(self) -> np.ndarray:
        return self.data[: self.size]

    def put(self, at: int, values: np.ndarray) -> None:
        """Keep the first ``at`` values, then ``values``."""
        end = at + len(values)
        if not self.owned or end > len(self.data):
            room = max(16, end + end // 2) if not self.owned else max(end, 2 * len(self.data))
            grown = np.empty(room, dtype=self.data.dtype)
            grown[:at] = self.data[:at]
            self.data, self.owned = grown, True
        self.data[at:end] = values
        self.size = end


@dataclass
class Window:
    """The messages a call rendered its new ones after: the head (``head`` leading messages), then
    messages ``start`` to ``end`` - 1, and their render without the generation prompt, with and
    without tools (None when there are none)."""

    head: int
    start: int
    end: int
    top: str
    top_without_tools: str | None


@dataclass
class SpliceState:
    """What a call leaves for the next call of its thread to splice onto: its render without the
    generation prompt (``body``, in pieces) and the generation prompt, every character's bucket, its
    token starts and bucket counts, where each message starts (``bounds``, clamped, with the
    generation prompt's start last), each message's bucket, the end of the last marked content, the
    roles whose content the template dropped, and the tool warning."""

    shape: str
    with_calls: bool
    body: list[str]
    body_len: int
    gen: str
    labels: Grow
    starts: Grow
    counts: np.ndarray
    bounds: Grow
    roles: Grow
    floor: int
    dropped: frozenset
    tools_warning: str | None
    window: Window | None = None
    checked_len: int = 0  # the body's length at the last check against a full render
    since_check: int = 0  # calls spliced since then
    #: Characters at the end of the body's only piece that are not the body's: that piece is then the
    #: whole render of a call (the body, then ``gen``), shared with its thread rather than copied.
    over: int = 0

    def due(self) -> bool:
        """Whether the next splice is to be checked against a whole render (see :data:`CHECK_CHARS_PER_CALL`)."""
        return (
            self.body_len >= 2 * max(self.checked_len, 1) and self.since_check * CHECK_CHARS_PER_CALL >= self.body_len
        )

    _text: str | None = field(default=None, repr=False)

    def text(self) -> str:
        """The whole prompt (joined once, when asked)."""
        if self._text is None:
            if self.over:
                self._text = self.body[0]
            else:
                if len(self.body) > 1:
                    self.body[:] = ["".join(self.body)]
                self._text = (self.body[0] if self.body else "") + self.gen
        return self._text

    def extend(self, piece: str) -> None:
        """Add ``piece`` to the body (its only piece first cut to the body, when it runs past it)."""
        if self.over:
            self.body[0] = self.body[0][: self.body_len]
            self.over = 0
        self.body.append(piece)
        self.body_len += len(piece)

    def tail(self, size: int) -> str:
        """The last ``size`` characters of the body (fewer when it is shorter)."""
        if self.over:
            return self.body[0][max(self.body_len - size, 0) : self.body_len]
        pieces: list[str] = []
        have = 0
        for piece in reversed(self.body):
            pieces.append(piece)
            have += len(piece)
            if have >= size:
                break
        text = "".join(reversed(pieces))
        return text[len(text) - min(size, len(text)) :]


def shape_key(shape: str, tools, messages: list[dict], k: int) -> tuple:
    """A conversation shape: the message shape, whether there are tools, the role before the splice,
    and the roles (with tool calls or reasoning) of the messages the call adds."""
    added = tuple((m["role"], bool(m.get("tool_calls")), bool(m.get("reasoning_content"))) for m in messages[k:])
    return (shape, bool(tools), messages[k - 1]["role"] if k else None, added)


def head_size(messages: list[dict], k: int) -> int:
    """The conversation's head: its leading system and developer messages and the first other one."""
    h = 0
    while h < k and messages[h]["role"] in ("system", "developer"):
        h += 1
    return min(h + 1, k)


def paint_added(
    size: int,
    offset: int,
    bounds: np.ndarray,
    roles: np.ndarray,
    previous_role: int,
    spans: list[tuple[int, int, int]],
    role_of,
    conversation: int,
) -> np.ndarray:
    """The buckets of the ``size`` characters a call adds, from ``offset`` on: the previous last
    message's bucket up to where the first new message starts, each new message's from where it
    starts (``bounds``, with the generation prompt's start last), the conversation's from there; then
    the new messages' marked content (``spans``, global positions, in order) in its own bucket."""
    labels = np.empty(size, dtype=np.int8)
    edges = np.clip(bounds - offset, 0, size)
    labels[: edges[0]] = previous_role
    for i in range(len(roles)):
        labels[edges[i] : edges[i + 1]] = roles[i]
    labels[edges[-1] :] = conversation
    for start, end, index in spans:
        labels[start - offset : end - offset] = role_of(index)
    return labels


def clamp_added(bounds: np.ndarray, first: dict, last: dict, floor: int, k: int) -> tuple[np.ndarray, int]:
    """:func:`tokprof.attribution._clamp` for the messages from ``k`` on (``bounds``: their starts and
    the generation prompt's), given the end of the marked text of the earlier messages (``floor``):
    each starts no later than its first marked text and after the marked text of every message before
    it. Returns the clamped starts and the new floor."""
    out = bounds.copy()
    n = len(out) - 1
    for i in range(n):
        before = int(out[i])
        high = first.get(k + i, before)
        if floor <= high:
            out[i] = min(max(before, floor), high)
        floor = max(floor, last.get(k + i, 0))
    out[n] = max(int(out[n]), floor)
    return np.maximum.accumulate(out), floor


def debug(where: str, why: str) -> None:
    LOG.debug("%s: rendered whole, not spliced: %s", where, why)


@dataclass
class Spliced:
    """A call attributed by splicing: its buckets, what it leaves to the next call, and the raw
    prefix-render lengths of its new messages (for the full path's reuse: each is a prefix of the
    prompt)."""

    buckets: Any  # tokprof.attribution.CallBuckets
    state: SpliceState
    lengths: np.ndarray  # per new prefix k+1 .. n, its render's length
    starts: np.ndarray  # ... and its common prefix with the prompt
    probes: dict  # new message -> its probe (the rule's), in the prompt's positions


def _without_tools(fmt, messages, day, generation: bool) -> tuple[int, str] | None:
    """The render with no tool catalogue, as the rule makes it (tools None, else [], with the
    template picked for tools), and which of the two worked."""
    choices: tuple[list | None, ...] = (None, [])
    for attempt, tools in enumerate(choices):
        try:
            return attempt, fmt.render(messages, tools, add_generation_prompt=generation, day=day, template_tools=True)
        except Exception:  # noqa: BLE001 - a template's own failure: the next way, or none
            continue
    return None


def _cut_generation(att, text: str) -> str | None:
    """``text`` (rendered with the template picked for tools) without its generation prompt, when the
    template's form shows that prompt is a fixed text written last and it is known
    (:meth:`tokprof.models.template.ChatTemplate.generation_is_suffix`); else None."""
    key = att.model.prompt_format.generation_suffix_key(True)
    suffix = att._suffixes.get(key) if key is not None else None
    if suffix is None or not text.endswith(suffix):
        return None
    return text[: len(text) - len(suffix)]


def splice_call(
    att, call, messages: list[dict], keys: list[bytes], digests: list[bytes], old, check: str | None = None
) -> Spliced | str:
    """The call attributed by splicing its new messages onto ``old``'s (the previous call of its
    thread, whose messages are this call's first k), or why it cannot be (a short reason).
    ``check``: the call's whole render, to compare the spliced text with. ``old``'s arrays are
    extended in place only once everything is known to work."""
    state: SpliceState = old.splice
    fmt = att.model.prompt_format
    tools, day = call.tools, call.day
    k, n = old.size, len(messages)
    if n - k > NEW_MAX:
        return "too many new messages"
    if n >= 0xFFFD:
        return "too many messages to mark"
    window = state.window
    head = head_size(messages, k)
    if window is None or window.end != k or window.head != head or k - window.start > WINDOW_MAX:
        start = max(head, k - CONTEXT)
        context = messages[:head] + messages[start:k]
        try:
            base = fmt.render_prefix(context, tools, day)
        except Exception:  # noqa: BLE001
            return "the window does not render"
        base_nt = None
        if tools:
            found = _without_tools(fmt, context, day, False)
            if found is None:
                return "the window does not render without tools"
            base_nt = found[1]
        window = Window(head, start, k, base, base_nt)
    indices = list(range(head)) + list(range(window.start, n))
    wm = [messages[i] for i in indices]
    context_len = head + k - window.start
    base = window.top
    try:
        whole = fmt.render(wm, tools, add_generation_prompt=True, day=day)
    except Exception:  # noqa: BLE001
        return "the window does not render"
    if not whole.startswith(base):
        return "the template rewrites earlier messages when these are added"
    added = whole[len(base) :]
    # where each new message starts, as the rule finds it (:meth:`Attributor._boundaries`), in the window
    found = _starts(att, wm, context_len, tools, day, whole, len(base), keys[0])
    if isinstance(found, str):
        return found
    local, prefix_lengths, prefix_starts, probes = found
    top = att._top(wm, tools, day, whole)
    if top is None or not whole.startswith(top) or len(top) < len(base):
        return "the render without the generation prompt is not a prefix of the prompt"
    local.append(len(top) - len(base))
    local = np.minimum.accumulate(np.asarray(local, dtype=np.int64)[::-1])[::-1]  # none after the next
    added_plain = top[len(base) :]
    gen = whole[len(top) :]
    # content markers of the new messages (and of the window's context, at their own indices)
    marked = att._mark(wm, [digests[i] for i in indices], state.with_calls, indices)
    if marked is None:
        return "a message holds a marker character"
    try:
        marked_text = fmt.render(marked, tools, add_generation_prompt=True, day=day)
    except Exception:  # noqa: BLE001
        return "the marked window does not render"
    del marked  # (a huge message's marked copy, 4 bytes a character, goes first)
    unmarked = unmark(marked_text)
    del marked_text
    if unmarked is None or unmarked[0] != whole:
        return "the markers change the render"
    marked_spans = unmarked[1]
    del unmarked
    spans = []
    for s, e, index in marked_spans:
        if index >= k:
            if s < len(base):
                return "a new message's content is written before the splice"
            spans.append((s - len(base) + state.body_len, e - len(base) + state.body_len, index))
        elif e > len(base):
            return "an earlier message's content is written after the splice"
    top_nt = None
    if tools:
        if state.tools_warning is not None and state.tools_warning != "tools-ignored":
            return "the template fails without tools"
        found = _without_tools(fmt, wm, day, True)
        if found is None or window.top_without_tools is None:
            return "the window does not render without tools"
        whole_nt = found[1]
        if not whole_nt.startswith(window.top_without_tools) or whole_nt[len(window.top_without_tools) :] != added:
            return "the tool catalogue changes what the new messages add"
        top_nt = _cut_generation(att, whole_nt)
        if top_nt is None:
            found_top = _without_tools(fmt, wm, day, False)
            if found_top is None or found_top[0] != found[0]:
                return "the window does not render without tools"
            top_nt = found_top[1]
    if check is not None and (
        len(check) != state.body_len + len(added)
        or not check.endswith(added)
        or check[: state.body_len] != state.text()[: state.body_len]
    ):
        return CHECK_FAILED
    # tokens: the previous call's, up to the last point before the splice where every text splits alike
    counter = att.model.counter
    split = getattr(counter, "split_tail", None)
    size = TAIL
    while True:
        tail = state.tail(size)
        cut = split(tail + added, len(tail)) if split is not None else None
        if cut is None:  # the counter cannot tell: the whole prompt is tokenized
            tail, cut = state.tail(state.body_len), 0
            break
        if cut or len(tail) >= state.body_len:
            break
        size *= 4
    q = state.body_len - len(tail) + cut
    old_starts = state.starts.view()
    j = int(np.searchsorted(old_starts, q))
    if q and (j >= len(old_starts) or old_starts[j] != q):
        return "the split point is not a token start"
    new_len = state.body_len + len(added)
    fresh = counter.token_starts(tail[cut:] + added) + q
    # buckets of the new characters
    roles = np.fromiter((ROLE_BUCKET[m["role"]] for m in messages[k:]), dtype=np.int8, count=n - k)
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for s, e, index in spans:
        first[index] = min(first.get(index, s), s)
        last[index] = max(last.get(index, 0), e)
    raw = local + state.body_len
    bounds, floor = clamp_added(raw, first, last, state.floor, k)
    bounds = np.maximum(bounds, state.bounds.view()[k - 1] if k else 0)
    old_labels = state.labels.view()
    previous_role = int(state.roles.view()[k - 1]) if k else CONVERSATION
    labels_added = paint_added(
        len(added), state.body_len, bounds, roles, previous_role, spans, lambda index: roles[index - k], CONVERSATION
    )
    last_char = max(len(old_labels) - 1, 0)
    gone = np.bincount(old_labels[np.minimum(old_starts[j:], last_char)], minlength=4)
    state.labels.put(state.body_len, labels_added)
    labels = state.labels.view()
    came = np.bincount(labels[np.minimum(fresh, max(new_len - 1, 0))], minlength=4)
    counts = state.counts - gone[:4] + came[:4]
    seen = {index for _, _, index in spans}
    dropped = set(state.dropped)
    for i in range(k, n):
        if i not in seen and att._contentful(digests[i], messages[i]):
            dropped.add(messages[i]["role"])
    result = CallBuckets()
    if tools and state.tools_warning:
        result.warnings.append(state.tools_warning)
    if "tool" in dropped:
        result.warnings.append(WARN_RESULTS_DROPPED)
    if dropped & {"system", "developer"}:
        result.warnings.append(WARN_SYSTEM_DROPPED)
    if dropped & {"user", "assistant"}:
        result.warnings.append(WARN_MESSAGES_DROPPED)
    result.system, result.tool_definitions, result.tool_results, result.conversation = (int(c) for c in counts)
    # what the next call splices onto: the same arrays, cut and extended
    state.starts.put(j, fresh)
    state.bounds.put(k, bounds)
    state.roles.put(k, roles)
    state.extend(added_plain)
    state.gen, state._text = gen, None
    state.counts, state.floor, state.dropped = counts, floor, frozenset(dropped)
    state.window = Window(head, window.start, n, top, top_nt)
    state.since_check = 0 if check is not None else state.since_check + 1
    if check is not None:
        state.checked_len = state.body_len
    shift = state.body_len - len(added_plain) - len(base)  # window positions to the prompt's (the old body)
    lengths = np.asarray(prefix_lengths + [len(top)], dtype=np.int64)
    starts_of = np.asarray(prefix_starts + [len(top)], dtype=np.int64)
    lengths = np.where(lengths >= 0, lengths + shift, lengths)
    moved = {k + i: (p if not p else (p[0] + shift, p[1] + shift, p[2])) for i, p in probes.items()}
    return Spliced(result, state, lengths, starts_of + shift, moved)


def _starts(att, wm: list[dict], context_len: int, tools, day, whole: str, base: int, key: bytes):
    """Where each new message of the window starts in its render ``whole`` (relative to the splice at
    ``base``; the first new message starts there), by the rule: the common prefix of the prefix render
    with ``whole``, and where that render stops short of it, the probe (the previous message followed
    by a stand-in), as long as everything found is after the splice. Also each new prefix render's
    length and common prefix with ``whole`` (-1 and 0 when it failed) and the probes, by new message.
    A short reason instead when the rule cannot be followed in the window."""
    local, lengths, starts, probes = [0], [], [], {}
    for i in range(context_len + 1, len(wm)):
        text = att._prefix(wm, i, tools, day)
        failed = text is None
        common = 0 if failed else common_prefix(text, whole)
        lengths.append(FAILED_RENDER if failed else len(text))
        starts.append(common)
        value = NEVER if failed else common
        if failed or common < len(text):
            probe = att._probe(wm, i, tools, day, whole, key)
            probes[i - context_len] = probe
            if probe is not FAILED_PROBE and probe[2] is not None and probe[0] - len(probe[2]) < base:
                return "a probe reaches before the splice"
            reach = att._probe_start(probe, whole)
            if reach:
                value = reach if failed else max(common, reach)
        if value < base:
            return "a new message starts before the splice"
        local.append(value - base if value != NEVER else NEVER)
    return local, lengths, starts, probes
