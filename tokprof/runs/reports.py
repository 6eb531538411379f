"""A result as text in one of its formats, a directory's report as warehouse tables with its
incremental state, and its records as Prometheus text or OTLP spans."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tokprof.base.errors import InputError, TokprofError
from tokprof.runs.inputs import PathLike

if TYPE_CHECKING:
    from tokprof.analyses.sessions import SessionsReport
    from tokprof.render.tables import TeamOptions


def render_report(
    result: Any,
    fmt: str = "table",
    *,
    width: int | None = None,
    color: bool = False,
    calls: int | None = None,
    window: int | None = None,
    levels: Sequence[float] = (0.7, 0.8),
    cost_parts: bool = False,
    team: TeamOptions | None = None,
) -> str:
    """A result (:class:`Profile`, :class:`SessionsReport`, :class:`ToolsReport`,
    :class:`WhatIfReport`, :class:`CheckResult`, :class:`ProbeReport`, :class:`McpReport`, the
    discovery :func:`find_mcp_servers` returns or the list :func:`local_sessions` returns) as text in one of its formats (``table``,
    ``json``, ``csv``, ``html``, ``markdown``: :func:`report_formats` says which), as the command
    line writes it. ``width`` is the table's (None: 120 columns), ``calls`` the per-call rows a
    profile's table shows (None: all), ``window`` and ``levels`` the HTML report's context window and
    fill lines, ``cost_parts`` a what-if table's cost split per policy. ``team`` (a directory's
    report, made with ``records``): the sessions with a call in its time range, and its rollups after
    the table or in the JSON's ``rollups``."""
    from tokprof.names import report_formats, result_kind
    from tokprof.render import RenderOptions, render

    kind = result_kind(result)
    if kind is None:
        raise TypeError(f"render_report: not a tokprof result: {type(result).__name__}")
    if fmt not in report_formats(result):
        raise InputError(
            "format",
            None,
            f"{fmt!r} is not a format of a {kind} result: use one of " + ", ".join(report_formats(result)),
        )
    options = RenderOptions(
        color=color, width=width, calls=calls, window=window, levels=tuple(levels), cost_parts=cost_parts
    )
    if team is None:
        return render(kind, fmt, result, options)
    if kind != "sessions":
        raise TypeError(f"render_report: team options are for a directory's report, not a {kind} result")
    return _team_text(result, fmt, options, team)


def _team_text(report: SessionsReport, fmt: str, options: Any, team: TeamOptions) -> str:
    """A directory's report in the team's time range, with the team's rollups."""
    from tokprof.render import render
    from tokprof.render.tables import rollups_text, team_view

    report, _, rollups = team_view(report, team)
    text = render("sessions", fmt, report, options)
    if rollups and fmt == "json":
        import json

        doc = json.loads(text)
        doc["rollups"] = [r.to_dict() for r in rollups]
        text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    elif rollups and fmt == "table":
        text += rollups_text(rollups)
    elif rollups:
        raise TokprofError("--by: rollups are in the table, JSON and Parquet outputs (and CSV into a folder: -o DIR/)")
    return text


def report_tables(
    report: SessionsReport,
    fmt: str,
    folder: PathLike,
    *,
    team: TeamOptions | None = None,
    state: dict | None = None,
) -> list[tuple[str, bytes]]:
    """A directory's report (made with ``records``) as the tables a warehouse takes (docs/tables.md),
    each a file's path in ``folder`` and its bytes: ``calls`` and ``sessions``, then a table per
    rollup of ``team``, in ``fmt`` ``parquet`` (the ``parquet`` extra) or ``csv``; with ``state`` (an
    incremental run's, see :func:`incremental_state`), the state file too. Nothing is written."""
    from tokprof.render.tables import TeamOptions, table_files, tables, team_view

    if fmt not in ("parquet", "csv"):
        raise TokprofError(f"report_tables: the tables are parquet or csv files, not {fmt}")
    team = team or TeamOptions()
    folder = os.fspath(folder)
    report, calls, rollups = team_view(report, team)
    files = table_files(folder, fmt, tables(report, calls, rollups, team.with_text))
    if state is not None:
        from tokprof.analyses.incremental import STATE_NAME, state_bytes

        files.append((os.path.join(folder, STATE_NAME), state_bytes(state)))
    return files


def incremental_state(folder: PathLike) -> dict:
    """The state an incremental directory run keeps beside its tables in ``folder`` (empty when there
    is none yet): give it to :func:`profile_directory` as ``state``, which profiles only the files that
    are new or changed and replaces it with the new state, and to :func:`report_tables` to keep it."""
    from tokprof.analyses.incremental import STATE_NAME, load_state

    return load_state(os.path.join(os.fspath(folder), STATE_NAME))


def prometheus_text(report: SessionsReport) -> str:
    """A directory's per-call records (``profile_directory(records=True)``) as Prometheus' text
    exposition: a metric family per figure, a series per label set."""
    from tokprof.export.prometheus import exposition

    return exposition(report.calls)


def send_spans(report: SessionsReport, endpoint: str) -> int:
    """Send a span per call of a directory's records (``profile_directory(records=True)``) to an OTLP
    HTTP traces endpoint (``.../v1/traces``, the ``otel`` extra); the spans sent."""
    from tokprof.export.otlp import send_spans as send

    return send(report.calls, endpoint)
