"""A response body as ``tokprof record`` keeps it: spooled to a temporary file as it arrives (memory
holds one chunk, never the body), up to a cap, and decoded once it is complete, no further than the
cap.

The cap is :data:`DEFAULT_CAP` (``TOKPROF_RECORD_MAX_BODY`` in MiB sets another): past it the rest
of the body is not recorded (the record says so), and a compressed body that inflates past it (a
1 MB gzip body of 1 GB) is decoded no further. Nothing here ever raises into the proxy's relay: a
body that cannot be kept (a full disk, no memory) is a reason in :attr:`BodyRecorder.failed`, and the
agent's answer goes on regardless.
"""

from __future__ import annotations

import os
import tempfile
import zlib
from typing import IO, cast

MIB = 1024 * 1024
DEFAULT_CAP = 64 * MIB
CAP_VARIABLE = "TOKPROF_RECORD_MAX_BODY"
_PIECE = MIB  # how much of the spool is read, or decoded, at once


def body_cap() -> int:
    """The most of a response body a recording keeps, in bytes: ``TOKPROF_RECORD_MAX_BODY`` (MiB, a
    positive whole number), else :data:`DEFAULT_CAP`."""
    raw = os.environ.get(CAP_VARIABLE, "").strip()
    return int(raw) * MIB if raw.isdigit() and int(raw) > 0 else DEFAULT_CAP


def _size(n: int) -> str:
    return f"{n // MIB:,} MiB" if n >= MIB and n % MIB == 0 else f"{n:,} bytes"


class _Over(Exception):
    """Decoding went past the cap."""


class _Capped:
    """Where decoded pieces go: kept up to the cap, :class:`_Over` past it."""

    def __init__(self, cap: int):
        self.cap = cap
        self.data = bytearray()  # grown in place: the body is held once, not as pieces and their join

    @property
    def size(self) -> int:
        return len(self.data)

    def write(self, data: bytes) -> int:
        room = self.cap - self.size
        self.data += data[:room]
        if len(data) > room:
            raise _Over()
        return len(data)


class BodyRecorder:
    """One response body on its way to a recording: :meth:`add` each raw chunk as it is relayed,
    :meth:`finish` for the body decoded (at most the cap), :meth:`close` in any case."""

    def __init__(self, encoding: str, folder: str | None = None, cap: int | None = None):
        self.encoding = encoding.strip().lower()
        self.cap = body_cap() if cap is None else cap
        self.received = 0  # raw bytes relayed
        self.kept = 0  # raw bytes spooled
        self.over = False  # more arrived than the cap: the rest was not kept, or not decoded
        self.failed: str | None = None  # why nothing could be kept
        self._spool: IO[bytes] | None = None
        try:
            self._spool = tempfile.TemporaryFile(dir=folder)  # 0600, no name left behind
        except Exception as exc:  # noqa: BLE001 - the relay goes on unrecorded
            self.failed = f"no temporary file ({type(exc).__name__})"

    def add(self, chunk: bytes) -> None:
        """Spool a raw chunk, as much of it as the cap leaves room for; never raises."""
        self.received += len(chunk)
        if self.failed is not None or self._spool is None:
            return
        room = self.cap - self.kept
        if len(chunk) > room:
            self.over = True
            chunk = chunk[:room]
        if not chunk:
            return
        try:
            self._spool.write(chunk)
            self.kept += len(chunk)
        except Exception as exc:  # noqa: BLE001 - a full disk: the relay goes on unrecorded
            self.failed = f"{type(exc).__name__}: {getattr(exc, 'strerror', None) or exc}"

    def not_recorded(self) -> str | None:
        """What of the body is not in the recording, in a few words; None when all of it is."""
        if self.failed is not None:
            return f"not recorded: the response body ({self.failed})"
        if self.over:
            return (
                f"not recorded: the response body past its first {_size(self.cap)} decoded "
                f"({self.received:,} bytes received; {CAP_VARIABLE} sets the cap in MiB)"
            )
        return None

    def finish(self) -> bytes | bytearray:
        """The body spooled, its content-encoding undone (gzip, deflate, zstd) up to the cap; as it
        came when it cannot be decoded."""
        if self._spool is None or self.failed is not None:
            return b""
        self._spool.flush()
        self._spool.seek(0)
        raw = iter(lambda: self._spool.read(_PIECE) if self._spool is not None else b"", b"")
        if self.encoding not in ("gzip", "x-gzip", "deflate", "zstd"):
            return b"".join(raw)
        sink = _Capped(self.cap)
        try:
            if self.encoding == "zstd":
                import zstandard

                writer = zstandard.ZstdDecompressor().stream_writer(
                    cast(IO[bytes], sink), write_size=_PIECE, closefd=False
                )
                for piece in raw:
                    writer.write(piece)
            else:
                inflate = zlib.decompressobj(47 if self.encoding != "deflate" else zlib.MAX_WBITS)
                for piece in raw:
                    while piece:
                        sink.write(inflate.decompress(piece, min(sink.cap - sink.size + 1, _PIECE)))
                        piece = inflate.unconsumed_tail
        except _Over:
            self.over = True
        except Exception:  # noqa: BLE001 - not what it says it is: kept as it came, as before
            self._spool.seek(0)
            return self._spool.read(self.cap)
        return sink.data

    def close(self) -> None:
        if self._spool is not None:
            try:
                self._spool.close()
            except OSError:
                pass
            self._spool = None
