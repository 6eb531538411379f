"""Inspect AI eval logs (.json or .eval) (not written yet)."""

from __future__ import annotations

from tokprof.errors import InputError
from tokprof.formats.jsonfile import Document
from tokprof.trace import Trace

FORMAT = "inspect"
DESCRIPTION = "Inspect AI eval logs (.json or .eval)"


def sniff(doc: Document) -> bool:
    return False


def read(path: str, doc: Document) -> Trace:
    raise InputError(path, None, "the inspect reader is not written yet")
def read_zip(path): raise NotImplementedError
