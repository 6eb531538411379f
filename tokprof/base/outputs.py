"""Writing outputs: all of them or none, each atomically.

A command that writes several files (``profile -o X --html Y``, ``check --update-baseline``) writes
each to a temporary file beside its target first; only when every one is written are they moved
into place, so that an error leaves no output behind and never half a file. A target that exists
and is not a regular file (a FIFO, ``/dev/stdout``) is written through; a symlink is followed.
"""

from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

from tokprof.base.files import Data, write_data, write_temporary
from tokprof.base.errors import TokprofError


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


@contextmanager
def _terminate_as_exit() -> Iterator[None]:
    """While temporary files exist, SIGTERM (which would end the process at once, leaving them)
    raises SystemExit(143) instead, so that they are removed as on Ctrl-C; only in the main thread
    and when nobody else handles SIGTERM."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
        yield
        return

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def write_files(outputs: Sequence[tuple[str, Data]]) -> None:
    """Write each (path, data); on any error (or SIGTERM) nothing is left behind and TokprofError says why."""
    with _terminate_as_exit():
        _write_files(outputs)


def _write_files(outputs: Sequence[tuple[str, Data]]) -> None:
    staged: list[tuple[str, Path, str]] = []  # (as named, target, temporary file)
    through: list[tuple[str, Path, Data]] = []  # targets that are not regular files
    try:
        for path, data in outputs:
            target = _target(path)
            if target.exists() and not target.is_file():
                # made whole here, before any file is replaced: a target that is not a regular file
                # (a pipe, a device) has no temporary beside it, and text that fails half way made
                # (a profile's JSON, in pieces) would leave half a document there after the files
                through.append((path, target, data if isinstance(data, (bytes, bytearray)) else b"".join(data)))
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
                write_data(f, data)
        except OSError as exc:
            raise TokprofError(f"{path}: cannot write: {exc.strerror}") from None
