"""The reader protocol: how a log format turns a file into calls, and how a format declares itself.

A reader is a fold over the log's records. :meth:`Reader.feed` takes one record (a JSONL line's value,
a JSON document, an archive member, a database row) and gives the calls that record completes;
:meth:`Reader.finish` gives the rest once every record is fed. :attr:`Reader.trace` is the log's header
(path, format, model, session, the parts of the prompt the log does not record) and its notes: its
``calls`` stay empty, and it is complete once :meth:`Reader.finish` has given its calls. A reader
holds only what a later record can still change (a call whose lines are not all read, the history a
later prompt extends), so that a caller that drops each call after its pass holds the log's largest
prompt, not the log.

A format declares itself once, in its module, as a :class:`LogFormat` (``LOG_FORMAT``): its name,
how it is recognised, how its records are read and what reads them, where its agent keeps its
sessions. The registry (:mod:`tokprof.formats.registry`) lists the modules; everything else (the
format names, the session formats, the agents' folders, the docs' table) is derived from the
declarations.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from tokprof.formats.jsonfile import Document
from tokprof.formats.locations import Location
from tokprof.trace import Call, Trace

#: The kinds of log a format reads, in the order messages list formats: requests captured at the API,
#: evaluation logs, an agent's own session files.
KINDS = ("api", "eval", "agent")


@dataclass(frozen=True, slots=True)
class Record:
    """One record of a log: a JSONL line's value (``line`` its 1-based number), or a whole JSON document
    (``line`` None)."""

    value: Any
    line: int | None = None

    @property
    def place(self) -> str:
        """Where the record is, as messages name it (``line 4``; empty for a whole document)."""
        return f"line {self.line}" if self.line is not None else ""


class Reader:
    """A fold over a log's records (see the module's docstring). Subclasses set :attr:`trace` and
    implement :meth:`feed`; :meth:`finish` gives the calls still held (none by default)."""

    trace: Trace

    def feed(self, record: Record) -> Iterable[Call]:
        raise NotImplementedError

    def finish(self) -> Iterable[Call]:
        return ()


def document_records(doc: Document) -> Iterator[Record]:
    """A loaded file's records: a JSONL file's lines as they are read, else the one JSON document."""
    if doc.lines is not None:
        for line, value in doc.lines:
            yield Record(value, line)
    else:
        yield Record(doc.value)


def read_whole(reader: Reader, records: Iterable[Record]) -> Trace:
    """A log read whole by its fold: every record fed, the calls gathered in the reader's trace."""
    calls = [call for record in records for call in reader.feed(record)]
    calls += reader.finish()
    reader.trace.calls = calls
    return reader.trace


class WholeRead(Reader):
    """A reader that reads its log whole when it is finished (``read() -> Trace``): for a format whose
    reader is not a fold yet. It takes no records (:func:`no_records`)."""

    def __init__(self, read: Callable[[], Trace], path: str, format: str) -> None:
        self.trace = Trace(path=path, format=format)
        self._read = read

    def feed(self, record: Record) -> Iterable[Call]:
        raise RuntimeError("a whole read takes no records")

    def finish(self) -> Iterable[Call]:
        read = self._read()
        calls, read.calls = read.calls, []
        for field in dataclasses.fields(Trace):  # the header, kept in the object callers already hold
            setattr(self.trace, field.name, getattr(read, field.name))
        return calls


def no_records(doc: Document | None) -> Iterator[Record]:
    """No records: the reader reads the file itself (a whole read, an archive, a database)."""
    return iter(())


def single_record(doc: Document) -> Iterator[Record]:
    """A file that is one JSON value as its one record (a value written on one line too: see
    :meth:`Document.single_value`); None for a file of several JSON lines."""
    yield Record(doc.single_value())


@dataclass(frozen=True)
class LogFormat:
    """A log format, as its module declares it (``LOG_FORMAT``)."""

    name: str  # what ``-i`` takes and a trace's ``format`` starts with
    description: str  # one line: what the log is and where it is kept
    kind: str  # one of KINDS
    #: Does a loaded file look like this format's? Looks only at what is cheap (the head of a JSONL
    #: file, the top of a document); never raises for a file of another format.
    sniff: Callable[[Document], bool]
    #: The reader of one file: its path and its loaded document (None for a file :attr:`opens` takes).
    reader: Callable[[str, Document | None], Reader]
    #: The records the reader is fed, from the loaded document.
    records: Callable[[Document], Iterator[Record]] = document_records
    #: A file that is not JSON which this format reads (an archive, a database), recognised by its bytes.
    opens: Callable[[str], bool] | None = None
    #: File names that are this format's whatever their content (a Cline task's history).
    file_names: tuple[str, ...] = ()
    #: Whether the format's files are an agent's sessions: found in folders, listed by ``tokprof sessions``.
    sessions: bool = False
    #: Where the agent keeps its sessions on this machine (Linux, macOS and Windows folders).
    locations: tuple[Location, ...] = ()
    #: What the log records, in a few words (for the docs' table and ``tokprof sessions``).
    records_what: str = ""
    #: Does a file's first bytes start like one of this format's JSON documents (written whole, often
    #: larger than discovery's peek)? Such a file is parsed whole to be sure, up to 16 MB.
    starts: Callable[[bytes], bool] | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"{self.name}: kind {self.kind!r} is not one of {', '.join(KINDS)}")


def whole_read_format(
    name: str,
    description: str,
    kind: str,
    sniff: Callable[[Document], bool],
    read: Callable[[str, Document], Trace],
    opened: Callable[[str], Trace] | None = None,
    **more: Any,
) -> LogFormat:
    """The declaration of a format whose reader reads its log whole (:class:`WholeRead`): ``read`` a
    loaded document, ``opened`` a file :attr:`LogFormat.opens` takes."""

    def reader(path: str, doc: Document | None) -> Reader:
        if doc is None:
            assert opened is not None
            return WholeRead(lambda: opened(path), path, name)
        return WholeRead(lambda: read(path, doc), path, name)

    return LogFormat(name, description, kind, sniff, reader, records=no_records, **more)
