"""The helpers an agent's session reader is a fold with (#43.1, :mod:`tokprof.formats.reader`): it gives
each call as soon as no later record can change it, and holds none it gave.

* :class:`Made`: the calls a reader has made and not given yet, numbered in log order, and the
  models of those it gave (the trace's model is the model of most calls);
* :class:`TimeOrder`: the calls of several threads given in time order as they are made;
* :class:`SessionFold`: a reader of JSON lines, a line at a time;
* :class:`DocumentFold`: a reader of a file that is one JSON document, a message at a time.

A SQLite store's reader is :class:`tokprof.formats.agent_db.StoreFold`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from tokprof.base.errors import InputError
from tokprof.formats.reader import Reader, Record
from tokprof.trace import Call, Trace


class Made:
    """The calls a reader has made and not given yet, numbered in log order across its threads, and the
    models of the calls it gave (the trace's model is the model of most calls)."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.count = 0
        self.models: Counter[str] = Counter()

    def add(self, call: Call) -> Call:
        call.index = self.count
        self.count += 1
        self.calls.append(call)
        return call

    def take(self) -> list[Call]:
        """The calls made since the last take, given: the reader holds them no longer."""
        if not self.calls:
            return []
        calls, self.calls = self.calls, []
        self.models.update(call.model for call in calls if call.model)
        return calls

    def model(self) -> str | None:
        """The model of most calls given (the first named of those tied)."""
        return self.models.most_common(1)[0][0] if self.models else None


class TimeOrder(Made):
    """The calls of several threads given in time order as they are made: the order of
    :func:`tokprof.formats.neutral.in_time_order` (each thread's own order kept, a call without a time
    where the call before it in its thread went, ties in the order the threads were opened), each call
    held until a later call is made (a log written as it happens is in time order). Threads are
    opened with :meth:`thread`, in the order ``in_time_order`` would list their sequences."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: dict[str, int] = {}
        self.queues: list[list[tuple[tuple, Call]]] = []
        self.carried: list[tuple] = []
        self.latest: tuple | None = None

    def thread(self, name: str) -> int:
        if name not in self.threads:
            self.threads[name] = len(self.queues)
            self.queues.append([])
            self.carried.append((0,))
        return self.threads[name]

    def place(self, thread: str, call: Call) -> None:
        """A call of ``thread``, made (not yet given: :meth:`take` gives it in time order)."""
        s = self.thread(thread)
        if call.time is not None:
            self.carried[s] = (1, call.time)
        self.queues[s].append((self.carried[s], call))
        self.latest = self.carried[s]

    def add(self, call: Call) -> Call:
        return call  # a Conversation's call: placed by :meth:`place`

    def take(self, before: tuple | None = None) -> list[Call]:
        """The calls that no later call can come before: those before ``before`` (a key, ``(1, time)``),
        by default before the latest made."""
        return self._release(before if before is not None else self.latest)

    def rest(self) -> list[Call]:
        """Every call still held, in time order (every record is read)."""
        return self._release(None)

    def _release(self, before: tuple | None) -> list[Call]:
        out: list[Call] = []
        while True:
            heads = [(queue[0][0], s) for s, queue in enumerate(self.queues) if queue]
            if not heads:
                break
            key, s = min(heads)
            if before is not None and not key < before:
                break
            call = self.queues[s].pop(0)[1]
            call.index = self.count
            self.count += 1
            out.append(call)
        self.models.update(call.model for call in out if call.model)
        return out


class SessionFold(Reader):
    """A reader of an agent's session file as a fold over its JSONL lines: :meth:`line` reads one line,
    making calls through :attr:`made` (a :class:`Conversation` given it), and each feed gives the calls
    the line made; :meth:`end` reads what is left once every line is read. A file that is one JSON
    document is :attr:`expected`'s one line (:meth:`document`, by default an error)."""

    #: What a file of one JSON document is told, when the format has no such form.
    expected = "expected JSON lines"

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.made = Made()

    def feed(self, record: Record) -> Iterable[Call]:
        if record.line is None:
            self.document(record.value)
        else:
            self.line(record.line, record.value)
        return self.made.take()

    def finish(self) -> Iterable[Call]:
        self.end()
        calls = self.made.take()
        self.trace.model = self.made.model()
        return calls

    def document(self, value: Any) -> None:
        raise InputError(self.trace.path, None, self.expected)

    def line(self, number: int, value: Any) -> None:
        raise NotImplementedError

    def end(self) -> None:
        """What is left once every record is read (nothing by default)."""


class DocumentFold(Reader):
    """A reader of an agent's session file that is one JSON document, as a fold over its one record:
    :meth:`read` goes through the document a message at a time, yielding after each, and the calls it
    made are given then (:meth:`given` completes them). The reader holds the document (the record) and
    the history, not the calls."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.made = Made()

    def feed(self, record: Record) -> Iterator[Call]:
        for _ in self.read(record.value):
            yield from self.given(self.made.take())
        yield from self.given(self.made.take())

    def read(self, value: Any) -> Iterator[None]:
        raise NotImplementedError

    def given(self, calls: list[Call]) -> list[Call]:
        """The calls made, completed as the document says (their project...)."""
        return calls

    def finish(self) -> Iterable[Call]:
        self.trace.model = self.made.model()
        return ()
