"""Prometheus text exposition (format 0.0.4) of a run's calls, for node_exporter's textfile collector:
counters by agent, model, project and branch ("unknown" where a log does not record it), written
by hand (no dependency). Reported figures count only the calls that report them."""

from __future__ import annotations

from collections.abc import Sequence

from tokprof.analyses.calls import ALL_BUCKETS, CallRecord
from tokprof.analyses.rollups import UNKNOWN

LABELS = ("agent", "model", "project", "branch", "machine", "user")


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(record: CallRecord) -> tuple[str, ...]:
    values = (record.agent, record.model, record.project, record.git_branch, record.machine, record.user)
    return tuple(v if v else UNKNOWN for v in values)


def _series(labels: tuple[str, ...], extra: tuple[tuple[str, str], ...] = ()) -> str:
    pairs = list(zip(LABELS, labels)) + list(extra)
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in pairs) + "}"


def exposition(records: Sequence[CallRecord]) -> str:
    """The text exposition: one metric family per figure, a series per label set."""
    sums: dict[str, dict[tuple, float]] = {}

    def add(metric: str, key: tuple, value: float | None) -> None:
        if value is not None:
            family = sums.setdefault(metric, {})
            family[key] = family.get(key, 0) + value

    for r in records:
        labels = _labels(r)
        add("tokprof_calls_total", (labels, ()), 1)
        for bucket in ALL_BUCKETS:
            add("tokprof_prompt_tokens_total", (labels, (("bucket", bucket),)), getattr(r, bucket))
        add("tokprof_reported_input_tokens_total", (labels, ()), r.reported_prompt)
        add("tokprof_reported_cache_read_tokens_total", (labels, ()), r.reported_cache_read)
        add("tokprof_reported_cache_write_tokens_total", (labels, ()), r.reported_cache_write)
        add("tokprof_reported_output_tokens_total", (labels, ()), r.reported_output)
        add("tokprof_cost_usd_total", (labels, ()), r.cost_total)
        if r.cache_miss:
            add("tokprof_cache_misses_total", (labels, (("reason", r.cache_miss),)), 1)
    helps = {
        "tokprof_calls_total": "Model calls profiled.",
        "tokprof_prompt_tokens_total": "Prompt tokens by bucket (tokprof's attribution; the billed input).",
        "tokprof_reported_input_tokens_total": "Prompt tokens the provider reported, over the calls reporting them.",
        "tokprof_reported_cache_read_tokens_total": "Reported cache reads.",
        "tokprof_reported_cache_write_tokens_total": "Reported cache writes.",
        "tokprof_reported_output_tokens_total": "Reported output tokens.",
        "tokprof_cost_usd_total": "US dollars over the priced calls.",
        "tokprof_cache_misses_total": "Calls that read less from the cache than a prefix cache could, by reason.",
    }
    out = []
    for metric, help_text in helps.items():
        family = sums.get(metric)
        if not family:
            continue
        out.append(f"# HELP {metric} {help_text}")
        out.append(f"# TYPE {metric} counter")
        for (labels, extra), value in sorted(family.items()):
            number = repr(round(value, 8)) if isinstance(value, float) else str(int(value))
            out.append(f"{metric}{_series(labels, extra)} {number}")
    return "\n".join(out) + "\n"
