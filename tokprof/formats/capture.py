"""API captures: the request and response of each model call, as proxies and tracers save them.

Three record shapes are accepted, one per JSONL line or JSON list item:

* a traced HTTP exchange, as claude-trace writes it: ``{"request": {"timestamp", "method", "url",
  "headers", "body"}, "response": {"status_code", "headers", "body" | "body_raw"}}``;
* a request/response pair: ``{"request": BODY, "response": BODY}`` (the response may be the raw
  server-sent-event stream, as a string);
* a bare request body.

Headers are never read or kept: they hold credentials. Nor is what a provider says in an error
response (its message may echo the request, an API key included) or a URL's path (it may hold ids
or tokens) ever shown: :func:`error_text` keeps an error's type and code, :func:`endpoint_kind` the
endpoint's kind.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Iterator, TypeGuard

from tokprof.base.errors import InputError
from tokprof.formats.fields import expect_object
from tokprof.formats.jsonfile import Document, parse, parse_or
from tokprof.formats.reader import Record
from tokprof.trace import Call


@dataclass
class Exchange:
    """One captured call: the request body and what came back."""

    where: str  # "line 3" or "record 2", for messages
    request: dict  # the request body
    response: Any = None  # the response body, parsed, when it was JSON
    stream: str | None = None  # the raw response text, when it was a server-sent-event stream
    status: int | None = None  # the HTTP status, when the capture has it
    url: str | None = None
    timestamp: Any = None
    record: dict | None = None  # the whole record, for fields some loggers put beside the pair


def capture_records(doc: Document) -> Iterator[Record]:
    """The records a capture's reader is fed: a JSONL file's lines as they are read, each item of a
    JSON list, or the one JSON value (a list is parsed whole: a JSON document is, so its items are
    fed one at a time but held by the document). :class:`RecordPlaces` names them."""
    if doc.lines is not None:
        for line, value in doc.lines:
            yield Record(value, line)
    elif isinstance(doc.value, list):
        for value in doc.value:
            yield Record(value)
    else:
        yield Record(doc.value)


class RecordPlaces:
    """Where each fed record is, as messages name it: ``line N``, else ``record I`` (the item's index
    in a JSON list, 0 for one object)."""

    def __init__(self) -> None:
        self.items = 0

    def __call__(self, record: Record) -> str:
        if record.line is not None:
            return record.place
        self.items += 1
        return f"record {self.items - 1}"


class Given:
    """The calls a capture's reader has given: how many, and their models (the log's model is theirs
    when they share one)."""

    def __init__(self) -> None:
        self.count = 0
        self.models: set[str] = set()

    def __call__(self, call: Call | None) -> tuple[Call, ...]:
        """The call to give (none for None), counted."""
        if call is None:
            return ()
        self.count += 1
        if call.model:
            self.models.add(call.model)
        return (call,)

    def model(self) -> str | None:
        return next(iter(self.models)) if len(self.models) == 1 else None


def first_records(doc: Document, count: int) -> list[tuple[str, Any]]:
    """The first records of a file, for detection (a JSONL file's lines are not consumed)."""
    if doc.lines is not None:
        return [(f"line {n}", value) for n, value in doc.lines.head(count)]
    if isinstance(doc.value, list):
        return [(f"record {i}", value) for i, value in enumerate(doc.value[:count])]
    return [("record 0", doc.value)]


def _is_http(part: Any) -> TypeGuard[dict]:
    return (
        isinstance(part, dict)
        and "body" in part
        and any(k in part for k in ("url", "method", "headers", "status_code"))
    )


def url_path(record: Any) -> str | None:
    """The URL path of a traced HTTP exchange (no scheme, host, query or fragment), or None when the
    record has no URL. Readers skip exchanges with other endpoints before unwrapping them (a GET has
    no body to check)."""
    request = record.get("request") if isinstance(record, dict) else None
    url = request.get("url") if isinstance(request, dict) and "messages" not in request else None
    if not isinstance(url, str):
        return None
    path = url.split("?", 1)[0].split("#", 1)[0]
    if "://" in path:  # drop the scheme and host (and any credentials written in it)
        rest = path.split("://", 1)[1]
        path = rest[rest.find("/") :] if "/" in rest else "/"
    return path.rstrip("/") or "/"


#: Path segments that name an endpoint's kind: the providers' API endpoints (OpenAI, Anthropic, Amazon
#: Bedrock's, Google's ``model:method``) and telemetry. The rest of a URL path is never shown: it may
#: hold ids, account names or tokens.
ENDPOINT_KINDS = (
    "count_tokens",
    "messages",
    "completions",
    "responses",
    "embeddings",
    "models",
    "files",
    "batches",
    "moderations",
    "images",
    "audio",
    "assistants",
    "threads",
    "runs",
    "uploads",
    "fine_tuning",
    "realtime",
    "invoke",
    "invoke-with-response-stream",
    "converse",
    "converse-stream",
    "generateContent",
    "streamGenerateContent",
    "countTokens",
    "embedContent",
    "event_logging",
    "telemetry",
    "metrics",
    "oauth",
    "organizations",
    "health",
)


def endpoint_kind(path: str) -> str:
    """What an endpoint is, for a note, without the path itself: its last segment that names an
    endpoint (``count_tokens``, ``models``, ``chat/completions``, ``invoke``), else ``another
    endpoint``."""
    segments = [segment.rsplit(":", 1)[-1] for segment in path.split("/") if segment]
    for i in range(len(segments) - 1, -1, -1):
        if segments[i] in ENDPOINT_KINDS:
            if segments[i] == "completions" and i > 0 and segments[i - 1] == "chat":
                return "chat/completions"
            return segments[i]
    return "another endpoint"


def request_body(record: Any) -> dict | None:
    """The request body a record holds, without checking it (for detecting formats)."""
    if not isinstance(record, dict):
        return None
    request = record.get("request")
    if request is None:
        return record
    if _is_http(request):
        request = request.get("body")
        if isinstance(request, str):  # a body saved as text
            request = parse_or(request)
    return request if isinstance(request, dict) else None


def _is_traced(response: Any) -> TypeGuard[dict]:
    """A traced HTTP response (``{"status_code", "headers", "body" | "body_raw"}``), not a body."""
    return _is_http(response) or (isinstance(response, dict) and "body_raw" in response)


def traced_body(response: dict) -> Any:
    """The body of a traced HTTP response: ``body``, else (missing or null) the text ``body_raw``.
    The one rule for every reader and for detection."""
    body = response.get("body")
    raw = response.get("body_raw")
    if body is None and isinstance(raw, str):
        return raw
    return body


def response_body(record: Any) -> Any:
    """The response body a record holds, without checking it (for detecting formats): parsed when it
    is JSON text (a body saved as text), else as it is (a server-sent-event stream stays a string)."""
    if not isinstance(record, dict) or "request" not in record:
        return None
    response = record.get("response")
    if _is_traced(response):
        response = traced_body(response)
    if isinstance(response, str) and response.lstrip().startswith(("{", "[")):
        return parse_or(response, response)
    return response


def exchange(path: str, where: str, record: Any) -> Exchange:
    """Unwrap one record, checking its envelope (not the request inside it)."""
    record = expect_object(path, where, record, "a captured request object")
    if "request" not in record:
        return Exchange(where=where, request=record, record=record)
    request, response = record["request"], record.get("response")
    url = timestamp = status = None
    if _is_http(request):
        url, timestamp = request.get("url"), request.get("timestamp")
        request = request.get("body")
        if isinstance(request, str):  # a body saved as text
            request = _json_body(path, where + ": request.body", request)
    request = expect_object(path, where + ": request", request, "the request body, an object")
    stream = None
    if _is_traced(response):
        status = http_status(response.get("status_code", response.get("status")))
        response = traced_body(response)
    if isinstance(response, str):
        stripped = response.lstrip()
        if stripped.startswith(("event:", "data:")):
            stream, response = response, None
        elif status is not None and status >= 400:
            response = parse_or(response)  # an error page (HTML from a proxy): error_text reports the HTTP status
        else:
            response = _json_body(path, where + ": response", response, "neither JSON nor a server-sent-event stream")
    if timestamp is None:
        timestamp = record.get("timestamp", record.get("logged_at"))
    return Exchange(
        where=where,
        request=request,
        response=response,
        stream=stream,
        status=status,
        url=url,
        timestamp=timestamp,
        record=record,
    )


def http_status(value: Any) -> int | None:
    """An HTTP status code, or None when the value is not one (100 to 999)."""
    if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 999:
        return value
    return None


def _json_body(path: str, where: str, text: str, not_json: str = "not JSON") -> Any:
    """A body saved as JSON text, parsed; an error naming the place when it is not usable JSON."""
    try:
        return parse(text)
    except ValueError as exc:
        what = not_json if isinstance(exc, json.JSONDecodeError) else f"invalid JSON: {exc}"
        raise InputError(path, where, what) from None


def sse_events(text: str, path: str = "", where: str = "") -> list[tuple[str | None, Any]]:
    """The events of a server-sent-event stream: ``(event name or None, data)``, data parsed when JSON
    (else kept as text). Data that is JSON too deeply nested to use is an error naming the event."""
    events: list[tuple[str | None, Any]] = []
    name: str | None = None
    data: list[str] = []

    def flush() -> None:
        nonlocal name, data
        if data:
            joined = "\n".join(data)
            try:
                value: Any = parse(joined)
            except json.JSONDecodeError:
                value = joined
            except ValueError as exc:
                raise InputError(
                    path, f"{where}: response (stream) event {len(events)}", f"invalid JSON: {exc}"
                ) from None
            events.append((name, value))
        name, data = None, []

    for line in text.splitlines():
        if not line.strip():
            flush()
        elif line.startswith("event:"):
            name = line[len("event:") :].strip()
        elif line.startswith("data:"):
            data.append(line[len("data:") :].strip())
    flush()
    return events


_IDENTIFIER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}")


def error_code(error: Any) -> str | None:
    """An error object's type and code (``invalid_request_error, invalid_api_key``), each only when it
    is an identifier; never its message, which may echo what was sent (an API key included)."""
    if not isinstance(error, dict):
        return None
    found: list[str] = []
    for key in ("type", "code"):
        value = error.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**6:
            value = str(value)
        if isinstance(value, str) and _IDENTIFIER.fullmatch(value) and value not in found:
            found.append(value)
    return ", ".join(found) or None


def error_text(response: Any, status: int | None) -> str | None:
    """Why a response is an error (an HTTP status of 400 or more, or an error object), else None:
    the status and the error's type and code (:func:`error_code`), never the provider's message."""
    detail = None
    if isinstance(response, dict):
        error = response.get("error")
        if response.get("type") == "error" or (error is not None and "choices" not in response):
            detail = error_code(error) or "error"
    if status is not None and status >= 400:
        return f"HTTP {status}" + (f" {detail}" if detail else "")
    return detail
