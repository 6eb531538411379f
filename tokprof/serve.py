"""``tokprof serve``: exact token counts over a local HTTP endpoint, for harnesses in any language.

Routes (all answers are JSON; see docs/serve.md):

* ``POST /v1/messages/count_tokens``: an Anthropic Messages body (``model``, ``system``, ``tools``,
  ``messages``), answered as Anthropic's endpoint answers (``input_tokens``) plus the buckets,
  ``exact``, the model that counted and the window fill;
* ``POST /v1/count``: a Chat Completions body (``model``, ``messages``, ``tools``): the buckets,
  ``total``, the context window, the fill and the thresholds it has crossed;
* ``GET /v1/models``, ``GET /health``.

**Conversations.** Models are loaded once per process. Every request is counted by the
:class:`tokprof.Model` of one *conversation*, whose attributor reuses what the conversation's last
request established (``tokprof.attribution``, "Long logs": it takes nothing it has not checked, so a
count never depends on which conversation a request is matched to, only its cost does). A request
is matched to the conversation it extends: the same route, model, tools and system prompt (as JSON
text), and messages whose JSON texts start with all of that conversation's last request's, the
longest such conversation when there are several; a request that extends none starts a
conversation of its own. Conversations are kept in a cache bounded in entries and in (estimated)
memory, the least recently used evicted first.

A request extending a conversation also converts only the messages it adds (``check_messages``
from the first new one, with the tool call ids of the ones before), and hands the attributor the
same message objects as before for the rest, so that comparing them costs nothing.

**Threads.** Counting is CPU-bound: it runs in a pool of worker threads, so the event loop stays
free to read requests; each conversation has a lock, and each request a time limit
(:data:`DEFAULT_TIMEOUT`). A chat template's own time limit (``TOKPROF_TEMPLATE_TIMEOUT``) needs
the main thread's alarm signal, so it does not apply here: its other limits (output, powers,
ranges) do, and the request's time limit answers the client (the render then finishes in its thread).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import os
import re
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

from tokprof.version import __version__
from tokprof.chat_client import loopback_host
from tokprof.api import Buckets, Model, _anthropic_shape, _prompt, get_model
from tokprof.errors import InputError, ModelError, TokprofError
from tokprof.models.base import ChatModel

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
DEFAULT_MAX_BODY = 20 * 1024 * 1024
DEFAULT_THRESHOLDS = (0.7, 0.8)
DEFAULT_CACHE_ENTRIES = 32
DEFAULT_CACHE_BYTES = 512 * 1024 * 1024
DEFAULT_TIMEOUT = 30.0
DEFAULT_WORKERS = 4
TOKEN_VARIABLE = "TOKPROF_SERVE_TOKEN"
#: Host names that are the loopback interface (besides any address in 127.0.0.0/8 and ::1).
#: What a conversation is estimated to hold in memory per character of its last request's messages
#: and tools: the attributor's renders, their labels and token offsets, the converted and marked
#: messages, and the JSON texts kept here (measured by benchmarks/bench_serve.py --calibrate).
BYTES_PER_CHAR = 24
#: What a conversation holds whatever its size (its model wrapper, attributor and dictionaries).
BYTES_PER_CONVERSATION = 64 * 1024

LOG = logging.getLogger("tokprof.serve")

ROUTE_MESSAGES = "messages"  # POST /v1/messages/count_tokens
ROUTE_COUNT = "count"  # POST /v1/count


class Rejected(Exception):
    """A request answered with an error: its HTTP status, error type, message and field."""

    def __init__(self, status: int, kind: str, message: str, field: str | None = None, **extra: Any):
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message
        self.field = field
        self.extra = extra

    def payload(self) -> dict:
        from tokprof.text import shorten, visible

        error: dict[str, Any] = {"type": self.kind, "message": shorten(visible(self.message), 1200)}
        if self.field is not None:
            error["field"] = shorten(visible(self.field), 200)
        error.update(self.extra)
        return {"type": "error", "error": error}


#: The body fields each route reads; any other is named in an ``ignored-fields`` warning.
#: (Anthropic's generation options, which a client may send with the body it counts, are read as
#: what they are: they do not change a prompt's tokens; tool_choice, thinking and mcp_servers do.)
READ_FIELDS = {ROUTE_MESSAGES: ("model", "messages", "tools", "system")}
COUNT_FIELDS = ("model", "messages", "tools")
PROVIDER_COUNTS = ("tool_choice", "thinking", "mcp_servers")  # fields Anthropic's count_tokens counts
NOT_COUNTED = {ROUTE_MESSAGES: ("max_tokens", "temperature", "top_p", "top_k", "stop_sequences", "stream",
                                "metadata", "service_tier")}


def ignored_fields(route: str, value: dict) -> str | None:
    """"ignored fields: window, stream" for fields of a body that the count does not read (a
    misspelt or unsupported option should not pass in silence), or None."""
    from tokprof.text import visible

    read = READ_FIELDS.get(route, COUNT_FIELDS)
    names = [visible(str(name))[:40] for name in value if name not in read and name not in NOT_COUNTED.get(route, ())]
    if not names:
        return None
    shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    counted = [n for n in names if n in PROVIDER_COUNTS]
    why = (f"; {', '.join(counted)} change{'s' if len(counted) == 1 else ''} the provider's own count, not tokprof's"
           if counted else "")
    return f"ignored fields, not read by this count: {shown}{why}; read: {', '.join(read)}"


def _bad(message: str, where: str | None = None) -> Rejected:
    return Rejected(400, "invalid_request_error", f"{where}: {message}" if where else message, where)


def _kind(value: Any) -> str:
    from tokprof.formats.neutral import _kind as kind

    return kind(value)


# -- the body ------------------------------------------------------------------------------------
_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
#: The C scanner of JSON strings (json.decoder has it; typeshed does not say so).
_SCANSTRING: Callable[[str, int, bool], tuple[str, int]] = getattr(json.decoder, "scanstring")  # noqa: B009 (not in the stubs)


@dataclass
class Body:
    """A request body: its parsed value, the JSON text of each top-level value, and the JSON text of
    each message (None when ``messages`` is not a list)."""

    value: dict
    texts: dict[str, str]
    messages: list[str] | None


def parse_body(raw: bytes) -> Body:
    """A request body, parsed once with the JSON text of every message kept (for matching requests to
    conversations: equal texts are equal values, with the same types and key order). Anything the
    scanner does not take is parsed by :func:`tokprof.formats.jsonfile.parse`, which says what is wrong."""
    from tokprof.formats import jsonfile

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _bad(f"the body is not UTF-8 text (byte {exc.start})") from None
    try:
        return _scan(text)
    except (ValueError, IndexError, RecursionError):
        pass
    try:
        value = jsonfile.parse(text)
    except json.JSONDecodeError as exc:
        raise _bad(f"the body is not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except ValueError as exc:
        raise _bad(f"the body's JSON cannot be used: {exc}") from None
    if not isinstance(value, dict):
        raise _bad(f"the body must be a JSON object, found {_kind(value)}")
    messages = value.get("messages")
    return Body(value, {key: _dumps(item) for key, item in value.items()},
                [_dumps(m) for m in messages] if isinstance(messages, list) else None)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _skip(text: str, pos: int) -> int:
    match = _WS.match(text, pos)
    assert match is not None  # the pattern matches the empty string
    return match.end()


def _scan(text: str) -> Body:
    """A JSON object parsed key by key (each value by the C parser), ``messages`` element by element."""
    pos = _skip(text, 0)
    if text[pos] != "{":
        raise ValueError("not an object")
    pos = _skip(text, pos + 1)
    value: dict[str, Any] = {}
    texts: dict[str, str] = {}
    messages: list[str] | None = None
    if text[pos] == "}":
        pos += 1
    else:
        while True:
            if text[pos] != '"':
                raise ValueError("expected a key")
            key, pos = _SCANSTRING(text, pos + 1, True)
            pos = _skip(text, pos)
            if text[pos] != ":":
                raise ValueError("expected ':'")
            pos = _skip(text, pos + 1)
            start = pos
            if key == "messages" and text[pos] == "[":
                value[key], messages, pos = _array(text, pos)
            else:
                value[key], pos = _DECODER.raw_decode(text, pos)
                if key == "messages":
                    messages = None
            texts[key] = text[start:pos] if key != "messages" else ""
            pos = _skip(text, pos)
            if text[pos] == ",":
                pos = _skip(text, pos + 1)
                continue
            if text[pos] == "}":
                pos += 1
                break
            raise ValueError("expected ',' or '}'")
    if _skip(text, pos) != len(text):
        raise ValueError("extra data")
    return Body(value, texts, messages)


def _array(text: str, pos: int) -> tuple[list, list[str], int]:
    pos = _skip(text, pos + 1)
    items: list = []
    texts: list[str] = []
    if text[pos] == "]":
        return items, texts, pos + 1
    while True:
        start = pos
        try:
            item, pos = _DECODER.raw_decode(text, pos)
        except RecursionError:  # where the C parser gives up depends on the stack: named as the check names it
            from tokprof.formats.jsonfile import TOO_DEEP

            raise _bad(TOO_DEEP, f"messages[{len(items)}]") from None
        items.append(item)
        texts.append(text[start:pos])
        pos = _skip(text, pos)
        if text[pos] == ",":
            pos = _skip(text, pos + 1)
            continue
        if text[pos] == "]":
            return items, texts, pos + 1
        raise ValueError("expected ',' or ']'")


#: What no model name holds: control and bidirectional-format characters, and lone surrogates (which
#: cannot be encoded in an answer); a request naming one is refused, so it is never echoed back.
_NOT_IN_A_NAME = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _check_model_name(requested: str | None) -> None:
    if requested is None:
        return
    found = _NOT_IN_A_NAME.search(requested)
    if found is not None:
        what = "a lone surrogate" if "\ud800" <= found.group() <= "\udfff" else f"U+{ord(found.group()):04X}"
        raise _bad(f"not a model name: it holds {what} (control, bidirectional and surrogate characters are "
                   "refused)", "model")


def _check_depth(text: str, where: str) -> None:
    from tokprof.formats.jsonfile import TOO_DEEP, too_deep

    if too_deep(text):
        raise _bad(TOO_DEEP, where)


# -- models --------------------------------------------------------------------------------------
@dataclass
class Loaded:
    """A model the server counts with: its name here, and the model."""

    name: str
    chat: ChatModel


class Models:
    """The models a server counts with: loaded once, on first use (the ``--model`` ones at start)."""

    def __init__(self, configured: Sequence[str] = ()):
        self.configured = list(dict.fromkeys(configured))  # as given: registry names, directories, Hub ids
        self.default = self.configured[0] if self.configured else None
        self._loaded: dict[str, ChatModel] = {}
        self._lock = threading.Lock()

    def preload(self) -> None:
        """Load the ``--model`` models now; :class:`ModelError` for one that cannot be loaded."""
        for name in self.configured:
            Model(self._load(name)).count([{"role": "user", "content": "hello"}])  # the template compiled now
        if self.default is None:
            from tokprof.models import DEFAULT_MODEL

            self.default = DEFAULT_MODEL

    def _load(self, name: str) -> ChatModel:
        with self._lock:
            chat = self._loaded.get(name)
            if chat is None:
                chat = get_model(name).chat
                self._loaded[name] = chat
            return chat

    def known(self) -> list[str]:
        from tokprof.models.registry import known_names

        return list(dict.fromkeys(self.configured + known_names()))

    def canonical(self, requested: str | None) -> str:
        """The name of the model that counts for a request's ``model``: the default when there is
        none; a ``--model`` name; a registered name or alias; the proxy of a closed model's name.
        Anything else is 404, with the registered model that would serve the name in a profile
        (``Qwen/Qwen3-8B``: qwen3) as a hint: a request names the model that counts. Directories and
        Hub ids are taken only as ``--model`` names: a request never makes the server read a path
        or the network."""
        from tokprof.models import DEFAULT_MODEL, proxies, registry

        if requested is None or requested == "":
            return self.default or DEFAULT_MODEL
        if requested in self.configured:
            return requested
        spec = registry.lookup(requested)
        if spec is not None:
            return spec.name
        proxy = proxies.proxy_for(requested)
        if proxy is not None:
            return proxy
        serving = registry.serving(requested)
        hint = (f" (name {serving.name}, or leave the model out, if {serving.name}'s tokenizer and chat template are "
                "the model's)") if serving is not None else registry.did_you_mean(requested)
        raise self._not_found(f"unknown model {requested!r}{hint}")

    def _not_found(self, message: str) -> Rejected:
        known = self.known()
        return Rejected(404, "not_found_error", f"{message}: this server counts with {', '.join(known)}, and a "
                        "closed model's name (claude-*, gpt-*) is counted by its proxy", "model", known_models=known)

    def resolve(self, requested: str | None) -> Loaded:
        name = self.canonical(requested)
        try:
            return Loaded(name, self._load(name))
        except ModelError as exc:
            raise self._not_found(f"model {name!r} cannot be loaded ({exc})") from None

    def loaded(self) -> dict[str, ChatModel]:
        with self._lock:
            return dict(self._loaded)


# -- conversations -------------------------------------------------------------------------------
@dataclass(eq=False)
class Conversation:
    """One conversation: its model (and so its attributor), and what its last request was."""

    key: tuple
    model: Model
    lock: threading.Lock = field(default_factory=threading.Lock)
    texts: list[str] = field(default_factory=list)  # the JSON text of each message of the last request
    prompt: list[dict] | None = None  # the neutral messages of the last request
    tools: list[dict] | None = None  # the neutral tools
    call_ids: frozenset[str] = frozenset()  # the tool call ids of the last request's messages (Chat shape)
    anthropic: bool = False  # whether the last request was converted as an Anthropic Messages prompt
    size: int = 0  # estimated bytes
    recorded: int = 0  # the estimate the cache's total holds for it (changed under the cache's lock)
    cached: bool = False  # in the cache (False once evicted)


@dataclass
class Request:
    """What a request asks to count."""

    route: str
    loaded: Loaded
    messages: list
    texts: list[str]
    tools: list | None
    tools_text: str
    system: Any
    system_text: str

    @property
    def key(self) -> tuple:
        return (self.route, self.loaded.name, self.tools_text, self.system_text, self.texts[0] if self.texts else None)

    def chars(self) -> int:
        return sum(map(len, self.texts)) + len(self.tools_text) + len(self.system_text)


def _starts_with(texts: list[str], prefix: list[str]) -> bool:
    return len(prefix) <= len(texts) and texts[: len(prefix)] == prefix


class ConversationCache:
    """Conversations, least recently used first, bounded in entries and in estimated bytes."""

    def __init__(self, entries: int = DEFAULT_CACHE_ENTRIES, max_bytes: int = DEFAULT_CACHE_BYTES):
        if entries < 1 or max_bytes < 1:
            raise TokprofError("the conversation cache needs at least one entry and one byte")
        self.entries = entries
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._order: OrderedDict[int, Conversation] = OrderedDict()
        self._by_key: dict[tuple, list[Conversation]] = {}
        self.bytes = 0
        self.evicted = 0

    def __len__(self) -> int:
        return len(self._order)

    def count(self, request: Request) -> tuple[Buckets, bool]:
        """The request's buckets, and whether it extended a conversation."""
        for _ in range(3):  # a conversation another request changed meanwhile: look again
            conversation = self._match(request)
            if conversation is None:
                break
            with conversation.lock:
                if not conversation.cached or not _starts_with(request.texts, conversation.texts):
                    continue
                buckets = self._count(conversation, request, len(conversation.texts))
                self._keep(conversation)
                return buckets, True
        conversation = Conversation(request.key, Model(request.loaded.chat, _keep_json=True))  # its own messages
        with conversation.lock:
            buckets = self._count(conversation, request, 0)
            self._keep(conversation)
        return buckets, False

    def _match(self, request: Request) -> Conversation | None:
        with self._lock:
            found = None
            for candidate in self._by_key.get(request.key, ()):
                if (found is None or len(candidate.texts) > len(found.texts)) and _starts_with(request.texts,
                                                                                                candidate.texts):
                    found = candidate
            return found

    def _count(self, conversation: Conversation, request: Request, known: int) -> Buckets:
        """Count a request on a conversation whose last request's messages are its first ``known``."""
        from tokprof.formats.neutral import check_messages

        for i in range(known, len(request.texts)):
            _check_depth(request.texts[i], f"messages[{i}]")
        new = request.messages[known:]
        if request.route == ROUTE_MESSAGES:
            from tokprof.formats.anthropic import request_prompt

            body = {"messages": request.messages, "tools": request.tools, "system": request.system}
            prompt, tools, notes = request_prompt("request", body)
            anthropic = True
            if known and conversation.prompt is not None and _same_start(prompt, conversation.prompt):
                prompt[: len(conversation.prompt)] = conversation.prompt
                tools = conversation.tools
        else:
            anthropic = conversation.anthropic or _anthropic_shape(new, request.tools, None)
            if known and not anthropic and conversation.prompt is not None:
                prompt = conversation.prompt + check_messages("request", "", new, call_ids=set(conversation.call_ids),
                                                              first=known)
                tools, notes = conversation.tools, []
            else:
                prompt, tools, notes = _prompt(request.messages, request.tools, None)
        try:
            buckets = conversation.model._count_prompt(prompt, tools, notes, None)
        except InputError:
            raise
        except Exception:
            self._drop(conversation)  # what its attributor holds is not known now
            raise
        if not anthropic:
            extended = known and not conversation.anthropic and conversation.prompt is not None
            ids = set(conversation.call_ids) if extended else set()
            for message in prompt[len(conversation.prompt or ()) if extended else 0 :]:
                ids.update(c["id"] for c in message.get("tool_calls") or () if c.get("id") is not None)
            conversation.call_ids = frozenset(ids)
        conversation.texts = request.texts
        conversation.prompt = prompt
        conversation.tools = tools
        conversation.anthropic = anthropic
        conversation.size = BYTES_PER_CONVERSATION + BYTES_PER_CHAR * request.chars()
        return buckets

    def _keep(self, conversation: Conversation) -> None:
        """Mark a conversation used (adding it when new), then evict down to the bounds."""
        with self._lock:
            if conversation.size > self.max_bytes:  # alone over the bound: not kept
                self._remove(conversation)
                return
            if conversation.cached:
                self._order.move_to_end(id(conversation))
                self.bytes += conversation.size - conversation.recorded
            else:
                conversation.cached = True
                self._order[id(conversation)] = conversation
                self._by_key.setdefault(conversation.key, []).append(conversation)
                self.bytes += conversation.size
            conversation.recorded = conversation.size
            while len(self._order) > 1 and (len(self._order) > self.entries or self.bytes > self.max_bytes):
                self._remove(next(iter(self._order.values())))
                self.evicted += 1

    def _remove(self, conversation: Conversation) -> None:
        """Take a conversation out (the cache's lock held)."""
        if not conversation.cached:
            return
        conversation.cached = False
        del self._order[id(conversation)]
        self.bytes -= conversation.recorded
        same = self._by_key.get(conversation.key, [])
        same.remove(conversation)
        if not same:
            del self._by_key[conversation.key]

    def _drop(self, conversation: Conversation) -> None:
        with self._lock:
            self._remove(conversation)

    def stats(self) -> dict:
        with self._lock:
            return {"conversations": len(self._order), "estimated_bytes": self.bytes, "max_conversations": self.entries,
                    "max_bytes": self.max_bytes, "evicted": self.evicted}


