"""Reading a file a user names, with a cap: ``/dev/zero``, ``/dev/urandom``, a FIFO or any endless
or huge file given as a chat template, tools, a system prompt, a configuration, a baseline, a saved
profile or a log is read no further than the cap for what it is, and the reader says so.

The error is an :class:`OSError` (errno ``EFBIG``) whose ``strerror`` says which cap it went over,
so that a caller's usual ``cannot read ...: {exc.strerror}`` line says it too. A FIFO is opened
without waiting for a writer: one that has none reads as empty.
"""

from __future__ import annotations

import errno
import os
from typing import IO

MIB = 1024 * 1024
#: The caps, in bytes, by what is read (``TOKPROF_MAX_READ_<WHAT>`` raises one, in MiB).
CAPS = {
    "chat template": 16 * MIB,
    "tools file": 64 * MIB,
    "system prompt": 64 * MIB,
    "configuration": 8 * MIB,
    "baseline": 256 * MIB,
    "saved profile": 4096 * MIB,
    "log": 4096 * MIB,
    "log line": 512 * MIB,
    "event": 32 * MIB,
    "facts": 64 * MIB,
}
_CHUNK = 4 * MIB


class TooLarge(OSError):
    """A file over its cap (or endless)."""


def cap(what: str) -> int:
    """The cap for ``what`` (a key of :data:`CAPS`), raised by ``TOKPROF_MAX_READ_<WHAT>`` in MiB."""
    variable = "TOKPROF_MAX_READ_" + what.upper().replace(" ", "_")
    raw = os.environ.get(variable)
    if raw:
        try:
            value = int(raw)
        except ValueError:
            value = 0
        if value > 0:
            return value * MIB
    return CAPS[what]


def _size(limit: int) -> str:
    return f"{limit // MIB:,} MiB" if limit >= MIB else f"{limit:,} bytes"


def too_large(what: str, limit: int) -> TooLarge:
    variable = "TOKPROF_MAX_READ_" + what.upper().replace(" ", "_")
    return TooLarge(
        errno.EFBIG,
        f"over the {_size(limit)} a {what} may have (an endless file such as /dev/zero?); "
        f"set {variable} (in MiB) to raise it",
    )


def open_input(path: str | os.PathLike) -> IO[bytes]:
    """A user's file opened for reading in binary, a FIFO without waiting for a writer."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)  # a FIFO's writer, when there is one, is waited for; none reads as the end
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_handle(handle: IO[bytes], what: str, limit: int | None = None) -> bytes:
    """What is left of an open file, at most the cap for ``what``; :class:`TooLarge` beyond it."""
    limit = cap(what) if limit is None else limit
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = handle.read(min(_CHUNK, limit + 1 - size))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise too_large(what, limit)


def read_bytes(path: str | os.PathLike, what: str, limit: int | None = None) -> bytes:
    """A user's file's bytes, at most the cap for ``what`` (:data:`CAPS`); :class:`TooLarge` (an
    OSError) beyond it."""
    with open_input(path) as handle:
        return read_handle(handle, what, limit)


def read_text(path: str | os.PathLike, what: str, encoding: str = "utf-8") -> str:
    """:func:`read_bytes` decoded (``UnicodeDecodeError`` when it is not in ``encoding``)."""
    return read_bytes(path, what).decode(encoding)
