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

**Long logs.** Each call gets exactly the buckets the rule gives it on its own (a plain implementation
is ``benchmarks/reference.py``), but a call that continues an earlier one (the last call with the
same first message) does not redo what it can take from it, and takes nothing it has not checked:

* Every call's prompt is rendered in full, plain and with markers. Where it parts from the earlier
  call's render (their common prefix, one string comparison) decides the rest.
* Prefix renders: for each prefix shared with the earlier call, how its render compared with the
  earlier prompt, with that common prefix, tells how it compares with this one
  (:func:`_follow`); when it cannot tell, the prefix is rendered again. Only new prefixes are
  rendered, so a template that rewrites earlier turns costs renders, not exactness.
* Markers: the spans of the marked render's common prefix with the earlier marked render are
  taken as they were, and the rest is unmarked and compared (:func:`unmark_matching`).
* Tokens: text between added tokens is tokenized on its own, so the tokens before an added token
  inside the common prefix are the earlier call's (:meth:`TokenCounter.token_starts_reusing`).
* Splicing (:mod:`tokprof.attribution.splice`): a call that has all of the earlier call's messages and more
  renders only a window of its new messages and splices them onto the earlier render, where checks
  in the window, both ways on the first calls of each shape, and against sampled whole renders
  allow it; every other call goes the way above.
* Two shortcuts follow from a template's form, checked on its syntax tree: a template that writes
  the generation prompt last, as fixed text, gives the render without it by cutting it off
  (:meth:`PromptFormat.generation_suffix_key`); a template that reads its tools only in a head of
  its own gives the render without tools by rendering that head again
  (:meth:`ChatTemplate.tools_head`).
"""

from __future__ import annotations

import hashlib
import json
import operator
import os
from collections import OrderedDict
from dataclasses import dataclass
from typing import Sequence, cast

import numpy as np

from tokprof.models.base import ChatModel
from tokprof.attribution.recent_cache import MISSING, Recent
from tokprof.models.jsonmemo import JsonMemo
from tokprof.attribution.window_starts import windowed_boundaries
from tokprof.attribution.window_probes import ProbeChecks, ProbeWindows, window_prefix, window_probe
from tokprof.attribution.splice import CHECK_FAILED, CHECK_FIRST, Grow, SpliceState, debug, shape_key, splice_call
from tokprof.base.jsontext import same_json
from tokprof.base.textdiff import common_prefix, common_suffix, inserted_regions
from tokprof.trace import Call, PromptView
from tokprof.attribution.buckets import (
    CONVERSATION,
    ROLE_BUCKET,
    SYSTEM,
    TOOLS,
    WARN_BOUNDARIES_ESTIMATED,
    WARN_MESSAGES_DROPPED,
    WARN_NO_SPANS,
    WARN_RESULTS_DROPPED,
    WARN_SYSTEM_DROPPED,
    WARN_TOOLS_IGNORED,
    WARN_TOOLS_UNRENDERABLE,
    CallBuckets,
)
from tokprof.attribution.markers import CLOSE, mark, unmark, unmark_matching
from tokprof.attribution.prefix_renders import FAILED_PROBE, FAILED_RENDER, NEVER, UNKNOWN


class RenderError(Exception):
    """The chat template failed on a call's prompt."""


def _render(model: ChatModel, messages, tools, generation: bool, day, template_tools=None) -> str:
    return model.prompt_format.render(
        messages, tools, add_generation_prompt=generation, day=day, template_tools=template_tools
    )


def _follow(known: int, length: int, common: int) -> int | None:
    """The common prefix of a text X with a new text, from ``known`` (that of X with an old text),
    ``length`` (X's length) and ``common`` (that of the old text with the new one); None when it
    cannot be told without X: X and the new text agree up to min(known, common), and then differ
    unless X stops there or both part from the old text at the same character."""
    if known < common:
        return known
    if known > common:
        return common
    return known if known == length else None


#: How many messages a call's prefix renders may render in all (the render of the first k messages
#: renders k): past it, where each new message starts is found from the content markers and the
#: role headers instead (:meth:`Attributor._estimated`), so that a call's time stays linear in its
#: number of messages. A conversation that grows call by call renders only its new messages'
#: prefixes (a few per call), far below it; one call of 700 messages new to it reaches it.
PREFIX_BUDGET = 250_000


@dataclass
class _Thread:
    """What the last call of a conversation left to the next one: its keys, its full render, for
    each prefix k of its messages the length of that prefix's render and the common prefix of it
    with the full render (and the same for the stand-in probe of message k, when one was needed),
    and its tokens. All of it is reused only through :func:`_follow`, from the common prefix of
    the two full renders, so nothing is assumed about how the template renders a longer prompt."""

    keys: list[bytes]  # its first size + 1 entries are this call's (later calls may extend the list)
    size: int  # the call's number of messages
    rendered: str | None  # the full render (None: the splice state's, joined when asked)
    lengths: Grow  # per prefix k, its render's length (FAILED_RENDER when it failed)
    starts: Grow  # per prefix k, the common prefix of its render with full
    probes: dict  # message k -> its probe, when one was needed: (common prefix with full, length, header)
    tokens: tuple
    marked: tuple | None  # (the render, its spans, its marker positions) when markers were used
    splice: SpliceState | None = None  # what the next call may splice its new messages onto

    @property
    def full(self) -> str:
        if self.rendered is None:
            assert self.splice is not None
            self.rendered = self.splice.text()
        return self.rendered


