"""Transforms: a trace in, a trace out.

Between reading a log and attributing its calls: :func:`supply` gives a trace what its log does not
record, :func:`count_once` leaves out calls another session file already holds, :func:`fit` gives
the chosen model's prompt format what it demands (tool-call ids of its length), :func:`thread_by_content`
sorts a capture's interleaved calls into their conversations. Each returns the
trace it was given, changed; none reads a file, and only :func:`fit` looks at the model.
"""

from tokprof.transforms import cuts  # noqa: F401  (registers its policy: drop-tools)
from tokprof.transforms.dedupe import count_once, counted_once
from tokprof.transforms.supply import supply
from tokprof.transforms.threads import thread_by_content
from tokprof.transforms.tool_ids import fit, fit_tool_call_ids

__all__ = ["count_once", "counted_once", "fit", "fit_tool_call_ids", "supply", "thread_by_content"]
