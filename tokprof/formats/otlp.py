"""OTLP/HTTP request bodies (``/v1/traces``, ``/v1/logs``, ``/v1/metrics``), protobuf or JSON, as the
spans the OpenTelemetry reader (:mod:`tokprof.formats.otel`) folds into calls.

A trace export gives its spans; a logs export gives the agents' model-call events as the GenAI spans
they stand for (:mod:`tokprof.formats.agent_events`); a metrics export is checked and gives nothing
(its totals repeat what the spans and events say call by call). Each item carries its resource's
attributes (``service.name``, ``host.name``, ...) and a key that names it across retries: the trace
and span ids of a span, a hash of an event's record (an exporter that retries sends the same bytes).

A body that is not what its content type says, or not an OTLP export of the signal, is an
:class:`~tokprof.base.errors.InputError` naming where; a content type that is neither protobuf nor
JSON is :class:`WrongMedia`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Iterator

from tokprof.base.errors import InputError
from tokprof.formats.agent_events import event_attributes, event_name
from tokprof.formats.fields import expect_list, expect_object
from tokprof.formats.jsonfile import parse
from tokprof.formats.neutral import parse_time
from tokprof.formats.otel import Span, json_attributes, json_span, log_span

SIGNALS = ("traces", "logs", "metrics")
PROTOBUF = ("application/x-protobuf", "application/protobuf")
JSON = ("application/json",)


class WrongMedia(ValueError):
    """A body whose content type is neither OTLP's protobuf nor its JSON."""


@dataclass(frozen=True, slots=True)
class Item:
    """A span (or an event as its span), the attributes of the resource that sent it, and its key."""

    span: Span
    resource: dict[str, Any]
    key: str
    signal: str  # "span" or "event"


def media(content_type: str | None) -> str:
    """``protobuf`` or ``json`` for a Content-Type header; :class:`WrongMedia` for anything else."""
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    if kind in PROTOBUF:
        return "protobuf"
    if kind in JSON:
        return "json"
    raise WrongMedia(f"Content-Type {kind or '(none)'!r}: OTLP/HTTP takes application/x-protobuf or application/json")


