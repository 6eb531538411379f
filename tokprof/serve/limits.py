"""The bounds of ``tokprof serve``: its defaults, and what a conversation is estimated to hold."""

from __future__ import annotations

from typing import Any

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
DEFAULT_MAX_BODY = 20 * 1024 * 1024
DEFAULT_THRESHOLDS = (0.7, 0.8)
DEFAULT_CACHE_ENTRIES = 32
DEFAULT_CACHE_BYTES = 512 * 1024 * 1024
DEFAULT_TIMEOUT = 30.0
DEFAULT_WORKERS = 4
TOKEN_VARIABLE = "TOKPROF_SERVE_TOKEN"


#: What a conversation is estimated to hold in memory per character of its last request's messages
#: and tools: the attributor's renders, their labels and token offsets, the converted and marked
#: messages, and the JSON texts kept here (measured by benchmarks/bench_serve.py --calibrate).
BYTES_PER_CHAR = 24
#: What a conversation holds whatever its size (its model wrapper, attributor and dictionaries).
BYTES_PER_CONVERSATION = 64 * 1024

#: How many connections and requests uvicorn holds at once (more get a 503 at once, so that idle or
#: half-sent connections cannot exhaust the file descriptors and starve /health), how long an idle
#: connection stays open, and how large a request head may grow before it is refused.
CONNECTION_LIMITS: dict[str, Any] = {"limit_concurrency": 256, "timeout_keep_alive": 5,
                                     "h11_max_incomplete_event_size": 64 * 1024}