def _same_start(prompt: list[dict], earlier: list[dict]) -> bool:
    """Whether a prompt converted from messages that start with an earlier request's (the same JSON
    texts, after the same system prompt) can take that request's converted messages for its start:
    conversion goes message by message, so they are equal; a cheap check that nothing says otherwise."""
    n = len(earlier)
    return 0 < n <= len(prompt) and all(prompt[i]["role"] == earlier[i]["role"] for i in (0, n - 1))


# -- the counter ---------------------------------------------------------------------------------
def parse_thresholds(value: str | Sequence[float]) -> tuple[float, ...]:
    """Fill thresholds as shares of the window: ``"70,80"`` (percent) or shares such as ``(0.7, 0.8)``."""
    if isinstance(value, str):
        from tokprof.config import percentages

        return tuple(sorted(set(percentages(value, "--thresholds"))))
    levels = tuple(float(v) for v in value)
    if not all(0 < level <= 1 for level in levels):
        raise TokprofError(f"thresholds: expected shares of the window above 0 and at most 1, found {list(value)}")
    return tuple(sorted(set(levels)))


class Counter:
    """What the routes do, without HTTP: a body in, a JSON answer out (or :class:`Rejected`)."""

    def __init__(self, models: Models, cache: ConversationCache, thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
                 window: int | None = None):
        self.models = models
        self.cache = cache
        self.thresholds = tuple(thresholds)
        self.window = window

    def count(self, route: str, raw: bytes) -> tuple[dict, dict]:
        """The answer to a count request, and what its log line says (nothing of its content)."""
        body = parse_body(raw)
        value = body.value
        requested = value.get("model")
        if requested is not None and not isinstance(requested, str):
            raise _bad(f"expected a string, found {_kind(requested)}", "model")
        _check_model_name(requested)
        loaded = self.models.resolve(requested)
        if "messages" not in value:
            raise _bad("missing: the request needs its messages", "messages")
        messages = value["messages"]
        if not isinstance(messages, list) or body.messages is None:
            raise _bad(f"expected a list of messages, found {_kind(messages)}", "messages")
        if not messages:
            raise _bad("empty: a prompt needs at least one message", "messages")
        tools = value.get("tools")
        if tools is not None and not isinstance(tools, list):
            raise _bad(f"expected a list of tool definitions, found {_kind(tools)}", "tools")
        system = value.get("system") if route == ROUTE_MESSAGES else None
        if system is not None and not isinstance(system, (str, list)):
            raise _bad(f"expected a string or a list of text blocks, found {_kind(system)}", "system")
        for key in ("tools", "system"):
            if key in body.texts and (key == "tools" or route == ROUTE_MESSAGES):
                _check_depth(body.texts[key], key)
        request = Request(route, loaded, messages, body.messages, tools, body.texts.get("tools", "null") if tools
                          is not None else "null", system, body.texts.get("system", "null") if system is not None
                          else "null")
        try:
            buckets, reused = self.cache.count(request)
        except InputError as exc:
            raise _bad(exc.what, exc.where) from None
        answer = self._answer(route, loaded, requested, buckets, reused)
        ignored = ignored_fields(route, value)
        if ignored:
            answer["warnings"].append({"code": "ignored-fields", "message": ignored})
        return answer, {"model": loaded.name, "total": buckets.total, "reused": reused}

    def context_window(self, loaded: Loaded, requested: str | None) -> int | None:
        """The window the fill is measured against: ``--window``; for an estimate the requested model's
        when public data knows it (as a profile's model says); else the model's."""
        if self.window is not None:
            return self.window
        if not loaded.chat.exact and requested:
            from tokprof.models.known import context_window

            return context_window([requested]) or loaded.chat.context_window
        return loaded.chat.context_window

    def _answer(self, route: str, loaded: Loaded, requested: str | None, buckets: Buckets, reused: bool) -> dict:
        total = buckets.total
        window = self.context_window(loaded, requested)
        fill = None if not window else round(total / window, 6)
        answer: dict[str, Any] = {}
        if route == ROUTE_MESSAGES:
            answer["input_tokens"] = total
        answer["model"] = loaded.name
        if requested and requested != loaded.name:
            answer["requested_model"] = requested
        answer["exact"] = buckets.exact
        if not buckets.exact and loaded.chat.method:
            answer["method"] = loaded.chat.method
        answer["buckets"] = buckets.as_dict()
        answer["total"] = total
        answer["context_window"] = window
        answer["fill"] = fill
        answer["thresholds"] = list(self.thresholds)
        answer["crossed"] = [t for t in self.thresholds if window and total >= t * window]
        answer["warnings"] = [{"code": n.code, "message": n.message} for n in buckets.warnings]
        answer["reused"] = reused
        return answer

    def models_list(self) -> dict:
        from tokprof.models.registry import specs

        loaded = self.models.loaded()
        data = []
        registered = set()
        for spec in specs():
            registered.add(spec.name)
            chat = loaded.get(spec.name)
            data.append({"id": spec.name, "object": "model", "source": "embedded", "aliases": list(spec.aliases),
                         "exact": spec.exact, "summary": spec.summary, "loaded": chat is not None,
                         "context_window": chat.context_window if chat is not None else None})
        for name in self.models.configured:
            if name in registered:
                continue
            chat = loaded.get(name)
            data.append({"id": name, "object": "model", "source": "local", "aliases": [],
                         "exact": chat.exact if chat is not None else True,
                         "summary": f"{chat.counter.origin}; chat template {chat.prompt_format.origin}" if chat else "",
                         "loaded": chat is not None, "context_window": chat.context_window if chat else None})
        return {"object": "list", "data": data, "default": self.models.default,
                "closed_models": "a closed model's name is counted by its proxy: claude-* by claude-proxy, gpt-*, "
                "o-series and codex by openai-proxy (estimates, exact: false)"}

    def health(self) -> dict:
        return {"status": "ok", "version": __version__, "default_model": self.models.default,
                "loaded_models": sorted(self.models.loaded()), "cache": self.cache.stats()}


