"""A small client of an OpenAI-compatible Chat Completions endpoint (a local llama.cpp server, vLLM,
Ollama, or an API given with an explicit key), for ``tokprof probe``: one request at a time, retries
with back-off on 429, 5xx and connection errors, never a redirect to another host with the key.
Standard library only.

``timeout`` bounds a request whole: its tries, the back-off between them, and each try's connection,
headers and answer, however slowly an endpoint sends them (a watchdog closes the connection at the
deadline). An answer is read no further than :data:`ANSWER_CAP` (``TOKPROF_PROBE_MAX_ANSWER``, in MiB).
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import os
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from collections.abc import Sequence
from typing import Any

from tokprof.base.errors import TokprofError
from tokprof.base.jsonparse import parse

MIB = 1024 * 1024
#: The most of an endpoint's answer that is read (a chat answer is kilobytes; 600 MB was read whole).
ANSWER_CAP = 16 * MIB
CAP_VARIABLE = "TOKPROF_PROBE_MAX_ANSWER"
_PIECE = 64 * 1024


def answer_cap() -> int:
    """The most of an answer read, in bytes: ``TOKPROF_PROBE_MAX_ANSWER`` (MiB), else :data:`ANSWER_CAP`."""
    raw = os.environ.get(CAP_VARIABLE, "").strip()
    return int(raw) * MIB if raw.isdigit() and int(raw) > 0 else ANSWER_CAP


class _Failed(Exception):
    """A try that failed in a way another try would not mend (an answer over the cap)."""


class ChatError(TokprofError):
    """A request that failed after its retries (the message says why, without the key)."""


@dataclass(frozen=True)
class ChatClient:
    endpoint: str  # the base URL (``http://127.0.0.1:8080``, ``.../v1``) or the full completions URL
    model: str | None = None
    api_key: str | None = None
    temperature: float = 0.0
    timeout: float = 60.0
    retries: int = 2
    backoff: float = 0.5  # seconds before the first retry, doubled after each

    def __post_init__(self) -> None:
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, (int, float)) or not 0 < self.timeout < 1e9:
            raise TokprofError(f"timeout: expected a positive number of seconds, found {self.timeout!r}")

    @property
    def url(self) -> str:
        """The completions URL: ``/v1/chat/completions`` added to the endpoint's path, its query kept."""
        parts = urllib.parse.urlsplit(self.endpoint)
        path = parts.path.rstrip("/")
        if not path.endswith("/chat/completions"):
            path += "/chat/completions" if path.endswith("/v1") else "/v1/chat/completions"
        return urllib.parse.urlunsplit(parts._replace(path=path))

    def body(self, messages: Sequence[dict], tools: Sequence[dict] | None) -> dict:
        body: dict = {"messages": list(messages), "temperature": self.temperature, "stream": False}
        if self.model:
            body["model"] = self.model
        if tools:
            body["tools"] = list(tools)
        return body

    def complete(self, messages: Sequence[dict], tools: Sequence[dict] | None = None) -> str:
        """The answer's text; raises :class:`ChatError` once the retries or the time-out are spent."""
        data = json.dumps(self.body(messages, tools)).encode("utf-8")
        headers = {"content-type": "application/json"}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        deadline = time.monotonic() + self.timeout
        delay, last, tries = self.backoff, "no attempt", 0
        for attempt in range(self.retries + 1):
            if attempt:
                if time.monotonic() + delay >= deadline:
                    break  # no time left for another try
                time.sleep(delay)
                delay *= 2
            left = deadline - time.monotonic()
            if left <= 0:
                break
            tries += 1
            request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            try:
                return _answer(parse(_fetch(request, left).decode("utf-8")))
            except _Failed as exc:
                last = str(exc)
                break
            except urllib.error.HTTPError as exc:
                last = f"HTTP {exc.code}"
                exc.close()
                if exc.code != 429 and exc.code < 500:
                    break  # the request itself is wrong: retrying sends it wrong again
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError, http.client.HTTPException) as exc:
                last = str(getattr(exc, "reason", exc)) or type(exc).__name__
                if time.monotonic() >= deadline:
                    last = f"no answer within {self.timeout:g} s"
            except (ValueError, KeyError, TypeError, IndexError, AttributeError):
                last = "not a Chat Completions answer"
                break
        if time.monotonic() >= deadline and tries and "within" not in last:
            last += f" (the time-out of {self.timeout:g} s is spent)"
        raise ChatError(f"{self._shown_url()}: {last}" + (f" after {tries} tries" if tries > 1 else ""))

    def _shown_url(self) -> str:
        """The URL without its query (which may hold a key)."""
        return urllib.parse.urlunsplit(urllib.parse.urlsplit(self.url)._replace(query=""))


