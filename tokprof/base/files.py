"""Where tokprof keeps what it builds once (converted tokenizers)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def cache_dir() -> Path:
    """``$TOKPROF_CACHE_DIR``, else ``$XDG_CACHE_HOME/tokprof``, else ``~/.cache/tokprof``."""
    explicit = os.environ.get("TOKPROF_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tokprof"


def write_temporary(path: Path, data: bytes) -> str:
    """A temporary file beside ``path`` holding ``data``, with the usual permissions (mkstemp makes
    0600 files), to be moved onto ``path``; nothing is left behind when writing it fails."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


def write_atomic(path: Path, data: bytes, make_parents: bool = True) -> None:
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
