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
    Given,
    RecordPlaces,
    capture_records,
    endpoint_kind,
    error_text,
    exchange,
    first_records,
    request_body,
    sse_events,
    url_path,
)
from tokprof.formats.jsonfile import Document
from tokprof.formats.reader import LogFormat, Reader, Record, read_whole
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
    """A log read whole (:class:`ChatReader` fed every record)."""
    return read_whole(ChatReader(path, doc), capture_records(doc))


class ChatReader(Reader):
    """Chat Completions requests read as a fold: each request record gives its call as it is fed (the
    conversation it resends is held once, :class:`SharedPrompts`); a transcript is one JSON document,
    whose calls are all given when it is fed (it cannot be streamed: its calls share one list of
    messages, parsed whole)."""

    def __init__(self, path: str, doc: Document | None) -> None:
        self.path = path
        value = doc.value if doc is not None and doc.lines is None else None
        transcript = isinstance(value, dict) and "request" not in value
        shape = "jsonl" if doc is not None and doc.lines is not None else "transcript" if transcript else "records"
        self.trace = Trace(path=path, format=f"{FORMAT}/{shape}")
        self.transcript = transcript
        #: a JSON document that is neither an object nor a list: said when its one record is fed
        self.not_records = doc is not None and doc.lines is None and not isinstance(value, (dict, list))
        self.places = RecordPlaces()
        self.shared = SharedPrompts()  # each record resends the conversation: held once
        self.given = Given()

    def feed(self, record: Record) -> Iterable[Call]:
        if self.not_records:
            raise InputError(self.path, None, f"expected a JSON object or list, found {_kind(record.value)}")
        if self.transcript:
            if "messages" not in record.value:
                raise InputError(
                    self.path, None, "expected a transcript object with 'messages', or a list of request records"
                )
            return self._transcript(record.value)
        return self.given(self._record(self.places(record), record.value))

    def finish(self) -> Iterable[Call]:
        if self.given.count == 0 and not self.transcript:
            if self.places.items == 0 and self.trace.format.endswith("/records"):
                raise InputError(self.path, None, "the list of request records is empty")
            raise InputError(self.path, None, "no successful model call in the log")
        if not self.transcript:
            self.trace.model = self.given.model()
        return ()

    def _transcript(self, obj: dict) -> list[Call]:
        path = self.path
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
        self.trace.model = model
        return calls

    def _record(self, where: str, record: Any) -> Call | None:
        path, trace, shared = self.path, self.trace, self.shared
        endpoint = url_path(record)
        if endpoint is not None and not endpoint.endswith("/chat/completions"):
            trace.note(
                "other-endpoint",
                "a captured request to another endpoint than /chat/completions is not a model call: skipped",
                f"{where} ({endpoint_kind(endpoint)})",
            )
            return None
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
            return None
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
            return None
        return Call(
            index=self.given.count,
            messages=shared.prompt(messages),
            tools=shared.tools(check_tools(path, prefix, ex.request.get("tools"))),
            model=check_model(path, prefix, ex.request),
            reported=usage,
            day=parse_day(ex.request) or parse_day({"timestamp": ex.timestamp}),
            where=where,
            response=response,
            time=parse_time(ex.timestamp),
        )


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


LOG_FORMAT = LogFormat(
    FORMAT,
    DESCRIPTION,
    "api",
    sniff,
    ChatReader,
    records=capture_records,
    records_what="every request whole, with usage when recorded",
)
