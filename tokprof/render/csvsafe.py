"""CSV for text from logs: a cell a spreadsheet would read as a formula is written as text.

Tool names, models, paths and session ids come from the log; a cell that starts with ``=``, ``+``,
``-``, ``@``, a tab or a carriage return (and is not a number) is written with a leading ``'``, as
OWASP advises against CSV injection, so that opening the file never runs it.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from typing import IO, Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


#: A number as tokprof writes one (a spreadsheet reads it as a number, not as a formula).
_NUMBER = re.compile(r"[+-]?\d+(\.\d+)?([eE][+-]?\d+)?")


def _number(text: str) -> bool:
    return _NUMBER.fullmatch(text) is not None


def cell(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _number(value):
        return "'" + value
    return value


class Writer:
    """``csv.writer`` (rows ended by ``\\n``) whose text cells never read as formulas."""

    def __init__(self, out: IO[str]):
        self._writer = csv.writer(out, lineterminator="\n")

    def writerow(self, row: Iterable[Any]) -> None:
        self._writer.writerow([cell(value) for value in row])
