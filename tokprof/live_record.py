"""The live figures of a recording while ``tokprof record`` writes it: one :class:`LiveCall` per
recorded model call, as the call completes.

Each recorded line is read on its own (:mod:`tokprof.formats.recorded`) and given to a
:class:`tokprof.live.LiveSession`, which counts its buckets with the model's counter (a closed
model's stated proxy: an estimate, anchored on the reported usage), measures the fill of its model's
context window against the thresholds and keeps the cost and cache read share so far.

The main conversation is told apart as the call goes (the whole-file threading of
:mod:`tokprof.transforms.threads` needs the calls to come): a call is on the main thread when it
offers tools with the system prompt of the first call that offered tools; other calls (Claude Code's
haiku side calls, subagents with their own system prompt) are figures of their own, never a crossing
of the main conversation's thresholds nor what it added.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from tokprof.attribution.estimates import UNRECORDED, scale_buckets

from tokprof.formats.recorded import call_of
from tokprof.live import THRESHOLDS, LiveCall, LiveSession
from tokprof.trace import Call


class LiveRecording:
    """A recording's calls' figures, fed one recorded line at a time (``add``)."""

    def __init__(
        self, path: str, *, thresholds: tuple[float, ...] = THRESHOLDS, model: str | None = None, price: bool = True
    ):
        self.path = path
        self.session = LiveSession(path, thresholds=thresholds, model=model, price=price)
        self.lines = 0
        self._main: str | None = None  # the JSON of the main conversation's system messages

    def add(self, record: Any) -> LiveCall | None:
        """The figures of one recorded line (a dict as the recording holds it), or None when the line
        holds no model call (``count_tokens``, an error response, another endpoint)."""
        self.lines += 1
        call = call_of(self.path, self.lines, record)
        if call is None:
            return None
        call.thread = "" if self._is_main(call) else "side"
        return _whole(self.session.figures(call))

    def _is_main(self, call: Call) -> bool:
        if not call.tools:
            return False
        system = json.dumps(
            [m for m in call.messages if m.get("role") in ("system", "developer")], sort_keys=True, default=str
        )
        if self._main is None:
            self._main = system
        return system == self._main


def _whole(figures: LiveCall) -> LiveCall:
    """A recorded prompt is recorded whole: its counted buckets are scaled to the reported prompt
    (a live session of an agent's transcript puts what its count lacks in ``unrecorded``)."""
    if figures.buckets is None:
        return figures
    counted = {name: n for name, n in figures.buckets.items() if name != UNRECORDED}
    if figures.basis != "reported" or sum(counted.values()) == figures.prompt:
        return replace(figures, buckets=counted)
    return replace(figures, buckets=scale_buckets(counted, figures.prompt))
