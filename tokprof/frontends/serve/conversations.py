"""Conversations: a request is matched to the one it extends, whose attributor reuses what its
last request established; a cache bounded in entries and in estimated memory."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from tokprof.formats.prompts import Prompt, extend_prompt, is_anthropic_shape, read_prompt
from tokprof.runs.model import Buckets, Model
from tokprof.base.errors import InputError, TokprofError
from tokprof.frontends.serve.answers import ROUTE_MESSAGES
from tokprof.frontends.serve.body import check_depth
from tokprof.frontends.serve.limits import (
    BYTES_PER_CHAR,
    BYTES_PER_CONVERSATION,
    DEFAULT_CACHE_BYTES,
    DEFAULT_CACHE_ENTRIES,
)
from tokprof.frontends.serve.models import Loaded


@dataclass(eq=False)
class Conversation:
    """One conversation: its model (and so its attributor), and what its last request was."""

    key: tuple
    model: Model
    lock: threading.Lock = field(default_factory=threading.Lock)
    texts: list[str] = field(default_factory=list)  # the JSON text of each message of the last request
    prompt: Prompt | None = None  # the neutral messages and tools of the last request
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
        conversation = Conversation(request.key, Model(request.loaded.chat, keep_json=True))  # its own messages
        with conversation.lock:
            buckets = self._count(conversation, request, 0)
            self._keep(conversation)
        return buckets, False

    def _match(self, request: Request) -> Conversation | None:
        with self._lock:
            found = None
            for candidate in self._by_key.get(request.key, ()):
                if (found is None or len(candidate.texts) > len(found.texts)) and _starts_with(
                    request.texts, candidate.texts
                ):
                    found = candidate
            return found

    def _count(self, conversation: Conversation, request: Request, known: int) -> Buckets:
        """Count a request on a conversation whose last request's messages are its first ``known``."""
        for i in range(known, len(request.texts)):
            check_depth(request.texts[i], f"messages[{i}]")
        earlier = conversation.prompt if known else None
        prompt, anthropic = self._convert(conversation, request, earlier, known)
        try:
            buckets = conversation.model.count_prompt(prompt)
        except InputError:
            raise
        except Exception:
            self._drop(conversation)  # what its attributor holds is not known now
            raise
        if not anthropic:
            extended = earlier is not None and not conversation.anthropic
            ids = set(conversation.call_ids) if extended else set()
            for message in prompt.messages[len(earlier.messages) if earlier is not None and extended else 0 :]:
                ids.update(c["id"] for c in message.get("tool_calls") or () if c.get("id") is not None)
            conversation.call_ids = frozenset(ids)
        conversation.texts = request.texts
        conversation.prompt = prompt
        conversation.anthropic = anthropic
        conversation.size = BYTES_PER_CONVERSATION + BYTES_PER_CHAR * request.chars()
        return buckets

    @staticmethod
    def _convert(
        conversation: Conversation, request: Request, earlier: Prompt | None, known: int
    ) -> tuple[Prompt, bool]:
        """The request's neutral prompt (converted only from its first new message when it extends a
        Chat Completions conversation), and whether it is in the Anthropic Messages shape."""
        if request.route == ROUTE_MESSAGES:
            prompt = read_prompt(request.messages, request.tools, system=request.system, shape="anthropic")
            if earlier is not None and _same_start(prompt.messages, earlier.messages):
                start = len(earlier.messages)
                prompt = Prompt(earlier.messages + prompt.messages[start:], earlier.tools, prompt.notes)
            return prompt, True
        anthropic = conversation.anthropic or is_anthropic_shape(request.messages[known:], request.tools, None)
        if earlier is not None and not anthropic:
            return extend_prompt(
                earlier, request.messages[known:], first=known, call_ids=set(conversation.call_ids)
            ), False
        return read_prompt(request.messages, request.tools), anthropic

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
            return {
                "conversations": len(self._order),
                "estimated_bytes": self.bytes,
                "max_conversations": self.entries,
                "max_bytes": self.max_bytes,
                "evicted": self.evicted,
            }


def _same_start(prompt: list[dict], earlier: list[dict]) -> bool:
    """Whether a prompt converted from messages that start with an earlier request's (the same JSON
    texts, after the same system prompt) can take that request's converted messages for its start:
    conversion goes message by message, so they are equal; a cheap check that nothing says otherwise."""
    n = len(earlier)
    return 0 < n <= len(prompt) and all(prompt[i]["role"] == earlier[i]["role"] for i in (0, n - 1))
