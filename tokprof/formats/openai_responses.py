"""OpenAI Responses API captures: one record per call to ``POST /v1/responses``.

Records are JSONL lines or the items of a JSON list, in the shapes :mod:`tokprof.formats.capture`
unwraps: ``{"request": BODY, "response": BODY}`` pairs (the response as JSON or as its raw
server-sent-event stream), traced HTTP exchanges (only URLs ending in ``/responses`` are model
calls: others are skipped with a note), and bare request bodies.

The request body gives the prompt:

* ``instructions`` (a string) becomes a leading ``system`` message. It belongs to its own request:
  the API does not carry instructions over a ``previous_response_id`` chain.
* ``input`` is a string (one ``user`` message) or a list of items:

  - ``{"type": "message", "role", "content"}`` or the short ``{"role", "content"}`` (roles user,
    assistant, system, developer): content is a string or a list of parts; ``input_text``,
    ``output_text`` and ``text`` parts are text, ``refusal`` parts their ``refusal`` text, parts
    are joined by newlines; ``input_image``, ``input_file`` and ``input_audio`` are not text: they
    are left out with a note (their tokens are in the reported usage, not in the buckets);
  - ``function_call`` (``call_id``, ``name``, ``arguments``) and ``custom_tool_call`` (``call_id``,
    ``name``, ``input`` as the arguments) become an assistant tool call; consecutive calls form one
    assistant message, attached to a directly preceding assistant message when there is one;
  - ``function_call_output`` and ``custom_tool_call_output`` (``call_id``, ``output`` a string or a
    list of parts) become a ``tool`` message answering ``call_id``, which must match an earlier call;
  - ``reasoning``: its text (``content`` reasoning text, else its ``summary`` texts) becomes the
    ``reasoning_content`` of the next assistant message; ``encrypted_content`` cannot be rendered:
    a note says its tokens are not in the buckets; reasoning with no assistant message after it
    is left out with a note;
  - ``item_reference`` is replaced by the item with that ``id`` elsewhere in the log (an input
    item or a response's output item); when no such item is in the log the call is skipped with
    a note;
  - items of the built-in tools (``web_search_call``, ``file_search_call``, ``computer_call``,
    ``code_interpreter_call``, ``mcp_call``, ``local_shell_call``, ...) are rendered by the
    provider in a way that is not public: they are left out with a note;
  - any other item type is an error naming its place.

* ``previous_response_id`` continues an earlier call: the request holds only the new items. The
  full prompt is rebuilt as the previous call's full input items (without its instructions), then
  the previous response's ``output`` items, then this request's items. Calls are indexed by their
  response ``id``; a call whose previous response is not in the log (nor a call chained to it) is
  skipped with the note ``chain-broken``. A JSONL capture is read as it is written, in time order:
  the response a request continues is one read before it (the most recent responses are kept, within
  a bound, :class:`ResponsesReader`); a JSON list is parsed whole, and its records may be in any order. A request with a server-side ``conversation`` cannot be
  rebuilt either and is skipped with a note; a stored ``prompt`` template is noted (its text is
  not in the log).
* ``tools``: function tools ``{"type": "function", "name", "description", "parameters",
  "strict"}`` become ``{"type": "function", "function": {"name", "description", "parameters"}}``;
  custom tools keep their ``format`` as parameters; built-in tools (``web_search_preview``,
  ``file_search``, ``code_interpreter``, ``computer_use_preview``, ``mcp``, ...) become a function
  named by their ``type`` (an mcp tool by its ``server_label``) with their configuration as
  parameters (minus any ``headers`` and ``authorization``), with a note that their real definition
  is the provider's.

The response gives the usage and the reply: ``usage.input_tokens`` (cached tokens included) is the
prompt, ``input_tokens_details.cached_tokens`` the cache read, ``output_tokens`` the output; the
function calls of ``output`` form :attr:`Call.response`. A streamed response is read from its
``response.completed`` (or ``response.incomplete``) event; a stream without one keeps the call with
the note ``stream-cut`` (its id from ``response.created``, its output from the
``response.output_item.done`` events seen). A failed response (``status: "failed"``, an ``error``
object, an HTTP error status, a ``response.failed`` or ``error`` event) skips the call with the
note ``error-response``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

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
    request_body,
    response_body,
    sse_events,
    url_path,
)
from tokprof.formats.fields import expect_list, expect_object, nonempty_string, objects, optional_string, string
from tokprof.formats.jsonfile import Document
from tokprof.formats.reader import LogFormat, Reader, Record, read_whole
from tokprof.formats.jsonfile import kind_of as _kind
from tokprof.formats.neutral import (
    check_messages,
    check_model,
    check_text,
    check_tool_calls,
    check_tools,
    check_usage,
    parse_day,
    parse_time,
)
from tokprof.formats.shared_prompts import SharedPrompts
from tokprof.trace import Call, Trace, Usage

FORMAT = "openai-responses"
DESCRIPTION = (
    "OpenAI Responses API: captured {request, response} pairs or request bodies with 'input', one per "
    "call; previous_response_id chains are rebuilt"
)

MESSAGE_ROLES = ("user", "assistant", "system", "developer")
TEXT_PARTS = ("input_text", "output_text", "text")
NOT_TEXT_PARTS = ("input_image", "input_file", "input_audio")
CALL_ITEMS = {"function_call": "arguments", "custom_tool_call": "input"}
OUTPUT_ITEMS = ("function_call_output", "custom_tool_call_output")
HOSTED_ITEMS = (
    "web_search_call",
    "file_search_call",
    "computer_call",
    "computer_call_output",
    "code_interpreter_call",
    "image_generation_call",
    "local_shell_call",
    "local_shell_call_output",
    "shell_call",
    "shell_call_output",
    "apply_patch_call",
    "apply_patch_call_output",
    "mcp_call",
    "mcp_list_tools",
    "mcp_approval_request",
    "mcp_approval_response",
)
KNOWN_ITEMS = ("message", *CALL_ITEMS, *OUTPUT_ITEMS, "reasoning", "item_reference", "built-in tool items")
SECRET_KEYS = ("headers", "authorization")  # an mcp tool's credentials: never kept

NOTES = {
    "other-endpoint": "a captured request to another endpoint than /responses is not a model call: skipped",
    "error-response": "the response is an error, so the call is skipped (an error is not billed as a completed call)",
    "stream-cut": "the response stream ends before response.completed: the prompt was sent and is profiled, "
    "but reported usage is missing and the output has only the items seen",
    "chain-broken": "the call continues a response (previous_response_id) that is not in the log, directly or "
    "through its own previous response: its full prompt cannot be rebuilt, so it is skipped",
    "server-conversation": "the request continues a server-side conversation ('conversation') whose items are "
    "not in the log: its prompt cannot be rebuilt, so the call is skipped",
    "unresolved-reference": "an item_reference names an item that is not in the log: the prompt cannot be "
    "rebuilt, so the call is skipped",
    "stored-prompt": "the request uses a stored prompt ('prompt') whose text is not in the log: its tokens are "
    "in the reported usage but not in the buckets",
    "server-tool": "built-in tools are defined by the provider and their real definition is not public: each "
    "is profiled as a function named by its type (an mcp tool by its server_label) with its "
    "configuration as parameters",
    "hosted-tool-item": "items of built-in tools (web search, file search, computer use, code interpreter, MCP, "
    "shell) are rendered by the provider in a way that is not public: they are left out, so "
    "their tokens are in the reported usage but not in the buckets",
    "content-not-text": "images, files and audio are not text: they are left out, so their tokens are in the reported "
    "usage but not in the buckets",
    "encrypted-reasoning": "reasoning items carry encrypted content that cannot be rendered: its tokens may be in "
    "the reported usage but are not in the buckets (the summary text is profiled, as "
    "reasoning_content)",
    "reasoning-unattached": "a reasoning item with no assistant message or function call after it has nowhere "
    "to go in a chat template: it is left out",
}


def _note(trace: Trace, code: str, place: str) -> None:
    """A note, each place once (a chained prompt converts the same items again for every call)."""
    for existing in trace.notes:
        if existing.code == code and place in existing.places:
            return
    trace.note(code, NOTES[code], place)


# -- detection -------------------------------------------------------------------------------


def sniff(doc: Document) -> bool:
    try:
        return any(_looks_like_responses(record) for _, record in first_records(doc, 5))
    except Exception:  # sniffing never raises: an odd file is simply not recognised
        return False


def _looks_like_responses(record: Any) -> bool:
    if not isinstance(record, dict):
        return False
    if (url_path(record) or "").endswith("/responses"):
        return True
    body = request_body(record)
    if isinstance(body, dict) and "messages" not in body and ("input" in body or "instructions" in body):
        return True
    response = response_body(record)
    if isinstance(response, dict):
        return response.get("object") == "response"
    return isinstance(response, str) and "response.created" in response[:1000]


# -- reading ---------------------------------------------------------------------------------


@dataclass
class _Entry:
    """One usable record: its own request items, and what its response added."""

    where: str
    prefix: str  # "line 3: request." or "line 3: "
    request: dict
    items: list[tuple[str, Any]]  # this request's own input items, with their places
    previous: str | None
    response_id: str | None = None
    output: list[tuple[str, Any]] = field(default_factory=list)
    usage: Usage | None = None
    reply: dict | None = None
    day: Any = None
    time: Any = None  # when the exchange was captured
    model: str | None = None
    full: list[tuple[str, Any]] | None = None  # the rebuilt input items, once known (a document's chains)
    broken: bool = False


class _Unresolved(Exception):
    def __init__(self, place: str):
        super().__init__(place)
        self.place = place


def read(path: str, doc: Document) -> Trace:
    """A log read whole (:class:`ResponsesReader` fed every record)."""
    return read_whole(ResponsesReader(path, doc), capture_records(doc))


#: The notes made while building prompts (after every record's own notes in the trace, as when the
#: log was read whole: the order of a trace's notes is the order of their first place).
BUILD_NOTES = frozenset(
    (
        "chain-broken",
        "unresolved-reference",
        "hosted-tool-item",
        "content-not-text",
        "encrypted-reasoning",
        "reasoning-unattached",
        "server-tool",
    )
)
#: The responses a later request may continue (``previous_response_id``), kept by their items: the
#: most recent are kept within this many items, or :data:`CHAIN_TIMES` times the largest input read.
CHAIN_FLOOR = 4096
CHAIN_TIMES = 16


class ResponsesReader(Reader):
    """Responses API captures read as a fold: each record gives its call as it is fed. A request that
    continues a response (``previous_response_id``) is rebuilt from the responses read before it (a
    capture is in time order: a response exists before a request continues it); the most recent
    responses are kept (:data:`CHAIN_FLOOR`), each as a view of the list its chain shares, and the
    items with an ``id`` (for ``item_reference``; the first read of each, the most recent within the
    same bound)."""

    def __init__(self, path: str, doc: Document | None) -> None:
        value = doc.value if doc is not None and doc.lines is None else None
        self.path = path
        shape = "jsonl" if doc is not None and doc.lines is not None else "records"
        self.trace = Trace(path=path, format=f"{FORMAT}/{shape}")
        #: a JSON document that is neither an object nor a list: said when its one record is fed
        self.not_records = doc is not None and doc.lines is None and not isinstance(value, (list, dict))
        self.places = RecordPlaces()
        self.chains: dict[str, tuple[list[tuple[str, Any]], int] | None] = {}  # response id -> input + output
        self.held = 0  # the items of the views in chains
        self.largest = 0
        self.known_items: dict[str, tuple[str, dict]] = {}
        self.shared = SharedPrompts()  # each request resends the conversation (or its chain does): held once
        self.given = Given()
        #: a JSON document's records, held until it is all read: the document is parsed whole, and its
        #: records may come in any order (a request before the response it continues)
        self.document: list[_Entry] | None = [] if doc is not None and doc.lines is None else None

    def feed(self, record: Record) -> Iterable[Call]:
        if self.not_records:
            raise InputError(self.path, None, f"expected a JSON object or list, found {_kind(record.value)}")
        entry = _entry(self.path, self.trace, self.places(record), record.value)
        if entry is None:
            return ()
        known = self.known_items
        for place, item in entry.items + entry.output:
            if isinstance(item, dict) and item.get("type") != "item_reference" and isinstance(item.get("id"), str):
                known.setdefault(item["id"], (place, item))
        if self.document is None:  # a JSONL capture: the items of the most recent requests, within the bound
            self.largest = max(self.largest, len(entry.items) + len(entry.output))
            while len(known) > max(CHAIN_FLOOR, CHAIN_TIMES * self.largest):
                del known[next(iter(known))]
        if self.document is not None:
            self.document.append(entry)
            return ()
        return self.given(self.call(entry, self.full_items(entry)))

    def document_calls(self) -> Iterator[Call]:
        """A JSON document's calls, its chains followed through all its records."""
        entries, self.document = self.document or [], None
        by_id: dict[str, _Entry] = {}
        for entry in entries:
            if entry.response_id is not None:
                by_id.setdefault(entry.response_id, entry)
        for entry in entries:
            full = _full_items(entry, by_id)
            yield from self.given(self.call(entry, None if full is None else (full, len(full))))

    def call(self, entry: _Entry, full: tuple[list[tuple[str, Any]], int] | None) -> Call | None:
        path, trace = self.path, self.trace
        if full is None:
            _note(trace, "chain-broken", f"{entry.where} (previous_response_id {entry.previous!r})")
            return None
        try:
            messages = _messages(path, trace, entry, full[0][: full[1]], self.known_items)
        except _Unresolved as exc:
            _note(trace, "unresolved-reference", exc.place)
            return None
        tools = _tools(path, trace, entry.prefix, entry.request.get("tools"))
        return Call(
            index=self.given.count,
            messages=self.shared.prompt(messages),
            tools=self.shared.tools(tools),
            model=entry.model,
            reported=entry.usage,
            day=entry.day,
            time=entry.time,
            where=entry.where,
            response=_with_hosted_calls(entry.reply, entry.output, tools),
        )

    def full_items(self, entry: _Entry) -> tuple[list[tuple[str, Any]], int] | None:
        """The whole input of a call (a list and how much of it), following previous_response_id back
        through the responses read before it; None when a link is missing (the call and the ones that
        continue it are skipped). The call's response is kept for the requests that continue it."""
        if entry.previous is None:
            full: tuple[list[tuple[str, Any]], int] | None = (entry.items, len(entry.items))
        else:
            parent = self.chains.get(entry.previous)
            full = None if parent is None else _extended(parent, entry.items)
        if entry.response_id is not None and entry.response_id not in self.chains:
            chain = None if full is None else _extended(full, entry.output)
            self.chains[entry.response_id] = chain
            size = chain[1] if chain is not None else 0
            self.held += size
            self.largest = max(self.largest, size)
            budget = max(CHAIN_FLOOR, CHAIN_TIMES * self.largest)
            while len(self.chains) > 1 and self.held > budget:
                dropped = self.chains.pop(next(iter(self.chains)))
                self.held -= dropped[1] if dropped is not None else 0
        return full

    def finish(self) -> Iterable[Call]:
        calls = list(self.document_calls())
        path, trace = self.path, self.trace
        trace.notes.sort(key=lambda note: note.code in BUILD_NOTES)  # stable: each kind in its order
        if self.given.count == 0:
            if self.places.items == 0 and trace.format.endswith("/records"):
                raise InputError(path, None, "the list of records is empty")
            skipped = ", ".join(note.code for note in trace.notes)
            why = f" (calls skipped: {skipped})" if skipped else ""
            raise InputError(path, None, "no usable model call in the log" + why)
        trace.model = self.given.model()
        return calls


