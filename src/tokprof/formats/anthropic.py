"""Anthropic Messages captures (not written yet)."""

from __future__ import annotations

from tokprof.errors import InputError
from tokprof.formats.jsonfile import Document
from tokprof.trace import Trace

FORMAT = "anthropic"
DESCRIPTION = "Anthropic Messages captures"


def sniff(doc: Document) -> bool:
    return False


def read(path: str, doc: Document) -> Trace:
    raise InputError(path, None, "the anthropic reader is not written yet")