# -- HTTP ----------------------------------------------------------------------------------------
def is_loopback(host: str) -> bool:
    """Whether a listening address or a Host header's name is the loopback interface."""
    return loopback_host(host)


#: A Host header (RFC 9110: host [":" port]): a bracketed IPv6 address or a name of letters, digits,
#: dots and hyphens, then at most a port of digits. Anything else (``localhost:80@evil.example``,
#: user information, a path, spaces) names no host of ours.
_HOST_HEADER = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::[0-9]{0,5})?")


def _host_name(header: str) -> str:
    """The name in a Host header, without its port; "" when the header is not one."""
    found = _HOST_HEADER.fullmatch(header)
    if found is None:
        return ""
    return found.group(1).removeprefix("[").removesuffix("]")


#: An Origin header (RFC 6454): scheme "://" host [":" port]; "null" and anything else are foreign.
_ORIGIN = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::[0-9]{1,5})?")


def _foreign_origin(headers: dict[bytes, bytes]) -> bool:
    """Whether a request comes from a web page of another site: its Origin header (sent by browsers
    on cross-site requests, never by harnesses) names a host that is not the loopback interface."""
    origin = headers.get(b"origin")
    if origin is None:
        return False
    found = _ORIGIN.fullmatch(origin.decode("latin-1").strip())
    return found is None or not is_loopback(found.group(1).removeprefix("[").removesuffix("]"))