def _full_items(entry: _Entry, by_id: dict[str, _Entry]) -> list[tuple[str, Any]] | None:
    """The whole input of a call, following previous_response_id back; None when a link is missing."""
    chain: list[_Entry] = []
    node = entry
    while node.full is None and not node.broken:
        if node.previous is None:
            node.full = node.items
            break
        parent = by_id.get(node.previous)
        if parent is None or parent is node or parent in chain:
            node.broken = True
            break
        chain.append(node)
        node = parent
    for child in reversed(chain):
        parent = by_id[child.previous or ""]
        if parent.broken or parent.full is None:
            child.broken = True
        else:
            child.full = parent.full + parent.output + child.items
    return None if entry.broken else entry.full


def _extended(
    chain: tuple[list[tuple[str, Any]], int], more: list[tuple[str, Any]]
) -> tuple[list[tuple[str, Any]], int]:
    """A chain's items followed by more: in the chain's own list when nothing was added to it after
    them (a conversation grows at its end), else in a new list."""
    items, length = chain
    if not more:
        return chain
    if len(items) == length and items is not more:
        items.extend(more)
        return items, len(items)
    joined = items[:length] + more
    return joined, len(joined)


def _entry(path: str, trace: Trace, where: str, record: Any) -> _Entry | None:
    """Unwrap and check one record; None when it is no usable call (noted)."""
    endpoint = url_path(record)
    if endpoint is not None and not endpoint.endswith("/responses"):  # before unwrapping: a GET has no body
        _note(trace, "other-endpoint", f"{where} ({endpoint_kind(endpoint)})")
        return None
    ex = exchange(path, where, record)
    request = ex.request
    prefix = f"{where}: " + ("request." if ex.record is not request else "")
    if "input" not in request and "instructions" not in request:
        if "messages" in request:
            raise InputError(
                path,
                prefix + "messages",
                "an OpenAI Chat Completions request, not a Responses one (--input-format openai-chat reads it)",
            )
        raise InputError(path, prefix + "input", "missing: not an OpenAI Responses request")
    response, failed = _response_body(path, trace, ex)
    if failed:
        _note(trace, "error-response", f"{where} ({failed})")
        return None
    if request.get("conversation") is not None:
        _note(trace, "server-conversation", where)
        return None
    if request.get("prompt") is not None:
        _note(trace, "stored-prompt", where)
    previous = optional_string(path, prefix + "previous_response_id", request.get("previous_response_id"))
    entry = _Entry(
        where=where,
        prefix=prefix,
        request=request,
        items=_input_items(path, prefix, request.get("input")),
        previous=previous,
    )
    entry.model = check_model(path, prefix, request)
    entry.day = parse_day(request) or parse_day({"timestamp": ex.timestamp})
    entry.time = parse_time(ex.timestamp)
    if response is not None:
        _read_response(path, f"{where}: response{' (stream)' if ex.stream is not None else ''}.", response, entry)
    return entry


