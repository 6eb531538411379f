from __future__ import annotations

import csv
import io

from tokprof.attribution import BUCKETS
from tokprof.profile import Profile

COLUMNS = [
    "index", *BUCKETS, "total", "cumulative", "messages", "reported_prompt", "difference", "computed", "exact",
]


class CsvRenderer:
    """One row per call, with a header row."""

    def render(self, profile: Profile, color: bool = False) -> str:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(COLUMNS)
        for row in profile.calls:
            reported = row.reported.prompt if row.reported else None
            diff = row.difference()
            writer.writerow(
                [row.index, *(row.buckets[b] for b in BUCKETS), row.total, row.cumulative, row.messages,
                 "" if reported is None else reported, "" if diff is None else diff[0], row.rendered,
                 "true" if row.exact else "false"]
            )
        return out.getvalue()
