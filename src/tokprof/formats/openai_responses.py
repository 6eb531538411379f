"""OpenAI Responses API captures (not written yet)."""

from __future__ import annotations

from tokprof.errors import InputError
from tokprof.formats.jsonfile import Document
from tokprof.trace import Trace

FORMAT = "openai-responses"
DESCRIPTION = "OpenAI Responses API captures"


def sniff(doc: Document) -> bool:
    return False


def read(path: str, doc: Document) -> Trace:
    raise InputError(path, None, "the openai-responses reader is not written yet")