def _input_items(path: str, prefix: str, value: Any) -> list[tuple[str, Any]]:
    if value is None:
        return []
    if isinstance(value, str):
        return [(prefix + "input", {"type": "message", "role": "user", "content": value})]
    value = expect_list(path, prefix + "input", value, "a string or a list of items")
    return [(f"{prefix}input[{i}]", item) for i, item in enumerate(value)]


# -- responses ----------------------------------------------------------------------------------


def _response_body(path: str, trace: Trace, ex: Exchange) -> tuple[dict | None, str | None]:
    """The response object (from JSON or a stream), and why it failed, if it did."""
    if ex.stream is not None:
        if ex.status is not None and ex.status >= 400:
            return None, f"HTTP {ex.status}"
        return _stream_body(trace, ex)
    failed = error_text(ex.response, ex.status)
    if failed:
        return None, failed
    if isinstance(ex.response, dict) and ex.response.get("status") == "failed":
        return None, "failed"
    if ex.response is not None:
        expect_object(path, f"{ex.where}: response", ex.response, "the response object")
    return ex.response, None


def _stream_body(trace: Trace, ex: Exchange) -> tuple[dict | None, str | None]:
    """The final response of a stream, or what its events showed before it was cut off."""
    created_id = None
    done: list[tuple[int, Any]] = []
    for name, data in sse_events(ex.stream or "", trace.path, ex.where):
        if not isinstance(data, dict):
            continue
        kind = data.get("type", name)
        response = data.get("response")
        if kind == "response.created" and isinstance(response, dict) and isinstance(response.get("id"), str):
            created_id = response["id"]
        elif kind == "response.output_item.done":
            index = data.get("output_index")
            done.append((index if isinstance(index, int) else len(done), data.get("item")))
        elif kind in ("response.completed", "response.incomplete") and isinstance(response, dict):
            return response, None
        elif kind == "response.failed":
            error = response.get("error") if isinstance(response, dict) else None
            return None, _error_detail(error) or "response.failed"
        elif kind == "error":
            return None, _error_detail(data.get("error", data)) or "error"
    _note(trace, "stream-cut", ex.where)
    return {"id": created_id, "output": [item for _, item in sorted(done, key=lambda pair: pair[0])]}, None


