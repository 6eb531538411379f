"""A long prompt that extends nothing remembered: where each message starts, from windows.

The rule (:meth:`tokprof.attribution.attributor.Attributor._boundaries`) finds where message k
starts from the render of the first k messages (``P_k``): its length and its common prefix with the
whole prompt ``F``, and where ``P_k`` stops short of ``F``, a probe (message k-1 followed by a
stand-in for message k). Rendering every ``P_k`` of a fresh prompt of n messages renders n^2 / 2
messages. Here each ``P_k`` is rendered as a *window* instead: the conversation's head (its leading
system and developer messages and the first other one) and the few messages before message k,
aligned with ``F`` at an *anchor*, an earlier cut whose window render ends exactly where a prefix of
``F`` ends. What a window adds after its anchor is compared with ``F`` from the anchor's position
on, which gives ``P_k``'s length and common prefix with ``F`` (and the probe's) as the rule would
have them, if the template writes each message as a function of itself and its neighbours.

That is checked, never assumed from a template's name; any check that fails gives up (the caller
renders the prompt the usual way):

* the head's prefix render ends where ``F``'s head does (a template that writes the head from later
  messages fails here), and every window render starts with its anchor's (the window's earlier
  messages are not rewritten by the later ones);
* the windows cover ``F``: the last window's render without the generation prompt ends where the
  prompt's own does, every piece of it equal to ``F`` (a template that rewrites earlier turns when
  later ones come, Qwen3 dropping earlier reasoning or Mistral moving the system prompt before the
  last user message, or numbers its messages, renders a window unlike ``F`` there);
* two prefixes from the middle on (the first whose render is a prefix of ``F`` and the first that
  needs a probe) are rendered whole, the rule's way, and must give the same lengths, common
  prefixes and probes.

Windows are rendered without the tool catalogue when the call has one (the template picked for tools
still): what they add after their anchor is compared with ``F``, which has the tools, so a template
that writes tools among the messages fails the checks; the sampled prefixes have the tools.
"""

from __future__ import annotations

import numpy as np

from tokprof.attribution.prefix_renders import FAILED_RENDER, NEVER, UNKNOWN
from tokprof.attribution.splice import head_size
from tokprof.base.textdiff import common_prefix
from tokprof.models.template import held_limits

#: Messages before a new anchor that its window renders (besides the conversation's head).
CONTEXT = 2
#: A window re-anchors once it holds this many messages after its start and ends on a clean cut.
WINDOW = 6
#: A window that has grown past this many messages without a clean cut gives up (the rule then).
WINDOW_CAP = 48


class _Windows:
    """Renders of the head followed by messages ``start`` .. k - 1, aligned with ``full``."""

    def __init__(self, att, messages: list[dict], tools, day, full: str) -> None:
        self.att, self.messages, self.day, self.full = att, messages, day, full
        self.fmt = att.model.prompt_format
        self.template_tools = True if tools else None
        self.tools: list | None = None if tools else tools
        self.head = head_size(messages, len(messages))

    def render(self, start: int, end: int, extra: list[dict] | None = None) -> str:
        parts = self.messages[: self.head] + self.messages[start:end] + (extra or [])
        return self.fmt.render(parts, self.tools, False, self.day, template_tools=self.template_tools)

    def first(self) -> str:
        """The head's window render; with tools, rendered with ``tools=None`` else ``[]``."""
        try:
            return self.render(self.head, self.head)
        except Exception:  # noqa: BLE001 - a template's own failure: the other way, or none
            if self.template_tools is None:
                raise
            self.tools = []
            return self.render(self.head, self.head)


