"""Session files anywhere fsspec reaches (``s3://bucket/prefix/``, ``gs://``, ``file://``): listed,
recognised by their first bytes and read as streams, never copied to disk first. Needs fsspec and
the file system's package (``pip install 'tokprof[s3]'`` for S3). Credentials and endpoints come
from the usual places (the AWS environment and files; ``FSSPEC_S3_ENDPOINT_URL`` for another S3)."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import IO, Any

from tokprof.base.errors import InputError

HINT = "pip install 'tokprof[s3]'"


def is_url(path: str) -> bool:
    return "://" in path


def _fs(url: str) -> tuple[Any, str]:
    try:
        from fsspec.core import url_to_fs
    except ImportError:
        raise InputError(url, None, f"reading URLs needs fsspec: {HINT}") from None
    try:
        return url_to_fs(url)
    except ImportError as exc:  # fsspec names the package (gcsfs, adlfs, ...); tokprof's extra holds S3's
        hint = f": {HINT}" if url.split("://", 1)[0].lower() in ("s3", "s3a") else ""
        raise InputError(url, None, f"no file system for this URL ({exc}){hint}") from None
    except ValueError as exc:
        raise InputError(url, None, f"not a URL fsspec knows: {exc}") from None


def _protocol(fs: Any) -> str:
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    return protocol


def _stream(f: Any) -> IO[bytes]:
    """fsspec's file as a standard buffered stream (``readline(limit)``, ``seek``)."""
    import io

    return io.BufferedReader(f, buffer_size=1 << 20)


def open_url(url: str) -> IO[bytes]:
    """A URL's object as a binary stream (seekable: fsspec buffers it in blocks)."""
    fs, path = _fs(url)
    try:
        return _stream(fs.open(path, "rb"))
    except FileNotFoundError:
        raise InputError(url, None, "no such file") from None
    except Exception as exc:  # no credentials, no network: the store's own error, in one line
        raise InputError(url, None, f"cannot read: {type(exc).__name__}: {exc}") from None


def scan_url(url: str) -> Any:
    """The session files under a URL prefix, found by content, as :func:`tokprof.formats.scan_directory`
    finds them in a folder (URLs in place of paths; files beside a session are not looked for)."""
    from tokprof.formats.registry import session_names
    from tokprof.formats.discovery import SUFFIXES, Found, _peek

    fs, root = _fs(url)
    try:
        keys = sorted(fs.find(root))
    except Exception as exc:  # no credentials, no bucket, no network: the store's own error, in one line
        raise InputError(url, None, f"cannot list: {type(exc).__name__}: {exc}") from None
    protocol = _protocol(fs)
    found = Found()
    by_format: dict[str, list] = {}
    for key in keys:
        if PurePosixPath(key).suffix not in SUFFIXES:
            continue
        full = f"{protocol}://{key}" if protocol not in ("file", "local") else f"file://{key}"
        peek = _peek(PurePosixPath(full), lambda key=key: _stream(fs.open(key, "rb")))  # type: ignore[arg-type]
        if peek.format is None:
            found.skipped.append((full, peek.reason or "not a session"))  # type: ignore[arg-type]
        else:
            by_format.setdefault(peek.format, []).append(full)
    for name in session_names():
        found.sessions += [(name, path) for path in by_format.get(name, [])]
    return found
