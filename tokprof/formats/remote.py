"""Session files anywhere fsspec reaches (``s3://bucket/prefix/``, ``gs://``, ``file://``): opened and read as
streams, never copied to disk first (listed and recognised by their first bytes by
:func:`tokprof.formats.discovery.scan_url`). Needs fsspec and
the file system's package (``pip install 'tokprof[s3]'`` for S3). Credentials and endpoints come
from the usual places (the AWS environment and files; ``FSSPEC_S3_ENDPOINT_URL`` for another S3)."""

from __future__ import annotations

from typing import IO, Any

from tokprof.base.errors import InputError

HINT = "pip install 'tokprof[s3]'"


def is_url(path: str) -> bool:
    return "://" in path


def file_system(url: str) -> tuple[Any, str]:
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


def protocol_of(fs: Any) -> str:
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    return protocol


def stream(f: Any) -> IO[bytes]:
    """fsspec's file as a standard buffered stream (``readline(limit)``, ``seek``)."""
    import io

    return io.BufferedReader(f, buffer_size=1 << 20)


def open_url(url: str) -> IO[bytes]:
    """A URL's object as a binary stream (seekable: fsspec buffers it in blocks)."""
    fs, path = file_system(url)
    try:
        return stream(fs.open(path, "rb"))
    except FileNotFoundError:
        raise InputError(url, None, "no such file") from None
    except Exception as exc:  # no credentials, no network: the store's own error, in one line
        raise InputError(url, None, f"cannot read: {type(exc).__name__}: {exc}") from None
