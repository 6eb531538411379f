"""Writing outputs: all of them or none, each atomically.

A command that writes several files (``profile -o X --html Y``, ``check --update-baseline``) writes
each to a temporary file beside its target first; only when every one is written are they moved
into place, so that an error leaves no output behind and never half a file. A target that exists
and is not a regular file (a FIFO, ``/dev/stdout``) is written through; a symlink is followed.
"""

from __future__ import annotations

import os
from pathlib import Path

from tokprof.cache import write_temporary
from tokprof.errors import TokprofError


def _target(path: str) -> Path:
    if not path:
        raise TokprofError("an output file name is empty")
    target = Path(path)
    try:
        if target.is_dir():
            raise TokprofError(f"{path}: is a directory")
        resolved = target.resolve()  # write to what a symlink points at, not over the link
    except (OSError, RuntimeError) as exc:  # a symlink loop, an unreadable folder
        raise TokprofError(f"{path}: cannot write: {getattr(exc, 'strerror', None) or exc}") from None
    if not resolved.parent.is_dir():
        raise TokprofError(f"{path}: no such directory: {resolved.parent}")
    return resolved


def write_files(outputs: list[tuple[str, bytes]]) -> None:
    """Write each (path, data); on any error nothing is left behind and TokprofError says why."""
    staged: list[tuple[str, Path, str]] = []  # (as named, target, temporary file)
    through: list[tuple[str, Path, bytes]] = []  # targets that are not regular files
    try:
        for path, data in outputs:
            target = _target(path)
            if target.exists() and not target.is_file():
                through.append((path, target, data))
                continue
            try:
                staged.append((path, target, write_temporary(target, data)))
            except OSError as exc:
                raise TokprofError(f"{path}: cannot write: {exc.strerror}") from None
        for path, target, tmp in staged:
            try:
                os.replace(tmp, target)
            except OSError as exc:
                raise TokprofError(f"{path}: cannot write: {exc.strerror}") from None
        staged = []
    finally:
        for _, _, tmp in staged:
            if os.path.exists(tmp):
                os.unlink(tmp)
    for path, target, data in through:
        try:
            with open(target, "wb") as f:
                f.write(data)
        except OSError as exc:
            raise TokprofError(f"{path}: cannot write: {exc.strerror}") from None