def _not_json(headers: dict[bytes, bytes]) -> bool:
    """Whether a request's body is declared as something else than JSON (``text/plain`` and the form
    types are what a web page may send cross-site without asking first). No Content-Type is allowed."""
    declared = headers.get(b"content-type")
    if declared is None:
        return False
    media = declared.decode("latin-1").split(";", 1)[0].strip().lower()
    return not (media == "application/json" or (media.startswith("application/") and media.endswith("+json")))


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond the loopback interface without a token (one line, for the command)."""
    if not is_loopback(host) and not token:
        raise TokprofError(f"--host {host}: listening beyond the loopback interface needs a token (--token or "
                           f"{TOKEN_VARIABLE}), which every request then carries as a bearer token")


def _response(payload: dict, status: int = 200, headers: Mapping[str, str] | None = None):
    from starlette.responses import Response

    content = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return Response(content, status_code=status, media_type="application/json", headers=headers)


def create_app(
    models: Sequence[str] = (),
    *,
    token: str | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    thresholds: str | Sequence[float] = DEFAULT_THRESHOLDS,
    window: int | None = None,
    cache_entries: int = DEFAULT_CACHE_ENTRIES,
    cache_bytes: int = DEFAULT_CACHE_BYTES,
    workers: int = DEFAULT_WORKERS,
    timeout: float = DEFAULT_TIMEOUT,
    preload: bool = True,
):
    """The ASGI application of ``tokprof serve``. ``models`` are the ``--model`` names (the first is
    the default; none: qwen2.5), loaded now unless ``preload`` is False (:class:`ModelError` for one
    that cannot be). With a ``token``, every request must carry it (``Authorization: Bearer TOKEN``
    or ``x-api-key: TOKEN``); without one, only requests whose Host header names the loopback
    interface are answered (a web page cannot reach the server through a DNS name of its own)."""
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.requests import Request as HTTPRequest
    from starlette.routing import Route

    if max_body < 1:
        raise TokprofError(f"--max-body: expected a positive number of bytes, found {max_body}")
    if window is not None and window < 1:
        raise TokprofError(f"--window: expected a positive number of tokens, found {window}")
    if workers < 1:
        raise TokprofError(f"--workers: expected a positive number of threads, found {workers}")
    if timeout <= 0:
        raise TokprofError(f"--timeout: expected a positive number of seconds, found {timeout}")
    chosen = Models(models)
    if preload:
        chosen.preload()
    elif chosen.default is None:
        from tokprof.models import DEFAULT_MODEL

        chosen.default = DEFAULT_MODEL
    counter = Counter(chosen, ConversationCache(cache_entries, cache_bytes), parse_thresholds(thresholds), window)
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tokprof-count")
    expected = token.encode("utf-8") if token else None

    async def read_body(request: HTTPRequest) -> bytes:
        declared = request.headers.get("content-length")
        if declared is not None and declared.strip().isdigit() and int(declared) > max_body:
            raise Rejected(413, "request_too_large", f"the body is {int(declared):,} bytes, over the limit of "
                           f"{max_body:,} (--max-body)")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_body:
                raise Rejected(413, "request_too_large", f"the body is over the limit of {max_body:,} bytes (--max-body)")
            chunks.append(chunk)
        return b"".join(chunks)

    async def run(function: Callable[[], Any]) -> Any:
        loop = asyncio.get_running_loop()
        try:
            return await asyncio.wait_for(loop.run_in_executor(pool, function), timeout)
        except TimeoutError:
            raise Rejected(503, "timeout_error", f"counting took longer than {timeout:g} s (--timeout); the prompt "
                           "may be too large or its chat template too slow") from None

    def guarded(endpoint: Callable[[HTTPRequest], Any]):
        """An endpoint whose errors are JSON answers: a :class:`Rejected` as it says, anything else
        (a bug) a 500 whose log line names the exception's type and place, never the request."""

        async def answer(request: HTTPRequest):
            try:
                return await endpoint(request)
            except Rejected as exc:
                request.state.error = exc
            except MemoryError:
                request.state.error = Rejected(413, "request_too_large", "out of memory counting the request: it is "
                                               "too large for this machine")
            except Exception as error:
                where = _where(error)
                LOG.error("internal error: %s at %s (a bug in tokprof %s)", type(error).__name__, where, __version__)
                request.state.error = Rejected(500, "api_error", f"internal error ({type(error).__name__} at {where}): "
                                               "a bug in tokprof; please report it")
            refusal = request.state.error
            return _response(refusal.payload(), refusal.status)

        return answer

    def counting(route: str):
        async def endpoint(request: HTTPRequest):
            raw = await read_body(request)
            answer, said = await run(lambda: counter.count(route, raw))
            request.state.said = said
            return _response(answer)

        return guarded(endpoint)

    async def list_models(request: HTTPRequest):
        return _response(counter.models_list())

    async def health(request: HTTPRequest):
        return _response(counter.health())

    async def http_error(request: HTTPRequest, exc: Exception):
        assert isinstance(exc, HTTPException)
        kind = "not_found_error" if exc.status_code == 404 else "invalid_request_error"
        message = {404: "no such route: see GET /v1/models, POST /v1/count, POST /v1/messages/count_tokens",
                   405: "method not allowed"}.get(exc.status_code, str(exc.detail))
        request.state.error = Rejected(exc.status_code, kind, message)
        return _response(request.state.error.payload(), exc.status_code, exc.headers)

    routes = [
        Route("/v1/messages/count_tokens", counting(ROUTE_MESSAGES), methods=["POST"]),
        Route("/v1/count", counting(ROUTE_COUNT), methods=["POST"]),
        Route("/v1/models", guarded(list_models), methods=["GET"]),
        Route("/health", guarded(health), methods=["GET"]),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app):
        try:
            yield
        finally:  # counts still running finish in their threads; queued ones are dropped
            pool.shutdown(wait=False, cancel_futures=True)

    app = Starlette(routes=routes, exception_handlers={HTTPException: http_error}, lifespan=lifespan)
    app.state.counter = counter
    app.state.pool = pool
    return _Guard(app, expected)


