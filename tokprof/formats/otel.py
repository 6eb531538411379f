"""OpenTelemetry GenAI spans: the model calls an instrumented agent exported as traces.

Three layouts are read, each a JSON file or JSONL (one record per line):

* OTLP/JSON, as collectors and the OTLP file exporter write it: ``{"resourceSpans": [{"resource",
  "scopeSpans": [{"scope", "spans": [...]}]}]}``, span attributes as ``[{"key", "value":
  {"stringValue" | "intValue" | "doubleValue" | "boolValue" | "arrayValue" | "kvlistValue"}}]``
  (``intValue`` may be a string, as protobuf's JSON mapping writes 64-bit integers);
* flat span dumps: ``{"spans": [...]}``, a list of spans, or one span per line, each span an object
  with ``name`` and ``attributes`` as a plain object (any-agent's dumps, the SDK's console exporter);
* GitHub Copilot CLI's file exporter: JSONL of ``{"type": "span" | "metric", ...}`` records; metric
  records are not calls and are skipped.

Which spans are calls: a span whose ``gen_ai.operation.name`` is a model operation (``chat``,
``text_completion``, ``generate_content``, ``call_llm``, ...), or whose ``openinference.span.kind``
is ``LLM``; without either, a span with prompt or usage attributes. Agent, tool and embedding spans
(``invoke_agent``, ``execute_tool``, ``embeddings``) are not calls (an ``invoke_agent`` span's usage
is the sum of its calls'). Spans with the same ``gen_ai.response.id`` are one call (two
instrumentations of one request). Calls are in the order of their start times, file order for ties.
A span whose status is an error is skipped (warning ``error-response``) unless it reports usage.

The prompt, from the first layout a span has:

* the GenAI conventions: ``gen_ai.system_instructions`` (parts) as the system message,
  ``gen_ai.input.messages`` (``[{role, parts: [{type: text, content} | {type: tool_call, id, name,
  arguments} | {type: tool_call_response, id, response} | {type: reasoning, content}]}]``, or
  Chat-Completions-style ``{role, content}`` messages, as any-agent writes them), the response from
  ``gen_ai.output.messages``; tools from ``gen_ai.tool.definitions`` (``{type, name, description,
  parameters}`` or the OpenAI shape). A value may be a JSON string or the value itself;
* the older layout (OpenLLMetry): ``gen_ai.prompt.N.role/content``, ``.tool_calls.M.{id, name,
  arguments}``, ``.tool_call_id``, the response from ``gen_ai.completion.N.*``, tools from
  ``llm.request.functions.N.{name, description, parameters}``;
* OpenInference: ``llm.input_messages.N.message.role/content`` (or ``.contents.M.message_content.
  text``), ``.tool_calls.M.tool_call.{id, function.name, function.arguments}``, ``.tool_call_id``,
  the response from ``llm.output_messages.N.*``, tools from ``llm.tools.N.tool.json_schema``.

Parts that are not text (blobs, files, URIs) are left out (warning ``content-not-text``).

Usage: ``gen_ai.usage.input_tokens`` (the whole prompt, cache reads and writes included, as the
conventions say), ``gen_ai.usage.cache_read.input_tokens``, ``gen_ai.usage.cache_creation.
input_tokens``, ``gen_ai.usage.output_tokens``; the older ``gen_ai.usage.prompt_tokens`` /
``completion_tokens`` / ``cache_read_input_tokens`` / ``cache_creation_input_tokens``; OpenInference's
``llm.token_count.prompt`` / ``completion`` / ``prompt_details.cache_read`` / ``prompt_details.
cache_write``. A count may be a number or a numeric string; ``[REDACTED]`` (or any redaction
marker) is not recorded, never 0 (warning ``usage-redacted``).

What the spans do not record. Without content capture a call's span has no messages: its prompt is
not recorded and the reported prompt is counted whole in ``unrecorded`` (:attr:`Call.unrendered`,
warning ``content-not-captured``): usage, cost and cache only. A call with messages but no tool
definitions while tools are called, or with definitions that are names only (Copilot), leaves the
tools unrecorded (``Trace.unrecorded``), inferred as for Claude Code. A file with calls but neither
content nor usage on any of them (Copilot CLI's export with usage redacted) gives its calls, each not
recorded, and the run's totals from its ``gen_ai.client.token.usage`` metric records (note
``usage-from-metrics``); without that metric it cannot be profiled: an error says so.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Iterable, Iterator

from tokprof.base.errors import InputError
from tokprof.formats.agent_events import event_attributes, event_name
from tokprof.formats.capture import RecordPlaces, capture_records
from tokprof.formats.fields import expect_list, expect_object, nonempty_string, objects, optional_string, string
from tokprof.formats.jsonfile import Document, parse
from tokprof.formats.reader import LogFormat, Reader, Record, read_whole
from tokprof.formats.jsonfile import kind_of as _kind
from tokprof.formats.neutral import (
    assistant_message,
    check_cached,
    check_count,
    check_messages,
    check_text,
    check_tools,
    parse_time,
)
from tokprof.formats.shared_prompts import SharedPrompts
from tokprof.trace import Call, Trace, Usage

FORMAT = "otel"
DESCRIPTION = (
    "OpenTelemetry GenAI spans: OTLP/JSON exports, flat span dumps and Copilot CLI's file exporter JSONL "
    "(gen_ai.*, OpenInference llm.* attributes)"
)

#: ``gen_ai.operation.name`` values that are a model call, and those that are not.
CALL_OPERATIONS = ("chat", "text_completion", "generate_content", "call_llm", "completion", "responses")
NOT_CALLS = ("invoke_agent", "create_agent", "execute_tool", "embeddings", "invoke_workflow")
UNRECORDED = "unrecorded"

INPUT_KEYS = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt")
OUTPUT_KEYS = ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.token_count.completion")
READ_KEYS = (
    "gen_ai.usage.cache_read.input_tokens",
    "gen_ai.usage.cache_read_input_tokens",
    "llm.token_count.prompt_details.cache_read",
)
WRITE_KEYS = (
    "gen_ai.usage.cache_creation.input_tokens",
    "gen_ai.usage.cache_creation_input_tokens",
    "llm.token_count.prompt_details.cache_write",
)
MODEL_KEYS = ("gen_ai.response.model", "gen_ai.request.model", "llm.model_name")
#: Attributes that hold a prompt (for detection and for telling a call span).
PROMPT_MARKS = ("gen_ai.input.messages", "gen_ai.prompt.0.", "llm.input_messages.0.", "gen_ai.prompt")
_REDACTED = re.compile(r"\[?(REDACTED|redacted|Redacted)\]?|<redacted>|\*{3,}")

NOT_CAPTURED = (
    "the spans do not record these calls' prompts (content capture was off): their reported prompts are "
    "counted whole in 'unrecorded', so only usage, cost and cache are known for them"
)
REDACTED = "usage values are redacted ([REDACTED]) in these spans: they are not recorded, not 0"
NOT_TEXT = (
    "message parts that are not text (blobs, files, URIs) cannot be rendered by a chat template: they are "
    "left out of the prompt and their tokens are not counted"
)
ERROR_SPAN = "the span's status is an error and it reports no usage: it is skipped (not a billed call)"
NAMES_ONLY = (
    "gen_ai.tool.definitions holds only the tools' names (no descriptions or parameters): the tool "
    "definitions are not recorded"
)
LOG_COST = "the cost the spans themselves report, beside the one tokprof computes from their usage"


@dataclass(frozen=True)
class Span:
    where: str
    name: str
    span_id: str | None
    trace_id: str | None
    start: datetime | None
    status_error: bool
    attrs: dict[str, Any]


# -- detection -------------------------------------------------------------------------------------
def sniff(doc: Document) -> bool:
    if doc.lines is not None:
        return any(_looks_otel(value) for _, value in doc.lines.head(20))
    return _looks_otel(doc.value)


def _looks_otel(value: Any) -> bool:
    if isinstance(value, list):
        return any(_is_genai_span(item) for item in value[:20])
    if not isinstance(value, dict):
        return False
    if isinstance(value.get("resourceSpans"), list) or isinstance(value.get("resourceLogs"), list):
        return True
    if isinstance(value.get("spans"), list):
        return any(_is_genai_span(item) for item in value["spans"][:50])
    return _is_genai_span(value) or (
        value.get("type") == "metric"
        and isinstance(value.get("dataPoints"), list)
        and str(value.get("name", "")).startswith("gen_ai.")
    )


def _is_genai_span(value: Any) -> bool:
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return False
    attrs = value.get("attributes")
    keys: list[str] = []
    if isinstance(attrs, dict):
        keys = [k for k in attrs if isinstance(k, str)]
    elif isinstance(attrs, list):
        keys = [a["key"] for a in attrs if isinstance(a, dict) and isinstance(a.get("key"), str)]
    return any(k.startswith(("gen_ai.", "llm.", "openinference.")) for k in keys)


# -- spans -----------------------------------------------------------------------------------------
def read(path: str, doc: Document) -> Trace:
    """A file of spans read whole (:class:`SpanReader` fed every record)."""
    return read_whole(SpanReader(path, doc), capture_records(doc))


class SpanReader(Reader):
    """Spans read as a fold: each record's spans made into calls as it is fed (the prompts each span
    resends held once). The calls are given when every record is read, in the order of their start
    times: exporters write spans as they end, in batches, so a later record may hold a call that
    started earlier; and whether the calls record anything at all (else the metric records' totals)
    is known only then."""

    def __init__(self, path: str, doc: Document | None) -> None:
        shape = "jsonl" if doc is not None and doc.lines is not None else "json"
        self.path = path
        self.trace = Trace(path=path, format=f"{FORMAT}/{shape}")
        self.reader = _Reader(path, self.trace)
        self.places = RecordPlaces()

    def feed(self, record: Record) -> Iterable[Call]:
        where, value = self.places(record), record.value
        if isinstance(value, dict) and value.get("type") == "metric" and value.get("name") == TOKEN_USAGE:
            self.reader.metrics.take(self.path, where, value)
        for span in _record_spans(self.path, where, value):
            self.reader.span(span)
        return ()

    def finish(self) -> Iterable[Call]:
        trace = self.reader.finish()
        calls, trace.calls = trace.calls, []
        return calls


def _record_spans(path: str, where: str, record: Any) -> Iterator[Span]:
    if isinstance(record, list):
        for i, item in enumerate(record):
            yield from _record_spans(path, f"{where}[{i}]", item)
        return
    record = expect_object(path, where, record, "a span or an OTLP export object")
    if "resourceSpans" in record:
        yield from _otlp(path, where, record["resourceSpans"])
    elif "resourceLogs" in record:  # agents' events (Claude Code's api_request, ...) as their spans
        yield from _otlp_logs(path, where, record["resourceLogs"])
    elif "spans" in record and "attributes" not in record:
        spans = record["spans"]
        spans = expect_list(path, where + ": spans", spans)
        for i, item in enumerate(spans):
            yield _span(path, f"{where}: spans[{i}]", item)
    elif record.get("type") in ("metric", "log") or ("dataPoints" in record and "attributes" not in record):
        return
    elif "name" in record or "attributes" in record:
        yield _span(path, where, record)
    elif not record:
        return
    else:
        raise InputError(path, where, "expected a span (name, attributes) or an OTLP export (resourceSpans)")


def _otlp(path: str, where: str, resource_spans: Any) -> Iterator[Span]:
    resource_spans = expect_list(path, where + ": resourceSpans", resource_spans)
    for i, resource in enumerate(resource_spans):
        at = f"{where}: resourceSpans[{i}]"
        resource = expect_object(path, at, resource)
        scopes = resource.get("scopeSpans", resource.get("instrumentationLibrarySpans", []))
        scopes = expect_list(path, at + ".scopeSpans", scopes)
        for j, scope in enumerate(scopes):
            spans = scope.get("spans", []) if isinstance(scope, dict) else None
            spans = expect_list(path, f"{at}.scopeSpans[{j}].spans", spans)
            for k, item in enumerate(spans):
                yield _span(path, f"{at}.scopeSpans[{j}].spans[{k}]", item)


def _otlp_logs(path: str, where: str, resource_logs: Any) -> Iterator[Span]:
    resource_logs = expect_list(path, where + ": resourceLogs", resource_logs)
    for i, resource in enumerate(resource_logs):
        at = f"{where}: resourceLogs[{i}]"
        resource = expect_object(path, at, resource)
        found = expect_object(path, at + ".resource", resource.get("resource") or {})
        agent = _attributes(path, at + ".resource.attributes", found.get("attributes")).get("service.name")
        scopes = expect_list(path, at + ".scopeLogs", resource.get("scopeLogs", []))
        for j, scope in enumerate(scopes):
            scope = expect_object(path, f"{at}.scopeLogs[{j}]", scope)
            items = expect_list(path, f"{at}.scopeLogs[{j}].logRecords", scope.get("logRecords", []))
            for k, raw in enumerate(items):
                span = log_span(path, f"{at}.scopeLogs[{j}].logRecords[{k}]", raw, str(agent or ""))
                if span is not None:
                    yield span


def log_span(path: str, where: str, raw: Any, agent: str = "") -> Span | None:
    """An OTLP/JSON log record as the model-call span its event stands for (None: not a model call;
    :mod:`tokprof.formats.agent_events`)."""
    raw = expect_object(path, where, raw, "a log record object")
    attrs = _attributes(path, where + ".attributes", raw.get("attributes"))
    body = _any_value(path, where + ".body", raw.get("body"))
    declared = raw.get("eventName")
    name = event_name(body, attrs, declared if isinstance(declared, str) else "")
    found = event_attributes(name, attrs, agent)
    if found is None:
        return None
    start = None
    for key in ("timeUnixNano", "observedTimeUnixNano"):
        value = raw.get(key)
        if isinstance(value, str) and value.isdigit():
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            start = parse_time(value / 1e9)
            break
    if start is None:
        start = parse_time(attrs.get("event.timestamp"))
    model = found.get("gen_ai.request.model")
    short = name.rsplit(".", 1)[-1]
    return Span(where, f"{short} {model}" if isinstance(model, str) else short, None, None, start, False, found)


def _span(path: str, where: str, span: Any) -> Span:
    span = expect_object(path, where, span, "a span object")
    name = string(path, where + ".name", span.get("name", ""))
    attrs = _attributes(path, where + ".attributes", span.get("attributes"))
    context: dict = span["context"] if isinstance(span.get("context"), dict) else {}
    span_id = span.get("spanId", span.get("span_id", context.get("span_id")))
    trace_id = span.get("traceId", span.get("trace_id", context.get("trace_id")))
    status: dict = span["status"] if isinstance(span.get("status"), dict) else {}
    code = status.get("code", status.get("status_code"))
    error = code in (2, "STATUS_CODE_ERROR", "ERROR", "error")
    return Span(
        where=where,
        name=name,
        span_id=None if span_id is None else str(span_id),
        trace_id=None if trace_id is None else str(trace_id),
        start=_start(span),
        status_error=error,
        attrs=attrs,
    )


def _start(span: dict) -> datetime | None:
    for key in ("startTimeUnixNano", "start_time", "startTime", "start_time_unix_nano"):
        value = span.get(key)
        if isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value):
            value = value[0] + value[1] / 1e9  # [seconds, nanoseconds] (JavaScript's HrTime)
        elif isinstance(value, str) and value.isdigit():
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool) and value > 10**14:  # nanoseconds
            value = value / 1e9
        if value is not None:
            found = parse_time(value)
            if found is not None:
                return found
    return None


def _attributes(path: str, where: str, attrs: Any) -> dict[str, Any]:
    if attrs is None:
        return {}
    if isinstance(attrs, dict):
        return attrs
    if not isinstance(attrs, list):
        raise InputError(path, where, f"expected an object or a list of {{key, value}}, found {_kind(attrs)}")
    out = {}
    for at, item in objects(path, where, attrs, "a {key, value} object"):
        out[string(path, at + ".key", item.get("key"))] = _any_value(path, at + ".value", item.get("value"))
    return out


def _any_value(path: str, where: str, value: Any) -> Any:
    """An OTLP AnyValue as a plain value."""
    if not isinstance(value, dict):
        return value
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        raw = value["intValue"]
        if isinstance(raw, str) and re.fullmatch(r"-?\d{1,20}", raw):
            return int(raw)
        return raw
    for key in ("doubleValue", "boolValue", "bytesValue"):
        if key in value:
            return value[key]
    if "arrayValue" in value:
        array = expect_object(path, where + ".arrayValue", value["arrayValue"])
        items = expect_list(path, where + ".arrayValue.values", array.get("values", []))
        return [_any_value(path, f"{where}.arrayValue.values[{i}]", v) for i, v in enumerate(items)]
    if "kvlistValue" in value:
        kvlist = expect_object(path, where + ".kvlistValue", value["kvlistValue"])
        items = expect_list(path, where + ".kvlistValue.values", kvlist.get("values", []))
        return _attributes(path, where + ".kvlistValue.values", items)
    return None


# -- the token usage metric ------------------------------------------------------------------------
TOKEN_USAGE = "gen_ai.client.token.usage"
METRIC_TOTALS = (
    "per-call usage is redacted in these spans: each call's prompt and usage are not recorded (not 0), and "
    "the prompts were not captured; the file's {metric} metric holds the run's totals: {input} input and "
    "{output} output tokens over {calls} calls{order}"
)
TYPE_ORDER = (
    " (its token types are redacted too: its first data point is read as the input, the second as the output, "
    "the order the exporter writes them)"
)


class MetricTotals:
    """The run's input and output tokens from ``gen_ai.client.token.usage`` metric records (GitHub
    Copilot CLI's file exporter: ``{"type": "metric", "dataPoints": [{attributes, startTime, value: {sum,
    count}}]}``). Cumulative records (one start time) hold the run so far: the last one counts; delta
    records are added up."""

    def __init__(self) -> None:
        self.points: dict[tuple[int, str], tuple[Any, float, int]] = {}  # (position, type): (start, sum, count)
        self.delta = False
        self.redacted = False

    def take(self, path: str, where: str, record: dict) -> None:
        points = expect_list(path, where + ": dataPoints", record.get("dataPoints", []))
        for position, point in enumerate(points):
            if not isinstance(point, dict) or not isinstance(point.get("value"), dict):
                continue
            attrs = point.get("attributes")
            kind = attrs.get("gen_ai.token.type") if isinstance(attrs, dict) else None
            if not isinstance(kind, str) or _redacted(kind) or kind not in ("input", "output"):
                self.redacted = True
                kind = ""
            value = point["value"]
            total, count = value.get("sum"), value.get("count")
            if not isinstance(total, (int, float)) or isinstance(total, bool) or not 0 <= total < 1e15:
                raise InputError(path, f"{where}: dataPoints[{position}].value.sum", "expected a token count")
            count = count if isinstance(count, int) and not isinstance(count, bool) and count >= 0 else 0
            key = (position if not kind else 0, kind)
            start = json.dumps(point.get("startTime"))
            before = self.points.get(key)
            if before is not None and before[0] != start:
                self.delta = True
            if before is not None and self.delta:
                self.points[key] = (start, before[1] + total, before[2] + count)
            else:
                self.points[key] = (start, float(total), count)

    def totals(self) -> tuple[int, int, int] | None:
        """(input, output, calls), or None without the metric."""
        if not self.points:
            return None
        named = {kind: v for (_, kind), v in self.points.items() if kind}
        if named:
            found_in, found_out = named.get("input"), named.get("output")
        else:
            ordered = [v for _, v in sorted(self.points.items())]
            found_in = ordered[0] if ordered else None
            found_out = ordered[1] if len(ordered) > 1 else None
        if found_in is None or found_out is None:
            return None
        return int(found_in[1]), int(found_out[1]), found_in[2]


# -- calls -----------------------------------------------------------------------------------------
class _Reader:
    def __init__(self, path: str, trace: Trace):
        self.path = path
        self.trace = trace
        self.calls: list[tuple[datetime | None, int, Call]] = []
        self.shared = SharedPrompts()  # each span holds its call's whole prompt
        self.seen: set[str] = set()
        self.tools_unrecorded = False
        self.tools_called = False  # a tool span, or a tool call in a prompt or response
        self.without_tools: list[bool] = []  # per call with content but no tool definitions: whether it calls tools
        self.log_cost = 0.0
        self.log_cost_seen = False
        self.metrics = MetricTotals()

    def fail(self, where: str, what: str) -> InputError:
        return InputError(self.path, where, what)

    def span(self, span: Span) -> None:
        if span.attrs.get("gen_ai.operation.name") == "execute_tool" or "gen_ai.tool.name" in span.attrs:
            self.tools_called = True
        if not _is_call(span):
            return
        a = span.attrs
        usage = self.usage(span)
        if span.status_error and usage is None:
            self.trace.note("error-response", ERROR_SPAN, span.where)
            return
        response_id = a.get("gen_ai.response.id")
        if isinstance(response_id, str) and response_id:
            if response_id in self.seen:
                return
            self.seen.add(response_id)
        model = next((a[k] for k in MODEL_KEYS if isinstance(a.get(k), str) and a[k]), None)
        prefix = f"{span.where}: "
        messages = self.messages(prefix, a)
        tools = self.tools(prefix, a) if messages is not None else None
        response = self.response(prefix, a)
        call = Call(
            index=0,
            messages=self.shared.prompt(messages) if messages else [],
            tools=self.shared.tools(tools),
            model=model,
            reported=usage,
            day=span.start.date() if span.start else None,
            where=span.where + f" ({span.name})" if span.name else span.where,
            response=response,
            time=span.start,
            request_id=response_id if isinstance(response_id, str) and response_id else None,
        )
        if messages is None:
            self.trace.note("content-not-captured", NOT_CAPTURED, span.where)
            if usage is not None and usage.prompt:
                call.unrendered = {UNRECORDED: usage.prompt}
        elif tools is None:
            self.without_tools.append(self.calls_tools(messages, response))
        self.cost(span)
        self.calls.append((span.start, len(self.calls), call))

    def finish(self) -> Trace:
        if not self.calls:
            raise InputError(
                self.path, None, "no model call span (gen_ai chat spans or OpenInference LLM spans) in the trace"
            )
        ordered = sorted(
            self.calls,
            key=lambda item: (item[0] is None, item[0] or datetime.min.replace(tzinfo=timezone.utc), item[1]),
        )
        calls = [call for _, _, call in ordered]
        totals = self.metrics.totals()
        if all(not c.messages and c.reported is None for c in calls) and totals is not None:
            self.trace.note(
                "usage-from-metrics",
                METRIC_TOTALS.format(
                    metric=TOKEN_USAGE,
                    input=f"{totals[0]:,}",
                    output=f"{totals[1]:,}",
                    calls=f"{totals[2]:,}",
                    order=TYPE_ORDER if self.metrics.redacted else "",
                ),
            )
        elif all(not c.messages and c.reported is None for c in calls):
            raise InputError(
                self.path,
                None,
                (
                    f"{len(calls)} model call span(s), but none records its prompt (content capture off) or its usage "
                    "(redacted or absent): there is nothing to profile"
                ),
            )
        for index, call in enumerate(calls):
            call.index = index
        self.trace.calls = calls
        if self.without_tools and (self.tools_called or any(self.without_tools)):
            self.tools_unrecorded = True
        if self.tools_unrecorded:
            self.trace.unrecorded = ("tools",)
        models = {c.model for c in calls if c.model}
        self.trace.model = models.pop() if len(models) == 1 else None
        if self.log_cost_seen:
            self.trace.note("log-cost", LOG_COST, f"{self.log_cost:.6f} USD in all")
        return self.trace

    # -- usage -------------------------------------------------------------------------------------
    def count(self, span: Span, keys: tuple[str, ...]) -> int | None:
        for key in keys:
            if key not in span.attrs:
                continue
            value = span.attrs[key]
            where = f"{span.where}: attributes.{key}"
            if isinstance(value, str):
                if _REDACTED.fullmatch(value.strip()):
                    self.trace.note("usage-redacted", REDACTED, where)
                    return None
                if re.fullmatch(r"\d{1,13}(\.0+)?", value.strip()):
                    value = int(float(value))
                else:
                    raise self.fail(where, f"expected a token count, found {value[:40]!r}")
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            return check_count(self.path, where, value)
        return None

    def usage(self, span: Span) -> Usage | None:
        prompt, output = self.count(span, INPUT_KEYS), self.count(span, OUTPUT_KEYS)
        read, write = self.count(span, READ_KEYS), self.count(span, WRITE_KEYS)
        if prompt is None and output is None:
            return None
        cached = next((key for key in READ_KEYS + WRITE_KEYS if key in span.attrs), "")
        return check_cached(
            self.path,
            f"{span.where}: attributes",
            Usage(prompt=prompt, cache_read=read, cache_write=write, output=output),
            cached,
        )

    def cost(self, span: Span) -> None:
        found = [
            span.attrs.get(k)
            for k in ("gen_ai.usage.cost", "gen_ai.usage.input_cost", "gen_ai.usage.output_cost", "llm.cost.total")
        ]
        numbers = [v for v in found if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < 1e9]
        if "gen_ai.usage.cost" in span.attrs or "llm.cost.total" in span.attrs:
            numbers = numbers[:1] if numbers else []
        if numbers:
            self.log_cost_seen = True
            self.log_cost += sum(numbers)

    # -- the prompt --------------------------------------------------------------------------------
    def json_attr(self, where: str, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return parse(value)
            except ValueError as exc:
                raise self.fail(where, f"invalid JSON: {exc}") from None
        return value

    def messages(self, prefix: str, a: dict) -> list[dict] | None:
        """The prompt's messages, or None when the span records none (content capture off)."""
        out: list[dict] = []
        system = a.get("gen_ai.system_instructions")
        if system is not None and not _redacted(system):
            out.extend(self.system(prefix + "attributes.gen_ai.system_instructions", system))
        raw = a.get("gen_ai.input.messages")
        if raw is not None and not _redacted(raw):
            where = prefix + "attributes.gen_ai.input.messages"
            value = expect_list(self.path, where, self.json_attr(where, raw), "a list of messages")
            for i, message in enumerate(value):
                out.extend(self.semconv_message(f"{where}[{i}]", message))
        elif _indexed(a, "gen_ai.prompt"):
            out.extend(self.flat_messages(prefix, a, "gen_ai.prompt", openinference=False))
        elif _indexed(a, "llm.input_messages"):
            out.extend(self.flat_messages(prefix, a, "llm.input_messages", openinference=True))
        if raw is None and not _indexed(a, "gen_ai.prompt") and not _indexed(a, "llm.input_messages"):
            return None
        return check_messages(self.path, prefix, out, skip=self.not_text)

    def not_text(self, where: str, kind: str) -> None:
        self.trace.note("content-not-text", NOT_TEXT, f"{where} ({kind})")

    def system(self, where: str, value: Any) -> list[dict]:
        value = (
            self.json_attr(where, value) if isinstance(value, str) and value.lstrip().startswith(("[", "{")) else value
        )
        if isinstance(value, str):
            return [{"role": "system", "content": check_text(self.path, where, value)}] if value else []
        if isinstance(value, dict):
            value = [value]
        if not isinstance(value, list):
            raise self.fail(where, f"expected text or a list of parts, found {_kind(value)}")
        texts = self.parts(where, value)[0]
        return [{"role": "system", "content": "\n".join(texts)}] if texts else []

    def parts(self, where: str, parts: Any) -> tuple[list[str], list[str], list[dict], list[dict]]:
        """Texts, reasoning, tool calls and tool results of a list of GenAI message parts."""
        parts = expect_list(self.path, where, parts, "a list of parts")
        texts, thoughts, calls, results = [], [], [], []
        for j, part in enumerate(parts):
            at = f"{where}[{j}]"
            if isinstance(part, str):
                texts.append(part)
                continue
            part = expect_object(self.path, at, part, "a part object")
            kind = part.get("type")
            if kind == "text" or (kind is None and "content" in part):
                texts.append(self.text(at + ".content", part.get("content", part.get("text"))))
            elif kind in ("reasoning", "thinking"):
                thoughts.append(self.text(at + ".content", part.get("content", "")))
            elif kind == "tool_call":
                calls.append(self.tool_call(at, part.get("id"), part.get("name"), part.get("arguments")))
            elif kind == "tool_call_response":
                results.append(
                    {"role": "tool", "tool_call_id": part.get("id"), "content": _as_text(part.get("response"))}
                )
            elif isinstance(kind, str):
                self.not_text(at, kind)
            else:
                raise self.fail(at + ".type", "missing or not a string")
        return texts, thoughts, calls, results

    def text(self, where: str, value: Any) -> str:
        return string(self.path, where, value)

    def tool_call(self, where: str, call_id: Any, name: Any, arguments: Any) -> dict:
        name = nonempty_string(self.path, where + ".name", name)
        call_id = optional_string(self.path, where + ".id", call_id)
        if arguments is None:
            arguments = "{}"
        elif not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}

    def semconv_message(self, where: str, message: Any) -> list[dict]:
        message = expect_object(self.path, where, message, "a message object")
        role = message.get("role")
        if "parts" not in message:  # Chat Completions style ({role, content, tool_calls})
            return [message]
        texts, thoughts, calls, results = self.parts(where + ".parts", message["parts"])
        if role == "assistant":
            return [assistant_message(texts, thoughts, calls)]
        out = list(results)
        if texts or not results:
            out.append({"role": role, "content": "\n".join(texts)})
        return out

    def flat_messages(self, prefix: str, a: dict, base: str, openinference: bool) -> list[dict]:
        out = []
        for n in _indices(a, base):
            key = f"{base}.{n}.message" if openinference else f"{base}.{n}"
            role = a.get(f"{key}.role")
            content = a.get(f"{key}.content")
            if content is None and openinference:
                texts = []
                for m in _indices(a, f"{key}.contents"):
                    part = f"{key}.contents.{m}.message_content"
                    kind = a.get(f"{part}.type", "text")
                    if kind == "text":
                        texts.append(a.get(f"{part}.text", ""))
                    else:
                        self.not_text(f"{prefix}attributes.{part}", str(kind))
                content = "\n".join(str(t) for t in texts) if texts else None
            call_prefix = f"{key}.tool_calls"
            calls = []
            for m in _indices(a, call_prefix):
                c = f"{call_prefix}.{m}.tool_call" if openinference else f"{call_prefix}.{m}"
                name = a.get(f"{c}.function.name") if openinference else a.get(f"{c}.name")
                args = a.get(f"{c}.function.arguments") if openinference else a.get(f"{c}.arguments")
                calls.append(self.tool_call(f"{prefix}attributes.{c}", a.get(f"{c}.id"), name, args))
            message: dict[str, Any] = {"role": role, "content": content}
            if calls:
                message["tool_calls"] = calls
            if a.get(f"{key}.tool_call_id") is not None:
                message["tool_call_id"] = a.get(f"{key}.tool_call_id")
            out.append(message)
        return out

    def calls_tools(self, messages: list[dict], response: dict | None) -> bool:
        return any(m.get("tool_calls") for m in messages + ([response] if response else []))

    def tools(self, prefix: str, a: dict) -> list[dict] | None:
        raw = a.get("gen_ai.tool.definitions")
        tools: list[dict] = []
        if raw is not None and not _redacted(raw):
            where = prefix + "attributes.gen_ai.tool.definitions"
            value = expect_list(self.path, where, self.json_attr(where, raw), "a list of tool definitions")
            tools = [self.tool(f"{where}[{i}]", t) for i, t in enumerate(value)]
            if tools and all(set(t["function"]) == {"name"} for t in tools):
                self.trace.note("tool-names-only", NAMES_ONLY, where)
                self.tools_unrecorded = True
                return None
        elif _indexed(a, "llm.tools"):
            for n in _indices(a, "llm.tools"):
                key = f"llm.tools.{n}.tool.json_schema"
                tools.append(
                    self.tool(prefix + "attributes." + key, self.json_attr(prefix + "attributes." + key, a.get(key)))
                )
        elif _indexed(a, "llm.request.functions"):
            for n in _indices(a, "llm.request.functions"):
                key = f"llm.request.functions.{n}"
                params = a.get(f"{key}.parameters")
                definition = {
                    "name": a.get(f"{key}.name"),
                    "description": a.get(f"{key}.description"),
                    "parameters": self.json_attr(f"{prefix}attributes.{key}.parameters", params)
                    if params is not None
                    else None,
                }
                tools.append(self.tool(prefix + "attributes." + key, definition))
        else:
            return None
        return check_tools(self.path, prefix, tools)

    def tool(self, where: str, tool: Any) -> dict:
        tool = expect_object(self.path, where, tool, "a tool object")
        if isinstance(tool.get("function"), dict):
            return {"type": "function", "function": tool["function"]}
        function: dict[str, Any] = {"name": tool.get("name")}
        if tool.get("description") is not None:
            function["description"] = tool["description"]
        schema = tool.get("parameters", tool.get("input_schema"))
        if schema is not None:
            function["parameters"] = schema
        return {"type": "function", "function": function}

    def response(self, prefix: str, a: dict) -> dict | None:
        raw = a.get("gen_ai.output.messages")
        out: list[dict] = []
        if raw is not None and not _redacted(raw):
            where = prefix + "attributes.gen_ai.output.messages"
            value = expect_list(self.path, where, self.json_attr(where, raw), "a list of messages")
            for i, message in enumerate(value):
                out.extend(m for m in self.semconv_message(f"{where}[{i}]", message) if m.get("role") == "assistant")
        elif _indexed(a, "gen_ai.completion"):
            out = self.flat_messages(prefix, a, "gen_ai.completion", openinference=False)
        elif _indexed(a, "llm.output_messages"):
            out = self.flat_messages(prefix, a, "llm.output_messages", openinference=True)
        out = [m for m in out if m.get("role") == "assistant"]
        if not out:
            return None
        message = dict(out[0])
        message.pop("tool_call_id", None)
        return check_messages(self.path, prefix + "response.", [message], call_ids=set())[0]


