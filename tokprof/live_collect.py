"""Telemetry as table rows, for ``tokprof collect`` and for Python users who receive OTLP themselves:
:class:`Telemetry` turns one OTLP/HTTP request body (``/v1/traces``, ``/v1/logs``, ``/v1/metrics``;
protobuf or JSON) into rows of the calls table (docs/tables.md, docs/collect.md), and rows into the
Parquet files of a partitioned folder (``day=YYYY-MM-DD/agent=NAME/<name>.parquet``)."""

from __future__ import annotations

import threading
from datetime import datetime, timezone
from typing import Any

from tokprof.analyses.telemetry import (
    AGGREGATE_KEYS,
    AGGREGATE_SUMS,
    COLUMNS,
    KEEPS,
    RowOptions,
    Rows,
    aggregate,
    partition_value,
)
from tokprof.base.errors import TokprofError
from tokprof.formats.otel import SpanCalls
from tokprof.formats.otlp import SIGNALS, WrongMedia, decode, media
from tokprof.profiling import Profile
from tokprof.render.tables import Table, parquet_files
from tokprof.trace import Trace

Row = dict[str, Any]


class Telemetry:
    """One collector's rows: ``collector`` names its files; ``keep`` is ``calls`` (no prompt text),
    ``text`` or ``aggregates``; ``hash_users`` writes user ids as SHA-256 hashes (after ``salt``);
    ``model`` counts captured prompt content (None: the log's model, as :func:`tokprof.profile` chooses).
    Safe to call from several threads."""

    def __init__(
        self,
        collector: str = "collector",
        keep: str = "calls",
        hash_users: bool = False,
        salt: str = "",
        model: str | None = None,
    ) -> None:
        if keep not in KEEPS:
            raise TokprofError(f"keep {keep!r}: expected one of {', '.join(KEEPS)}")
        self.collector = partition_value(collector)
        self.keep = keep
        self._rows = Rows(RowOptions(self.collector, keep, hash_users, salt, model), _profile)
        self._lock = threading.Lock()

    @staticmethod
    def media_error(content_type: str | None) -> str | None:
        """Why a request's Content-Type is not OTLP's (None: it is protobuf or JSON)."""
        try:
            media(content_type)
        except WrongMedia as exc:
            return str(exc)
        return None

    def rows(self, signal: str, body: bytes, content_type: str | None, where: str = "request") -> list[tuple[str, Row]]:
        """The rows of one request's body, each with its key (a span's ids, an event's hash): all of
        them, or an :class:`~tokprof.InputError` naming what is wrong and none."""
        if signal not in SIGNALS:
            raise TokprofError(f"signal {signal!r}: expected one of {', '.join(SIGNALS)}")
        items = decode(signal, body, content_type, where)
        reader = SpanCalls(where)
        with self._lock:  # the miss rule remembers each session's last call across requests
            return [(item.key, self._rows.row(item, call)) for item in items if (call := reader.call(item.span))]

    def files(self, rows: list[Row], name: str) -> list[tuple[str, bytes]]:
        """Parquet files of ``rows``, one per day and agent: ``day=YYYY-MM-DD/agent=NAME/<name>.parquet``
        (a call without a time goes under today, UTC)."""
        parts: dict[tuple[str, str], list[Row]] = {}
        today = datetime.now(timezone.utc).date().isoformat()
        for row in rows:
            day = row["time"].date().isoformat() if row.get("time") else today
            parts.setdefault((day, partition_value(row.get("agent"))), []).append(row)
        out = []
        for (day, agent), found in sorted(parts.items()):
            if self.keep == "aggregates":
                columns: tuple[str, ...] = (*AGGREGATE_KEYS, "calls", "priced_calls", *AGGREGATE_SUMS)
                table = Table("collect_aggregates", columns, [tuple(r[c] for c in columns) for r in aggregate(found)])
            else:
                columns = COLUMNS if self.keep == "text" else tuple(c for c in COLUMNS if c != "text")
                table = Table("calls", columns, [tuple(r.get(c) for c in columns) for r in found])
            ((_, data),) = parquet_files([table])
            out.append((f"day={day}/agent={agent}/{name}.parquet", data))
        return out


def _profile(trace: Trace, model: str | None) -> Profile:
    from tokprof.runs.options import Options
    from tokprof.runs.profile import profile

    return profile(trace, Options(model=model))
