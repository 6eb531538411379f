"""Loading JSON and JSONL files with errors that name the file and line, and parsing JSON found in logs.

Every JSON text a reader meets goes through :func:`parse`: the file itself, and the JSON that logs
keep inside strings (a capture's request or response body, a server-sent event's data, a streamed
tool input). It never raises anything but :class:`ValueError`: a syntax error is a
:class:`json.JSONDecodeError`; a value nested more than :data:`NESTING_LIMIT` deep, or a number too
long to convert, is a :class:`JSONError` (Python's own limits would raise ``RecursionError`` in the
parser or, for a value just under them, anywhere later).

A JSONL file is read as a stream (:class:`Lines`): line by line as a reader consumes it, once, so that
a large log is never held whole, as text or as parsed values; only its first lines are parsed ahead,
for detection. A file of another name is JSONL when its first line is a JSON value of its own and more
follows; else it is one JSON document, read whole (the format does not allow otherwise).
"""

from __future__ import annotations

import io
import json
import os
import stat
from dataclasses import dataclass
from typing import IO, Any, Iterable, Iterator

import tokprof.base.bounded as bounded
from tokprof.base.errors import InputError

# The parsing lives in the base layer (serve parses request bodies with it too); the readers take it from here.
from tokprof.base.jsonparse import (
    NESTING_LIMIT as NESTING_LIMIT,
    TOO_DEEP as TOO_DEEP,
    JSONError as JSONError,
    kind_of as kind_of,
    parse as parse,
    parse_or as parse_or,
    too_deep as too_deep,
    too_deep_at as too_deep_at,
)

#: The first lines of a JSONL file parsed ahead, for detection (every reader's ``sniff`` looks at
#: fewer), within this many bytes (at least one line).
HEAD_LINES = 50
HEAD_BYTES = 16 * 1024 * 1024

#: The rule for a JSONL line that does not parse: a truncated *last* line (a log still being
#: written, or cut off) is skipped and reported as a warning; any other bad line is an error.
TRUNCATED_LAST_LINE = "the last line is truncated JSON (the log was cut off while being written): it was skipped"


def _cut_off(exc: json.JSONDecodeError, text: str) -> bool:
    """Whether JSON failed because the text ends too soon (a cut inside a string fails where the
    string starts, not at the end)."""
    return exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")


def _check_file(path: str) -> None:
    if not os.path.exists(path):
        raise InputError(path, None, "no such file")
    if os.path.isdir(path):
        raise InputError(path, None, "is a directory, not a file (tokprof profile DIR profiles a folder of sessions)")
    if _is_pipe(path):
        raise InputError(
            path, None, "is a pipe, not a file (a log is read more than once): save it to a file and give its path"
        )


def _is_pipe(path: str) -> bool:
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode) or stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return False


def _size_of(handle: IO[bytes] | None) -> int:
    try:
        return os.fstat(handle.fileno()).st_size if handle is not None else 0
    except (OSError, AttributeError, ValueError, io.UnsupportedOperation):
        return 0


def open_bytes(path: str) -> IO[bytes]:
    """A log file opened for reading its bytes: a local file (checked: not missing, a folder or a pipe), or
    a URL (``s3://``, ``gs://``, ``file://``) read as a stream through fsspec."""
    if "://" in path:  # a URL (s3://, gs://, file://): read as a stream through fsspec
        from tokprof.formats.remote import open_url

        return open_url(path)
    _check_file(path)
    try:
        return bounded.open_input(path)  # a FIFO without a writer reads as empty, never waits
    except OSError as exc:
        raise InputError(path, None, f"cannot read: {exc.strerror}") from None


def read_text(path: str, what: str = "log") -> str:
    """A file's text, read no further than the cap for ``what`` (:data:`tokprof.base.bounded.CAPS`)."""
    with open_bytes(path) as f:
        try:
            data = bounded.read_handle(f, what)
        except OSError as exc:
            raise InputError(path, None, f"cannot read: {exc.strerror}") from None
    return _text(path, data)


