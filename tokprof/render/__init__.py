"""Renderers: one class per output format, each turning a Profile into text."""

from __future__ import annotations

from tokprof.render.csv_ import CsvRenderer
from tokprof.render.json_ import JsonRenderer
from tokprof.render.table import TableRenderer

RENDERERS = {"table": TableRenderer, "json": JsonRenderer, "csv": CsvRenderer}

__all__ = ["RENDERERS", "CsvRenderer", "JsonRenderer", "TableRenderer"]
