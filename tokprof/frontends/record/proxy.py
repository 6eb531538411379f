"""The forwarding proxy of ``tokprof record``: every request goes to its provider's upstream as it
came, and upstream's answer comes back as it is, chunk by chunk; model calls are recorded.

Routes: paths under ``/anthropic`` go to the Anthropic upstream, under ``/openai`` to the OpenAI one
(the prefix dropped); other paths by their headers (``anthropic-version`` or ``x-api-key``:
Anthropic, else OpenAI). Recorded: Anthropic ``/v1/messages`` and ``/v1/messages/count_tokens``,
OpenAI ``/chat/completions`` and ``/responses``; everything else passes through unrecorded.
Hop-by-hop headers are not forwarded; the body is passed on raw (still compressed when upstream
compressed it), chunk by chunk as it arrives, and recorded decoded, up to a cap
(:mod:`tokprof.frontends.record.body`: spooled to disk, never held whole). Whatever the recorder
does (a body past the cap, no memory, a full disk), the agent's answer is relayed whole.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from tokprof.frontends.record.body import BodyRecorder
from tokprof.frontends.record.redact import redacted
from tokprof.frontends.record.store import Exchange, Recording

UPSTREAMS = {"anthropic": "https://api.anthropic.com", "openai": "https://api.openai.com"}
HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
}
RECORDED = ("/v1/messages", "/v1/messages/count_tokens", "/chat/completions", "/responses")


class UpstreamGone(Exception):
    """Upstream's answer ended before it was complete: the client's connection is closed to say so."""


class _Quiet(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], UpstreamGone))


def route(path: str, headers: Mapping[str, str]) -> tuple[str, str]:
    """(provider, the path upstream) of a request's path."""
    for provider in UPSTREAMS:
        prefix = f"/{provider}"
        if path == prefix or path.startswith(prefix + "/"):
            return provider, path[len(prefix) :] or "/"
    return ("anthropic" if "anthropic-version" in headers or "x-api-key" in headers else "openai"), path


def recorded(path: str) -> bool:
    return path.rstrip("/").endswith(RECORDED)


def create_app(
    recording: Recording, upstreams: Mapping[str, str] | None = None, on_call: Callable[[dict], None] | None = None
) -> Any:
    import httpx
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, StreamingResponse
    from starlette.routing import Route

    targets = {**UPSTREAMS, **(upstreams or {})}
    logging.getLogger("uvicorn.error").addFilter(_Quiet())
    client = httpx.AsyncClient(timeout=httpx.Timeout(None, connect=30.0), follow_redirects=False)

    async def forward(request: Request) -> Any:
        provider, path = route(request.url.path, request.headers)
        url = targets[provider].rstrip("/") + path + (f"?{request.url.query}" if request.url.query else "")
        request_body = await request.body()
        sent = [
            (k.decode("latin-1"), v.decode("latin-1"))
            for k, v in request.headers.raw
            if k.decode("latin-1").lower() not in HOP_BY_HOP
        ]
        outgoing = client.build_request(request.method, url, headers=sent, content=request_body)
        names = {k.lower() for k, _ in sent} | {"host", "content-length"}
        for name in list(outgoing.headers):
            if name.lower() not in names:  # httpx's own defaults: never added to a request
                del outgoing.headers[name]
        keep = recorded(path)
        started = time.time()

        def exchange(
            status: int | None, headers: dict, data: Any, stream: bool, error: str | None, missing: str | None = None
        ) -> Exchange:
            """The exchange as it is recorded: complete when there is no ``error``."""
            return Exchange(
                started,
                request.method,
                url,
                redacted(sent),
                request_body,
                time.time(),
                status,
                headers,
                data,
                stream,
                error is None,
                error,
                missing,
            )

        def keep_line(make: Callable[[], Exchange], status: int | None) -> None:
            """The exchange's line; never raises (the agent's answer is relayed whatever happens here)."""
            try:
                _save(recording, on_call, make())
            except Exception as exc:  # noqa: BLE001 - no memory for the line, a full disk: say so, smaller
                _save_failed(recording, on_call, started, request.method, url, status, exc)

        try:
            answer = await client.send(outgoing, stream=True)
        except httpx.HTTPError as exc:
            if keep:
                why = f"upstream unreachable: {type(exc).__name__}"
                keep_line(lambda: exchange(None, {}, b"", False, why), None)
            return JSONResponse(
                {
                    "type": "error",
                    "error": {"type": "proxy_error", "message": f"upstream unreachable ({type(exc).__name__})"},
                },
                status_code=502,
            )
        got = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in answer.headers.raw]

        length = answer.headers.get("content-length", "")
        expected = int(length) if length.isdigit() else None
        folder = os.path.dirname(recording.path) or None

        def save(body: BodyRecorder, error: str | None) -> None:
            stream = "text/event-stream" in answer.headers.get("content-type", "")
            try:
                keep_line(
                    lambda: exchange(
                        answer.status_code, redacted(got), body.finish(), stream, error, body.not_recorded()
                    ),
                    answer.status_code,
                )
            finally:
                body.close()

        async def relay() -> AsyncIterator[bytes]:
            body = BodyRecorder(answer.headers.get("content-encoding", ""), folder) if keep else None
            error: str | None = "client disconnected"
            saved = body is None
            try:
                async for chunk in answer.aiter_raw():
                    if body is not None:
                        body.add(chunk)  # spooled, capped: never raises
                        if not saved and expected is not None and body.received >= expected:
                            save(body, None)  # a body of known length: on disk before its last bytes reach the client
                            saved = True
                    yield chunk
                error = None
            except httpx.HTTPError as exc:
                error = f"upstream disconnected ({type(exc).__name__})"
                raise UpstreamGone(error) from None
            finally:
                await answer.aclose()
                if body is not None and not saved:  # a chunked body or a stream: its end reaches the client after this
                    save(body, error)

        response = StreamingResponse(relay(), status_code=answer.status_code)
        response.raw_headers = [
            (k.lower().encode("latin-1"), v.encode("latin-1"))
            for k, v in got
            if k.lower() not in HOP_BY_HOP - {"content-length"}
        ]
        return response

    methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
    app = Starlette(routes=[Route("/{path:path}", forward, methods=methods)])
    app.state.client = client
    return app


def _save(recording: Recording, on_call: Callable[[dict], None] | None, ex: Exchange) -> None:
    record = recording.append(ex)
    if on_call is not None:
        on_call(record)


def _save_failed(
    recording: Recording,
    on_call: Callable[[dict], None] | None,
    started: float,
    method: str,
    url: str,
    status: int | None,
    exc: BaseException,
) -> None:
    """The line of an exchange whose record could not be made (no memory for it, say): its URL and
    status, no headers or bodies, and why; nothing at all when even that fails (a full disk)."""
    why = f"not recorded: {type(exc).__name__}"
    try:
        ex = Exchange(started, method, url, {}, b"", time.time(), status, {}, b"", False, False, why, why)
        _save(recording, on_call, ex)
    except Exception:  # noqa: BLE001 - nothing left to record it with
        pass