def _is_call(span: Span) -> bool:
    a = span.attrs
    operation = a.get("gen_ai.operation.name")
    if operation in NOT_CALLS:
        return False
    kind = a.get("openinference.span.kind")
    if kind is not None:
        return kind == "LLM"
    if operation in CALL_OPERATIONS:
        return True
    if operation is not None and not isinstance(operation, str):
        return False
    return any(key in a for key in INPUT_KEYS + OUTPUT_KEYS) or any(key.startswith(PROMPT_MARKS) for key in a)


def _redacted(value: Any) -> bool:
    return isinstance(value, str) and bool(_REDACTED.fullmatch(value.strip()))


def _indexed(a: dict, base: str) -> bool:
    """Whether ``a`` has a ``base.0.*`` key (the bases of the last span's attributes are kept: a span is
    asked for several)."""
    last = _BASES[0]
    if last[0] is not a:
        bases: set[str] = set()
        for key in a:
            at = key.find(".0.")
            while at >= 0:
                bases.add(key[:at])
                at = key.find(".0.", at + 1)
        last = (a, frozenset(bases))
        _BASES[0] = last  # one assignment: a thread reads a whole pair
    return base in last[1]


_BASES: list[tuple[Any, frozenset[str]]] = [(None, frozenset())]


def _indices(a: dict, base: str) -> list[int]:
    """The N of ``base.N.*`` keys, in order."""
    found: set[int] = set()
    start = base + "."
    for key in a:
        if key.startswith(start):
            head = key[len(start) :].split(".", 1)[0]
            if head.isdigit() and len(head) < 7:
                found.add(int(head))
    return sorted(found)


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False)


