"""A run's calls as OTLP spans over HTTP (the ``otel`` extra: opentelemetry-sdk and its OTLP HTTP
exporter): one ``chat {model}`` span per call at its time, with the GenAI semantic conventions'
usage attributes (``gen_ai.usage.input_tokens``, ``gen_ai.usage.output_tokens``, cache reads and
writes), tokprof's buckets (``tokprof.bucket.*``), its cost (``tokprof.cost.*``, US dollars) and the
cache miss reason (``tokprof.cache.miss``). An attribute a log does not record is left out, never 0."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from tokprof.analyses.calls import ALL_BUCKETS, CallRecord
from tokprof.base.errors import TokprofError


def attributes(r: CallRecord) -> dict[str, str | int | float | bool]:
    """A call's span attributes; None values are left out."""
    found: dict[str, object] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": r.provider,
        "gen_ai.request.model": r.model,
        "gen_ai.conversation.id": r.session,
        "gen_ai.response.id": r.request_id,
        "gen_ai.usage.input_tokens": r.reported_prompt,
        "gen_ai.usage.output_tokens": r.reported_output,
        "gen_ai.usage.cache_read.input_tokens": r.reported_cache_read,
        "gen_ai.usage.cache_creation.input_tokens": r.reported_cache_write,
        "tokprof.agent": r.agent,
        "tokprof.thread_kind": r.thread_kind,
        "tokprof.call_index": r.call_index,
        "tokprof.kind": r.kind,
        "tokprof.exact": r.exact,
        "tokprof.profiled_with": r.profiled_with,
        "tokprof.prompt_tokens": r.total,
        **{f"tokprof.bucket.{name}": getattr(r, name) for name in ALL_BUCKETS},
        "tokprof.reported.uncached_input": r.reported_uncached_input,
        "tokprof.reported.cache_write_5m": r.reported_cache_write_5m,
        "tokprof.reported.cache_write_1h": r.reported_cache_write_1h,
        "tokprof.cost.total_usd": r.cost_total,
        "tokprof.cost.input_usd": r.cost_input,
        "tokprof.cost.cache_write_usd": r.cost_cache_write,
        "tokprof.cost.cache_read_usd": r.cost_cache_read,
        "tokprof.cost.output_usd": r.cost_output,
        "tokprof.unpriced_reason": r.unpriced_reason,
        "tokprof.window_fill": r.window_fill,
        "tokprof.cache.miss": r.cache_miss,
        "tokprof.cache.miss_detail": r.cache_miss_detail,
        "tokprof.project": r.project,
        "vcs.ref.head.name": r.git_branch,
        "vcs.ref.head.revision": r.git_commit,
        "host.name": r.machine,
        "user.name": r.user,
    }
    return {k: v for k, v in found.items() if v is not None}  # type: ignore[misc]


def _nanos(when: datetime | None, fallback: int) -> int:
    if when is None:
        return fallback
    return int(when.astimezone(timezone.utc).timestamp() * 1e9)


def send_spans(records: Sequence[CallRecord], endpoint: str, timeout: float = 10.0) -> int:
    """Send one span per call to an OTLP HTTP traces endpoint (``.../v1/traces``); the spans sent."""
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
            OTLPSpanExporter,
        )
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult
    except ImportError:
        raise TokprofError("OTLP export needs the otel extra: pip install 'tokprof[otel]'") from None
    import logging
    import time

    if not endpoint.lower().startswith(("http://", "https://")):
        raise TokprofError(f"--endpoint {endpoint}: expected an http:// or https:// URL (OTLP over HTTP)")
    exporter = OTLPSpanExporter(endpoint=endpoint, timeout=timeout)
    results: list = []
    export = exporter.export

    def counted(spans: Sequence[Any]) -> Any:  # remember whether each batch got through
        result = export(spans)
        results.append(result)
        return result

    exporter.export = counted  # type: ignore[method-assign]
    sdk_log = logging.getLogger("opentelemetry")  # its failures are tokprof's one error line, not log lines
    level = sdk_log.level
    sdk_log.setLevel(logging.CRITICAL)
    try:
        provider = TracerProvider(resource=Resource.create({"service.name": "tokprof"}))
        provider.add_span_processor(BatchSpanProcessor(exporter, max_export_batch_size=512))
        tracer = provider.get_tracer("tokprof")
        now = time.time_ns()
        for r in records:
            start = _nanos(r.time, now)
            span = tracer.start_span(f"chat {r.model or 'unknown'}", start_time=start, attributes=attributes(r))
            span.end(end_time=start + 1_000_000)
        provider.shutdown()  # flushes
    finally:
        sdk_log.setLevel(level)
    if any(result != SpanExportResult.SUCCESS for result in results):
        raise TokprofError(f"{endpoint}: the OTLP endpoint did not take the spans")
    return len(records)
