"""The bounds of ``tokprof serve``: its defaults, and what a conversation is estimated to hold."""

from __future__ import annotations

from typing import Any

from tokprof.frontends.serve.answers import Rejected

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
DEFAULT_MAX_BODY = 20 * 1024 * 1024
DEFAULT_THRESHOLDS = (0.7, 0.8)
DEFAULT_CACHE_ENTRIES = 32
DEFAULT_CACHE_BYTES = 512 * 1024 * 1024
DEFAULT_TIMEOUT = 30.0
DEFAULT_WORKERS = 2
#: Requests being read or counted at once, and the bytes of their bodies (more get 503 at once).
DEFAULT_MAX_INFLIGHT = 32
DEFAULT_MAX_INFLIGHT_BYTES = 64 * 1024 * 1024
#: The time a request's head, and then its body, may take to arrive (else 408 or the connection closed).
DEFAULT_READ_TIMEOUT = 10.0
#: Connections held at once: beyond it the one idle longest is closed (or, none idle, the new one).
DEFAULT_MAX_CONNECTIONS = 512
TOKEN_VARIABLE = "TOKPROF_SERVE_TOKEN"


#: What a conversation is estimated to hold in memory per character of its last request's messages
#: and tools: the attributor's renders, their labels and token offsets, the converted and marked
#: messages, and the JSON texts kept here (measured by benchmarks/bench_serve.py --calibrate).
BYTES_PER_CHAR = 24
#: What a conversation holds whatever its size (its model wrapper, attributor and dictionaries).
BYTES_PER_CONVERSATION = 64 * 1024

#: How many connections and requests uvicorn holds at once (more get a 503 at once, so that idle or
#: half-sent connections cannot exhaust the file descriptors and starve /health), how long an idle
#: How long an idle connection stays open between requests, and how large a request head may grow
#: before it is refused. (Connections are bounded by tokprof.frontends.serve.connections, requests in flight
#: by :class:`InFlight`: uvicorn's own limit_concurrency would refuse /health with idle connections.)
CONNECTION_LIMITS: dict[str, Any] = {"timeout_keep_alive": 5, "h11_max_incomplete_event_size": 64 * 1024}


class InFlight:
    """The requests being read or counted, and the bytes of their bodies, bounded (used from the event
    loop only): a request over either bound gets 503 at once rather than memory or a long wait."""

    def __init__(self, requests: int = DEFAULT_MAX_INFLIGHT, max_bytes: int = DEFAULT_MAX_INFLIGHT_BYTES):
        self.max_requests = requests
        self.max_bytes = max_bytes
        self.requests = 0
        self.bytes = 0
        self.refused = 0

    def admit(self) -> None:
        if self.requests >= self.max_requests:
            self.refused += 1
            raise Rejected(
                503,
                "overloaded_error",
                f"{self.requests} requests are in flight, the limit (--max-inflight); try again shortly",
            )
        self.requests += 1

    def reserve(self, size: int) -> None:
        """Count ``size`` more bytes of a body in flight (:meth:`release` gives them back)."""
        if self.bytes + size > self.max_bytes:
            self.refused += 1
            raise Rejected(
                503,
                "overloaded_error",
                f"the bodies in flight would exceed {self.max_bytes:,} bytes (--max-inflight-bytes); try again shortly",
            )
        self.bytes += size

    def release(self, size: int) -> None:
        self.requests -= 1
        self.bytes -= size

    def state(self) -> dict:
        return {
            "requests": self.requests,
            "bytes": self.bytes,
            "max_requests": self.max_requests,
            "max_bytes": self.max_bytes,
            "refused": self.refused,
        }
