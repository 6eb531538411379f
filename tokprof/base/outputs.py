"""Writing outputs: :func:`check_targets` refuses, before anything is written, an output that would
replace a file the run reads or keeps, through a link too; :func:`write_files` writes all of a
command's outputs or none, each atomically; :func:`create_new` makes a file that is only appended to.
docs/output.md states the rules."""

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
    for folder in resolved.parents:
        if folder.exists():
            if not folder.is_dir():
                raise TokprofError(f"{path}: cannot write: {folder} is not a folder")
            break
    return resolved


def _make_folders(path: str, target: Path) -> list[Path]:
    """Make the folders ``target`` goes into that do not exist, outermost first; the ones made."""
    missing = []
    for folder in target.parents:
        if folder.is_dir():
            break
        missing.append(folder)
    made: list[Path] = []
    try:
        for folder in reversed(missing):
            folder.mkdir()
            made.append(folder)
    except OSError as exc:
        _remove_folders(made)
        raise TokprofError(f"{path}: cannot make the folder {folder}: {exc.strerror}") from None
    return made


def _remove_folders(made: list[Path]) -> None:
    """Remove folders made for outputs that were not written, innermost first (when still empty)."""
    for folder in reversed(made):
        try:
            folder.rmdir()
        except OSError:
            pass


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


def check_targets(paths: Sequence[str], protected: Sequence[str] = ()) -> None:
    """Refuse two outputs to one file, and an output that would replace one of ``protected`` (a file,
    or a file inside a folder), links followed: a :class:`TokprofError` naming the first."""
    named: list[str] = []
    for path in paths:
        for earlier in named:
            if _same_path(path, earlier):
                raise TokprofError(
                    f"{path}: two outputs would be written to the same file ({earlier}): give each its own"
                )
        named.append(path)
        for given in protected:
            if given and _overwrites(path, given):
                raise TokprofError(f"{path}: the output would overwrite the input {given}: write it elsewhere")


def _overwrites(path: str, given: str) -> bool:
    """Whether writing ``path`` would replace ``given``, or a file inside it when it is a folder (a
    link to either included)."""
    if _same_file(path, given):
        return True
    if not os.path.isdir(given) or not os.path.exists(path):
        return False
    inside = os.path.realpath(path)
    return os.path.commonpath([inside, os.path.realpath(given)]) == os.path.realpath(given)


def _same_path(a: str, b: str) -> bool:
    """Whether two output paths name one file (it may not exist yet)."""
    return _same_file(a, b) or os.path.realpath(a) == os.path.realpath(b)


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):  # either does not exist (yet), or cannot be read
        return False


def write_files(outputs: Sequence[tuple[str, Data]], protected: Sequence[str] = ()) -> None:
    """Write each (path, data) once every path passed :func:`check_targets` against ``protected``; on
    any error (or SIGTERM) nothing is left behind and TokprofError says why."""
    check_targets([path for path, _ in outputs], protected)
    with _terminate_as_exit():
        _write_files(outputs)


def create_new(path: str, protected: Sequence[str] = (), mode: int = 0o600) -> int:
    """A new file at ``path`` (checked as :func:`write_files` checks), opened for appending: never a
    file, link or anything else that exists there. A file descriptor; TokprofError says why not."""
    check_targets([path], protected)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC
    try:
        return os.open(path, flags, mode)
    except OSError as exc:
        raise TokprofError(f"{path}: cannot create: {exc.strerror}") from None


def _write_files(outputs: Sequence[tuple[str, Data]]) -> None:
    staged: list[tuple[str, Path, str]] = []  # (as named, target, temporary file)
    through: list[tuple[str, Path, Data]] = []  # targets that are not regular files
    made: list[Path] = []  # folders made for the outputs, removed again when they are not all written
    try:
        for path, data in outputs:
            target = _target(path)
            made += _make_folders(path, target)
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
        made = []
    finally:
        for _, _, tmp in staged:
            if os.path.exists(tmp):
                os.unlink(tmp)
        _remove_folders(made)
    for path, target, data in through:
        try:
            with open(target, "wb") as f:
                write_data(f, data)
        except OSError as exc:
            raise TokprofError(f"{path}: cannot write: {exc.strerror}") from None
