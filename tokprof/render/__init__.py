"""Renderers: one class per output format and kind of result, registered here.

Every renderer has ``render(result, options) -> str``. The command line takes each command's
``--format`` choices from :data:`RENDERERS`, which names classes without importing them, so that
``tokprof --help`` stays fast: a new renderer is its class, in the module of its kind of result, and a
line here; another package (or a test) adds one with :func:`register`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

#: Kind of result -> format -> "module:Class".
RENDERERS: dict[str, dict[str, str]] = {
    "profile": {
        "table": "tokprof.render.table:TableRenderer",
        "json": "tokprof.render.json_:JsonRenderer",
        "csv": "tokprof.render.csv_:CsvRenderer",
        "html": "tokprof.render.html:HtmlRenderer",
    },
    "sessions": {
        "table": "tokprof.render.sessions:SessionsTableRenderer",
        "json": "tokprof.render.sessions:SessionsJsonRenderer",
        "csv": "tokprof.render.sessions:SessionsCsvRenderer",
    },
    "local": {
        "table": "tokprof.render.local:LocalTableRenderer",
        "json": "tokprof.render.local:LocalJsonRenderer",
    },
    "diff": {
        "table": "tokprof.render.diff:DiffTableRenderer",
        "json": "tokprof.render.diff:DiffJsonRenderer",
        "markdown": "tokprof.render.diff:DiffMarkdownRenderer",
    },
    "periods": {
        "table": "tokprof.render.periods:PeriodsTableRenderer",
        "json": "tokprof.render.periods:PeriodsJsonRenderer",
    },
    "tools": {
        "table": "tokprof.render.tools:ToolsTableRenderer",
        "json": "tokprof.render.tools:ToolsJsonRenderer",
        "csv": "tokprof.render.tools:ToolsCsvRenderer",
    },
    "whatif": {
        "table": "tokprof.render.whatif:WhatIfTableRenderer",
        "json": "tokprof.render.whatif:WhatIfJsonRenderer",
        "csv": "tokprof.render.whatif:WhatIfCsvRenderer",
        "html": "tokprof.render.whatif:WhatIfHtmlRenderer",
    },
    "probe": {
        "table": "tokprof.render.probe:ProbeTableRenderer",
        "json": "tokprof.render.probe:ProbeJsonRenderer",
    },
    "mcp": {
        "table": "tokprof.mcp.render:McpTableRenderer",
        "json": "tokprof.mcp.render:McpJsonRenderer",
    },
    "mcp-list": {
        "table": "tokprof.mcp.render:DiscoveryTableRenderer",
        "json": "tokprof.mcp.render:DiscoveryJsonRenderer",
    },
    "check": {
        "table": "tokprof.render.check:CheckTableRenderer",
        "markdown": "tokprof.render.check:CheckMarkdownRenderer",
        "json": "tokprof.render.check:CheckJsonRenderer",
    },
}


@dataclass(frozen=True)
class RenderOptions:
    """How to render: colour (terminal tables only), the width tables fit in (None: 120 columns),
    how many per-call rows a table shows (None: all), and the HTML report's context window (None:
    the model's) and fill lines (shares of the window)."""

    color: bool = False
    width: int | None = None
    calls: int | None = None
    window: int | None = None
    levels: tuple[float, ...] = (0.7, 0.8)
    cost_parts: bool = False  # whatif's table: each policy's cost split (uncached, cache write, cache read, output)


def register(kind: str, name: str, target: str | type) -> None:
    """Add (or replace) the renderer of a kind of result in a format: ``"module:Class"``, or the class
    itself (another package's, or a test's: used as it is). A new kind of result comes with its first
    renderer; :func:`unregister` puts back what was there."""
    if isinstance(target, str) and ":" not in target:
        raise ValueError(f"a renderer is named 'module:Class', not {target!r}")
    _REPLACED.setdefault((kind, name), RENDERERS.get(kind, {}).get(name))
    named = target if isinstance(target, str) else f"{target.__module__}:{target.__qualname__}"
    RENDERERS.setdefault(kind, {})[name] = named
    _CLASSES.pop((kind, name), None)
    if not isinstance(target, str):
        _CLASSES[(kind, name)] = target


def unregister(kind: str, name: str) -> None:
    """Undo :func:`register`: the renderer that was there before, or none."""
    if (kind, name) not in _REPLACED:
        return
    before = _REPLACED.pop((kind, name))
    _CLASSES.pop((kind, name), None)
    if before is not None:
        RENDERERS[kind][name] = before
        return
    RENDERERS[kind].pop(name, None)
    if not RENDERERS[kind]:
        del RENDERERS[kind]


#: What :func:`register` replaced (None: nothing), and the classes it was given as themselves.
_REPLACED: dict[tuple[str, str], str | None] = {}
_CLASSES: dict[tuple[str, str], type] = {}


def formats_for(kind: str) -> list[str]:
    return list(RENDERERS[kind])


def renderer(kind: str, name: str) -> Any:
    """The renderer class for a kind of result and a format."""
    if (kind, name) in _CLASSES:
        return _CLASSES[(kind, name)]
    module, _, cls = RENDERERS[kind][name].partition(":")
    return getattr(importlib.import_module(module), cls)


def render(kind: str, name: str, result: Any, options: RenderOptions | None = None) -> str:
    return renderer(kind, name)().render(result, options or RenderOptions())