class _Guard:
    """The outermost layer: the token (or, without one, a loopback Host header), one log line per
    request that holds nothing of its content, and a JSON 500 for anything that escapes the app."""

    def __init__(self, app, token: bytes | None):
        self.app = app
        self.token = token
        self.state = app.state

    def _refusal(self, headers: dict[bytes, bytes], method: str = "GET") -> Rejected | None:
        if _foreign_origin(headers):
            return Rejected(403, "permission_error", "this server does not answer web pages of other sites "
                            "(the Origin header names another host)")
        if method == "POST" and _not_json(headers):
            return Rejected(415, "invalid_request_error", "a count request's body is JSON: send "
                            "'Content-Type: application/json' (or none)")
        if self.token is not None:
            given = None
            authorization = headers.get(b"authorization", b"")
            if authorization[:7].lower() == b"bearer ":
                given = authorization[7:].strip()
            elif b"x-api-key" in headers:
                given = headers[b"x-api-key"].strip()
            if given is None or not hmac.compare_digest(given, self.token):
                return Rejected(401, "authentication_error", "this server needs its token: send "
                                "'Authorization: Bearer TOKEN' (or 'x-api-key: TOKEN')")
            return None
        host = headers.get(b"host", b"").decode("latin-1")
        if not is_loopback(_host_name(host)):
            return Rejected(403, "permission_error", "this server answers requests to the loopback interface only "
                            "(the Host header names another host); give it a --token to serve others")
        return None

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        sent: dict[str, Any] = {"status": None}

        async def send_timed(message) -> None:
            if message["type"] == "http.response.start":
                sent["status"] = message["status"]
                elapsed = (time.perf_counter() - started) * 1000
                message = dict(message)
                message["headers"] = [*message.get("headers", []), (b"server-timing", f"total;dur={elapsed:.1f}".encode())]
            await send(message)

        state = scope.setdefault("state", {})
        refusal = self._refusal(dict(scope.get("headers") or []), scope.get("method", ""))
        try:
            if refusal is not None:
                state["error"] = refusal
                await _send_error(refusal, send_timed)
            else:
                await self.app(scope, receive, send_timed)
        except Exception as error:  # past the endpoints' own handling: Starlette, or the connection
            if not isinstance(state.get("error"), Rejected):
                LOG.error("internal error: %s at %s (a bug in tokprof %s)", type(error).__name__, _where(error),
                          __version__)
                state["error"] = Rejected(500, "api_error", "internal error")
            if sent["status"] is None:
                await _send_error(Rejected(500, "api_error", f"internal error ({type(error).__name__}): a bug in "
                                           "tokprof; please report it"), send_timed)
        _log(scope.get("method", ""), scope.get("path", ""), sent["status"], started, state)