def _error_detail(error: Any) -> str | None:
    """An error's type and code, never its message (see :func:`tokprof.formats.capture.error_code`)."""
    return error_code(error)


def _read_response(path: str, prefix: str, body: dict, entry: _Entry) -> None:
    response_id = optional_string(path, prefix + "id", body.get("id"))
    output = body.get("output")
    if output is None:
        output = []
    output = expect_list(path, prefix + "output", output, "a list of items")
    entry.response_id = response_id
    entry.output = [(f"{prefix}output[{i}]", item) for i, item in enumerate(output)]
    entry.usage = _usage(path, prefix, body.get("usage"))
    entry.reply = _reply(path, prefix, entry.output)
    if entry.model is None and isinstance(body.get("model"), str):
        entry.model = body["model"]
    if entry.day is None:
        entry.day = parse_day(body)


def _usage(path: str, prefix: str, usage: Any) -> Usage | None:
    """``input_tokens`` includes the cached tokens (``input_tokens_details.cached_tokens``)."""
    return check_usage(
        path,
        prefix + "usage",
        usage,
        "input_tokens",
        "input_tokens_details",
        "output_tokens",
        write="cache_write_tokens",
    )


def _reply(path: str, prefix: str, output: list[tuple[str, Any]]) -> dict | None:
    """The response's function calls, as one assistant message (None when it made none)."""
    calls = []
    for place, item in output:
        item = expect_object(path, place, item, "an output item object")
        if isinstance(item.get("type"), str) and item["type"] in CALL_ITEMS:
            calls.append(_tool_call(path, place, item))
    if not calls:
        return None
    return {"role": "assistant", "content": None, "tool_calls": check_tool_calls(path, prefix + "output", calls, set())}