def _text(path: str, data: bytes) -> str:
    """A file's bytes as text: UTF-8 (a byte-order mark dropped), and not blank."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(path, f"byte {exc.start}", "not UTF-8 text") from None
    if not text.strip():
        raise InputError(path, None, "file is empty")
    return text


class Lines:
    """The values of a JSONL file, ``(1-based line, value)``: parsed as they are read.

    :meth:`head` gives the first lines (for detection) without consuming them; iterating reads the
    whole file, once (a second pass is a programming error). A bad line raises an :class:`InputError`
    naming it when it is reached, except a truncated last line, which ends the values and is kept
    in :attr:`truncated_line`. Built from a list (``Lines([...])``) it holds those values instead.
    """

    def __init__(self, values: Iterable[tuple[int, Any]] = (), *, path: str = "", handle: IO[bytes] | None = None):
        self.path = path
        self.truncated_line: int | None = None  # a cut-off last line that was skipped
        self._handle = handle
        self._source: Iterator[tuple[int, Any]] = iter(values) if handle is None else self._read()
        self._size = 0  # the bytes of the line read last
        self.offset = 0  # the bytes of the file read so far (through the line given last)
        self.size = _size_of(handle)  # the file's size, when known (0 otherwise)
        self._head: list[tuple[int, Any]] = []
        self._head_bytes = 0
        self._ended = False  # the source gave its last value
        self._started = False  # iterated: the head is given away

    # -- reading the file ----------------------------------------------------------------------
    def _read(self) -> Iterator[tuple[int, Any]]:
        handle = self._handle
        assert handle is not None
        offset = 0
        seen = 0  # values given so far
        number = 0
        try:
            for raw in lines_of(handle, self.path, number):
                number += 1
                start, offset = offset, offset + len(raw)
                # split on newlines only: U+2028 and friends are valid inside JSON strings
                line = self._decode(raw, start, number).rstrip("\n").rstrip("\r")
                if not line.strip():
                    continue
                try:
                    value = parse(line)
                except json.JSONDecodeError as exc:
                    cut_off = _cut_off(exc, line)
                    # a record always ends with } or ], so a last line that does not was cut off
                    if seen and (cut_off or not line.rstrip().endswith(("}", "]"))) and _blank_from(handle):
                        self.truncated_line = number
                        return
                    what = "truncated JSON" if cut_off else f"invalid JSON: {exc.msg}"
                    raise InputError(self.path, f"line {number}, column {exc.colno}", what) from None
                except JSONError as exc:
                    raise InputError(self.path, f"line {number}", f"invalid JSON: {exc}") from None
                seen += 1
                self._size = len(raw)
                self.offset = offset
                yield number, value
        except OSError as exc:
            raise InputError(self.path, f"line {number + 1}", f"cannot read: {exc.strerror or exc}") from None
        finally:
            self.close()

    def _decode(self, raw: bytes, start: int, number: int) -> str:
        try:
            return raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(self.path, f"byte {start + exc.start}", "not UTF-8 text") from None

    def _pull(self) -> tuple[int, Any] | None:
        if self._ended:
            return None
        found = next(self._source, None)
        if found is None:
            self._ended = True
        return found

    # -- the reader's side ---------------------------------------------------------------------
    def head(self, count: int = HEAD_LINES) -> list[tuple[int, Any]]:
        """The first ``count`` values, without consuming them: fewer when the file has fewer, and
        at most :data:`HEAD_LINES` within :data:`HEAD_BYTES` (at least one line)."""
        if self._started:
            raise RuntimeError("the lines of a JSONL file were already read")
        while len(self._head) < min(count, HEAD_LINES) and (not self._head or self._head_bytes < HEAD_BYTES):
            found = self._pull()
            if found is None:
                break
            self._head.append(found)
            self._head_bytes += self._size
        return self._head[:count]

    def __getitem__(self, index: slice) -> list[tuple[int, Any]]:
        """``lines[:n]``: the same as ``head(n)``."""
        if not isinstance(index, slice) or index.start not in (None, 0) or index.step not in (None, 1):
            raise TypeError("only the first lines can be looked at: lines[:n]")
        return self.head(HEAD_LINES if index.stop is None else index.stop)

    def __bool__(self) -> bool:
        """Whether the file has at least one value (asked before the lines are read)."""
        return bool(self.head(1))

    def __iter__(self) -> Iterator[tuple[int, Any]]:
        if self._started:
            raise RuntimeError("the lines of a JSONL file are read once")
        self._started = True
        return self._all()

    def _all(self) -> Iterator[tuple[int, Any]]:
        head, self._head = self._head, []
        head.reverse()  # given away as they are read
        while head:
            yield head.pop()
        while (found := self._pull()) is not None:
            yield found

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()


@dataclass
class Document:
    """What a file held: one JSON value, or its JSONL lines (:class:`Lines`, read as a stream)."""

    value: Any = None
    lines: Lines | None = None  # set for JSONL; a list of (line, value) is taken too

    def __post_init__(self) -> None:
        if self.lines is not None and not isinstance(self.lines, Lines):
            self.lines = Lines(self.lines)

    def single_value(self) -> Any:
        """The file's one JSON value: the value, or the only line of JSON lines (a value written on one line
        reads as JSON lines of one line); None when there are more lines."""
        if self.lines is None:
            return self.value
        head = self.lines.head(2)
        return head[0][1] if len(head) == 1 else None

    @property
    def truncated_line(self) -> int | None:
        """A cut-off last JSONL line that was skipped (known once the lines are read)."""
        return self.lines.truncated_line if self.lines is not None else None

    def close(self) -> None:
        if self.lines is not None:
            self.lines.close()

    def __enter__(self) -> "Document":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def load(path: str, what: str = "log") -> Document:
    """Parse a file as one JSON value, or as JSONL when it holds one value per line (streamed: see
    :class:`Lines`). Errors in the first lines are raised here; later ones as the lines are read. A
    document is read no further than the cap for ``what`` (:data:`tokprof.base.bounded.CAPS`), a line no
    further than :func:`line_cap`."""
    handle = open_bytes(path)
    try:
        doc = _load(path, handle, what)
    except BaseException:
        handle.close()
        raise
    if doc.lines is None:
        handle.close()
    return doc


def _load(path: str, handle: IO[bytes], what: str = "log") -> Document:
    try:
        if path.endswith(".jsonl"):
            return _jsonl(path, handle)
        first = _first_value(path, handle, what)
        if first is not None:
            number, value, end = first
            handle.seek(end)
            if _blank_from(handle):
                return Document(value=value)
            handle.seek(0)
            return _jsonl(path, handle)
        handle.seek(0)
        data = bounded.read_handle(handle, what)
    except OSError as exc:
        raise InputError(path, None, f"cannot read: {exc.strerror}") from None
    text = _text(path, data)
    del data
    try:
        return Document(value=parse(text))
    except json.JSONDecodeError as exc:
        what = "truncated JSON" if _cut_off(exc, text) else f"invalid JSON: {exc.msg}"
        raise InputError(path, f"line {exc.lineno}, column {exc.colno}", what) from None
    except JSONError as exc:
        where = too_deep_at(text) if str(exc) == TOO_DEEP else None
        raise InputError(path, where, f"invalid JSON: {exc}") from None


def _jsonl(path: str, handle: IO[bytes]) -> Document:
    lines = Lines(path=path, handle=handle)
    if not lines.head() and lines.truncated_line is None:
        raise InputError(path, None, "file is empty")
    return Document(lines=lines)


def _first_value(path: str, handle: IO[bytes], what: str = "log") -> tuple[int, Any, int] | None:
    """The first non-blank line's value when that line is a JSON value of its own (the file may be
    JSONL), with its number and where it ends; None when it is not (a pretty-printed document)."""
    number = 0
    offset = 0
    for raw in lines_of(handle, path, what=what):
        number += 1
        offset += len(raw)
        try:
            text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError:
            return None  # the whole-file decode names the byte
        if not text.strip():
            continue
        try:
            return number, parse(text), offset
        except ValueError:
            return None
    return None


def _blank_from(handle: IO[bytes]) -> bool:
    """Whether nothing but white space follows (the rest of the file is read, a line at most
    :func:`line_cap` long at a time: a longer one is not blank)."""
    limit = line_cap()
    while raw := handle.readline(limit + 1):
        if len(raw) > limit or raw.decode("utf-8", "replace").strip():
            return False
    return True


def line_cap() -> int:
    """The longest line of a JSONL log read, in bytes (``TOKPROF_MAX_READ_LOG_LINE`` in MiB raises it)."""
    return bounded.cap("log line")


def lines_of(handle: IO[bytes], path: str, before: int = 0, what: str = "log line") -> Iterator[bytes]:
    """A file's lines, each read no further than :func:`line_cap` (``/dev/zero`` is one endless
    line), or the cap of ``what`` when it is lower: an :class:`InputError` naming the line that is longer."""
    limit = min(line_cap(), bounded.cap(what))
    number = before
    while raw := handle.readline(limit + 1):
        number += 1
        if len(raw) > limit and not raw.endswith(b"\n"):
            error = bounded.too_large(what if bounded.cap(what) <= line_cap() else "log line", limit)
            raise InputError(path, f"line {number}", f"a line {error.strerror}")
        yield raw
