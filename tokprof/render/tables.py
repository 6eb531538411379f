"""Tables a warehouse takes: ``calls`` (one row per call), ``sessions`` (one per session) and a
table per rollup, as Parquet files (pyarrow: the ``parquet`` extra) or CSV files, in an output folder.
The fields are documented in docs/tables.md; the Parquet files carry the schema version in their
metadata (``tokprof.schema_version``). Nulls stay null: what a log does not record is never 0.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from tokprof.analyses.calls import FIELDS, SCHEMA_VERSION, CallRecord
from tokprof.analyses.rollups import Rollup
from tokprof.analyses.sessions import SessionsReport
from tokprof.base.errors import TokprofError
from tokprof.render import csvsafe

SESSION_FIELDS = (
    "session",
    "path",
    "format",
    "model",
    "calls",
    "compactions",
    "billed_input",
    "billed_input_reported",
    "cache_read_reported",
    "cache_write_reported",
    "exact",
    "profiled_with",
    "estimate",
    "cost",
    "priced",
    "unpriced",
)
INT_FIELDS = {
    "call_index",
    "system",
    "tool_definitions",
    "tool_results",
    "conversation",
    "unrecorded",
    "total",
    "context_window",
    "calls",
    "compactions",
    "billed_input",
    "billed_input_reported",
    "cache_read_reported",
    "cache_write_reported",
    "sessions",
    "reported_calls",
    "priced_calls",
}
BOOL_FIELDS = {"exact", "priced"}
FLOAT_FIELDS = {"window_fill", "cost"}


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[str, ...]
    rows: list[tuple]


def tables(
    report: SessionsReport, calls: Sequence[CallRecord], rollups: Sequence[Rollup] = (), with_text: bool = False
) -> list[Table]:
    """The run's tables: calls, sessions, then one per rollup (``rollup_<dimensions>``)."""
    columns = tuple(name for name in FIELDS if with_text or name != "text")
    out = [
        Table("calls", columns, [tuple(_value(record, name) for name in columns) for record in calls]),
        Table(
            "sessions",
            SESSION_FIELDS,
            [tuple(getattr(row, name) for name in SESSION_FIELDS) for row in report.sessions],
        ),
    ]
    for rollup in rollups:
        names = (
            *rollup.by,
            "sessions",
            "calls",
            "billed_input",
            *_bucket_names(rollup),
            "reported_calls",
            "reported_prompt",
            "reported_cache_read",
            "reported_cache_write",
            "reported_output",
            "cost",
            "priced_calls",
        )
        rows = []
        for row in rollup.rows:
            d = row.to_dict(rollup.by)
            d.update(d.pop("buckets"))
            rows.append(tuple(d[name] for name in names))
        out.append(Table(f"rollup_{'_'.join(rollup.by)}", names, rows))
    return out


def _bucket_names(rollup: Rollup) -> tuple[str, ...]:
    from tokprof.analyses.calls import ALL_BUCKETS

    return ALL_BUCKETS


def _value(record: CallRecord, name: str) -> Any:
    return getattr(record, name)


def _arrow_type(name: str, pa: Any) -> Any:
    if name == "time":
        return pa.timestamp("us", tz="UTC")
    if name in BOOL_FIELDS:
        return pa.bool_()
    if name in INT_FIELDS or name.startswith("reported_"):
        return pa.int64()
    if name in FLOAT_FIELDS or name.startswith("cost_"):
        return pa.float64()
    return pa.string()


