"""Reading one member of a zip archive as JSON, within a size cap: Inspect's ``.eval`` logs are zips
whose members are JSON documents, and a few megabytes of zip can hold gigabytes. Members compressed
with Zstandard (zip method 93, as newer Inspect versions write them) are read with the
``zstandard`` package where this Python's ``zipfile`` cannot."""

from __future__ import annotations

import io
import json
import os
import struct
import zipfile
import zlib
from typing import Any, Callable

from tokprof.base.errors import InputError, TokprofError
from tokprof.formats.jsonfile import parse

ZSTANDARD = 93  # the zip compression method of Zstandard

#: The largest uncompressed zip member read, by default (``TOKPROF_MAX_MEMBER_BYTES`` changes it): a
#: member is one JSON document, read whole, and a few megabytes of zip can hold gigabytes.
MAX_MEMBER_BYTES = 2 * 1024**3
MEMBER_LIMIT_VARIABLE = "TOKPROF_MAX_MEMBER_BYTES"
_CHUNK = 1 << 20


def member_limit() -> int:
    """The size cap of a zip member, in bytes: :data:`MAX_MEMBER_BYTES` or the environment's."""
    raw = os.environ.get(MEMBER_LIMIT_VARIABLE)
    if raw is None or not raw.strip():
        return MAX_MEMBER_BYTES
    try:
        value = int(raw)
    except ValueError:
        raise TokprofError(f"{MEMBER_LIMIT_VARIABLE}: expected a number of bytes, found {raw!r}") from None
    if value <= 0:
        raise TokprofError(f"{MEMBER_LIMIT_VARIABLE}: expected a positive number of bytes, found {raw!r}")
    return value


def _over_limit(size: str, limit: int) -> str:
    return (
        f"{size} uncompressed, more than the limit of {limit:,} bytes for one member "
        f"(set {MEMBER_LIMIT_VARIABLE} to raise it)"
    )


def json_member(path: str, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> Any:
    """A member parsed as JSON (UTF-8, a BOM allowed), read within :func:`member_limit`."""
    data = _member_bytes(path, archive, info)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(path, info.filename, f"byte {exc.start}: not UTF-8 text") from None
    del data
    try:
        return parse(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            path, info.filename, f"line {exc.lineno}, column {exc.colno}: invalid JSON: {exc.msg}"
        ) from None
    except ValueError as exc:
        raise InputError(path, info.filename, f"invalid JSON: {exc}") from None


def _member_bytes(path: str, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytearray:
    """A member's bytes, checked against the size cap before reading (its declared size) and while
    decompressing (a declared size can lie)."""
    limit = member_limit()
    if info.file_size > limit:
        raise InputError(path, info.filename, _over_limit(f"{info.file_size:,} bytes", limit))
    try:
        with archive.open(info) as member:
            return _capped(path, info, member.read, limit)
    except NotImplementedError:
        if info.compress_type == ZSTANDARD:
            return _zstandard_member(path, archive, info, limit)
        raise InputError(
            path, info.filename, f"compressed with a method this Python cannot read (zip method {info.compress_type})"
        ) from None
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, RuntimeError) as exc:
        # RuntimeError: an encrypted member; ValueError: offsets out of range
        raise InputError(path, info.filename, f"cannot read the zip member: {exc}") from None


def _capped(path: str, info: zipfile.ZipInfo, read: Callable[[int], bytes], limit: int) -> bytearray:
    """Everything ``read`` gives, in chunks, stopping with an error past the cap or the declared size."""
    out = bytearray()
    while chunk := read(_CHUNK):
        out += chunk
        if len(out) > limit:
            raise InputError(path, info.filename, _over_limit(f"more than {limit:,} bytes", limit))
        if len(out) > info.file_size:
            raise InputError(
                path, info.filename, f"corrupt zip member (more data than its declared size, {info.file_size:,} bytes)"
            )
    return out


def _zstandard_member(path: str, archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytearray:
    """A Zstandard-compressed member (newer Inspect versions write them), with the zstandard package."""
    try:
        import zstandard
    except ImportError:
        raise InputError(
            path,
            info.filename,
            "compressed with Zstandard, as newer Inspect versions write .eval logs: this "
            "Python's zipfile cannot read it; install the zstandard package (pip install zstandard), or convert "
            "the log to JSON with `inspect log convert --to json`",
        ) from None
    raw = _raw_member(path, archive, info)
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw), read_across_frames=True)
        data = _capped(path, info, reader.read, limit)
    except zstandard.ZstdError as exc:
        raise InputError(path, info.filename, f"corrupt Zstandard data ({exc})") from None
    if zlib.crc32(data) != info.CRC:
        raise InputError(path, info.filename, "corrupt zip member (bad CRC-32)")
    return data


def _raw_member(path: str, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """A member's bytes as stored, after its local header."""
    handle = archive.fp
    if handle is None:
        raise InputError(path, info.filename, "the zip file is closed")
    handle.seek(info.header_offset)
    header = handle.read(30)
    if len(header) < 30 or header[:4] != b"PK\x03\x04":
        raise InputError(path, info.filename, "corrupt zip member (bad local header)")
    name_length, extra_length = struct.unpack("<HH", header[26:30])
    handle.seek(info.header_offset + 30 + name_length + extra_length)
    raw = handle.read(info.compress_size)
    if len(raw) < info.compress_size:
        raise InputError(path, info.filename, "corrupt zip member (truncated)")
    return raw
