"""tokprof's native form: OpenAI Chat Completions requests.

Two shapes are read:

* a transcript, one JSON object ``{"model", "tools", "messages"}``: every ``assistant``
  message marks one model call whose prompt is every message before it;
* request records, a JSON list or a JSONL file, one record per call: a request body
  ``{"model", "messages", "tools", "usage"}`` with ``usage`` as the provider reported it, or a
  captured pair ``{"request", "response"}`` (see :mod:`tokprof.formats.capture`) whose response is
  the Chat Completions JSON (``usage``, ``choices``) or its server-sent-event stream.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Iterable

from tokprof.base.errors import InputError
from tokprof.formats.capture import (
    Exchange,
    endpoint_kind,
    error_text,
    exchange,
    first_records,
    records,
    request_body,
    sse_events,
    url_path,
)
from tokprof.formats.jsonfile import Document
from tokprof.formats.reader import whole_read_format
from tokprof.formats.jsonfile import kind_of as _kind
from tokprof.formats.neutral import (
    check_messages,
    check_model,
    check_tool_calls,
    check_tools,
    check_usage,
    parse_day,
    parse_time,
)
from tokprof.formats.shared_prompts import SharedPrompts
from tokprof.trace import Call, PromptView, Trace, Usage

FORMAT = "openai-chat"
DESCRIPTION = (
    "OpenAI Chat Completions: a transcript {model, tools, messages}, or request records / captured "
    "{request, response} pairs, one per call"
)


def sniff(doc: Document) -> bool:
    if isinstance(doc.value, dict) and "request" not in doc.value:
        return isinstance(doc.value.get("messages"), list)
    found = [request_body(record) for _, record in first_records(doc, 50)]
    return any(isinstance(body, dict) and isinstance(body.get("messages"), list) for body in found)


def read(path: str, doc: Document) -> Trace:
    if doc.lines is not None:
        return _records(path, records(path, doc), "jsonl")
    value = doc.value
    if isinstance(value, list):
        if not value:
            raise InputError(path, None, "the list of request records is empty")
        return _records(path, records(path, doc), "records")
    if isinstance(value, dict):
        if "request" in value:
            return _records(path, records(path, doc), "records")
        if "messages" not in value:
            raise InputError(path, None, "expected a transcript object with 'messages', or a list of request records")
        return _transcript(path, value)
    raise InputError(path, None, f"expected a JSON object or list, found {_kind(value)}")


def _transcript(path: str, obj: dict) -> Trace:
    model = check_model(path, "", obj)
    tools = check_tools(path, "", obj.get("tools"))
    messages = check_messages(path, "", obj.get("messages"))
    day = parse_day(obj)
    calls: list[Call] = []
    for i, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        if i == 0:
            raise InputError(path, "messages[0]", "an assistant message with no prompt before it")
        calls.append(
            Call(
                index=len(calls),
                messages=PromptView(messages, i),  # the transcript's first i messages, not a copy each
                tools=tools,
                model=model,
                day=day,
                where=f"messages[{i}]",
                response=message,
            )
        )
    if not calls:
        raise InputError(path, "messages", "no assistant message, so no model call to profile")
    return Trace(path=path, format=FORMAT + "/transcript", calls=calls, model=model)


def _records(path: str, found: Iterable[tuple[str, Any]], shape: str) -> Trace:
    trace = Trace(path=path, format=f"{FORMAT}/{shape}")
    shared = SharedPrompts()  # each record resends the conversation: held once
    for where, record in found:
        endpoint = url_path(record)
        if endpoint is not None and not endpoint.endswith("/chat/completions"):
            trace.note(
                "other-endpoint",
                "a captured request to another endpoint than /chat/completions is not a model call: skipped",
                f"{where} ({endpoint_kind(endpoint)})",
            )
            continue
        ex = exchange(path, where, record)
        prefix = f"{where}: " + ("request." if ex.record is not ex.request else "")
        if "messages" not in ex.request:
            raise InputError(path, where, "missing field 'messages': not an OpenAI Chat Completions request")
        failed = error_text(ex.response, ex.status)
        if failed:
            trace.note(
                "error-response",
                "the response is an error, so the call is skipped (an error is not billed as a completed call)",
                f"{where} ({failed})",
            )
            continue
        messages = check_messages(path, prefix, ex.request["messages"], skip=_skipper(trace))
        if not messages:
            raise InputError(path, prefix + "messages", "empty: a call needs a prompt")
        usage, response = _outcome(path, trace, ex)
        if usage is _ERROR:
            trace.note(
                "error-response",
                "the response is an error, so the call is skipped (an error is not billed as a completed call)",
                f"{where} (error event in the stream)",
            )
            continue
        trace.calls.append(
            Call(
                index=len(trace.calls),
                messages=shared.prompt(messages),
                tools=shared.tools(check_tools(path, prefix, ex.request.get("tools"))),
                model=check_model(path, prefix, ex.request),
                reported=usage,
                day=parse_day(ex.request) or parse_day({"timestamp": ex.timestamp}),
                where=where,
                response=response,
                time=parse_time(ex.timestamp),
            )
        )
    if not trace.calls:
        raise InputError(path, None, "no successful model call in the log")
    models = {c.model for c in trace.calls if c.model}
    trace.model = models.pop() if len(models) == 1 else None
    return trace


NOT_TEXT = (
    "content that is not text (images, audio, files) cannot be rendered by a chat template: it is left out "
    "of the rendered prompt"
)


def _skipper(trace: Trace) -> Callable[[str, str], None]:
    return lambda where, kind: trace.note("content-not-text", NOT_TEXT, f"{where} ({kind})")


def _outcome(path: str, trace: Trace, ex: Exchange) -> tuple[Usage | None, dict | None]:
    """The reported usage and the assistant message of a captured call."""
    where = f"{ex.where}: "
    if ex.stream is not None:
        events = sse_events(ex.stream, path, ex.where)
        chunks = [data for _, data in events]
        usage = None
        for name, chunk in events:
            if name == "error" or (isinstance(chunk, dict) and isinstance(chunk.get("error"), dict)):
                return _ERROR, None
        for chunk in chunks:
            if isinstance(chunk, dict) and isinstance(chunk.get("usage"), dict):
                usage = _usage(path, where + "response (stream) ", chunk["usage"])
        if "[DONE]" not in chunks:
            trace.note(
                "stream-cut",
                "the response stream ends before its end marker: the prompt was sent and is "
                "profiled, but reported usage may be missing",
                ex.where,
            )
        return usage, None
    if isinstance(ex.response, dict):
        response = None
        choices = ex.response.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            message = choices[0].get("message")
            if isinstance(message, dict) and message.get("tool_calls"):
                response = {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": check_tool_calls(
                        path, where + "response.choices[0].message.tool_calls", message["tool_calls"], set()
                    ),
                }
        return _usage(path, where + "response.", ex.response.get("usage")), response
    source = ex.request if ex.record is ex.request else ex.record
    assert source is not None  # capture.exchange() always sets the record
    return _usage(path, where, source.get("usage")), None


_ERROR = Usage()  # a marker: the stream carried an error


def _usage(path: str, prefix: str, usage: Any) -> Usage | None:
    """OpenAI's usage: ``prompt_tokens`` includes the cached tokens (``prompt_tokens_details.cached_tokens``)."""
    return check_usage(
        path,
        prefix + "usage",
        usage,
        "prompt_tokens",
        "prompt_tokens_details",
        "completion_tokens",
        write="cache_write_tokens",
    )


LOG_FORMAT = whole_read_format(
    FORMAT, DESCRIPTION, "api", sniff, read, records_what="every request whole, with usage when recorded"
)
