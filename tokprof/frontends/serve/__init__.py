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

**Workers.** Counting is CPU-bound: it runs in worker processes (:mod:`tokprof.frontends.serve.pool`), one
request at a time each, so the server's event loop never waits for a count: it reads requests,
refuses bad ones and answers ``/health`` whatever a count costs. A count past its request's time
limit (:data:`DEFAULT_TIMEOUT`) is stopped by killing its worker, which is started again. What is in
flight (:class:`tokprof.frontends.serve.limits.InFlight`) and the connections
(:mod:`tokprof.frontends.serve.connections`) are bounded, and slow heads and bodies time out.
"""

from __future__ import annotations

from tokprof.frontends.serve.answers import LOG, ROUTE_COUNT, ROUTE_MESSAGES, Rejected
from tokprof.frontends.serve.app import create_app
from tokprof.frontends.serve.body import Body, ignored_fields, parse_body
from tokprof.frontends.serve.conversations import Conversation, ConversationCache, Request
from tokprof.frontends.serve.counter import Counter, parse_thresholds
from tokprof.frontends.serve.guard import check_bind, is_loopback
from tokprof.frontends.serve.limits import (
    BYTES_PER_CHAR,
    BYTES_PER_CONVERSATION,
    CONNECTION_LIMITS,
    DEFAULT_CACHE_BYTES,
    DEFAULT_CACHE_ENTRIES,
    DEFAULT_HOST,
    DEFAULT_MAX_BODY,
    DEFAULT_PORT,
    DEFAULT_THRESHOLDS,
    DEFAULT_TIMEOUT,
    DEFAULT_WORKERS,
    TOKEN_VARIABLE,
)
from tokprof.frontends.serve.models import Loaded, Models
from tokprof.frontends.serve.running import Running, configure_logging, serve

__all__ = [
    "BYTES_PER_CHAR",
    "BYTES_PER_CONVERSATION",
    "CONNECTION_LIMITS",
    "DEFAULT_CACHE_BYTES",
    "DEFAULT_CACHE_ENTRIES",
    "DEFAULT_HOST",
    "DEFAULT_MAX_BODY",
    "DEFAULT_PORT",
    "DEFAULT_THRESHOLDS",
    "DEFAULT_TIMEOUT",
    "DEFAULT_WORKERS",
    "LOG",
    "ROUTE_COUNT",
    "ROUTE_MESSAGES",
    "TOKEN_VARIABLE",
    "Body",
    "Conversation",
    "ConversationCache",
    "Counter",
    "Loaded",
    "Models",
    "Rejected",
    "Request",
    "Running",
    "check_bind",
    "configure_logging",
    "create_app",
    "ignored_fields",
    "is_loopback",
    "parse_body",
    "parse_thresholds",
    "serve",
]