async def _send_error(exc: Rejected, send) -> None:
    headers = [(b"content-type", b"application/json")]
    if exc.status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    body = json.dumps(exc.payload(), ensure_ascii=False).encode("utf-8")
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": exc.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _where(error: BaseException) -> str:
    """The file and line of tokprof's code where an exception was raised (no values)."""
    tb = error.__traceback__
    place = "?"
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if f"{os.sep}tokprof{os.sep}" in filename:
            place = f"{filename.rsplit(os.sep + 'tokprof' + os.sep, 1)[1]}:{tb.tb_lineno}"
        tb = tb.tb_next
    return place


def _log(method: str, path: str, status: int | None, started: float, state: dict) -> None:
    """One line per request: method, route, status, time, and for a count the model that counted,
    the total and whether it extended a conversation; for an error its type and field."""
    if path not in ("/v1/count", "/v1/messages/count_tokens", "/v1/models", "/health"):
        path = "(other)"  # a path is the client's text
    parts = [method if method in ("GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH") else "(other)", path,
             str(status), f"{(time.perf_counter() - started) * 1000:.1f}ms"]
    said = state.get("said")
    if said:
        parts += [f"model={said['model']}", f"total={said['total']}", "reused" if said["reused"] else "new"]
    error = state.get("error")
    if isinstance(error, Rejected):
        parts.append(error.kind)
        if error.field is not None and re.fullmatch(r"[\w.\[\]]{1,80}", error.field):
            parts.append(f"field={error.field}")
    LOG.info(" ".join(parts))


