"""Transforms: a trace in, a trace out.

Between reading a log and attributing its calls: :func:`supply` gives a trace what its log does not
record, :func:`count_once` leaves out calls another session file already holds. Each returns the
trace it was given, changed; none reads a file or a model.
"""

from tokprof.transforms.dedupe import count_once
from tokprof.transforms.supply import supply

__all__ = ["count_once", "supply"]