def _with_hosted_calls(reply: dict | None, output: list[tuple[str, Any]], tools: list[dict] | None) -> dict | None:
    """The reply, with the built-in tools the response used (``web_search_call`` and the like) as tool
    calls named like their catalogue entries, so that they count as called, not as unused."""
    names = [t["function"]["name"] for t in tools or []]
    used = []
    for _, item in output:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind not in HOSTED_ITEMS or kind.endswith(("_output", "_response", "list_tools")):
            continue
        if kind == "mcp_call" and isinstance(item.get("server_label"), str):
            stem = item["server_label"]
        else:
            stem = {"computer_call": "computer"}.get(kind, kind[: -len("_call")])
        name = next((n for n in names if n == stem or n.startswith(stem)), None)
        if name is not None:
            used.append({"id": item.get("id"), "type": "function", "function": {"name": name, "arguments": "{}"}})
    if not used:
        return reply
    reply = dict(reply) if reply else {"role": "assistant", "content": None, "tool_calls": []}
    reply["tool_calls"] = list(reply.get("tool_calls") or []) + used
    return reply


# -- items to messages ---------------------------------------------------------------------------


def _messages(
    path: str, trace: Trace, entry: _Entry, items: list[tuple[str, Any]], known_items: dict[str, tuple[str, dict]]
) -> list[dict]:
    builder = _Builder(path, trace, known_items)
    for place, item in items:
        builder.add(place, item)
    builder.finish()
    messages = builder.messages
    instructions = optional_string(path, entry.prefix + "instructions", entry.request.get("instructions"))
    if instructions:
        messages.insert(0, {"role": "system", "content": check_text(path, entry.prefix + "instructions", instructions)})
    if not messages:
        raise InputError(path, entry.prefix + "input", "empty: a call needs a prompt")
    return check_messages(path, f"{entry.where}: ", messages)