#: Messages marked in one render: one opening marker each (0xF0000 to 0xFFFFC); a prompt with
#: more is marked this many messages at a time (:meth:`Attributor._marked_chunks`).
_MARK_CHUNK = 0xFFFD
#: Entries (prepared and marked messages) the newer generation of an attributor's caches may hold
#: before it becomes the older one (see :meth:`Attributor._forget_if_full`).
_GENERATION = 1_000
#: A message whose content is longer than this many characters is not remembered marked: its marked
#: copy (4 bytes a character, the markers being outside the Basic Multilingual Plane) is made again
#: when a render needs it, in the time that render takes anyway.
_MARK_CACHED = 1 << 16


def _huge(message: dict) -> bool:
    content = message.get("content")
    return isinstance(content, str) and len(content) > _MARK_CACHED


@dataclass
class _Prepared:
    """The last call's messages in one shape (a copy of its list), as the template gets them, the keys
    of its prefixes and its messages' digests. A call that extends it appends to the same lists:
    the lists are only ever extended in place, never changed or cut, so whoever was given them
    earlier still finds its own entries first."""

    messages: list[dict]
    templated: list[dict]
    keys: list[bytes]
    digests: list[bytes]
    prompt: Sequence[dict] = ()  # the call's own messages: a view (PromptView) tells a longer view of its list in O(1)


#: A prompt of at least this many messages that extends no remembered call is built up from its
#: prefixes (:meth:`Attributor._built_up`); a shorter one renders the prefix of each message, which
#: is quicker below about this length (an agent's prompts, Qwen2.5: 150 messages 61 ms whole against
#: 77 ms built up, 300 messages 222 ms against 156 ms, 600 messages 1.1 s against 0.3 s).
BUILD_MIN = 200
#: A prompt of at least this many messages that extends no remembered call has its message starts
#: found from windows (:meth:`Attributor._fresh`), where the checks of :mod:`tokprof.attribution.window_starts`
#: allow it; else it is built up or rendered the rule's way.
FRESH_MIN = 48
#: The most messages one step of that build-up adds (well under :data:`tokprof.attribution.splice.NEW_MAX`).
BUILD_STEP = 16


#: Conversations remembered at once (the main one and its subagents, interleaved).
_THREADS = 8
#: ... and the characters of their prompts they may hold in all, beyond twice the last one's: the
#: conversations least recently continued go first (a compacted session's earlier stretches, which
#: never continue), so what they keep follows the largest prompt, not the number of compactions.
_THREAD_CHARS = 1 << 20


def _prompt_chars(thread: _Thread) -> int:
    return len(thread.rendered) if thread.rendered is not None else (thread.splice.body_len if thread.splice else 0)


#: How many prepared and marked messages an attributor remembers before it starts them afresh (about
#: 2 kB each): what a long-lived one (``Model.count``, ``tokprof serve``) holds stays bounded.
_REMEMBERED = 40_000


