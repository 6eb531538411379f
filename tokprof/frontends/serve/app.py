"""The ASGI application of ``tokprof serve``: its routes, the bounds on what is in flight, and the
workers that count."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from typing import Any, Callable

from tokprof.base.errors import TokprofError
from tokprof.version import __version__
from tokprof.frontends.serve.answers import LOG, ROUTE_COUNT, ROUTE_MESSAGES, Rejected, response
from tokprof.frontends.serve.body import routing_key
from tokprof.frontends.serve.conversations import ConversationCache
from tokprof.frontends.serve.counter import Counter, parse_thresholds
from tokprof.frontends.serve.guard import Guard, place_of
from tokprof.frontends.serve.limits import (
    DEFAULT_CACHE_BYTES,
    DEFAULT_CACHE_ENTRIES,
    DEFAULT_MAX_BODY,
    DEFAULT_MAX_INFLIGHT,
    DEFAULT_MAX_INFLIGHT_BYTES,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_READ_TIMEOUT,
    DEFAULT_THRESHOLDS,
    DEFAULT_TIMEOUT,
    DEFAULT_WORKERS,
    InFlight,
)
from tokprof.frontends.serve.models import Models
from tokprof.frontends.serve.pool import WorkerPool


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
    max_inflight: int = DEFAULT_MAX_INFLIGHT,
    max_inflight_bytes: int = DEFAULT_MAX_INFLIGHT_BYTES,
    read_timeout: float = DEFAULT_READ_TIMEOUT,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
):
    """The ASGI application of ``tokprof serve``. ``models`` are the ``--model`` names (the first is
    the default; none: qwen2.5), loaded now unless ``preload`` is False (:class:`ModelError` for one
    that cannot be). With a ``token``, every request must carry it (``Authorization: Bearer TOKEN``
    or ``x-api-key: TOKEN``); without one, only requests whose Host header names the loopback
    interface are answered (a web page cannot reach the server through a DNS name of its own).
    Counts run in ``workers`` processes (started on first use, or when the app's lifespan starts)."""
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.requests import Request as HTTPRequest
    from starlette.routing import Route

    _check(
        max_body=max_body,
        window=window,
        workers=workers,
        timeout=timeout,
        max_inflight=max_inflight,
        max_inflight_bytes=max_inflight_bytes,
        read_timeout=read_timeout,
    )
    if max_connections < 1:
        raise TokprofError(f"--max-connections: expected a positive number, found {max_connections}")
    chosen = Models(models)
    if preload:
        chosen.preload()
    elif chosen.default is None:
        from tokprof.names import model_name

        chosen.default = model_name()
    levels = parse_thresholds(thresholds)
    counter = Counter(chosen, ConversationCache(1, 1), levels, window)  # here for /v1/models: workers count
    pool = WorkerPool(
        workers,
        chosen.configured,
        cache_entries=cache_entries,
        cache_bytes=cache_bytes,
        thresholds=levels,
        window=window,
    )
    inflight = InFlight(max_inflight, max_inflight_bytes)
    expected = token.encode("utf-8") if token else None

    async def read_body(request: HTTPRequest, held: list[int]) -> bytes:
        declared = request.headers.get("content-length")
        if declared is not None and declared.strip().isdigit():
            if int(declared) > max_body:
                raise Rejected(
                    413,
                    "request_too_large",
                    f"the body is {int(declared):,} bytes, over the limit of {max_body:,} (--max-body)",
                )
            inflight.reserve(int(declared))
            held[0] += int(declared)
        chunks, size = [], 0
        try:
            async with asyncio.timeout(read_timeout):
                async for chunk in request.stream():
                    size += len(chunk)
                    if size > max_body:
                        raise Rejected(
                            413, "request_too_large", f"the body is over the limit of {max_body:,} bytes (--max-body)"
                        )
                    if size > held[0]:
                        inflight.reserve(size - held[0])
                        held[0] = size
                    chunks.append(chunk)
        except TimeoutError:
            raise Rejected(
                408, "timeout_error", f"the body did not arrive within {read_timeout:g} s (--read-timeout)"
            ) from None
        return b"".join(chunks)

    def guarded(endpoint: Callable[[HTTPRequest], Any]):
        """An endpoint whose errors are JSON answers: a :class:`Rejected` as it says, anything else
        (a bug) a 500 whose log line names the exception's type and place, never the request."""

        async def answer(request: HTTPRequest):
            try:
                return await endpoint(request)
            except Rejected as exc:
                request.state.error = exc
            except MemoryError:
                request.state.error = Rejected(
                    413, "request_too_large", "out of memory counting the request: it is too large for this machine"
                )
            except Exception as error:
                where = place_of(error)
                LOG.error("internal error: %s at %s (a bug in tokprof %s)", type(error).__name__, where, __version__)
                request.state.error = Rejected(
                    500,
                    "api_error",
                    f"internal error ({type(error).__name__} at {where}): a bug in tokprof; please report it",
                )
            refusal = request.state.error
            return response(refusal.payload(), refusal.status)

        return answer

    def counting(route: str):
        async def endpoint(request: HTTPRequest):
            inflight.admit()
            held = [0]
            try:
                raw = await read_body(request, held)
                deadline = time.monotonic() + timeout
                key = await asyncio.get_running_loop().run_in_executor(None, routing_key, route, raw)
                answer, said = await pool.count(route, raw, key, deadline)
            finally:
                inflight.release(held[0])
            request.state.said = said
            return response(answer)

        return guarded(endpoint)

    async def list_models(request: HTTPRequest):
        return response(counter.models_list())

    async def health(request: HTTPRequest):
        loaded = sorted(set(chosen.loaded()) | pool.loaded())
        return response(
            {
                "status": "ok",
                "version": __version__,
                "default_model": chosen.default,
                "loaded_models": loaded,
                "cache": pool.stats(),
                "workers": pool.state(),
                "in_flight": inflight.state(),
            }
        )

    async def http_error(request: HTTPRequest, exc: Exception):
        assert isinstance(exc, HTTPException)
        kind = "not_found_error" if exc.status_code == 404 else "invalid_request_error"
        message = {
            404: "no such route: see GET /v1/models, POST /v1/count, POST /v1/messages/count_tokens",
            405: "method not allowed",
        }.get(exc.status_code, str(exc.detail))
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
        await asyncio.get_running_loop().run_in_executor(None, pool.start)
        try:
            yield
        finally:  # counts still running end with their workers
            pool.close()

    app = Starlette(routes=routes, exception_handlers={HTTPException: http_error}, lifespan=lifespan)
    app.state.counter = counter
    app.state.pool = pool
    app.state.inflight = inflight
    app.state.read_timeout = read_timeout  # for the connections (tokprof.frontends.serve.running)
    app.state.max_connections = max_connections
    return Guard(app, expected)


def _check(
    *,
    max_body: int,
    window: int | None,
    workers: int,
    timeout: float,
    max_inflight: int,
    max_inflight_bytes: int,
    read_timeout: float,
) -> None:
    if max_body < 1:
        raise TokprofError(f"--max-body: expected a positive number of bytes, found {max_body}")
    if window is not None and window < 1:
        raise TokprofError(f"--window: expected a positive number of tokens, found {window}")
    if workers < 1:
        raise TokprofError(f"--workers: expected a positive number of processes, found {workers}")
    if timeout <= 0:
        raise TokprofError(f"--timeout: expected a positive number of seconds, found {timeout}")
    if read_timeout <= 0:
        raise TokprofError(f"--read-timeout: expected a positive number of seconds, found {read_timeout}")
    if max_inflight < 1:
        raise TokprofError(f"--max-inflight: expected a positive number of requests, found {max_inflight}")
    if max_inflight_bytes < max_body:
        raise TokprofError(
            f"--max-inflight-bytes: expected at least --max-body ({max_body:,} bytes), found {max_inflight_bytes:,}"
        )
