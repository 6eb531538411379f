"""Log readers: a log opened (:func:`open_log`) gives its calls as its format's reader completes them,
each in the neutral form of :mod:`tokprof.trace`.

Each format declares itself in its module (``LOG_FORMAT``, see :mod:`tokprof.formats.reader`), and
:mod:`tokprof.formats.registry` lists the modules in the order detection tries them. Readers of agent
sessions are found in a directory by content (:mod:`tokprof.formats.discovery`).
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path
from collections.abc import Iterator
from typing import TYPE_CHECKING

import tokprof.base.bounded as bounded
from tokprof.base.errors import InputError
from tokprof.formats import lookalike, registry
from tokprof.formats.jsonfile import TRUNCATED_LAST_LINE, Document, load
from tokprof.formats.lookalike import Lookalike, is_blank, read_head, starts_like_json
from tokprof.formats.reader import LogFormat, Reader
from tokprof.base.text import visible
from tokprof.trace import Call, Trace

if TYPE_CHECKING:
    from tokprof.formats.discovery import Found


def __getattr__(name: str) -> object:
    """``FORMATS`` and ``SESSION_FORMATS``, derived from the declarations (:mod:`tokprof.formats.registry`)
    when first asked for: importing this package does not import every reader."""
    if name == "FORMATS":
        return registry.names()
    if name == "SESSION_FORMATS":
        return registry.session_names()
    raise AttributeError(f"module 'tokprof.formats' has no attribute {name!r}")


def scan_directory(directory: str) -> "Found":
    """A directory's session files, found by content, and its other ``.json``/``.jsonl`` files with
    why they are not read (:mod:`tokprof.formats.discovery`)."""
    from tokprof.formats.discovery import scan

    return scan(directory)


def session_files(directory: str) -> list[tuple[str, Path]]:
    """The session files in a directory (a Claude Code project folder, a Codex sessions tree, CI
    jobs' stream-json outputs), with their format."""
    return scan_directory(directory).sessions


def session_in_folder(path: str) -> str | None:
    """The session file a folder is, when it is one session (a Cline, Roo Code or Kilo Code task
    folder: its ``api_conversation_history.json``); None otherwise."""
    from tokprof.formats.cline import history_file

    return history_file(path) if "://" not in path else None


def log_format(name: str) -> LogFormat:
    """A format's declaration by its name."""
    return registry.by_name(name)


def describe_formats() -> str:
    """Every format with its description (errors name the formats only: :func:`not_a_log`)."""
    return "; ".join(f"{f.name} ({f.description})" for f in registry.formats())


def format_names() -> str:
    return ", ".join(registry.listed())


def not_a_log(path: str, found: Lookalike | None) -> str:
    """One short line for a file no reader takes: what it looks like, else the formats' names."""
    if found is not None:
        return "not a log format tokprof reads: " + found.phrase(path)
    others = [name for name in registry.listed() if registry.by_name(name).kind != "agent"]
    agents = sum(1 for f in registry.formats() if f.kind == "agent")
    return (  # the agents' formats counted, not named: a line stays short however many agents are read
        f"not a log format tokprof reads (formats: {', '.join(others)}, and the session files of {agents} "
        "agents; -i FORMAT forces one, and names them all when FORMAT is none of them)"
    )


def _not_json(path: str) -> Lookalike | None:
    """What a file looks like when it does not even start as JSON (None when it does, or is empty:
    then the JSON error, or "file is empty", says more)."""
    try:
        data = read_head(path)
    except OSError:
        return None
    if is_blank(data) or starts_like_json(data):
        return None
    return lookalike.of_text(os.path.basename(path), data)


def _of_doc(path: str, doc: Document) -> Lookalike | None:
    name = os.path.basename(path)
    try:
        if doc.lines is not None:
            return lookalike.of_lines(name, [value for _, value in doc.lines.head(50)])
        return lookalike.of_json(name, doc.value)
    except Exception:  # telling what a file looks like never fails
        return None


def _is_zip(path: str) -> bool:
    try:
        return os.path.isfile(path) and zipfile.is_zipfile(path)
    except OSError:  # unreadable: load() says so
        return False


def _starts_like_zip(path: str) -> bool:
    try:
        with bounded.open_input(path) as f:
            return f.read(4) == b"PK\x03\x04"
    except OSError:
        return False


class Log:
    """A log being read: its header (:attr:`trace`, complete once :meth:`calls` is exhausted) and its
    calls, given one at a time as the format's reader completes them (:mod:`tokprof.formats.reader`).
    The calls are read once. Use as a context manager, or read to the end: the file is closed then."""

    def __init__(self, path: str, found: LogFormat, reader: Reader, doc: Document | None) -> None:
        self.path = path
        self.format = found
        self.reader = reader
        self._doc = doc
        self._started = False

    @property
    def trace(self) -> Trace:
        """The log's header and notes; its ``calls`` stay empty (see :meth:`read` for a whole trace)."""
        return self.reader.trace

    @property
    def progress(self) -> tuple[int, int]:
        """The bytes read so far and the file's size (both 0 when not known)."""
        lines = self._doc.lines if self._doc is not None else None
        if lines is None:
            return (0, 0)
        return (lines.offset, lines.size)

    def calls(self) -> Iterator[Call]:
        """Every call of the log, in log order, each given once its reader has completed it."""
        if self._started:
            raise RuntimeError("the calls of a log are read once")
        self._started = True
        reader = self.reader
        try:
            records = self.format.records(self._doc) if self._doc is not None else iter(())
            for record in records:
                for call in reader.feed(record):
                    call_shown_safely(call)
                    yield call
            for call in reader.finish():
                call_shown_safely(call)
                yield call
        finally:
            self.close()
        trace = reader.trace
        if self._doc is not None and self._doc.truncated_line is not None:
            trace.note("truncated-line", TRUNCATED_LAST_LINE, f"line {self._doc.truncated_line}")
        trace.model = _safe(trace.model)
        trace.session = _safe(trace.session)

    def read(self) -> Trace:
        """The whole trace: the header with every call."""
        calls = list(self.calls())
        self.trace.calls = calls
        return self.trace

    def close(self) -> None:
        if self._doc is not None:
            self._doc.close()

    def __enter__(self) -> "Log":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_log(path: str, input_format: str | None = None) -> Log:
    """A log to read, in the named format or in the first format that recognises it: what was wrong
    with a file no format reads is raised here (one :class:`InputError` naming the file)."""
    if input_format is not None and input_format not in registry.names():
        raise InputError(path, None, f"unknown input format {input_format!r} (known: {', '.join(registry.names())})")
    path = session_in_folder(path) or path
    for found in registry.formats():  # a file that is no JSON: an archive, a database
        if found.opens is not None and input_format in (None, found.name) and found.opens(path):
            return Log(path, found, found.reader(path, None), None)
    if _is_zip(path):
        raise InputError(path, None, f"a zip file, not a log of format {input_format}")
    if _starts_like_zip(path):
        raise InputError(path, None, "a zip file that cannot be read (truncated or damaged?)")
    try:
        doc = load(path)
    except InputError:
        lookalike_found = _not_json(path) if input_format is None else None
        if lookalike_found is not None:
            raise InputError(path, None, not_a_log(path, lookalike_found)) from None
        raise
    try:
        found = _format_for(path, doc, input_format)
        return Log(path, found, found.reader(path, doc), doc)
    except BaseException:
        doc.close()
        raise


def read_trace(path: str, input_format: str | None = None) -> Trace:
    """Read a log whole, in the named format or in the first format that recognises it."""
    return open_log(path, input_format).read()


def _format_for(path: str, doc: Document, input_format: str | None) -> LogFormat:
    """The format of a loaded log: the one named, else the first that recognises it."""
    if input_format is not None:
        return registry.by_name(input_format)
    name = os.path.basename(path)
    found = next((f for f in registry.formats() if name in f.file_names), None)
    if found is None:
        from tokprof.formats.discovery import sniffs

        found = next((f for f in registry.formats() if sniffs(f, doc)), None)
    if found is None:
        raise InputError(path, None, not_a_log(path, _of_doc(path, doc)))
    return found


def call_shown_safely(call: Call) -> None:
    """A call's names that it takes from the log and only shows (its model, request id, thread and
    place) with control characters and lone surrogates escaped (:func:`tokprof.base.text.visible`): they
    are printed, written as UTF-8 and used as keys, never tokenized. Every call of every log passes here."""
    call.model = _safe(call.model)
    call.request_id = _safe(call.request_id)
    call.thread = visible(call.thread)
    call.where = visible(call.where)


def _safe(value: str | None) -> str | None:
    return visible(value) if isinstance(value, str) else value