class Attributor:
    """Attributes calls of one log, reusing what earlier calls of the same conversation established
    (see "Long logs" in the module's docstring)."""

    def __init__(self, model: ChatModel, keep_json: bool = False, incremental: bool | None = None):
        """``keep_json``: the caller vouches that the calls' messages and tools are not changed while
        the attributor lives (a trace's are not), so the JSON templates write of them is remembered
        from call to call; otherwise only within a call. ``incremental``: splice a call's new
        messages onto the previous call's render where checks allow it (:mod:`tokprof.attribution.splice`); by
        default unless ``TOKPROF_INCREMENTAL=0``. The buckets are the same either way."""
        self.model = model
        self.keep_json = keep_json
        self.incremental = incremental if incremental is not None else os.environ.get("TOKPROF_INCREMENTAL", "1") != "0"
        self._splice_checks: dict[tuple, int] = {}  # conversation shape -> calls checked both ways
        self._splice_off: set[tuple] = set()  # shapes whose check failed
        self._splice_failed = False  # a sampled check failed: no more splicing
        self._with_calls = True  # whether the last call's markers went around tool calls too
        self.spliced = 0  # calls attributed by splicing (for benchmarks and tests)
        self.windowed = 0  # calls whose message starts came from windows (Attributor._fresh; the same)
        self._probe_checks = ProbeChecks()  # probes from windows (tokprof.attribution.window_probes)
        self._json = JsonMemo()
        # what is remembered of messages is kept while calls use it (see _sweep)
        self._messages: Recent[tuple[int, str], tuple[dict, dict, bytes]] = (
            Recent()
        )  # (id, shape) -> (original, templated, digest)
        self._marks: Recent[tuple[bytes, int, bool], dict | None] = (
            Recent()
        )  # (digest, index, with calls) -> marked message
        self._prepared: dict[str, _Prepared] = {}  # shape -> the last call's messages, prepared
        self._tools_json: tuple = (object(), "")  # (tools, their JSON) of the last call
        self._nonblank: Recent[bytes, bool] = Recent()  # digest -> the message has content that is not blank
        self._headers: Recent[tuple, str | None] = Recent()  # (base key, role, tool_call_id) -> stand-in header
        self._suffixes: dict[str, str] = {}  # generation_suffix_key -> the generation prompt written last
        self._threads: OrderedDict[bytes, _Thread] = OrderedDict()
        self._shape = model.prompt_format.shapes[0]
        self._last: tuple | None = None  # the last call's (full render, token starts, clamped starts, b, labels, roles)

    # -- messages and keys -------------------------------------------------------------------
    def _prepare(self, call: Call, shape: str | None = None) -> tuple[list[dict], list[bytes], list[bytes]]:
        """The call's messages as the template gets them, in ``shape``; the keys of its prefixes (key k
        names the first k messages with the template, shape, tools and day; key 0 names those alone);
        and the digests of its messages."""
        shape = shape or self._shape
        tools = self._tools_json if self._tools_json[0] is call.tools else (call.tools, json.dumps(call.tools))
        if tools is not self._tools_json or not self.keep_json:
            self._json.add(call.tools)
        self._tools_json = tools
        base = hashlib.blake2b(digest_size=16)
        base.update(self.model.prompt_format.sha256.encode())
        base.update(shape.encode())
        base.update(tools[1].encode())
        base.update(str(call.day).encode())
        key = base.digest()
        # the messages the last call in this shape had in common with this one keep their keys: logs that
        # keep one list of messages give each call a slice of it, captures give each call equal copies
        last = self._prepared.get(shape)
        same = 0
        if last is not None and last.keys[0] == key:
            limit = min(len(last.messages), len(call.messages))
            if isinstance(call.messages, PromptView) and call.messages.extends(last.prompt):
                same = limit  # a longer view of the last call's list: its messages are the same objects
            elif all(map(operator.is_, last.messages, call.messages)):  # slices of one list (map stops at the shorter)
                same = limit
            while same < limit and same_json(last.messages[same], call.messages[same]):
                same += 1
        if last is not None and same and same == len(last.messages):
            # the call extends the last one: the lists grow in place (what earlier calls were given of
            # them stays as it was, and each holder knows how much of them was its own: _Thread.size)
            seen, templated, keys, digests = last.messages, last.templated, last.keys, last.digests
            seen.extend(call.messages[same:])
            key = keys[-1]
        elif same:
            assert last is not None
            seen = list(call.messages)
            templated, keys, digests = last.templated[:same], last.keys[: same + 1], last.digests[:same]
            key = keys[-1]
        else:
            seen, templated, keys, digests = list(call.messages), [], [key], []
        for message in call.messages[same:]:
            entry = self._messages.get((id(message), shape))
            if entry is None or entry[0] is not message:
                tm = self.model.prompt_format.prepare([message], shape)[0]
                digest = hashlib.blake2b(json.dumps(tm).encode(), digest_size=16).digest()  # key order counts
                entry = (message, tm, digest)
                self._messages[(id(message), shape)] = entry
                if self.keep_json:
                    self._json.add(tm)
            if not self.keep_json:
                self._json.add(entry[1])
            templated.append(entry[1])
            digests.append(entry[2])
            key = hashlib.blake2b(key + entry[2], digest_size=16).digest()
            keys.append(key)
        self._prepared[shape] = _Prepared(seen, templated, keys, digests, call.messages)
        return templated, keys, digests

    def _render_call(self, call: Call) -> tuple[list[dict], list[bytes], list[bytes], str]:
        """The call's messages in the first shape the template accepts, their keys, and its full render."""
        shapes = [self._shape] + [s for s in self.model.prompt_format.shapes if s != self._shape]
        error = None
        for shape in shapes:
            messages, keys, digests = self._prepare(call, shape)
            try:
                full = _render(self.model, messages, call.tools, True, call.day)
            except Exception as exc:
                error = error or exc
                continue
            self._shape = shape
            return messages, keys, digests, full
        raise RenderError(f"{call.where}: the chat template failed: {error}")

    # -- the parts ---------------------------------------------------------------------------
    def _prefix(self, messages, k: int, tools, day) -> str | None:
        """The render of the first k messages without the generation prompt, or None when it fails."""
        try:
            return self.model.prompt_format.render_prefix(messages[:k], tools, day)
        except Exception:
            return None

    def _top(self, messages, tools, day, full: str) -> str | None:
        """The render of all the messages without the generation prompt. When the template's form
        shows that the generation prompt is a fixed text written last
        (:meth:`ChatTemplate.generation_is_suffix`), that is ``full`` without it, once it is known."""
        source = self.model.prompt_format.generation_suffix_key(bool(tools))
        if source is None:
            return self._prefix(messages, len(messages), tools, day)
        suffix = self._suffixes.get(source)
        if suffix is not None and full.endswith(suffix):
            return full[: len(full) - len(suffix)]
        try:
            text = _render(self.model, messages, tools, False, day)
        except Exception:
            return self._prefix(messages, len(messages), tools, day)
        if full.startswith(text):
            self._suffixes[source] = full[len(text) :]
        return text

    @staticmethod
    def _stand_in(message: dict) -> dict:
        stand_in = {"role": message["role"], "content": CLOSE}
        if "tool_call_id" in message:
            stand_in["tool_call_id"] = message["tool_call_id"]
        return stand_in

    def _header(self, messages, k: int, tools, day, base: bytes) -> str | None:
        """Message k's role header, from its stand-in rendered alone (the text before the content,
        after what an empty conversation renders); None when that cannot be found."""
        stand_in = self._stand_in(messages[k])
        key = (base, stand_in["role"], stand_in.get("tool_call_id"))
        found = self._headers.find(key)
        if found is MISSING:
            header = None
            try:
                alone = _render(self.model, [stand_in], tools, False, day)
            except Exception:
                alone = None
            if alone is not None:
                remembered = self._headers.find((base, "", None))  # what an empty conversation renders
                if remembered is MISSING:
                    remembered = self._headers[(base, "", None)] = self._prefix(messages, 0, tools, day)
                empty = cast("str | None", remembered)
                if empty is not None and alone.count(CLOSE) == 1:
                    header = alone[common_prefix(empty, alone) : alone.index(CLOSE)]
            self._headers[key] = found = header
        return found  # type: ignore[return-value]

    def _probe(self, messages, k: int, tools, day, full: str, base: bytes) -> tuple:
        """Render message k-1 followed by a stand-in for message k: (common prefix with ``full``,
        length of that render, message k's header or None), or :data:`FAILED_PROBE`."""
        try:
            text = _render(self.model, messages[:k] + [self._stand_in(messages[k])], tools, False, day)
        except Exception:
            return FAILED_PROBE
        return common_prefix(text, full), len(text), self._header(messages, k, tools, day, base)

    @staticmethod
    def _probe_start(probe: tuple, full: str) -> int:
        """Where message k starts, by its probe. The common prefix runs through message k's role
        header; message k starts where that header starts in ``full``: the longest end of the header
        that ``full`` has right before the common prefix (a BOS that the stand-in alone gets, for
        instance, is not part of it)."""
        if probe is FAILED_PROBE:
            return 0
        reach, _, header = probe
        if header is None:
            return reach
        return reach - common_suffix(header, full[max(0, reach - len(header)) : reach], len(header))

    def _boundaries(
        self, messages, keys, tools, day, full: str, old: _Thread | None, shared: int, common: int, spans=None
    ):
        """b[k]: where message k starts in ``full``; b[n]: where the generation prompt starts. Also
        what is known of each prefix, for the next call.

        The start of message k is the common prefix of ``full`` and the render of the first k
        messages; where that render stops short of matching, message k-1 is rendered followed by a
        stand-in for message k (templates that render the last message differently, such as
        Qwen3's empty think block, or cannot render the first k messages alone), so that message
        k-1 keeps all of its text and message k's role header goes with it. The first ``shared``
        prefixes are those of ``old``'s call, whose full render has ``common`` characters in common
        with ``full``. When rendering the prefixes still unknown would render more than
        :data:`PREFIX_BUDGET` messages and content ``spans`` are known, the starts of messages 1 to n-1
        are estimated from them instead (see :meth:`_estimated`); the next call renders them again.
        """
        n = len(messages)
        lengths = np.full(n + 1, UNKNOWN, dtype=np.int64)  # of each prefix's render; FAILED_RENDER if none
        starts = np.zeros(n + 1, dtype=np.int64)  # its common prefix with full
        probes: dict[int, tuple] = {}
        if old is not None and shared >= 0:
            known, found = old.lengths.view()[: shared + 1], old.starts.view()[: shared + 1]
            lost = (known >= 0) & (found == common) & (found != known)  # see _follow
            lengths[: shared + 1] = np.where(lost, UNKNOWN, known)
            starts[: shared + 1] = np.where(known >= 0, np.minimum(found, common), 0)
            for k, probe in old.probes.items():
                if k + 1 > shared:
                    continue  # the probe renders a stand-in for message k, which may differ
                if probe is not FAILED_PROBE:
                    reach = _follow(probe[0], probe[1], common)
                    if reach is None:
                        continue
                    probe = (reach, probe[1], probe[2])
                probes[k] = probe
        unknown = np.flatnonzero(lengths == UNKNOWN)
        estimated: list[int] = []
        if spans is not None and int(unknown.sum()) > PREFIX_BUDGET:  # quadratic: estimate all but 0 and n
            estimated = [k for k in unknown.tolist() if 0 < k < n]
            unknown = unknown[(unknown == 0) | (unknown == n)]
        windows = None
        if self.incremental and old is not None and len(unknown):  # (TOKPROF_INCREMENTAL=0: every render whole)
            windows = ProbeWindows(self, messages, tools, day, full, lengths, starts)
        for k in unknown.tolist():  # in order: each window's anchor is an earlier prefix
            windowed = window_prefix(self, self._probe_checks, windows, k) if windows is not None and k < n else None
            if windowed is not None:
                starts[k], lengths[k] = windowed
                continue
            text = self._top(messages, tools, day, full) if k == n and n else self._prefix(messages, k, tools, day)
            if text is None:
                lengths[k] = FAILED_RENDER
            else:
                lengths[k], starts[k] = len(text), common_prefix(text, full)
        failed = lengths < 0
        values = np.where(failed, NEVER, starts)  # where message k starts, before the ones after it
        values[n] = len(full) if failed[n] else starts[n]
        short = failed | (starts < lengths)
        short[0] = short[n] = False
        if estimated:
            short[estimated] = False
            values[estimated] = self._estimated(messages, estimated, tools, day, full, keys[0], spans)
        for k in np.flatnonzero(short).tolist():
            probe = probes.get(k)
            if probe is None:
                if windows is None and self.incremental:  # (TOKPROF_INCREMENTAL=0: every probe whole)
                    windows = ProbeWindows(self, messages, tools, day, full, lengths, starts)
                if windows is not None:
                    probe = window_probe(self, self._probe_checks, windows, k, keys[0])
                if probe is None:
                    probe = self._probe(messages, k, tools, day, full, keys[0])
                probes[k] = probe
            reach = self._probe_start(probe, full)
            if reach:
                values[k] = reach if failed[k] else max(int(starts[k]), reach)
        b = np.minimum.accumulate(values[::-1])[::-1]  # no message starts after the next one
        return b.tolist(), (lengths, starts, probes, bool(estimated))

    def _estimated(self, messages, ks: list[int], tools, day, full: str, base: bytes, spans) -> list[int]:
        """Where messages ``ks`` start in ``full`` without rendering prefixes (linear in the number of
        messages): message k's role header (:meth:`_header`, one small render per role) ends where its
        first marked content starts, so it starts that header's length earlier, as far as ``full``
        has the header's end there; a message with no marked content or no header found starts where
        the next one does (:data:`NEVER`)."""
        first: dict[int, int] = {}
        for start, _, index in spans:
            if index not in first or start < first[index]:
                first[index] = start
        out = []
        for k in ks:
            start = first.get(k)
            header = None if start is None else self._header(messages, k, tools, day, base)
            if start is None or header is None:
                out.append(NEVER)
                continue
            out.append(start - common_suffix(header, full[max(0, start - len(header)) : start], len(header)))
        return out

    def _contentful(self, digest: bytes, message: dict) -> bool:
        """Whether the message has content that is not blank (remembered by digest)."""
        found = self._nonblank.find(digest)
        if found is MISSING:
            found = self._nonblank[digest] = bool((message.get("content") or "").strip())
        return bool(found)

    def _mark(
        self, messages: list[dict], digests: list[bytes], with_calls: bool, indices: list[int] | None = None
    ) -> list[dict] | None:
        """:func:`_mark`, message by message, remembered by message digest and index (``indices``: each
        message's index, when they are not 0, 1, ...)."""
        marked: list[dict] = []
        for i, m, digest in zip(indices or range(len(messages)), messages, digests):
            key = (digest, i, with_calls)
            cached = self._marks.find(key)
            found = cast("dict | None", cached)
            if cached is MISSING:
                one = mark([m], with_calls, i)
                found = None if one is None else one[0]
                if not _huge(m):  # a huge message is marked again when it is needed: held once, not twice
                    self._marks[key] = found
                    if found is not None and self.keep_json:
                        self._json.add(found)
            if found is None:
                return None
            if not self.keep_json:
                self._json.add(found)
            marked.append(found)
        return marked

    def _marked(self, messages, digests, tools, day, full: str, old: "_Thread | None", common: int):
        """Content spans (start, end, message index) in ``full``, or None when markers cannot be used;
        and what the next call may reuse (see :func:`unmark_matching`).

        Markers go around message content and, when the template allows it, around tool call
        names and argument values too. They are used only if removing them gives back ``full``.
        """
        if len(messages) >= _MARK_CHUNK:
            return self._marked_chunks(messages, digests, tools, day, full), None
        for with_calls in (True, False):
            marked = self._mark(messages, digests, with_calls)
            if marked is None:
                return None, None
            try:
                text = _render(self.model, marked, tools, True, day)
            except Exception:
                continue
            del marked  # a huge message's marked copy goes before the render is unmarked
            found = unmark_matching(text, full, old.marked if old is not None else None, common)
            if found is not None:
                self._with_calls = with_calls
                return found[0], (full, found[0], found[1])
        return None, None

    def _marked_chunks(self, messages, digests, tools, day, full: str) -> list[tuple[int, int, int]] | None:
        """Content spans of a prompt with more messages than there are markers: :data:`_MARK_CHUNK`
        messages marked at a time (the others as they are), each render unmarked and compared with
        ``full``, the spans of all in the prompt's order; None when markers cannot be used. A
        prompt of n messages renders n / :data:`_MARK_CHUNK` times (rounded up), not once per
        message's prefix."""
        n = len(messages)
        for with_calls in (True, False):
            spans: list[tuple[int, int, int]] = []
            for first in range(0, n, _MARK_CHUNK):
                last = min(first + _MARK_CHUNK, n)
                marked = self._mark(messages[first:last], digests[first:last], with_calls)
                if marked is None:
                    return None
                try:
                    text = _render(self.model, messages[:first] + marked + messages[last:], tools, True, day)
                except Exception:
                    break
                del marked
                found = unmark(text)
                if found is None or found[0] != full:
                    break
                spans += [(start, end, index + first) for start, end, index in found[1]]
            else:
                self._with_calls = with_calls
                return sorted(spans)
        return None

    def _without_tools(self, messages, day, attempts, tools=None, full: str | None = None) -> str | None:
        """The call rendered with no tool catalogue, by the first of ``attempts`` (tools, template_tools)
        that works.

        When the template reads its tools only in a head of its own (:meth:`PromptFormat.tools_head`)
        and ``full`` (the render with ``tools``) starts with that head's render, only the head is
        rendered again: the rest of the prompt is the same."""
        template = self.model.prompt_format
        head = None
        if full is not None and all(picked for _, picked in attempts) and template.tools_head(True):
            try:
                head = template.render_head(messages, tools, True, day, True)
            except Exception:
                head = None
            if head is not None and not full.startswith(head):
                head = None
        for attempt, template_tools in attempts:
            try:
                if head is not None and full is not None:
                    return template.render_head(messages, attempt, True, day, template_tools) + full[len(head) :]
                return _render(self.model, messages, attempt, True, day, template_tools=template_tools)
            except Exception:
                continue
        return None

    def _tool_regions(self, messages, tools, day, full: str, b: list[int]) -> tuple[list[tuple[int, int]], str | None]:
        """Regions of ``full`` that are there because of the tool catalogue, and a warning code if any.

        Rendered without tools: ``tools=None``, else ``tools=[]``, with the template picked for tools.
        Named templates (Hermes: ``tool_use`` and ``default``) that fail on None are also compared with
        the ``default`` template, whose difference before the first conversation message is the
        tool-use preamble (it stays with ``tools=[]``).
        """
        without = self._without_tools(messages, day, [(None, True), ([], True)], tools, full)
        if without is None:
            return [], WARN_TOOLS_UNRENDERABLE
        if without == full:
            return [], WARN_TOOLS_IGNORED
        regions = inserted_regions(without, full)
        if self.model.prompt_format.has_default():
            default = self._without_tools(messages, day, [(None, False)])
            # only when the default template writes the same kind of prompt (same first line)
            if default is not None and default != without and default.split("\n", 1)[0] == full.split("\n", 1)[0]:
                cutoff = next((b[k] for k, m in enumerate(messages) if m["role"] not in ("system", "developer")), b[-1])
                regions += [(s, min(e, cutoff)) for s, e in inserted_regions(default, full) if s < cutoff]
        return regions, None

    # -- the whole call ----------------------------------------------------------------------
    def attribute(self, call: Call) -> CallBuckets:
        if not call.messages and not call.tools:  # a prompt the log does not record at all (see Call.unrendered)
            none = np.zeros(0, np.int64)
            self._last = (
                "",
                none,
                none,
                np.zeros(1, np.int64),
                np.zeros(0, np.int8),
                np.zeros(0, np.int8),
            )  # renders nothing
            return CallBuckets()
        with self._json.using():
            try:
                return self._attribute(call)
            finally:
                if not self.keep_json:
                    self._json.clear()

    def _attribute(self, call: Call) -> CallBuckets:
        if self.incremental and not self._splice_failed and call.messages:
            found = self._try_splice(call)
            if found is None:
                found = self._fresh(call)
            if found is not None:
                return found
            if self._built_up(call):
                found = self._try_splice(call)
                if found is not None:
                    return found
        return self._attribute_full(call)

    def _fresh(self, call: Call) -> CallBuckets | None:
        """A long prompt that extends no call this attributor remembers, its message starts found
        from windows of its messages (:mod:`tokprof.attribution.window_starts`, where checks allow it), so
        that it is rendered a few times whole and once per message in a short window, not once per
        message's prefix; None when it is short, extends a remembered call, or the checks fail."""
        n = len(call.messages)
        if n < FRESH_MIN or n * (n + 1) // 2 > PREFIX_BUDGET:
            return None
        _, keys, _ = self._prepare(call)
        old = self._threads.get(keys[1] if len(keys) > 1 else keys[0])
        if old is not None and n - _shared(keys, old) < FRESH_MIN:
            return None  # the full render reuses what that call knows of the prefixes it shares
        rendered = self._render_call(call)
        found = windowed_boundaries(self, rendered[0], rendered[1][0], call.tools, call.day, rendered[3])
        if isinstance(found, str):
            debug(call.where, f"no windows: {found}")
            return None
        self.windowed += 1
        return self._attribute_full(call, rendered, found)

    def _built_up(self, call: Call) -> bool:
        """For a long prompt that extends no call this attributor remembers (a fresh request to
        ``tokprof serve``, the first call of a log that starts mid-conversation): its growing prefixes,
        cut before each assistant message as an agent's calls grow, are attributed first (the
        first rendered whole, each next one spliced onto it with every check of :mod:`tokprof.attribution.splice`),
        so that the prompt itself is spliced onto the last of them instead of rendering the prefix of
        each of its messages (quadratic in its length). Their results are not kept. False when the
        call is short, extends the last call of its conversation (splicing refused it for a reason of
        its own) or a prefix could not be spliced; and for a prompt whose prefix renders would pass
        :data:`PREFIX_BUDGET`: the full render estimates its boundaries then, in linear time, and
        the build-up, a few renders per step, would take longer (thousands of short messages)."""
        n = len(call.messages)
        if n < BUILD_MIN or n * (n + 1) // 2 > PREFIX_BUDGET:
            return False
        _, keys, _ = self._prepare(call)
        old = self._threads.get(keys[1] if len(keys) > 1 else keys[0])
        if old is not None and old.size < n and keys[old.size] == old.keys[old.size]:
            return False
        spliced = self.spliced
        try:
            for i, cut in enumerate(_cuts(call.messages)):
                part = Call(
                    index=call.index, messages=call.messages[:cut], tools=call.tools, day=call.day, where=call.where
                )
                if self._try_splice(part) is None:
                    if i or self._splice_failed:
                        return False
                    self._attribute_full(part)
        finally:
            self.spliced = spliced
        return True

    def _try_splice(self, call: Call) -> CallBuckets | None:
        """The call's buckets by splicing (:mod:`tokprof.attribution.splice`), or None: rendered whole. The first
        calls of each shape are attributed both ways (the full way's result is the one given), and
        the prompt is rendered whole and compared each time it has doubled."""
        messages, keys, digests = self._prepare(call)
        thread = keys[1] if len(keys) > 1 else keys[0]
        old = self._threads.get(thread)
        if old is None or old.splice is None or old.splice.shape != self._shape:
            return None
        k, n = old.size, len(messages)
        if n <= k or keys[k] != old.keys[k]:
            return None
        if sum(len(c) for m in messages[k:] if isinstance(c := m.get("content"), str)) > max(
            _MARK_CACHED, old.splice.body_len
        ):  # rendering the whole prompt costs at most twice splicing it, and holds the new text fewer times
            return None
        shape = shape_key(self._shape, call.tools, messages, k)
        if shape in self._splice_off:
            return None
        if self._splice_checks.get(shape, 0) < CHECK_FIRST:
            full = self._attribute_full(call)
            last, new = self._last, self._threads[thread]
            spliced = splice_call(self, call, messages, keys, digests, old)
            self._last = last
            if isinstance(spliced, str):
                debug(call.where, spliced)
            elif spliced.buckets == full and spliced.state.text() == new.full:
                self._splice_checks[shape] = self._splice_checks.get(shape, 0) + 1
            else:
                self._splice_off.add(shape)
                debug(call.where, f"splicing gave other buckets than the full render for this shape {shape[2:]}")
            return full
        state = old.splice
        check = None
        if state.due():  # a sample (the prompt has doubled since the last, and enough was spliced since)
            try:
                check = _render(self.model, messages, call.tools, True, call.day)
            except Exception:
                return None
        spliced = splice_call(self, call, messages, keys, digests, old, check)
        if isinstance(spliced, str):
            if check is not None and spliced == CHECK_FAILED:
                self._splice_failed = True
            debug(call.where, spliced)
            return None
        state = spliced.state
        self._threads.pop(thread)
        old.lengths.put(k + 1, spliced.lengths)  # the previous call's arrays, extended (it is not used again)
        old.starts.put(k + 1, spliced.starts)
        self._threads[thread] = _Thread(
            keys,
            n,
            None,
            old.lengths,
            old.starts,
            _merged(old.probes, spliced.probes),
            (state.starts.view(), None),
            None,
            state,
        )
        self._last = (state, None, state.starts.view(), state.bounds.view(), state.labels.view(), state.roles.view())
        self._evict()
        self._forget_if_full(n)
        self.spliced += 1
        return spliced.buckets

    def _evict(self) -> None:
        """Forget the conversations least recently continued past :data:`_THREADS` of them, or while
        their prompts hold more than :data:`_THREAD_CHARS` characters or twice the last one's."""
        threads = self._threads
        held = sum(_prompt_chars(thread) for thread in threads.values())
        allowed = max(_THREAD_CHARS, 2 * _prompt_chars(next(reversed(threads.values())))) if threads else 0
        while len(threads) > 1 and (len(threads) > _THREADS or held > allowed):
            held -= _prompt_chars(threads.popitem(last=False)[1])

    def _forget_if_full(self, n: int) -> None:
        """Bound what is remembered of messages (caches only: no count depends on them). A call of
        ``n`` messages ends a generation once the newer one holds more than :data:`_GENERATION` or
        four times ``n`` entries: what no call used for a whole generation (the messages before a
        compaction, a finished subagent's) is forgotten, so a long log's attributor holds what its
        largest prompts use, not every message of the log. A long-lived attributor (``Model.count``,
        ``tokprof serve``) also starts afresh past :data:`_REMEMBERED`."""
        if len(self._messages) + len(self._marks) > _REMEMBERED:
            for cache in (self._messages, self._marks, self._nonblank, self._headers):
                cache.clear()  # the memo learns the objects anew from the next call on
            self._prepared.clear()
            self._json.clear()
            self._tools_json = (object(), "")
            return
        if len(self._messages.new) + len(self._marks.new) <= max(_GENERATION, 4 * n):
            return
        for cache in (self._messages, self._marks, self._nonblank, self._headers):
            cache.age()
        if self.keep_json:  # the memo keeps the objects still remembered, and the JSON written of them
            kept: list = [entry[1] for entry in self._messages.values()]
            kept += [marked for marked in self._marks.values() if marked is not None]
            kept += [prepared.templated for prepared in self._prepared.values()]
            kept.append(self._tools_json[0])
            self._json.retain(kept)

    def _attribute_full(
        self, call: Call, rendered: tuple | None = None, boundaries: tuple | None = None
    ) -> CallBuckets:
        """The call by the rule. ``rendered``: what :meth:`_render_call` gives for it, when known;
        ``boundaries``: what :meth:`_boundaries` gives, when known (:meth:`_fresh`)."""
        messages, keys, digests, full = rendered if rendered is not None else self._render_call(call)
        tools = call.tools
        day = call.day
        result = CallBuckets()

        # the conversation this call continues, if any: the last call with the same first message
        thread = keys[1] if len(keys) > 1 else keys[0]
        old = self._threads.pop(thread, None)
        shared, common = -1, 0
        if old is not None:
            common = common_prefix(old.full, full)
            for k in range(min(len(keys), old.size + 1)):
                if keys[k] != old.keys[k]:
                    break
                shared = k

        spans, marked = self._marked(messages, digests, tools, day, full, old, common)
        result.spans = spans is not None
        if boundaries is None:
            boundaries = self._boundaries(messages, keys, tools, day, full, old, shared, common, spans)
        b, prefixes = boundaries
        if prefixes[3]:
            result.warnings.append(WARN_BOUNDARIES_ESTIMATED)
        table = np.asarray(spans or [], dtype=np.int64).reshape(-1, 3)  # rows (start, end, message index)
        if spans:
            b = _clamp(b, table, len(messages))
        roles = np.fromiter((ROLE_BUCKET[m["role"]] for m in messages), dtype=np.int8, count=len(messages))
        labels = _paint_regions(len(full), b, roles)

        warning = None
        if tools:
            regions, warning = self._tool_regions(messages, tools, day, full, b)
            if warning:
                result.warnings.append(warning)
            for start, end in regions:
                labels[start:end] = TOOLS

        if spans is not None:
            _paint_spans(labels, spans, table, roles)
            seen = {index for _, _, index in spans}
            dropped = {
                m["role"] for i, (m, d) in enumerate(zip(messages, digests)) if i not in seen and self._contentful(d, m)
            }
        else:
            result.warnings.append(WARN_NO_SPANS)
            dropped = {m["role"] for i, m in enumerate(messages) if m.get("content") and b[i] == b[i + 1]}
        if "tool" in dropped:
            result.warnings.append(WARN_RESULTS_DROPPED)
        if dropped & {"system", "developer"}:
            result.warnings.append(WARN_SYSTEM_DROPPED)
        if dropped & {"user", "assistant"}:
            result.warnings.append(WARN_MESSAGES_DROPPED)

        tokens = self.model.counter.token_starts_reusing(full, old.tokens if old is not None else None, common)
        starts = tokens[0]  # clamped to the text (a copy only when a start is past its end)
        if len(starts) and int(starts.max()) > len(full) - 1:
            starts = np.minimum(starts, max(len(full) - 1, 0))
        counts = np.bincount(labels[starts], minlength=4) if len(starts) else np.zeros(4, dtype=np.int64)
        result.system, result.tool_definitions, result.tool_results, result.conversation = (int(c) for c in counts)

        lengths, starts_of, probes, estimated = prefixes
        self._last = (full, tokens[0], starts, b, labels, roles)
        splice = None
        n = len(messages)
        if self.incremental and spans is not None and not estimated and n and 0 <= lengths[n] == starts_of[n]:
            body = int(lengths[n])
            splice = SpliceState(
                self._shape,
                self._with_calls,
                [full],
                body,
                full[body:],
                Grow(labels, np.int8),
                Grow(tokens[0], np.int64),
                counts.astype(np.int64),
                Grow(np.asarray(b, dtype=np.int64), np.int64),
                Grow(roles, np.int8),
                int(table[:, 1].max()) if len(table) else 0,
                frozenset(dropped),
                warning,
                checked_len=body,
                over=len(full) - body,
            )
        self._threads[thread] = _Thread(
            keys, n, full, Grow(lengths, np.int64), Grow(starts_of, np.int64), probes, tokens, marked, splice
        )
        self._evict()
        self._forget_if_full(n)
        return result

    # -- read-only views of the last call attributed -------------------------------------------------
    def last_prompt(self) -> tuple[str, np.ndarray]:
        """The last call's rendered prompt and the character offset at which each of its tokens starts."""
        if self._last is None:
            raise ValueError("no call attributed yet")
        if isinstance(self._last[0], SpliceState):  # the arrays grow in place: a copy of the starts
            return self._last[0].text(), self._last[2].copy()
        return self._last[0], self._last[1]

    def message_tokens(self, k: int) -> int:
        """The tokens of the last call's message k: those that start in its part of the prompt (from
        where it starts to where the next message starts) and are counted in its bucket."""
        if self._last is None:
            raise ValueError("no call attributed yet")
        _, _, starts, b, labels, roles = self._last
        lo, hi = np.searchsorted(starts, [b[k], b[k + 1]], side="left")
        return int(np.count_nonzero(labels[starts[lo:hi]] == roles[k]))


