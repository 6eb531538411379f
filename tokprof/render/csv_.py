"""A profile as CSV: one row per call, its buckets and cost (the columns in docs/output.md)."""

from __future__ import annotations

import io

from tokprof.profiling import CallRow, Profile
from tokprof.render import RenderOptions
from tokprof.render import csvsafe
from tokprof.profiling import missing_buckets, recorded

COLUMNS = [
    "total",
    "cumulative",
    "messages",
    "reported_prompt",
    "difference",
    "computed",
    "exact",
    "kind",
    "unrendered",
]
#: The reported prompt split by the cache, the call's cost (US dollars) and the computed cache.
COST_COLUMNS = [
    "uncached_input_reported",
    "cache_write_reported",
    "cache_write_5m_reported",
    "cache_write_1h_reported",
    "cache_read_reported",
    "output_reported",
    "priced",
    "cost_input",
    "cost_cache_write",
    "cost_cache_read",
    "cost_output",
    "cost_total",
    "cost_basis",
    "shared_prefix",
    "predicted_cache_read",
    "cache_miss",
]


def _cell(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{round(value, 8):.8f}".rstrip("0").rstrip(".") or "0"
    return value


class CsvRenderer:
    """One row per call, with a header row."""

    def render(self, profile: Profile, options: RenderOptions = RenderOptions()) -> str:
        out = io.StringIO()
        writer = csvsafe.Writer(out)
        names = profile.buckets()
        missing = missing_buckets(profile.not_recorded)
        writer.writerow(["index", *names, *COLUMNS, *COST_COLUMNS])
        for row in profile.calls:
            reported = row.reported.prompt if row.reported else None
            diff = row.difference()
            known = row.recorded  # else neither the prompt nor its usage: empty cells, not 0
            writer.writerow(
                [
                    row.index,
                    *(_cell(recorded(row.buckets.get(b, 0), b, missing) if known else None) for b in names),
                    row.total if known else "",
                    row.cumulative if known else "",
                    row.messages,
                    "" if reported is None else reported,
                    "" if diff is None else diff[0],
                    row.rendered if known else "",
                    "true" if row.exact else "false",
                    row.kind,
                    row.unrendered,
                    *_cost_cells(row),
                ]
            )
        return out.getvalue()


def _cost_cells(row: CallRow) -> list:
    usage, cost, cache = row.reported, row.cost, row.cache
    cells: list = [
        usage.uncached if usage else None,
        usage.cache_write if usage else None,
        usage.cache_write_5m if usage else None,
        usage.cache_write_1h if usage else None,
        usage.cache_read if usage else None,
        usage.output if usage else None,
    ]
    if cost is None:
        cells += [None] * 7
    else:
        cells += [cost.priced, cost.input, cost.cache_write, cost.cache_read, cost.output, cost.total, cost.basis]
    cells += [cache.shared, cache.predicted, cache.miss] if cache and row.recorded else [None, None, None]
    return [_cell(c) for c in cells]