def decode(signal: str, body: bytes, content_type: str | None, where: str = "request") -> list[Item]:
    """The items of one export request of ``signal`` (traces, logs or metrics)."""
    if signal not in SIGNALS:
        raise ValueError(f"signal {signal!r}: expected one of {', '.join(SIGNALS)}")
    kind = media(content_type)
    if kind == "protobuf":
        return list(_protobuf(signal, body, where))
    try:
        value = parse(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(where, None, f"not JSON: {str(exc)[:120]}") from None
    return list(json_items(signal, value, where))


# -- JSON ------------------------------------------------------------------------------------------
_TOP = {"traces": "resourceSpans", "logs": "resourceLogs", "metrics": "resourceMetrics"}


def json_items(signal: str, value: Any, where: str) -> Iterator[Item]:
    """The items of an OTLP/JSON export (the body of a request, or a line of an exported file)."""
    value = expect_object(where, None, value, "an OTLP/JSON export object")
    top = _TOP[signal]
    if top not in value:
        raise InputError(where, None, f"no {top}: not an OTLP/JSON {signal} export")
    resources = expect_list(where, top, value[top])
    for i, resource in enumerate(resources):
        at = f"{top}[{i}]"
        resource = expect_object(where, at, resource)
        found = expect_object(where, at + ".resource", resource.get("resource") or {})
        attrs = json_attributes(where, at + ".resource.attributes", found.get("attributes"))
        if signal == "traces":
            yield from _json_spans(where, at, resource, attrs)
        elif signal == "logs":
            yield from _json_events(where, at, resource, attrs)
        else:
            for j, scope in enumerate(expect_list(where, at + ".scopeMetrics", resource.get("scopeMetrics", []))):
                expect_object(where, f"{at}.scopeMetrics[{j}]", scope)


def _json_spans(where: str, at: str, resource: dict, attrs: dict[str, Any]) -> Iterator[Item]:
    for j, scope in enumerate(expect_list(where, at + ".scopeSpans", resource.get("scopeSpans", []))):
        scope = expect_object(where, f"{at}.scopeSpans[{j}]", scope)
        for k, raw in enumerate(expect_list(where, f"{at}.scopeSpans[{j}].spans", scope.get("spans", []))):
            span = json_span(where, f"{at}.scopeSpans[{j}].spans[{k}]", raw)
            yield Item(span, attrs, _span_key(span, raw), "span")


def _json_events(where: str, at: str, resource: dict, attrs: dict[str, Any]) -> Iterator[Item]:
    agent = str(attrs.get("service.name") or "")
    for j, scope in enumerate(expect_list(where, at + ".scopeLogs", resource.get("scopeLogs", []))):
        scope = expect_object(where, f"{at}.scopeLogs[{j}]", scope)
        records = expect_list(where, f"{at}.scopeLogs[{j}].logRecords", scope.get("logRecords", []))
        for k, raw in enumerate(records):
            span = log_span(where, f"{at}.scopeLogs[{j}].logRecords[{k}]", raw, agent)
            if span is not None:
                digest = hashlib.sha256(json.dumps(raw, sort_keys=True, default=str).encode()).hexdigest()
                yield Item(span, attrs, "e" + digest[:32], "event")


def _span_key(span: Span, raw: Any) -> str:
    if span.span_id:
        return f"s{span.trace_id or ''}:{span.span_id}"
    return "s" + hashlib.sha256(json.dumps(raw, sort_keys=True, default=str).encode()).hexdigest()[:32]


# -- protobuf --------------------------------------------------------------------------------------
def _protobuf(signal: str, body: bytes, where: str) -> Iterator[Item]:
    try:
        from google.protobuf.message import DecodeError  # type: ignore[import-untyped]
        from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
        from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    except ImportError:
        raise InputError(
            where, None, "OTLP protobuf needs opentelemetry-proto: pip install 'tokprof[collect]'"
        ) from None
    kinds: dict[str, Any] = {
        "traces": ExportTraceServiceRequest,
        "logs": ExportLogsServiceRequest,
        "metrics": ExportMetricsServiceRequest,
    }
    request: Any = kinds[signal]()
    try:
        request.ParseFromString(body)
    except (DecodeError, ValueError, RecursionError) as exc:
        raise InputError(where, None, f"not an OTLP protobuf {signal} export: {str(exc)[:120]}") from None
    if signal == "traces":
        for i, resource in enumerate(request.resource_spans):
            attrs = _pb_attributes(resource.resource.attributes)
            for j, scope in enumerate(resource.scope_spans):
                for k, span in enumerate(scope.spans):
                    place = f"{where}: resourceSpans[{i}].scopeSpans[{j}].spans[{k}]"
                    found = _pb_span(place, span)
                    yield Item(found, attrs, f"s{found.trace_id or ''}:{found.span_id or ''}", "span")
    elif signal == "logs":
        for i, resource in enumerate(request.resource_logs):
            attrs = _pb_attributes(resource.resource.attributes)
            agent = str(attrs.get("service.name") or "")
            for j, scope in enumerate(resource.scope_logs):
                for k, record in enumerate(scope.log_records):
                    place = f"{where}: resourceLogs[{i}].scopeLogs[{j}].logRecords[{k}]"
                    values = _pb_attributes(record.attributes)
                    body_value = _pb_value(record.body) if record.HasField("body") else None
                    name = event_name(body_value, values, record.event_name)
                    when = record.time_unix_nano or record.observed_time_unix_nano
                    span = _event_span(place, name, _nanos(when) if when else None, values, agent)
                    if span is not None:
                        digest = hashlib.sha256(record.SerializeToString(deterministic=True)).hexdigest()
                        yield Item(span, attrs, "e" + digest[:32], "event")


def _pb_span(where: str, span: Any) -> Span:
    return Span(
        where=where,
        name=span.name,
        span_id=span.span_id.hex() or None,
        trace_id=span.trace_id.hex() or None,
        start=_nanos(span.start_time_unix_nano) if span.start_time_unix_nano else None,
        status_error=span.status.code == 2,
        attrs=_pb_attributes(span.attributes),
    )


def _pb_attributes(values: Any) -> dict[str, Any]:
    return {kv.key: _pb_value(kv.value) for kv in values}


def _pb_value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_pb_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return _pb_attributes(value.kvlist_value.values)
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return getattr(value, kind)


# -- both ------------------------------------------------------------------------------------------
def _nanos(value: int) -> datetime | None:
    try:
        return datetime.fromtimestamp(value / 1e9, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None


def _event_span(where: str, name: str, time: datetime | None, attrs: dict[str, Any], agent: str) -> Span | None:
    found = event_attributes(name, attrs, agent)
    if found is None:
        return None
    if time is None:
        time = parse_time(attrs.get("event.timestamp"))
    short = name.rsplit(".", 1)[-1]
    model = found.get("gen_ai.request.model")
    return Span(
        where=where,
        name=f"{short} {model}" if isinstance(model, str) else short,
        span_id=None,
        trace_id=None,
        start=time,
        status_error=False,
        attrs=found,
    )