def _shared(keys: list[bytes], old: _Thread) -> int:
    """How many first messages a call has in common with ``old``'s (a key names a prefix through the
    keys before it, so the keys that agree are the first ones: found by bisection)."""
    lo, hi = 0, min(len(keys) - 1, old.size)  # keys[0] names no message
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if keys[mid] == old.keys[mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _cuts(messages: Sequence[dict]) -> list[int]:
    """Where :meth:`Attributor._built_up` cuts a long prompt: before each assistant message after the
    first two messages, and at least every :data:`BUILD_STEP` messages (in order, each short of the
    whole prompt)."""
    cuts: list[int] = []
    for i in range(2, len(messages)):
        if messages[i].get("role") == "assistant" or i - (cuts[-1] if cuts else 0) >= BUILD_STEP:
            cuts.append(i)
    return cuts


def _merged(probes: dict, new: dict) -> dict:
    """The probes of a thread's previous call (all of its messages, before the new ones) with those of
    the messages a call adds: the previous call's dict, extended (it is not used again)."""
    probes.update(new)
    return probes


def _paint_regions(size: int, b: list[int], roles: np.ndarray) -> np.ndarray:
    """Labels of ``size`` characters: ``system`` before b[0], message k's bucket from b[k] to b[k+1],
    ``conversation`` from b[n] on."""
    edges = np.asarray(b, dtype=np.int64)
    lengths = np.diff(edges, prepend=0, append=size)
    if len(lengths) and lengths.min() < 0:  # boundaries out of order: paint one by one, later ones winning
        labels = np.full(size, CONVERSATION, dtype=np.int8)
        labels[: b[0]] = SYSTEM
        for k, role in enumerate(roles):
            labels[b[k] : b[k + 1]] = role
        return labels
    values = np.empty(len(roles) + 2, dtype=np.int8)
    values[0], values[1:-1], values[-1] = SYSTEM, roles, CONVERSATION
    return np.repeat(values, lengths)


def _paint_spans(labels: np.ndarray, spans: list[tuple[int, int, int]], table: np.ndarray, roles: np.ndarray) -> None:
    """Paint each span (start, end, message index; ``table`` holds them as rows) with its message's bucket."""
    if not spans:
        return
    edges = table[:, :2].ravel()
    lengths = np.diff(edges, prepend=0, append=len(labels))
    if lengths.min() < 0:  # spans out of order (never, from markers that pair up): one by one
        for start, end, index in spans:
            labels[start:end] = roles[index]
        return
    values = np.full(2 * len(spans) + 1, -1, dtype=np.int8)
    values[1::2] = roles[table[:, 2]]
    paint = np.repeat(values, lengths)
    np.copyto(labels, paint, where=paint >= 0)


def _clamp(b: list[int], table: np.ndarray, n: int) -> list[int]:
    """Keep each message's content inside its own region: message k starts no later than its first
    marked text, and after the marked text of every earlier message. ``table``: the spans (start,
    end, message index) as rows."""
    first = np.full(n, NEVER, dtype=np.int64)
    last = np.zeros(n, dtype=np.int64)  # 0 where a message has no marked text: it raises no floor
    np.minimum.at(first, table[:, 2], table[:, 0])
    np.maximum.at(last, table[:, 2], table[:, 1])
    out = np.asarray(b, dtype=np.int64).copy()
    if n and first[0] != NEVER:
        out[0] = min(out[0], first[0])
    floors = np.maximum.accumulate(last)  # floors[k-1]: the end of the marked text of messages before k
    if n > 1:
        floor, before = floors[:-1], out[1:n]
        high = np.where(first[1:] != NEVER, first[1:], before)
        out[1:n] = np.where(floor <= high, np.minimum(np.maximum(before, floor), high), before)
    if n:
        out[n] = max(out[n], floors[-1])
    return np.maximum.accumulate(out).tolist()
