"""Where tokprof keeps what it builds once (converted tokenizers)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator, Union

#: What is written to a file: its bytes, or its pieces in order (written as they are made, never
#: held whole: a large report's JSON).
Data = Union[bytes, Iterable[bytes]]


def encoded(pieces: Iterable[str]) -> Iterator[bytes]:
    """Text pieces as UTF-8, a piece at a time."""
    for piece in pieces:
        yield piece.encode("utf-8")


def write_data(f: BinaryIO, data: Data) -> None:
    """Write ``data`` (:data:`Data`) to the open binary file ``f``."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        f.write(data)
        return
    for piece in data:
        f.write(piece)


def cache_dir() -> Path:
    """``$TOKPROF_CACHE_DIR``, else ``$XDG_CACHE_HOME/tokprof``, else ``~/.cache/tokprof``."""
    explicit = os.environ.get("TOKPROF_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tokprof"


def state_dir() -> Path:
    """Where tokprof keeps what it remembers between commands (the last ``tokprof sessions`` listing):
    ``$TOKPROF_STATE_DIR``, else ``$XDG_STATE_HOME/tokprof``, else ``~/.local/state/tokprof``
    (``%LOCALAPPDATA%/tokprof`` on Windows)."""
    explicit = os.environ.get("TOKPROF_STATE_DIR")
    if explicit:
        return Path(explicit)
    if os.environ.get("XDG_STATE_HOME"):
        return Path(os.environ["XDG_STATE_HOME"]) / "tokprof"
    if os.name == "nt" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "tokprof"
    return Path(os.path.expanduser("~")) / ".local" / "state" / "tokprof"


def write_temporary(path: Path, data: Data) -> str:
    """A temporary file beside ``path`` holding ``data``, with the usual permissions (mkstemp makes
    0600 files), to be moved onto ``path``; nothing is left behind when writing it fails."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write_data(f, data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


def write_atomic(path: Path, data: Data, make_parents: bool = True) -> None:
    """Write a file so that readers see either nothing or the whole of it."""
    if make_parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    tmp = write_temporary(path, data)
    try:
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