def _answer(doc: Any) -> str:
    content = doc["choices"][0]["message"].get("content")
    if isinstance(content, list):  # content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    if not isinstance(content, str):
        raise TypeError("no text")
    return content


class _Watchdog:
    """Closes every connection a try opens when its time is up, whatever it is blocked on (a
    connection, a header line or an answer dripped a byte at a time)."""

    def __init__(self, seconds: float):
        self.sockets: list[socket.socket] = []
        self.lock = threading.Lock()
        self.fired = False
        self.timer = threading.Timer(seconds, self.fire)
        self.timer.daemon = True

    def watch(self, sock: socket.socket) -> None:
        with self.lock:
            self.sockets.append(sock)
            fired = self.fired
        if fired:
            _shut(sock)

    def fire(self) -> None:
        with self.lock:
            self.fired = True
            sockets = list(self.sockets)
        for sock in sockets:
            _shut(sock)

    def __enter__(self) -> "_Watchdog":
        self.timer.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.timer.cancel()
        self.timer.join()


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # closed already
        pass


def _watched_handlers(watchdog: _Watchdog) -> list[urllib.request.BaseHandler]:
    """urllib's HTTP and HTTPS handlers, each connection they open given to ``watchdog``."""

    class HTTP(http.client.HTTPConnection):
        def connect(self) -> None:
            super().connect()
            watchdog.watch(self.sock)

    class HTTPS(http.client.HTTPSConnection):
        def connect(self) -> None:
            super().connect()
            watchdog.watch(self.sock)

    class HTTPHandler(urllib.request.HTTPHandler):
        def http_open(self, req: Any) -> Any:
            return self.do_open(HTTP, req)

    class HTTPSHandler(urllib.request.HTTPSHandler):
        def https_open(self, req: Any) -> Any:
            return self.do_open(HTTPS, req)

    return [HTTPHandler(), HTTPSHandler()]


def _fetch(request: urllib.request.Request, seconds: float) -> bytes:
    """The answer to one try, read within ``seconds`` and no further than the cap."""
    cap = answer_cap()
    with _Watchdog(seconds) as watchdog:
        opener = urllib.request.build_opener(_NoRedirect, *_watched_handlers(watchdog))
        try:
            with opener.open(request, timeout=seconds) as response:
                length = response.headers.get("content-length", "")
                if length.isdigit() and int(length) > cap:
                    raise _Failed(_over(cap))
                pieces, size = [], 0
                while piece := response.read(_PIECE):
                    size += len(piece)
                    if size > cap:
                        raise _Failed(_over(cap))
                    pieces.append(piece)
                if watchdog.fired:  # the end of what came before the connection was closed
                    raise TimeoutError("timed out")
                if getattr(response, "length", None):  # fewer bytes than its length said
                    raise ConnectionError("the answer was cut short")
                return b"".join(pieces)
        except (OSError, http.client.HTTPException, ValueError):
            if watchdog.fired:  # what the closed connection raised: the time is up
                raise TimeoutError("timed out") from None
            raise


def _over(cap: int) -> str:
    return f"an answer over {cap // MIB:,} MiB ({CAP_VARIABLE} sets the cap in MiB)"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Redirects are not followed: a key must never be re-sent to where a server points."""

    def redirect_request(
        self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> urllib.request.Request | None:
        return None


LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost")


def loopback_host(host: str) -> bool:
    """Whether a host name or address is the loopback interface (``127.attacker.example`` is not)."""
    host = host.strip().lower().removeprefix("[").removesuffix("]")
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_loopback(endpoint: str) -> bool:
    """Whether an endpoint URL points at this machine's loopback interface."""
    return loopback_host(urllib.parse.urlsplit(endpoint).hostname or "")