def windowed_boundaries(att, messages: list[dict], key: bytes, tools, day, full: str):
    """What :meth:`Attributor._boundaries` gives for a prompt with nothing remembered (b, and the
    prefixes' lengths, common prefixes with ``full``, probes and False), from windows; or a short
    reason why not."""
    n = len(messages)
    win = _Windows(att, messages, tools, day, full)
    h = win.head
    if not 0 < h < n:
        return "no messages after the head"
    lengths = np.full(n + 1, UNKNOWN, dtype=np.int64)
    starts = np.zeros(n + 1, dtype=np.int64)
    probes: dict[int, tuple] = {}
    for k in range(h + 1):  # the head's prefixes, rendered whole (a few short renders)
        text = att._prefix(messages, k, tools, day)
        if text is None:
            lengths[k] = FAILED_RENDER
        else:
            lengths[k], starts[k] = len(text), common_prefix(text, full)
    if lengths[h] < 0 or starts[h] != lengths[h]:
        return "the prompt's head is not the head's render"
    top = att._top(messages, tools, day, full)
    if top is None or not full.startswith(top):
        return "the render without the generation prompt is not a prefix of the prompt"
    lengths[n] = starts[n] = len(top)
    try:
        with held_limits():  # hundreds of small renders: the limits set once (a limit hit: the rule's way)
            found = _walk(att, win, key, tools, lengths, starts, probes)
    except Exception:  # noqa: BLE001
        return "a window does not render"
    if found is not None:
        return found
    for k, (common, reach, _) in probes.items():  # outside held_limits: a failure there is the template's,
        probes[k] = (common, reach, att._header(messages, k, tools, day, key))  # and _header remembers it
    reason = _sampled(att, messages, key, tools, day, full, lengths, starts, probes)
    if reason is not None:
        return reason
    return _bounds(att, messages, key, tools, day, full, lengths, starts, probes)


def _walk(att, win: _Windows, key: bytes, tools, lengths: np.ndarray, starts: np.ndarray, probes: dict) -> str | None:
    """Fill in the windows' prefix lengths, common prefixes and probes of messages head + 1 .. n - 1,
    and check that the windows cover the prompt's render up to the generation prompt (its length is
    ``lengths[n]``): None, or a reason why they cannot be used."""
    messages, full, h, n = win.messages, win.full, win.head, len(win.messages)
    base, start, x = win.first(), h, int(lengths[h])  # the anchor: base's end is full's x
    for k in range(h + 1, n + 1):
        text = win.render(start, k)
        if not text.startswith(base):
            return "a window's render does not start with its anchor's"
        added = len(text) - len(base)
        length = x + added
        common = x + common_prefix(text[len(base) :], full[x:length])
        if k == n:  # the windows end where the prompt's body does
            return None if common == length == lengths[n] else "the windows do not cover the prompt"
        lengths[k], starts[k] = length, common
        if common < length:
            probe = win.render(start, k, [att._stand_in(messages[k])])
            if not probe.startswith(base):
                return "a window's probe does not start with its anchor's"
            reach = len(probe) - len(base)
            # the header after the walk (windowed_boundaries): _header takes a render's failure for the
            # template's and remembers it, and held_limits' time limit may stop any render in the walk
            probes[k] = (x + common_prefix(probe[len(base) :], full[x : x + reach]), x + reach, None)
        elif k - start >= WINDOW:
            start = max(h, k - CONTEXT)
            base, x = win.render(start, k), length
        if k - start > WINDOW_CAP:
            return "no clean cut in a window's span"
    return None


def _sampled(att, messages, key: bytes, tools, day, full: str, lengths, starts, probes: dict) -> str | None:
    """Render a few prefixes whole, the rule's way, and compare them with the windows' (None: they agree)."""
    n = len(messages)
    h = head_size(messages, n)
    later = range(max(n // 2, h + 1), n)
    clean = next((k for k in later if starts[k] == lengths[k]), None)
    short = next((k for k in later if starts[k] < lengths[k]), None)
    for k in (clean, short):
        if k is None:
            continue
        text = att._prefix(messages, k, tools, day)
        if text is None or (len(text), common_prefix(text, full)) != (int(lengths[k]), int(starts[k])):
            return f"the window of prefix {k} is not its render"
        if k in probes and att._probe(messages, k, tools, day, full, key) != probes[k]:
            return f"the window of probe {k} is not its render"
    return None


def _bounds(att, messages, key: bytes, tools, day, full: str, lengths, starts, probes: dict):
    """b from the prefixes, as :meth:`Attributor._boundaries` makes it (only a prefix of the head may
    have failed to render)."""
    n = len(messages)
    failed = lengths < 0
    values = np.where(failed, NEVER, starts)
    short = failed | (starts < lengths)
    short[0] = short[n] = False
    for k in np.flatnonzero(short).tolist():
        probe = probes.get(k)
        if probe is None:  # a prefix of the head: its probe rendered whole
            probe = probes[k] = att._probe(messages, k, tools, day, full, key)
        reach = att._probe_start(probe, full)
        if reach:
            values[k] = reach if failed[k] else max(int(starts[k]), reach)
    b = np.minimum.accumulate(values[::-1])[::-1]
    return b.tolist(), (lengths, starts, probes, False)
