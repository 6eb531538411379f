"""Cost and cache lines, as every text renderer writes them: dollars, and what each figure rests on."""

from __future__ import annotations

from tokprof.pricing.billing import WRITES_AT_5M, CacheSummary, CallCost, CostSummary
from tokprof.profiling import Reported, Summary

PART_LABELS = {
    "input": "uncached input",
    "cache_write": "cache writes",
    "cache_read": "cache reads",
    "output": "output",
}
BUCKET_LABELS = {
    "system": "system",
    "tool_definitions": "tool defs",
    "tool_results": "tool results",
    "conversation": "conversation",
    "unrecorded": "unrecorded",
}


def dollars(value: float | None) -> str:
    """An amount in US dollars: cents from a dollar up, more digits below."""
    if value is None:
        return "-"
    if value == 0:
        return "$0"
    if value >= 1:
        return f"${value:,.2f}"
    if value >= 0.01:
        return f"${value:.3f}"
    if value >= 0.0001:
        return f"${value:.4f}"
    return "<$0.0001"


def call_cost(cost: CallCost | None) -> str:
    """A call's cost for a table cell: dollars, ``unpriced``, or ``-`` when it was not priced."""
    if cost is None:
        return "-"
    if not cost.priced:
        return "unpriced"
    return dollars(cost.total) + ("*" if cost.basis == "computed" else "")


def unpriced_text(summary: CostSummary) -> str:
    return "; ".join(f"{u.reason}" + (f", {u.calls} calls" if u.calls > 1 else "") for u in summary.unpriced)


def source_text(summary: CostSummary, models: list[tuple[str | None, str | None]]) -> str:
    """Where the prices come from: genai-prices' bundled data and its version, or the user's rates."""
    sources = []
    for source in summary.sources:
        if source == "genai-prices":
            sources.append(f"genai-prices {summary.source_version or ''} bundled data".replace("  ", " "))
        else:
            sources.append(f"rates from {source}")
    named = ", ".join(f"{model} ({provider})" if provider else str(model) for model, provider in models if model)
    return (f"{named}, " if named else "") + " and ".join(sources)


def cost_lines(summary: CostSummary | None, models: list[tuple[str | None, str | None]]) -> list[tuple[str, str]]:
    """The summary's cost lines, as (key, value)."""
    if summary is None:
        return []
    if summary.total is None:
        return [("cost", f"unpriced ({unpriced_text(summary)})")]
    head = dollars(summary.total)
    if summary.basis == "computed":
        head += " (estimate: the log reports no usage; priced on computed prompts, no cache, output not priced)"
    elif summary.basis == "mixed":
        head += " (calls without usage priced on computed prompts: an estimate)"
    lines = [("cost", f"{head}; {source_text(summary, models)}")]
    if not summary.priced:
        lines.append(
            (
                "  unpriced",
                f"{summary.calls_unpriced} of {summary.calls_priced + summary.calls_unpriced} "
                f"calls, not in the total ({unpriced_text(summary)})",
            )
        )
    placeholder = any("under-reported" in note for note in summary.notes)
    lifetime = any(note == WRITES_AT_5M for note in summary.notes)
    for part, label in PART_LABELS.items():
        value = getattr(summary, part)
        if part == "cache_write" and not value:
            continue  # no cache writes (OpenAI reports none)
        text = dollars(value)
        if part == "output" and placeholder:
            text += " (under-reported: the log's output counts are placeholders)"
        if part == "cache_write" and lifetime:
            text += " (at the 5-minute rate: their lifetime is not known)"
        lines.append((f"  {label}", text))
    if summary.other:
        lines.append(("  other", dollars(summary.other) + " (what the price has beyond tokens)"))
    if summary.without_cache is not None and summary.without_cache > (summary.total or 0):
        saved = summary.without_cache - (summary.total or 0)
        lines.append(
            (
                "  without a cache",
                f"{dollars(summary.without_cache)} (all input at the input price: the cache saved {dollars(saved)})",
            )
        )
    if summary.buckets:
        order = sorted(summary.buckets.items(), key=lambda item: -item[1])
        shown = ", ".join(f"{BUCKET_LABELS.get(k, k)} {dollars(v)}" for k, v in order if v > 0)
        estimate = any("estimate" in note and "bucket" in note for note in summary.notes)
        lines.append(("  prompt by bucket", shown + (" (estimate)" if estimate else "")))
    if summary.largest_call is not None:
        lines.append(("  costliest call", f"{dollars(summary.largest_call)} (call {summary.largest_call_index})"))
    return lines


def billed_input_lines(summary: Summary) -> list[tuple[str, str]]:
    """The billed input, on one line called so (#48.2): what the calls reported, when every call
    reports usage (the figure counted beside it, as "computed input", when the two differ), else
    every call's prompt as counted, added up (what the calls with usage reported beside it)."""
    computed, usage = summary.billed_input, summary.reported
    if usage is None:
        return [("billed input", f"{computed:,} tokens (every call's prompt, added up)")]
    calls = f"{usage.calls} call{'' if usage.calls == 1 else 's'} with usage"
    if usage.billed_input == computed:
        return [("billed input", f"{computed:,} tokens (as reported: {calls})")]
    if usage.calls == summary.calls:
        return [
            ("billed input", f"{usage.billed_input:,} tokens (as reported: {calls})"),
            ("computed input", f"{computed:,} tokens (every call's prompt as counted, added up)"),
        ]
    return [
        ("billed input", f"{computed:,} tokens (every call's prompt, added up)"),
        ("reported input", f"{usage.billed_input:,} tokens ({calls})"),
    ]


