"""A message's probe from a window: what a template that rewrites earlier turns costs a call.

Where the render of a prompt's first k messages (``P_k``) stops short of the whole prompt ``F``, the
rule (:meth:`tokprof.attribution.attributor.Attributor._boundaries`) renders a *probe*: the first k
messages followed by a stand-in for message k, and takes where it parts from ``F``. Templates that
drop an assistant's reasoning once a later user turn comes (Qwen3, gpt-oss, DeepSeek) make every
``P_k`` of the stretch before the last user turn stop short of ``F``: a call that adds a user turn
then needs a probe per message of that stretch, each a render of the whole prompt (the prompt stops
carrying that reasoning, and each earlier message's start is where its probe parts from ``F``).

Here a probe is rendered as a *window*: the conversation's head (:func:`head_size`), then the
messages from a little before an *anchor* j (the last prefix before k whose render is a prefix of
``F``: ``P_j`` ends at ``F``'s ``lengths[j]``) up to k, then the stand-in. The window's render of the
head and of the messages up to the anchor must be ``F``'s text there, character for character (so
the window writes the anchor's surroundings as ``F`` does), the probe's window must start with it,
and what the probe adds after it is compared with ``F`` from ``lengths[j]`` on: the probe's common
prefix with ``F`` and its length, as the whole probe would give them if the template writes each
message from itself, its neighbours and the last user turn before it (which the window holds, the
anchor being after it). The same windows, without the stand-in, give the render of the first k
messages for a k the previous call of the thread did not have (its new messages). With tools the
windows are rendered without them, as :mod:`tokprof.attribution.window_starts` renders its own.

That is checked, never assumed: the first :data:`CHECK_FIRST` window probes of an attributor, and
every :data:`CHECK_EVERY`-th after them, are also rendered whole, and one that differs turns windows
off for the attributor's probes and prefixes (a debug-level log message says so).
"""

from __future__ import annotations

import logging

from tokprof.attribution.splice import head_size
from tokprof.base.textdiff import common_prefix

LOG = logging.getLogger("tokprof.attribution.splice")

#: Messages before the anchor that a probe's window holds (besides the head).
CONTEXT = 2
#: A probe whose window would hold more messages than this is rendered whole.
WINDOW_MAX = 96
#: Window probes of an attributor checked against whole probes before they are trusted ...
CHECK_FIRST = 2
#: ... and one in this many after that.
CHECK_EVERY = 64


class ProbeChecks:
    """An attributor's record of its window probes: how many were made, and whether they are off."""

    def __init__(self) -> None:
        self.made = 0
        self.off = False

    def due(self) -> bool:
        """Whether the next window probe is also to be rendered whole and compared."""
        return self.made < CHECK_FIRST or self.made % CHECK_EVERY == 0


class ProbeWindows:
    """Probes (and prefix renders) of one call's messages from windows (``lengths`` and ``starts``: what
    is known of its prefixes' renders, as :meth:`Attributor._boundaries` holds them). With tools, the
    windows are rendered without them (the template picked for tools still, as
    :mod:`tokprof.attribution.window_starts` does): the head's render without tools stands for ``F``'s
    head, and what follows it is compared with ``F``, which has the tools."""

    def __init__(self, att, messages: list[dict], tools, day, full: str, lengths, starts) -> None:
        self.att, self.messages, self.tools, self.day, self.full = att, messages, tools, day, full
        self.lengths, self.starts = lengths, starts
        self.head = head_size(messages, len(messages))
        self._bases: dict[tuple[int, int], str | None] = {}
        self._top: str | None = None  # the head's window render

    def _clean(self, k: int) -> bool:
        return 0 <= int(self.lengths[k]) == int(self.starts[k])

    def _render(self, parts: list[dict]) -> str | None:
        fmt = self.att.model.prompt_format
        try:
            if self.tools:
                return fmt.render(parts, None, add_generation_prompt=False, day=self.day, template_tools=True)
            return fmt.render(parts, self.tools, add_generation_prompt=False, day=self.day)
        except Exception:  # noqa: BLE001 - a template's own failure: the probe is rendered whole
            return None

    def _base(self, s: int, j: int) -> str | None:
        """The window of the head and messages s .. j - 1, when what follows the head's window is
        ``F``'s text there."""
        key = (s, j)
        if key not in self._bases:
            h, full, lengths = self.head, self.full, self.lengths
            if self._top is None:
                self._top = self._render(self.messages[:h])
            top = self._top
            text = self._render(self.messages[:h] + self.messages[s:j])
            at_head, at_s, at_j = int(lengths[h]), int(lengths[s]), int(lengths[j])
            if (
                top is None
                or text is None
                or at_s < at_head
                or not text.startswith(top)
                or (not self.tools and len(top) != at_head)
                or text[len(top) :] != full[at_s:at_j]
            ):
                text = None
            self._bases[key] = text
        return self._bases[key]

    def render(self, k: int, stand_in: bool) -> tuple[int, int] | None:
        """The first k messages' render (followed by a stand-in for message k: its probe) compared
        with ``F``: (their common prefix, the render's length) from a window; None when no window
        can give it (the caller renders it whole)."""
        h = self.head
        if k <= h + 1 or k >= len(self.messages) + (0 if stand_in else 1):
            return None
        j = k if stand_in else k - 1
        while j > h and not self._clean(j):
            j -= 1
        s = max(h, j - CONTEXT)
        while s > h and not self._clean(s):
            s -= 1
        if not self._clean(j) or not self._clean(s) or not self._clean(h) or k - s > WINDOW_MAX:
            return None
        base = self._base(s, j)
        if base is None:
            return None
        extra = [self.att._stand_in(self.messages[k])] if stand_in else []
        window = self._render(self.messages[:h] + self.messages[s:k] + extra)
        if window is None or not window.startswith(base):
            return None
        at = int(self.lengths[j])
        added = window[len(base) :]
        return at + common_prefix(added, self.full[at : at + len(added)]), at + len(added)


def window_probe(att, checks: ProbeChecks, windows: ProbeWindows, k: int, key: bytes) -> tuple | None:
    """Message k's probe from a window with its header (:meth:`Attributor._probe`'s tuple), checked
    against the whole probe when due; None when the window cannot give it or window probes are off."""
    if checks.off:
        return None
    found = windows.render(k, True)
    if found is None:
        return None
    w = windows
    probe = (found[0], found[1], att._header(w.messages, k, w.tools, w.day, key))
    due = checks.due()
    checks.made += 1
    if due:
        whole = att._probe(w.messages, k, w.tools, w.day, w.full, key)
        if whole != probe:
            checks.off = True
            LOG.debug("a probe's window differs from its whole render (message %d): probes rendered whole", k)
            return whole
    return probe


def window_prefix(att, checks: ProbeChecks, windows: ProbeWindows, k: int) -> tuple[int, int] | None:
    """The render of the first k messages compared with ``F`` (common prefix, length) from a window,
    checked against the whole render when due; None as :func:`window_probe`."""
    if checks.off:
        return None
    found = windows.render(k, False)
    if found is None:
        return None
    due = checks.due()
    checks.made += 1
    if due:
        w = windows
        text = att._prefix(w.messages, k, w.tools, w.day)
        whole = None if text is None else (common_prefix(text, w.full), len(text))
        if whole != found:
            checks.off = True
            LOG.debug("a prefix's window differs from its whole render (message %d): rendered whole", k)
            return whole
    return found
