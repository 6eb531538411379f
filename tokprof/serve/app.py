"""The ASGI application of ``tokprof serve``: its routes, and where counts run."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from tokprof.errors import TokprofError
from tokprof.version import __version__
from tokprof.serve.answers import LOG, ROUTE_COUNT, ROUTE_MESSAGES, Rejected, response
from tokprof.serve.conversations import ConversationCache
from tokprof.serve.counter import Counter, parse_thresholds
from tokprof.serve.guard import Guard, place_of
from tokprof.serve.limits import (
    DEFAULT_CACHE_BYTES, DEFAULT_CACHE_ENTRIES, DEFAULT_MAX_BODY, DEFAULT_THRESHOLDS, DEFAULT_TIMEOUT, DEFAULT_WORKERS,
)
from tokprof.serve.models import Models


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
                where = place_of(error)
                LOG.error("internal error: %s at %s (a bug in tokprof %s)", type(error).__name__, where, __version__)
                request.state.error = Rejected(500, "api_error", f"internal error ({type(error).__name__} at {where}): "
                                               "a bug in tokprof; please report it")
            refusal = request.state.error
            return response(refusal.payload(), refusal.status)

        return answer

    def counting(route: str):
        async def endpoint(request: HTTPRequest):
            raw = await read_body(request)
            answer, said = await run(lambda: counter.count(route, raw))
            request.state.said = said
            return response(answer)

        return guarded(endpoint)

    async def list_models(request: HTTPRequest):
        return response(counter.models_list())

    async def health(request: HTTPRequest):
        return response(counter.health())

    async def http_error(request: HTTPRequest, exc: Exception):
        assert isinstance(exc, HTTPException)
        kind = "not_found_error" if exc.status_code == 404 else "invalid_request_error"
        message = {404: "no such route: see GET /v1/models, POST /v1/count, POST /v1/messages/count_tokens",
                   405: "method not allowed"}.get(exc.status_code, str(exc.detail))
        request.state.error = Rejected(exc.status_code, kind, message)
        return response(request.state.error.payload(), exc.status_code, exc.headers)

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
    return Guard(app, expected)