# -- running -------------------------------------------------------------------------------------
def _socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # accepted connections inherit it: an answer's head and body are written apart, and Nagle's
    # algorithm would hold the body until the client's delayed acknowledgement (40 ms a request)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise TokprofError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    except (socket.gaierror, UnicodeError) as exc:
        sock.close()
        raise TokprofError(f"--host {host}: not an address of this machine ({exc})") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def _url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


#: How many connections and requests uvicorn holds at once (more get a 503 at once, so that idle or
#: half-sent connections cannot exhaust the file descriptors and starve /health), how long an idle
#: connection stays open, and how large a request head may grow before it is refused.
CONNECTION_LIMITS: dict[str, Any] = {"limit_concurrency": 256, "timeout_keep_alive": 5,
                                     "h11_max_incomplete_event_size": 64 * 1024}


def _uvicorn_config(app, log_level: str):
    import uvicorn

    return uvicorn.Config(app, log_level=log_level, access_log=False, lifespan="on", log_config=None,
                          proxy_headers=False, timeout_graceful_shutdown=5, **CONNECTION_LIMITS)


def configure_logging(level: int = logging.INFO) -> None:
    """The server's request lines on standard error (``tokprof serve: ...``)."""
    if not LOG.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("tokprof serve: %(message)s"))
        LOG.addHandler(handler)
        LOG.propagate = False
    LOG.setLevel(level)


