from __future__ import annotations

import csv
import io

from tokprof.profiling import Profile
from tokprof.render import RenderOptions

COLUMNS = ["total", "cumulative", "messages", "reported_prompt", "difference", "computed", "exact", "kind", "unrendered"]


class CsvRenderer:
    """One row per call, with a header row."""

    def render(self, profile: Profile, options: RenderOptions = RenderOptions()) -> str:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        names = profile.buckets()
        writer.writerow(["index", *names, *COLUMNS])
        for row in profile.calls:
            reported = row.reported.prompt if row.reported else None
            diff = row.difference()
            writer.writerow(
                [row.index, *(row.buckets.get(b, 0) for b in names), row.total, row.cumulative, row.messages,
                 "" if reported is None else reported, "" if diff is None else diff[0], row.rendered,
                 "true" if row.exact else "false", row.kind, row.unrendered]
            )
        return out.getvalue()
