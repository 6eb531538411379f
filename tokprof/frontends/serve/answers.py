"""What ``tokprof serve`` answers: the routes' names, :class:`Rejected` (an error answer) and
the JSON responses."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

LOG = logging.getLogger("tokprof.frontends.serve")

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
        from tokprof.base.text import shorten, visible

        error: dict[str, Any] = {"type": self.kind, "message": shorten(visible(self.message), 1200)}
        if self.field is not None:
            error["field"] = shorten(visible(self.field), 200)
        error.update(self.extra)
        return {"type": "error", "error": error}


def bad(message: str, where: str | None = None) -> Rejected:
    return Rejected(400, "invalid_request_error", f"{where}: {message}" if where else message, where)


def kind_of(value: Any) -> str:
    from tokprof.base.jsonparse import kind_of

    return kind_of(value)


def response(payload: dict, status: int = 200, headers: Mapping[str, str] | None = None):
    from starlette.responses import Response

    content = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return Response(content, status_code=status, media_type="application/json", headers=headers)


async def send_error(exc: Rejected, send) -> None:
    headers = [(b"content-type", b"application/json")]
    if exc.status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    body = json.dumps(exc.payload(), ensure_ascii=False).encode("utf-8")
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": exc.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