def _tool_call(path: str, place: str, item: dict) -> dict:
    """A function_call or custom_tool_call item as a neutral tool call."""
    call_id = nonempty_string(path, place + ".call_id", item.get("call_id"))
    name = nonempty_string(path, place + ".name", item.get("name"))
    key = CALL_ITEMS[item["type"]]
    arguments = string(path, f"{place}.{key}", item.get(key))
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


class _Builder:
    """Turns input items, in order, into neutral chat messages."""

    def __init__(self, path: str, trace: Trace, known_items: dict[str, tuple[str, dict]]):
        self.path = path
        self.trace = trace
        self.known_items = known_items
        self.messages: list[dict] = []
        self.call_ids: set[str] = set()
        self.reasoning: list[str] = []  # reasoning text waiting for the next assistant message
        self.reasoning_places: list[str] = []

    def add(self, place: str, item: Any) -> None:
        item = expect_object(self.path, place, item, "an input item object")
        kind = item.get("type")
        if kind == "message" or (kind is None and "role" in item):
            self.message(place, item)
        elif isinstance(kind, str) and kind in CALL_ITEMS:
            self.tool_call(place, item)
        elif kind in OUTPUT_ITEMS:
            self.tool_output(place, item)
        elif kind == "reasoning":
            self.add_reasoning(place, item)
        elif kind == "item_reference":
            self.reference(place, item)
        elif kind in HOSTED_ITEMS:
            _note(self.trace, "hosted-tool-item", f"{place} ({kind})")
        else:
            raise InputError(self.path, place + ".type", f"unknown item type {kind!r} (read: {', '.join(KNOWN_ITEMS)})")

    def finish(self) -> None:
        self.drop_reasoning()

    def message(self, place: str, item: dict) -> None:
        role = item.get("role")
        if role not in MESSAGE_ROLES:
            expected = ", ".join(MESSAGE_ROLES)
            raise InputError(self.path, place + ".role", f"unknown role {role!r} (expected one of {expected})")
        message = {"role": role, "content": self.content(place + ".content", item.get("content"))}
        if role == "assistant":
            self.attach_reasoning(message)
        else:
            self.drop_reasoning()
        self.messages.append(message)

    def content(self, where: str, content: Any) -> str:
        """Text of a string or a list of parts, joined by newlines; parts that are not text left out."""
        if isinstance(content, str):
            return check_text(self.path, where, content)
        texts = []
        for at, part in objects(
            self.path, where, content, "a content part object", listed="a string or a list of content parts"
        ):
            kind = part.get("type")
            if kind in NOT_TEXT_PARTS:
                _note(self.trace, "content-not-text", f"{at} ({kind})")
                continue
            if kind not in (*TEXT_PARTS, "refusal"):
                raise InputError(self.path, at + ".type", f"unknown content part type {kind!r}")
            key = "refusal" if kind == "refusal" else "text"
            texts.append(string(self.path, f"{at}.{key}", part.get(key)))
        return "\n".join(texts)

    def tool_call(self, place: str, item: dict) -> None:
        call = _tool_call(self.path, place, item)
        self.call_ids.add(call["id"])
        last = self.messages[-1] if self.messages else None
        if last is not None and last["role"] == "assistant" and not self.reasoning_places:
            last.setdefault("tool_calls", []).append(call)
            if last["content"] == "":
                last["content"] = None
            return
        message: dict = {"role": "assistant", "content": None, "tool_calls": [call]}
        self.attach_reasoning(message)
        self.messages.append(message)

    def tool_output(self, place: str, item: dict) -> None:
        call_id = string(self.path, place + ".call_id", item.get("call_id"))
        if call_id not in self.call_ids:
            raise InputError(self.path, place + ".call_id", f"{call_id!r} matches no earlier function call")
        self.drop_reasoning()
        content = self.content(place + ".output", item.get("output"))
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": content})

    def add_reasoning(self, place: str, item: dict) -> None:
        texts = self.reasoning_texts(place, item)
        if item.get("encrypted_content"):
            _note(self.trace, "encrypted-reasoning", place)
        self.reasoning_places.append(place)
        if texts:
            self.reasoning.append("\n".join(texts))

    def reasoning_texts(self, place: str, item: dict) -> list[str]:
        """The reasoning text when the item carries it (``content``), else its summary."""
        for key, part_type in (("content", "reasoning_text"), ("summary", "summary_text")):
            parts = item.get(key)
            if parts is None:
                continue
            if not isinstance(parts, list):
                what = f"expected a list of {part_type} parts, found {_kind(parts)}"
                raise InputError(self.path, f"{place}.{key}", what)
            texts = []
            for j, part in enumerate(parts):
                part = expect_object(self.path, f"{place}.{key}[{j}]", part, "a content part object")
                texts.append(string(self.path, f"{place}.{key}[{j}].text", part.get("text")))
            if texts:
                return texts
        return []

    def attach_reasoning(self, message: dict) -> None:
        if self.reasoning:
            message["reasoning_content"] = "\n".join(self.reasoning)
        self.reasoning, self.reasoning_places = [], []

    def drop_reasoning(self) -> None:
        if self.reasoning:
            for place in self.reasoning_places:
                _note(self.trace, "reasoning-unattached", place)
        self.reasoning, self.reasoning_places = [], []

    def reference(self, place: str, item: dict) -> None:
        target = string(self.path, place + ".id", item.get("id"))
        found = self.known_items.get(target)
        if found is None:
            raise _Unresolved(f"{place} ({target!r})")
        self.add(*found)