def usage_lines(usage: Reported, placeholder: bool) -> list[tuple[str, str]]:
    """The reported billed input split into uncached input, cache writes, cache reads and output."""
    lines = []
    if usage.uncached_input is not None and (usage.cache_read or usage.cache_write):
        lines.append(("  uncached input", f"{usage.uncached_input:,} tokens"))
    if usage.cache_write:
        split = ""
        if usage.cache_write_5m is not None or usage.cache_write_1h is not None:
            split = f" (5 min: {usage.cache_write_5m or 0:,}; 1 h: {usage.cache_write_1h or 0:,})"
        lines.append(("  cache writes, reported", f"{usage.cache_write:,} tokens{split}"))
    if usage.cache_read:
        share = f" ({usage.hit_rate:.1%} of the prompts)" if usage.hit_rate is not None else ""
        lines.append(("  cache reads, reported", f"{usage.cache_read:,} tokens{share}"))
    if usage.output is not None:
        lines.append(
            (
                "  output, reported",
                f"{usage.output:,} tokens" + (" (placeholders: under-reported)" if placeholder else ""),
            )
        )
    return lines


def cache_lines(cache: CacheSummary | None) -> list[tuple[str, str]]:
    """The computed cache: predicted reads beside the reported ones, and the misses."""
    if cache is None or cache.predicted is None:
        return []
    text = f"predicted reads {cache.predicted:,} ({cache.hit_rate_predicted or 0:.1%})"
    if cache.reported is not None:
        text += f" vs reported {cache.reported:,} ({cache.hit_rate_reported or 0:.1%})"
    text += f"; {' and '.join(cache.rules)} rules"
    if any("estimated" in note for note in cache.notes):
        text += ", estimate"
    lines = [("cache, computed", text)]
    if cache.misses:
        lines.append(
            (
                "  misses",
                ", ".join(f"{code} {n}" for code, n in cache.misses.items()) + " (calls[].cache in the JSON says why)",
            )
        )
    return lines


REASON_WORDS = {
    "idle-gap": "idle past the cache lifetime",
    "model-switch": "model switch",
    "below-minimum": "under the minimum length",
    "no-breakpoint": "no cache breakpoint",
    "below-prediction": "read less than the rules give",
}
PART_WORDS = {
    "system": "system prompt",
    "tools": "tools",
    "message": "an earlier message",
    "reasoning": "reasoning dropped",
    "rewrite": "conversation cut",
    "compaction": "compaction",
}


def reason_label(reason: str, part: str | None) -> str:
    """A miss reason in words: ``prefix-changed`` by the part that changed."""
    if reason == "prefix-changed":
        return f"prefix changed ({PART_WORDS.get(part or '', 'a part of it')})"
    return REASON_WORDS.get(reason, reason)


def forensics_lines(cache: CacheSummary | None, cost: CostSummary | None, breaks: int = 2) -> list[tuple[str, str]]:
    """The cache's headline: the hit rate, what the misses cost by reason, and the costliest breaks."""
    if cache is None or cache.lost is None or not (cache.rules or cache.reported is not None):
        return []
    lost = cache.lost
    if cache.hit_rate_reported is not None:
        rate = f"{cache.hit_rate_reported:.1%} of the prompts read from the cache"
    elif cache.hit_rate_predicted is not None:
        rate = f"{cache.hit_rate_predicted:.1%} of the prompts could be read from the cache (the log reports no reads)"
    else:
        rate = "the log reports no cache reads"
    unexplained = []
    if lost.unexplained is not None:
        u = lost.unexplained
        paid = "" if u.cost is None else f", {dollars(u.cost)} over the read price"
        unexplained = [
            (
                "  unknown",
                f"{u.calls} call{'' if u.calls == 1 else 's'} read {u.tokens:,} tokens less than the rules "
                f"give{paid}: why is not known (an entry evicted early, breakpoints elsewhere, another server)",
            )
        ]
    if lost.cost is None:
        return [("cache", f"{rate}; what the misses cost: {lost.why}"), *unexplained]
    if not lost.cost:
        known = " of a known cause" if unexplained else ""
        return [("cache", f"{rate}; no miss{known} cost anything"), *unexplained]
    estimate = " (an estimate)" if any("estimated" in n for n in cache.notes) else ""
    share = f", {lost.cost / cost.total:.1%} of the cost" if cost is not None and cost.total else ""
    lines = [
        ("cache", f"{rate}; misses cost {dollars(lost.cost)}{estimate}{share}: keeping the cache would have saved that")
    ]
    shown = [
        f"{reason_label(r.reason, r.part)} {dollars(r.cost)} ({r.calls} call{'' if r.calls == 1 else 's'})"
        for r in lost.by_reason
        if r.cost
    ]
    lines.append(("  by reason", "; ".join(shown)))
    for n, b in enumerate(lost.breaks[:breaks]):
        who = f"call {b.call}" + (f" ({b.thread})" if b.thread else "")
        lines.append(
            (
                "  costliest" if n == 0 else "",
                f"{who} {dollars(b.cost)} ({b.tokens:,} tokens): " + (b.detail or reason_label(b.reason, b.part)),
            )
        )
    if lost.calls > breaks:
        lines.append(("", f"and {lost.calls - breaks} more (summary.cache.lost, calls[].cache in the JSON)"))
    return lines + unexplained
