"""Anthropic Messages API captures: the request of every ``/v1/messages`` call and what came back.

Records are read one per JSONL line or JSON list item, in the shapes :mod:`tokprof.formats.capture`
unwraps: claude-trace lines ``{"request": {"timestamp", "method", "url", "headers", "body"},
"response": {"status_code", "headers", "body" | "body_raw"}}``, ``{"request": BODY, "response":
BODY}`` pairs, and bare request bodies. Headers are never read.

Which records are calls: a record with a URL counts only when the URL's path ends in
``/v1/messages``; others (``/v1/messages/count_tokens``, ``/v1/models``, telemetry) are skipped, with
a warning only when a skipped request carries ``messages`` (a model call to an endpoint tokprof does
not read; count_tokens excepted). Error responses (HTTP status >= 400, ``{"type": "error"}``, an
``error`` event in the stream) skip the call with warning ``error-response``.

Request body to neutral messages and tools:

* ``system`` (a string, or text blocks joined by newlines) becomes one ``system`` message;
* ``tools[]`` with ``input_schema`` become function tools (``parameters`` = ``input_schema``);
  Anthropic's built-in tools (a ``type`` such as ``bash_20250124`` and no ``input_schema``) become a
  function tool named by ``name``, with an empty ``description`` and the rest of its configuration
  (``type`` included, ``cache_control`` left out) as ``parameters``, and
  warning ``server-tool``: their real definitions are the provider's and not public, so their
  tokens are an estimate;
* a ``user`` message becomes one ``tool`` message per ``tool_result`` block, in order (its text,
  or its text blocks joined), then a ``user`` message with the remaining text blocks, if any;
* an ``assistant`` message becomes one ``assistant`` message: text blocks joined as ``content``,
  ``tool_use`` (and ``server_tool_use``/``mcp_tool_use``) blocks as ``tool_calls`` with
  ``arguments`` = the JSON of ``input``, ``thinking`` blocks joined as ``reasoning_content``;
* images, documents, ``redacted_thinking`` and every other block that is not text cannot be
  rendered as text: they are left out, with warning ``content-not-text`` (their tokens are not
  counted). ``cache_control`` costs no tokens and is ignored; so is a tool result's ``is_error``.
  Consecutive messages of one role and an assistant prefill as the last message are kept as sent.

Response: the JSON message or its server-sent-event stream. Its tool calls (and text) become
``Call.response``. Usage: Anthropic's ``input_tokens`` excludes cache reads and writes, so the
reported prompt is ``input_tokens + cache_creation_input_tokens + cache_read_input_tokens`` (a
missing cache field counts as 0), ``cache_read`` = ``cache_read_input_tokens``, ``cache_write`` =
``cache_creation_input_tokens``, ``output`` = ``output_tokens``. In a stream, usage starts from
``message_start`` and each ``message_delta`` usage (cumulative) replaces the fields it has. A stream
without ``message_stop`` keeps the call with the usage it has and warning ``stream-cut``. The day
comes from the request's ``timestamp`` (or the record's ``timestamp``/``logged_at``).
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable

from tokprof.base.errors import InputError
from tokprof.formats.capture import (
    Exchange,
    Given,
    RecordPlaces,
    capture_records,
    endpoint_kind,
    error_code,
    error_text,
    exchange,
    first_records,
    http_status,
    request_body,
    response_body,
    sse_events,
    traced_body,
    url_path,
)
from tokprof.formats.fields import expect_list, expect_object, nonempty_string, optional_object, optional_string, string
from tokprof.formats.jsonfile import Document, parse, parse_or
from tokprof.formats.reader import LogFormat, Reader, Record, read_whole
from tokprof.formats.jsonfile import kind_of as _kind
from tokprof.formats.neutral import (
    anthropic_usage,
    assistant_message,
    cache_creation,
    check_count,
    check_messages,
    check_model,
    check_text,
    check_tools,
    parse_day,
    parse_time,
)
from tokprof.formats.shared_prompts import SharedPrompts
from tokprof.trace import Call, Trace, Usage

FORMAT = "anthropic"
DESCRIPTION = (
    "Anthropic Messages API captures: claude-trace JSONL, {request, response} pairs or request bodies "
    "of /v1/messages calls"
)

MESSAGES_PATH = "/v1/messages"
COUNT_TOKENS_PATH = "/v1/messages/count_tokens"
#: Content block types only Anthropic requests have (for detection).
ANTHROPIC_BLOCKS = ("tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use")
TOOL_CALL_BLOCKS = ("tool_use", "server_tool_use", "mcp_tool_use")
USAGE_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")

NOT_TEXT = (
    "content that is not text (images, documents, redacted thinking, server tool results) cannot be "
    "rendered by a chat template: it is left out of the prompt and its tokens are not counted"
)
SERVER_TOOL = (
    "Anthropic's built-in tools (bash, text editor, web search, computer use, ...) are defined by the "
    "provider and their definitions are not public: each is profiled as a function tool holding its "
    "configuration, so its tokens are an estimate"
)
OTHER_ENDPOINT = (
    "a request with messages went to an endpoint other than /v1/messages: it is not read as a "
    "Messages call and is skipped"
)
ERROR_RESPONSE = "the response is an error, so the call is skipped (an error is not billed as a completed call)"
STREAM_CUT = (
    "the response stream ends before message_stop: the prompt was sent and is profiled, but reported "
    "usage may be missing or incomplete"
)


# -- detection -------------------------------------------------------------------------------------
def sniff(doc: Document) -> bool:
    """True when the first records with messages look like Anthropic Messages requests."""
    return any(_looks_anthropic(record) for record in _sample(doc))


def _sample(doc: Document, wanted: int = 5, scanned: int = 50) -> list[Any]:
    """The first few records whose request body has a list of messages (skipping telemetry)."""
    if doc.lines is None and not isinstance(doc.value, (dict, list)):
        return []
    found = []
    for _, record in first_records(doc, scanned):
        body = request_body(record)
        if isinstance(body, dict) and isinstance(body.get("messages"), list):
            found.append(record)
            if len(found) == wanted:
                break
    return found


def _looks_anthropic(record: Any) -> bool:
    body = request_body(record)
    if not isinstance(body, dict):
        return False
    request = record.get("request") if isinstance(record, dict) else None
    url = request.get("url") if isinstance(request, dict) else None
    if isinstance(url, str) and MESSAGES_PATH in url:
        return True
    response = response_body(record)
    if isinstance(response, dict) and "choices" in response:
        return False
    if isinstance(body.get("system"), (str, list)):
        return True
    tools = body.get("tools")
    if isinstance(tools, list) and any(isinstance(t, dict) and "input_schema" in t for t in tools):
        return True
    if any(_block_type(block) in ANTHROPIC_BLOCKS for block in _request_blocks(body)):
        return True
    if isinstance(response, dict) and response.get("type") == "message":
        return True
    if "anthropic_version" in body:
        return True
    # Anthropic's usage keys, on a bare body or in the response (OpenAI's are prompt_tokens and friends)
    for usage in (body.get("usage"), response.get("usage") if isinstance(response, dict) else None):
        if (
            isinstance(usage, dict)
            and "prompt_tokens" not in usage
            and ("input_tokens" in usage or "cache_read_input_tokens" in usage)
        ):
            return True
    return isinstance(response, str) and "message_start" in response


def _request_blocks(body: dict) -> list[Any]:
    blocks: list[Any] = []
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            blocks.extend(content)
    return blocks


def _block_type(block: Any) -> Any:
    return block.get("type") if isinstance(block, dict) else None


# -- reading ---------------------------------------------------------------------------------------
def read(path: str, doc: Document) -> Trace:
    """A log read whole (:class:`MessagesReader` fed every record)."""
    return read_whole(MessagesReader(path, doc), capture_records(doc))


class MessagesReader(Reader):
    """Messages API captures read as a fold: each record gives its call as it is fed (the conversation
    each request resends is held once, :class:`SharedPrompts`)."""

    def __init__(self, path: str, doc: Document | None) -> None:
        value = doc.value if doc is not None and doc.lines is None else None
        shape = "jsonl" if doc is not None and doc.lines is not None else "records"
        self.path = path
        self.trace = Trace(path=path, format=f"{FORMAT}/{shape}")
        self.reader = _Reader(path, self.trace)
        self.places = RecordPlaces()
        #: a JSON document that is neither an object nor a list: said when its one record is fed
        self.not_records = doc is not None and doc.lines is None and not isinstance(value, (list, dict))
        self.given = Given()

    def feed(self, record: Record) -> Iterable[Call]:
        if self.not_records:
            found = _kind(record.value)
            raise InputError(self.path, None, f"expected a JSON object or list of records, found {found}")
        return self.given(self.reader.record(self.places(record), record.value))

    def finish(self) -> Iterable[Call]:
        if self.given.count == 0:
            if self.places.items == 0 and self.trace.format.endswith("/records"):
                raise InputError(self.path, None, "the list of request records is empty")
            raise InputError(self.path, None, "no successful /v1/messages call in the log")
        self.trace.model = self.given.model()
        return ()


class _Reader:
    """Turns records into calls, gathering notes on the trace."""

    def __init__(self, path: str, trace: Trace):
        self.path = path
        self.trace = trace
        self.server_tools_seen: set[str] = set()
        self.shared = SharedPrompts()  # each record resends the conversation: held once
        self.calls = 0  # the calls made so far

    def fail(self, where: str, what: str) -> InputError:
        return InputError(self.path, where, what)

    # -- records -----------------------------------------------------------------------------------
    def record(self, where: str, record: Any) -> Call | None:
        """The call a record is, or None when it is none (skipped, noted)."""
        endpoint = self.endpoint(where, record)
        if endpoint is not None and not endpoint.endswith(MESSAGES_PATH):
            self.skip_endpoint(where, record, endpoint)
            return None
        failed = _http_error(record)  # before unwrapping: an error page may be neither JSON nor a stream
        if failed:
            self.trace.note("error-response", ERROR_RESPONSE, f"{where} ({failed})")
            return None
        ex = exchange(self.path, where, record)
        prefix = f"{where}: " + _body_prefix(record, ex)
        if "messages" not in ex.request:
            raise self.fail(where, "missing field 'messages': not an Anthropic Messages request")
        failed, usage, response = self.outcome(ex)
        if failed:
            self.trace.note("error-response", ERROR_RESPONSE, f"{where} ({failed})")
            return None
        body = ex.request
        call = Call(
            index=self.calls,
            messages=self.shared.prompt(self.messages(prefix, body)),
            tools=self.shared.tools(self.tools(prefix, body.get("tools"))),
            model=check_model(self.path, prefix, body),
            reported=usage,
            day=parse_day(body) or parse_day({"timestamp": ex.timestamp}),
            where=where,
            response=response,
            time=parse_time(ex.timestamp),
        )
        self.calls += 1
        return call

    def endpoint(self, where: str, record: Any) -> str | None:
        """The URL path of a traced HTTP exchange, or None when the record has no URL."""
        request = record.get("request") if isinstance(record, dict) else None
        if isinstance(request, dict) and "messages" not in request and "url" in request:
            string(self.path, f"{where}: request.url", request["url"])
        return url_path(record)

    def skip_endpoint(self, where: str, record: dict, endpoint: str) -> None:
        if endpoint.endswith(COUNT_TOKENS_PATH):
            return
        body = record["request"].get("body")
        if isinstance(body, dict) and isinstance(body.get("messages"), list):
            self.trace.note("other-endpoint", OTHER_ENDPOINT, f"{where} ({endpoint_kind(endpoint)})")

    # -- the prompt --------------------------------------------------------------------------------
    def messages(self, prefix: str, body: dict) -> list[dict]:
        raw = expect_list(self.path, prefix + "messages", body["messages"], "a list of messages")
        if not raw:
            raise self.fail(prefix + "messages", "empty: a call needs a prompt")
        out = self.system(prefix + "system", body.get("system"))
        call_ids: set[str] = set()
        for i, message in enumerate(raw):
            at = f"{prefix}messages[{i}]"
            message = expect_object(self.path, at, message, "a message object")
            role = message.get("role")
            if role not in ("user", "assistant"):
                raise self.fail(at + ".role", f"unknown role {role!r} (expected user or assistant)")
            blocks = self.blocks(at + ".content", message.get("content"))
            if role == "user":
                out.extend(self.user(blocks, call_ids))
            else:
                out.append(self.assistant(blocks, call_ids, self.not_text))
        return check_messages(self.path, prefix, out)

    def system(self, where: str, system: Any) -> list[dict]:
        if system is None:
            return []
        if isinstance(system, str):
            text = check_text(self.path, where, system)
        elif isinstance(system, list):
            texts = []
            for at, block in self.blocks(where, system):
                if block["type"] == "text":
                    texts.append(self.text(at, block, "text"))
                else:
                    self.not_text(at, block["type"])
            text = "\n".join(texts)
        else:
            raise self.fail(where, f"expected a string or a list of text blocks, found {_kind(system)}")
        return [{"role": "system", "content": text}] if text else []

    def blocks(self, where: str, content: Any) -> list[tuple[str, dict]]:
        """Content as (place, block) pairs; a string is one text block."""
        if isinstance(content, str):
            return [(where, {"type": "text", "text": check_text(self.path, where, content)})]
        if content is None:
            raise self.fail(where, "missing: expected a string or a list of content blocks")
        if not isinstance(content, list):
            raise self.fail(where, f"expected a string or a list of content blocks, found {_kind(content)}")
        out = []
        for j, block in enumerate(content):
            at = f"{where}[{j}]"
            block = expect_object(self.path, at, block, "a content block object")
            string(self.path, at + ".type", block.get("type"))
            out.append((at, block))
        return out

    def text(self, where: str, block: dict, key: str) -> str:
        return string(self.path, f"{where}.{key}", block.get(key))

    def not_text(self, where: str, kind: str) -> None:
        self.trace.note("content-not-text", NOT_TEXT, f"{where} ({kind})")

    def user(self, blocks: list[tuple[str, dict]], call_ids: set[str]) -> list[dict]:
        results, texts = [], []
        for at, block in blocks:
            kind = block["type"]
            if kind == "text":
                texts.append(self.text(at, block, "text"))
            elif kind == "tool_result":
                results.append(self.tool_result(at, block, call_ids))
            elif kind in TOOL_CALL_BLOCKS or kind == "thinking":
                raise self.fail(at + ".type", f"a {kind} block belongs in an assistant message")
            else:
                self.not_text(at, kind)
        if texts or not results:
            results.append({"role": "user", "content": "\n".join(texts)})
        return results

    def assistant(
        self, blocks: list[tuple[str, dict]], call_ids: set[str], not_text: Callable[[str, str], None]
    ) -> dict:
        texts, thoughts, calls = [], [], []
        for at, block in blocks:
            kind = block["type"]
            if kind == "text":
                texts.append(self.text(at, block, "text"))
            elif kind == "thinking":
                thoughts.append(self.text(at, block, "thinking"))
            elif kind in TOOL_CALL_BLOCKS:
                calls.append(self.tool_call(at, block, call_ids))
            elif kind == "tool_result":
                raise self.fail(at + ".type", "a tool_result block belongs in a user message")
            else:
                not_text(at, kind)
        return assistant_message(texts, thoughts, calls)

    def tool_call(self, where: str, block: dict, call_ids: set[str]) -> dict:
        call_id = string(self.path, where + ".id", block.get("id"))
        name = nonempty_string(self.path, where + ".name", block.get("name"))
        arguments = expect_object(self.path, where + ".input", block.get("input", {}))
        call_ids.add(call_id)
        text = check_text(self.path, where + ".input", json.dumps(arguments, ensure_ascii=False))
        return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}

    def tool_result(self, where: str, block: dict, call_ids: set[str]) -> dict:
        call_id = string(self.path, where + ".tool_use_id", block.get("tool_use_id"))
        if call_id not in call_ids:
            raise self.fail(
                where + ".tool_use_id", f"{call_id!r} matches no tool_use block in an earlier assistant message"
            )
        content = block.get("content")
        if content is None:
            text = ""
        elif isinstance(content, list) and not content:
            text = ""
        else:
            texts = []
            for at, part in self.blocks(where + ".content", content):
                if part["type"] == "text":
                    texts.append(self.text(at, part, "text"))
                else:
                    self.not_text(at, part["type"])
            text = "\n".join(texts)
        return {"role": "tool", "tool_call_id": call_id, "content": text}

    def tools(self, prefix: str, tools: Any) -> list[dict] | None:
        if tools is None:
            return None
        out, names = [], set()
        for k, tool in enumerate(expect_list(self.path, prefix + "tools", tools, "a list of tool definitions")):
            converted = self.tool(f"{prefix}tools[{k}]", tool)
            name = converted["function"]["name"]
            if name in names:
                raise self.fail(f"{prefix}tools[{k}].name", f"duplicate tool name {name!r}")
            names.add(name)
            out.append(converted)
        return check_tools(self.path, prefix, out)

    def tool(self, where: str, tool: Any) -> dict:
        tool = expect_object(self.path, where, tool, "a tool object")
        name = nonempty_string(self.path, where + ".name", tool.get("name"))
        kind = tool.get("type")
        if "input_schema" in tool or kind in (None, "custom"):
            schema = expect_object(self.path, where + ".input_schema", tool.get("input_schema"))
            description = optional_string(self.path, where + ".description", tool.get("description"))
            function: dict[str, Any] = {"name": name}
            if description is not None:
                function["description"] = description
            function["parameters"] = schema
            return {"type": "function", "function": function}
        kind = string(self.path, where + ".type", kind)
        if kind not in self.server_tools_seen:
            self.server_tools_seen.add(kind)
            self.trace.note("server-tool", SERVER_TOOL, f"{where} ({kind})")
        config = {key: value for key, value in tool.items() if key not in ("name", "cache_control")}
        # the real definition has a description; an empty one keeps templates that print it working
        return {"type": "function", "function": {"name": name, "description": "", "parameters": config}}

    # -- the response ------------------------------------------------------------------------------
    def outcome(self, ex: Exchange) -> tuple[str | None, Usage | None, dict | None]:
        """Why the call failed (or None), its reported usage and its assistant message."""
        failed = error_text(ex.response, ex.status)
        if failed:
            return failed, None, None
        if ex.stream is not None:
            return self.stream(ex)
        if ex.response is None:
            return None, self.usage(f"{ex.where}: usage", (ex.record or {}).get("usage")), None
        if not isinstance(ex.response, dict):
            found = _kind(ex.response)
            raise self.fail(f"{ex.where}: response", f"expected the response message, an object, found {found}")
        usage = self.usage(f"{ex.where}: response.usage", ex.response.get("usage"))
        content = ex.response.get("content")
        if content is None:
            return None, usage, None
        blocks = self.blocks(f"{ex.where}: response.content", content)
        return None, usage, self.response(ex.where + ": response.", blocks)

    def response(self, prefix: str, blocks: list[tuple[str, dict]]) -> dict:
        message = self.assistant(blocks, set(), lambda at, kind: None)  # not in the prompt: no note
        return check_messages(self.path, prefix, [message])[0]

    def stream(self, ex: Exchange) -> tuple[str | None, Usage | None, dict | None]:
        usage: dict[str, Any] = {}
        blocks: dict[int, dict] = {}
        partial: dict[int, list[str]] = {}
        stopped = False
        for name, data in sse_events(ex.stream or "", self.path, ex.where):
            if not isinstance(data, dict):
                continue
            kind = data.get("type", name)
            if kind == "error":
                return _stream_error(data), None, None
            if kind == "message_start":
                message = data.get("message")
                _merge_usage(usage, message.get("usage") if isinstance(message, dict) else None)
            elif kind == "message_delta":
                _merge_usage(usage, data.get("usage"))
            elif kind == "content_block_start":
                index, block = data.get("index"), data.get("content_block")
                if isinstance(index, int) and isinstance(block, dict):
                    blocks[index] = dict(block)
            elif kind == "content_block_delta":
                _apply_delta(blocks, partial, data.get("index"), data.get("delta"))
            elif kind == "message_stop":
                stopped = True
        if not stopped:
            self.trace.note("stream-cut", STREAM_CUT, ex.where)
        for index, pieces in partial.items():
            blocks[index]["input"] = self.streamed_input(
                f"{ex.where}: response (stream) content[{index}]", "".join(pieces)
            )
        where = f"{ex.where}: response (stream) "
        reported = self.usage(where + "usage", usage) if usage else None
        content = [block for _, block in sorted(blocks.items())]
        message = self.response(where, self.blocks(where + "content", content)) if content else None
        return None, reported, message

    def streamed_input(self, where: str, text: str) -> dict:
        """A tool input streamed as ``partial_json`` pieces; one cut off mid-way (or empty) is kept as
        no arguments, one that is JSON too deeply nested to use is an error."""
        try:
            value = parse(text)
        except json.JSONDecodeError:
            return {}
        except ValueError as exc:
            raise self.fail(where + ".input", f"invalid JSON: {exc}") from None
        return value if isinstance(value, dict) else {}

    def usage(self, where: str, usage: Any) -> Usage | None:
        """Anthropic's usage: ``input_tokens`` excludes cache reads and writes, so they are added."""
        usage = optional_object(self.path, where, usage)
        if usage is None:
            return None
        counts: dict[str, int | None] = {
            key: check_count(self.path, f"{where}.{key}", usage.get(key)) for key in USAGE_FIELDS
        }
        if all(value is None for value in counts.values()):
            return None
        counts.update(cache_creation(self.path, where, usage))
        return anthropic_usage(counts)


