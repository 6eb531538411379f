"""The outermost layer of the app: who may ask (the token, or a loopback Host header; no foreign
Origin; JSON bodies), one log line per request that holds nothing of its content, and a JSON 500
for anything that escapes."""

from __future__ import annotations

import hmac
import os
import re
import time
from typing import Any

from tokprof.base.chat_client import loopback_host
from tokprof.base.errors import TokprofError
from tokprof.version import __version__
from tokprof.frontends.serve.answers import LOG, Rejected, send_error
from tokprof.frontends.serve.limits import TOKEN_VARIABLE


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
        raise TokprofError(
            f"--host {host}: listening beyond the loopback interface needs a token (--token or "
            f"{TOKEN_VARIABLE}), which every request then carries as a bearer token"
        )


class Guard:
    """The outermost layer: the token (or, without one, a loopback Host header), one log line per
    request that holds nothing of its content, and a JSON 500 for anything that escapes the app."""

    def __init__(self, app, token: bytes | None):
        self.app = app
        self.token = token
        self.state = app.state

    def _refusal(self, headers: dict[bytes, bytes], method: str = "GET") -> Rejected | None:
        if _foreign_origin(headers):
            return Rejected(
                403,
                "permission_error",
                "this server does not answer web pages of other sites (the Origin header names another host)",
            )
        if method == "POST" and _not_json(headers):
            return Rejected(
                415,
                "invalid_request_error",
                "a count request's body is JSON: send 'Content-Type: application/json' (or none)",
            )
        if self.token is not None:
            given = None
            authorization = headers.get(b"authorization", b"")
            if authorization[:7].lower() == b"bearer ":
                given = authorization[7:].strip()
            elif b"x-api-key" in headers:
                given = headers[b"x-api-key"].strip()
            if given is None or not hmac.compare_digest(given, self.token):
                return Rejected(
                    401,
                    "authentication_error",
                    "this server needs its token: send 'Authorization: Bearer TOKEN' (or 'x-api-key: TOKEN')",
                )
            return None
        host = headers.get(b"host", b"").decode("latin-1")
        if not is_loopback(_host_name(host)):
            return Rejected(
                403,
                "permission_error",
                "this server answers requests to the loopback interface only "
                "(the Host header names another host); give it a --token to serve others",
            )
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
                message["headers"] = [
                    *message.get("headers", []),
                    (b"server-timing", f"total;dur={elapsed:.1f}".encode()),
                ]
            await send(message)

        state = scope.setdefault("state", {})
        refusal = self._refusal(dict(scope.get("headers") or []), scope.get("method", ""))
        try:
            if refusal is not None:
                state["error"] = refusal
                await send_error(refusal, send_timed)
            else:
                await self.app(scope, receive, send_timed)
        except Exception as error:  # past the endpoints' own handling: Starlette, or the connection
            if not isinstance(state.get("error"), Rejected):
                LOG.error(
                    "internal error: %s at %s (a bug in tokprof %s)", type(error).__name__, place_of(error), __version__
                )
                state["error"] = Rejected(500, "api_error", "internal error")
            if sent["status"] is None:
                await send_error(
                    Rejected(
                        500, "api_error", f"internal error ({type(error).__name__}): a bug in tokprof; please report it"
                    ),
                    send_timed,
                )
        _log(scope.get("method", ""), scope.get("path", ""), sent["status"], started, state)


def place_of(error: BaseException) -> str:
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
    parts = [
        method if method in ("GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH") else "(other)",
        path,
        str(status),
        f"{(time.perf_counter() - started) * 1000:.1f}ms",
    ]
    said = state.get("said")
    if said:
        parts += [f"model={said['model']}", f"total={said['total']}", "reused" if said["reused"] else "new"]
    error = state.get("error")
    if isinstance(error, Rejected):
        parts.append(error.kind)
        if error.field is not None and re.fullmatch(r"[\w.\[\]]{1,80}", error.field):
            parts.append(f"field={error.field}")
    LOG.info(" ".join(parts))
