"""A log's calls as the stages take them, one at a time: read from the file by its format's reader (a
fold over its records, :func:`tokprof.formats.open_log`), threaded by content when the log is a
capture, given what the user supplies (tool definitions, a system prompt) and the tool-call ids the
model's prompt format demands. The one way a command reads a log: a whole trace is every call of one
stream (:meth:`LogCalls.trace`); a stage that needs the calls again (each policy of a what-if) asks
for another stream, which reads the file again, so no trace is held.

A capture's threads are named by what the whole log shows (the main conversation is the thread with
the most calls, :mod:`tokprof.transforms.threads`): such a log is read once more, first, keeping a
digest per message of each thread's last prompt and a number per call.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from tokprof.formats import Log, open_log
from tokprof.trace import Call, Note, Trace
from tokprof.transforms.supply import Supplier
from tokprof.transforms.threads import CAPTURE_FORMATS, Threader
from tokprof.transforms.tool_ids import ToolIdFitter


class HeldCalls:
    """A trace held whole, read as :class:`LogCalls` reads a file: each stream its calls (already
    ready for the stages: read by :meth:`LogCalls.trace`, or made by the caller); ``header``: a copy
    of the trace's other fields (the trace given is not changed)."""

    def __init__(self, trace: Trace) -> None:
        self.path = trace.path
        self._trace = trace
        self.header = dataclasses.replace(
            trace, calls=[], notes=[Note(n.code, n.message, list(n.places), list(n.calls)) for n in trace.notes]
        )
        self.size = len(trace.calls)

    @property
    def progress(self) -> tuple[int, int]:
        return (0, 0)

    def calls(self) -> Iterator[Call]:
        return iter(self._trace.calls)


def fitted(calls: Iterable[Call], length: int | None, header: Trace | None) -> Iterator[Call]:
    """A stream's calls with their tool-call ids fitted to ``length`` (the model's prompt format's,
    None: any id), the ids mapped noted on ``header`` once the stream is done (None: noted nowhere:
    a stream read again)."""
    if not length:
        yield from calls
        return
    fitter = ToolIdFitter(length)
    for call in calls:
        yield fitter.fit(call)
    if header is not None:
        fitter.note(header)


@dataclass
class LogCalls:
    """A log to read as streams of calls. ``header``: the log's trace without its calls, complete
    (notes, model, session) once the first stream has been read to its end; ``tools`` and ``system``:
    what the user supplies for the main conversation (:func:`tokprof.transforms.supply`'s rule)."""

    path: str
    input_format: str | None = None
    tools: list[dict] | None = None
    system: str | None = None
    #: Notes for the header, once the first stream is read (what a caller says of what it supplied).
    notes: list[Note] = field(default_factory=list)
    #: Whether a capture's calls are threaded by content (a directory's sessions are not: their readers name threads).
    thread: bool = True
    header: Trace = field(init=False)
    _threads: list[str] | None = field(default=None, init=False, repr=False)  # a capture's: each call's thread
    _threaded: bool = field(default=False, init=False, repr=False)
    _streamed: bool = field(default=False, init=False, repr=False)
    _unrecorded: tuple[str, ...] | None = field(default=None, init=False, repr=False)  # the first read's
    _log: Log | None = field(default=None, init=False, repr=False)  # opened, not read yet
    _current: Log | None = field(default=None, init=False, repr=False)  # the stream being read

    def __post_init__(self) -> None:
        self._log = open_log(self.path, self.input_format)  # a file no reader takes fails here, before any work
        self.header = self._log.trace
        self.path = self._log.path

    @property
    def progress(self) -> tuple[int, int]:
        """The bytes the current stream has read and the file's size (0, 0 when not known)."""
        log = self._current or self._log
        return log.progress if log is not None else (0, 0)

    def calls(self) -> Iterator[Call]:
        """A stream of the log's calls, ready for the stages (each call is the reader's, changed). The
        first stream completes :attr:`header`; a later one reads the file again."""
        self._thread_names()
        log, self._log = self._log, None
        first = not self._streamed
        self._streamed = True
        if log is None:
            log = open_log(self.path, self.input_format)
        if first:
            self.header = log.trace
        self._current = log
        return self._ready(log)

    def trace(self) -> Trace:
        """The whole trace: the header with every call of one stream."""
        calls = list(self.calls())
        self.header.calls = calls
        return self.header

    def _thread_names(self) -> None:
        """A first read, when what the stages need of a call rests on the whole log: a capture's threads
        (its calls carry none of their own), and the parts the log does not record when the user
        supplies a system prompt (it goes first in every main call of such a log)."""
        if self._threaded:
            return
        self._threaded = True
        capture = self.thread and self.header.format.split("/", 1)[0] in CAPTURE_FORMATS
        if not capture and self.system is None:
            return
        log, self._log = self._log, None
        assert log is not None
        threader = Threader()
        found: list[int] = []
        try:
            for call in log.calls():
                if capture and call.thread:  # the log names its threads: nothing to find
                    capture = False
                if capture:
                    found.append(threader.observe(call))
        finally:
            log.close()
        self._unrecorded = tuple(log.trace.unrecorded)
        if capture:
            names = threader.names()
            self._threads = [names[n] for n in found]

    def _ready(self, log: Log) -> Iterator[Call]:
        header = log.trace
        threads = self._threads
        if self.tools is not None or self.system is not None:
            header.supplied = tuple(
                sorted(
                    set(header.supplied)
                    | {p for p, v in (("tools", self.tools), ("system", self.system)) if v is not None}
                )
            )
        first = header is self.header
        supply = None
        if self.tools is not None or self.system is not None:
            supply = Supplier(self.tools, self.system, "system" in (self._unrecorded or ()))
        for position, call in enumerate(log.calls()):
            if threads is not None:
                call.thread = threads[position] if position < len(threads) else ""
            if supply is not None:
                supply.give(call)
            yield call
        if supply is not None:
            supply.check(self.path)
        if first:
            header.notes.extend(self.notes)