def _http_error(record: Any) -> str | None:
    """Why a traced HTTP exchange failed, from its status (400 or more), before its body is parsed."""
    response = record.get("response") if isinstance(record, dict) else None
    if not isinstance(response, dict):
        return None
    status = http_status(response.get("status_code"))
    if status is None or status < 400:
        return None
    body = traced_body(response)
    if isinstance(body, str):
        body = parse_or(body)
    return error_text(body, status)


def _body_prefix(record: Any, ex: Exchange) -> str:
    """How error places name the request body: the record itself, ``request.`` or ``request.body.``."""
    if ex.record is ex.request:
        return ""
    return "request." if record.get("request") is ex.request else "request.body."


def _stream_error(data: dict) -> str:
    return f"{error_code(data.get('error')) or 'error'} in the stream"


def _merge_usage(usage: dict[str, Any], update: Any) -> None:
    """Stream usage is cumulative: a later event's fields replace the earlier ones."""
    if isinstance(update, dict):
        usage.update({key: update[key] for key in USAGE_FIELDS if update.get(key) is not None})
        if update.get("cache_creation") is not None:  # the cache writes by lifetime
            usage["cache_creation"] = update["cache_creation"]


def _apply_delta(blocks: dict[int, dict], partial: dict[int, list[str]], index: Any, delta: Any) -> None:
    block = blocks.get(index) if isinstance(index, int) else None
    if block is None or not isinstance(delta, dict):
        return
    kind = delta.get("type")
    if kind == "text_delta" and isinstance(delta.get("text"), str):
        block["text"] = str(block.get("text") or "") + delta["text"]
    elif kind == "thinking_delta" and isinstance(delta.get("thinking"), str):
        block["thinking"] = str(block.get("thinking") or "") + delta["thinking"]
    elif kind == "input_json_delta" and isinstance(delta.get("partial_json"), str):
        partial.setdefault(index, []).append(delta["partial_json"])


def request_prompt(path: str, body: dict) -> tuple[list[dict], list[dict] | None, list]:
    """The neutral messages and tools of one Messages request body (``system``, ``tools``,
    ``messages``), and the notes made on the way (content that is not text, built-in tools)."""
    trace = Trace(path=path, format=FORMAT)
    reader = _Reader(path, trace)
    expect_list(path, "messages", body.get("messages"), "a list of messages")
    return reader.messages("", body), reader.tools("", body.get("tools")), trace.notes


LOG_FORMAT = LogFormat(
    FORMAT,
    DESCRIPTION,
    "api",
    sniff,
    MessagesReader,
    records=capture_records,
    records_what="every request whole, with usage when the response is captured",
)