def parquet_files(found: list[Table]) -> list[tuple[str, bytes]]:
    """Each table as a Parquet file's bytes, named ``<table>.parquet``."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise TokprofError("Parquet output needs pyarrow: pip install 'tokprof[parquet]'") from None
    out = []
    for table in found:
        schema = pa.schema(
            [pa.field(name, _arrow_type(name, pa)) for name in table.columns],
            metadata={"tokprof.schema_version": str(SCHEMA_VERSION), "tokprof.table": table.name},
        )
        columns = list(zip(*table.rows)) if table.rows else [() for _ in table.columns]
        arrow = pa.table(
            [pa.array(list(values), type=field.type) for values, field in zip(columns, schema)], schema=schema
        )
        sink = io.BytesIO()
        pq.write_table(arrow, sink, compression="zstd")
        out.append((f"{table.name}.parquet", sink.getvalue()))
    return out


def csv_files(found: list[Table]) -> list[tuple[str, bytes]]:
    """Each table as a CSV file (an empty cell for null), named ``<table>.csv``."""
    out = []
    for table in found:
        text = io.StringIO()
        writer = csvsafe.Writer(text)
        writer.writerow(list(table.columns))
        for row in table.rows:
            writer.writerow([_cell(value) for value in row])
        out.append((f"{table.name}.csv", text.getvalue().encode("utf-8")))
    return out


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, float):
        return repr(value)
    return str(value)


def table_files(directory: str, fmt: str, found: list[Table]) -> list[tuple[str, bytes]]:
    """The files of ``found`` in ``fmt`` (parquet or csv), with their paths in ``directory``."""
    files = parquet_files(found) if fmt == "parquet" else csv_files(found)
    return [(str(Path(directory) / name), data) for name, data in files]


@dataclass(frozen=True)
class TeamOptions:
    """What ``tokprof profile DIR`` adds for teams: rollups (``--by``), a time range (``--since``,
    ``--until``, by call time) and whether the calls table carries the text (``--with-text``)."""

    by: tuple[tuple[str, ...], ...] = ()
    since: datetime | None = None
    until: datetime | None = None
    with_text: bool = False

    @property
    def filtered(self) -> bool:
        return self.since is not None or self.until is not None

    @classmethod
    def parse(
        cls, by: Sequence[str] = (), since: str | None = None, until: str | None = None, with_text: bool = False
    ) -> TeamOptions:
        """The options as a user writes them: ``by`` dimensions (each one, or several joined by
        commas: ``model,day``), ``since`` and ``until`` ISO dates (a whole day, UTC; ``until`` takes in
        that day) or dates and times."""
        from tokprof.analyses.rollups import parse_by, parse_when

        return cls(
            tuple(parse_by(list(by))),
            parse_when(since, "--since") if since else None,
            parse_when(until, "--until", end=True) if until else None,
            with_text,
        )


def team_view(report: SessionsReport, options: TeamOptions) -> tuple[SessionsReport, list[CallRecord], list[Rollup]]:
    """The report restricted to the time range (the sessions with a call in it), its calls in range,
    and their rollups."""
    import dataclasses

    from tokprof.analyses.rollups import rollup, within

    calls = within(report.calls, options.since, options.until)
    if options.filtered:
        kept = {(c.path, c.session) for c in calls}
        report = dataclasses.replace(
            report, sessions=[r for r in report.sessions if (r.path, r.session) in kept], calls=calls
        )
    return report, calls, [rollup(calls, by) for by in options.by]


def rollups_text(rollups: Sequence[Rollup]) -> str:
    """The rollups as plain aligned text tables, after the sessions table."""
    from tokprof.base.text import visible

    out = []
    for found in rollups:
        head = [*found.by, "sessions", "calls", "billed input", "reported prompt", "cost"]
        rows = [
            [visible(part) for part in row.key]
            + [
                str(row.sessions),
                str(row.calls),
                f"{row.billed_input:,}",
                "not recorded" if row.reported_prompt is None else f"{row.reported_prompt:,}",
                "not priced" if row.cost is None else f"${row.cost:,.2f}",
            ]
            for row in found.rows
        ]
        widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
        out.append(f"\nBy {', '.join(found.by)}:")
        for r in [head, *rows]:
            out.append(
                "  "
                + "  ".join(
                    c.ljust(w) if i < len(found.by) else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))
                ).rstrip()
            )
    return "\n".join(out) + "\n"