# -- tools ------------------------------------------------------------------------------------


def _tools(path: str, trace: Trace, prefix: str, tools: Any) -> list[dict] | None:
    if tools is None:
        return None
    tools = expect_list(path, prefix + "tools", tools, "a list of tool definitions")
    return check_tools(path, prefix, [_tool(path, trace, f"{prefix}tools[{i}]", tool) for i, tool in enumerate(tools)])


def _tool(path: str, trace: Trace, where: str, tool: Any) -> dict:
    tool = expect_object(path, where, tool, "a tool object")
    kind = string(path, where + ".type", tool.get("type"))
    if kind == "function" and isinstance(tool.get("function"), dict):
        return tool  # already in the Chat Completions shape
    if kind in ("function", "custom"):
        function = {"name": _tool_field(path, where, tool, "name", str, required=True)}
        description = _tool_field(path, where, tool, "description", str)
        schema_key = "parameters" if kind == "function" else "format"
        parameters = _tool_field(path, where, tool, schema_key, dict)
        if description is not None:
            function["description"] = description
        if parameters is not None:
            function["parameters"] = parameters
        return {"type": "function", "function": function}
    name = tool.get("server_label") if kind == "mcp" and isinstance(tool.get("server_label"), str) else kind
    _note(trace, "server-tool", f"{where} ({kind})")
    config = {key: value for key, value in tool.items() if key != "type" and key not in SECRET_KEYS}
    return {"type": "function", "function": {"name": name, "parameters": config}}


def _tool_field(path: str, where: str, tool: dict, key: str, kind: type, required: bool = False) -> Any:
    value = tool.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, kind) or (kind is str and not value):
        expected = "a string" if kind is str else "an object"
        raise InputError(path, f"{where}.{key}", f"expected {expected}, found {_kind(value)}")
    return value


LOG_FORMAT = LogFormat(
    FORMAT,
    DESCRIPTION,
    "api",
    sniff,
    ResponsesReader,
    records=capture_records,
    records_what="every request whole, with usage when the response is captured",
)