def serve(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, *, quiet: bool = False,
          on_ready: Callable[[str], None] | None = None, **options: Any) -> None:
    """Run the server until interrupted (the ``tokprof serve`` command): ``options`` as
    :func:`create_app` takes them. Refuses to listen beyond the loopback interface without a token."""
    import uvicorn

    check_bind(host, options.get("token"))
    configure_logging(logging.WARNING if quiet else logging.INFO)
    app = create_app(**options)
    sock = _socket(host, port)
    server = uvicorn.Server(_uvicorn_config(app, "warning"))
    if on_ready is not None:
        on_ready(_url(sock))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()


class Running:
    """A server on a socket of its own in a background thread (for tests and benchmarks):
    ``with Running(app) as server: server.url``. It stops when the block ends."""

    def __init__(self, app, host: str = "127.0.0.1", port: int = 0):
        import uvicorn

        self.app = app
        self.sock = _socket(host, port)
        self.url = _url(self.sock)
        self.server = uvicorn.Server(_uvicorn_config(app, "warning"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True,
                                       name="tokprof-serve")

    def __enter__(self) -> "Running":
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 30.0) -> bool:
        """Stop the server; whether its thread ended within ``timeout`` seconds."""
        self.server.should_exit = True
        self.thread.join(timeout)
        self.sock.close()
        return not self.thread.is_alive()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
