"""API captures: the request and response of each model call, as proxies and tracers save them.

Three record shapes are accepted, one per JSONL line or JSON list item:

* a traced HTTP exchange, as claude-trace writes it: ``{"request": {"timestamp", "method", "url",
  "headers", "body"}, "response": {"status_code", "headers", "body" | "body_raw"}}``;
* a request/response pair: ``{"request": BODY, "response": BODY}`` (the response may be the raw
  server-sent-event stream, as a string);
* a bare request body.

Headers are never read or kept: they hold credentials.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, TypeGuard

from tokprof.errors import InputError
from tokprof.formats.jsonfile import Document
from tokprof.formats.jsonfile import kind_of as _kind


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


def records(path: str, doc: Document) -> list[tuple[str, Any]]:
    """The records of a file: its JSONL lines, the items of a JSON list, or one JSON object."""
    if doc.lines is not None:
        return [(f"line {n}", value) for n, value in doc.lines]
    if isinstance(doc.value, list):
        return [(f"record {i}", value) for i, value in enumerate(doc.value)]
    return [("record 0", doc.value)]


def _is_http(part: Any) -> TypeGuard[dict]:
    return isinstance(part, dict) and "body" in part and any(k in part for k in ("url", "method", "headers", "status_code"))


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
        path = rest[rest.find("/"):] if "/" in rest else "/"
    return path.rstrip("/") or "/"


def request_body(record: Any) -> dict | None:
    """The request body a record holds, without checking it (for detecting formats)."""
    if not isinstance(record, dict):
        return None
    request = record.get("request")
    if request is None:
        return record
    if _is_http(request):
        request = request.get("body")
    return request if isinstance(request, dict) else None


def response_body(record: Any) -> Any:
    """The response body a record holds, parsed when it is JSON, without checking it."""
    if not isinstance(record, dict) or "request" not in record:
        return None
    response = record.get("response")
    if _is_http(response) or (isinstance(response, dict) and "body_raw" in response):
        response = response.get("body", response.get("body_raw"))
    return response


def exchange(path: str, where: str, record: Any) -> Exchange:
    """Unwrap one record, checking its envelope (not the request inside it)."""
    if not isinstance(record, dict):
        raise InputError(path, where, f"expected a captured request object, found {_kind(record)}")
    if "request" not in record:
        return Exchange(where=where, request=record, record=record)
    request, response = record["request"], record.get("response")
    url = timestamp = status = None
    if _is_http(request):
        url, timestamp = request.get("url"), request.get("timestamp")
        request = request.get("body")
        if isinstance(request, str):  # a body saved as text
            try:
                request = json.loads(request)
            except ValueError:
                raise InputError(path, where + ": request.body", "not JSON") from None
    if not isinstance(request, dict):
        raise InputError(path, where + ": request", f"expected the request body, an object, found {_kind(request)}")
    stream = None
    if isinstance(response, dict) and (_is_http(response) or "body_raw" in response):
        status = response.get("status_code", response.get("status"))
        if not isinstance(status, int) or isinstance(status, bool):
            status = None
        body = response.get("body")
        raw = response.get("body_raw")
        if body is None and isinstance(raw, str):
            body = raw
        response = body
    if isinstance(response, str):
        stripped = response.lstrip()
        if stripped.startswith(("event:", "data:")):
            stream, response = response, None
        else:
            try:
                response = json.loads(response)
            except ValueError:
                if status is None or status < 400:
                    raise InputError(path, where + ": response", "neither JSON nor a server-sent-event stream") from None
                response = None  # an error page (HTML from a proxy): error_text reports the HTTP status
    if timestamp is None:
        timestamp = record.get("timestamp", record.get("logged_at"))
    return Exchange(
        where=where, request=request, response=response, stream=stream, status=status, url=url,
        timestamp=timestamp, record=record,
    )


def sse_events(text: str) -> list[tuple[str | None, Any]]:
    """The events of a server-sent-event stream: ``(event name or None, data)``, data parsed when JSON."""
    events: list[tuple[str | None, Any]] = []
    name: str | None = None
    data: list[str] = []

    def flush() -> None:
        nonlocal name, data
        if data:
            joined = "\n".join(data)
            try:
                value: Any = json.loads(joined)
            except ValueError:
                value = joined
            events.append((name, value))
        name, data = None, []

    for line in text.splitlines():
        if not line.strip():
            flush()
        elif line.startswith("event:"):
            name = line[len("event:"):].strip()
        elif line.startswith("data:"):
            data.append(line[len("data:"):].strip())
    flush()
    return events


def error_text(response: Any, status: int | None) -> str | None:
    """Why a response is an error (an HTTP status of 400 or more, or an error object), else None."""
    detail = None
    if isinstance(response, dict):
        error = response.get("error")
        if response.get("type") == "error" or (error is not None and "choices" not in response):
            if isinstance(error, dict):
                detail = error.get("type") or error.get("code") or error.get("message")
            detail = str(detail or "error")
    if status is not None and status >= 400:
        return f"HTTP {status}" + (f" {detail}" if detail else "")
    return detail