LOG_FORMAT = LogFormat(
    FORMAT,
    DESCRIPTION,
    "api",
    sniff,
    SpanReader,
    records=capture_records,
    records_what="per-span usage; prompts when content capture is on",
)


# -- for receivers (tokprof collect): the same fold, one span at a time --------------------------
class SpanCalls:
    """The reader's fold over spans as a receiver gets them: :meth:`call` gives the call a span is
    (None for an agent, tool or embedding span, a repeated response id, an error span without
    usage), with the same rules as a file's spans. The trace's notes gather what the spans lack."""

    def __init__(self, path: str) -> None:
        self.trace = Trace(path=path, format=f"{FORMAT}/otlp")
        self._reader = _Reader(path, self.trace)

    def call(self, span: Span) -> Call | None:
        before = len(self._reader.calls)
        self._reader.span(span)
        if len(self._reader.calls) == before:
            return None
        return self._reader.calls.pop()[2]  # held by the caller, not by the fold


def json_span(path: str, where: str, span: Any) -> Span:
    """A span of OTLP/JSON (or a flat span dump) as the reader reads it."""
    return _span(path, where, span)


def json_attributes(path: str, where: str, attrs: Any) -> dict[str, Any]:
    """OTLP/JSON attributes (``[{key, value: AnyValue}]``, or a plain object) as a plain dict."""
    return _attributes(path, where, attrs)
