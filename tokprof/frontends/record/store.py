"""The recording file: one JSONL line per call, in the traced-exchange shape tokprof's capture
readers take (:mod:`tokprof.formats.capture`), appended and flushed as each call completes.

A line: ``{"request": {"timestamp", "method", "url", "headers", "body"}, "response": {"timestamp",
"status_code", "headers", "body", "body_raw"}, "logged_at", "tokprof_record": {"version",
"complete", "error"}}``. ``body`` is the JSON body, or for a stream the response it rebuilds to
(:mod:`tokprof.frontends.record.rebuild`); ``body_raw`` is a stream's text as received, or a body that is not
JSON. Secret headers and URL parameters are ``[redacted]`` (:mod:`tokprof.frontends.record.redact`). The file
is created readable and writable by its user alone (0600), in a directory created 0700.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tokprof import __version__
from tokprof.base.errors import TokprofError
from tokprof.base.outputs import create_new
from tokprof.frontends.record.redact import safe_url


@dataclass(frozen=True)
class Exchange:
    """One call as the proxy saw it: the request sent upstream and what came back."""

    started: float  # time.time() when the request arrived
    method: str
    url: str  # the upstream URL
    request_headers: dict[str, str]  # already redacted
    request_body: bytes
    finished: float
    status: int | None  # None: upstream never answered
    response_headers: dict[str, str]  # already redacted
    response_body: bytes | bytearray  # decoded (content-encoding undone) when it could be
    stream: bool
    complete: bool  # False when the stream or the connection ended early
    error: str | None = None  # why it is incomplete: "upstream disconnected", "client disconnected", ...
    not_recorded: str | None = None  # what of the response body the recording lacks (over the cap), and why


def file_name(agent: str, now: datetime | None = None) -> str:
    """``20261201T210000Z-claude.jsonl``: the run's start (UTC) and the agent's name, made safe."""
    moment = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", os.path.basename(agent)).strip("-.") or "agent"
    return f"{moment}-{safe[:40]}.jsonl"


def _body(data: bytes | bytearray) -> tuple[Any, str | None]:
    """A body as (JSON value, None), or (None, its text) when it is not JSON."""
    text = data.decode("utf-8", errors="replace")
    try:
        return json.loads(text), None
    except ValueError:
        return None, text


def _events_end(data: bytes | bytearray) -> int:
    """Where the last whole server-sent event of ``data`` ends (0 when none does)."""
    lf, crlf = data.rfind(b"\n\n"), data.rfind(b"\r\n\r\n")
    return max(lf + 2 if lf >= 0 else 0, crlf + 4 if crlf >= 0 else 0)


def _iso(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).isoformat().replace("+00:00", "Z")


def record_of(ex: Exchange) -> dict:
    """The JSONL record of one exchange."""
    from tokprof.frontends.record.rebuild import rebuild

    request_body, request_raw = _body(ex.request_body)
    request: dict = {
        "timestamp": ex.started,
        "method": ex.method,
        "url": safe_url(ex.url),
        "headers": ex.request_headers,
        "body": request_body if request_raw is None else request_raw,
    }
    response: dict = {"timestamp": ex.finished, "status_code": ex.status, "headers": ex.response_headers}
    if ex.stream:
        data = ex.response_body
        if ex.not_recorded is not None:  # the events that arrived whole before the cap
            data = data[: _events_end(data)]
        text = data.decode("utf-8", errors="replace")
        response["body"] = rebuild(text)
        response["body_raw"] = text
    elif ex.not_recorded is not None:  # the start of a JSON document is no body
        response["body"] = None
    else:
        body, raw = _body(ex.response_body)
        response["body"] = body
        if raw is not None:
            response["body_raw"] = raw
    mark = {"version": __version__, "complete": ex.complete, "error": ex.error}
    if ex.not_recorded is not None:
        mark["not_recorded"] = ex.not_recorded
    return {"request": request, "response": response, "logged_at": _iso(ex.finished), "tokprof_record": mark}


class Recording:
    """The recording file of one run: lines appended whole, each with one write, flushed to the OS."""

    def __init__(self, directory: str, agent: str):
        try:
            os.makedirs(directory, mode=0o700, exist_ok=True)
        except FileExistsError:  # a file (or a link to one) of that name
            raise TokprofError(f"{directory}: not a folder: give -o the folder for the recordings") from None
        except OSError as exc:
            raise TokprofError(f"{directory}: cannot create the folder: {exc.strerror}") from None
        name = file_name(agent)
        path = os.path.join(directory, name)
        for n in range(2, 1000):  # two runs in one second: -2, -3, ...
            if not os.path.lexists(path):
                break
            path = os.path.join(directory, name.removesuffix(".jsonl") + f"-{n}.jsonl")
        self.path = path
        self.fd = create_new(path)  # 0600, never over anything (a link planted there included)
        self.calls = 0
        self.lock = threading.Lock()

    def append(self, ex: Exchange) -> dict:
        """Write one exchange's line; the record written."""
        record = record_of(ex)
        line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8", "surrogatepass")
        view = memoryview(line)
        with self.lock:  # lines whole, whichever thread writes them
            while view:  # a write may take part of a long line
                view = view[os.write(self.fd, view) :]
            self.calls += 1
        return record

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def now() -> float:
    return time.time()
