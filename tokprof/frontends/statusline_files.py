"""Where ``tokprof statusline`` and its bucket counter (:mod:`tokprof.frontends.statusline_counter`) keep
their files: ``statusline`` in tokprof's cache, one state file per transcript, named by the SHA-256 of its
path; the counter's files are named after it."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def cache_dir() -> Path:
    """``statusline`` in tokprof's cache (:func:`tokprof.base.files.cache_dir`: ``$TOKPROF_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/tokprof``, else ``~/.cache/tokprof``)."""
    from tokprof.base.files import cache_dir as tokprof_cache

    return tokprof_cache() / "statusline"


def state_file(transcript: str) -> Path:
    """The file of a transcript's state (the bucket counter's files are named after it)."""
    return cache_dir() / (hashlib.sha256(os.path.abspath(transcript).encode()).hexdigest()[:32] + ".pickle")
