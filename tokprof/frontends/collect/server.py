"""``tokprof collect``: an OTLP/HTTP receiver (``/v1/traces``, ``/v1/logs``, ``/v1/metrics``; protobuf
or JSON) that turns the model calls agents report into rows of the calls table, written in batches
(:mod:`tokprof.frontends.collect.store`).

It listens on 127.0.0.1 unless given a token (as ``tokprof serve``): then every request carries it
(``Authorization: Bearer TOKEN``). A request that is too large, of another content type, or not an
OTLP export gets a 4xx and one log line naming what is wrong; none of its rows is kept (a request's
rows are all made before any is held). SIGTERM (or Ctrl-C) stops taking requests, writes what is
held and exits 0.
"""

from __future__ import annotations

import hmac
import json
import signal
import socket
import sys
import threading
import time
import zlib
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from tokprof.live_collect import Telemetry
from tokprof.base.chat_client import loopback_host
from tokprof.base.errors import TokprofError
from tokprof.base.text import visible
from tokprof.frontends.collect.store import Store, StoreOptions

TOKEN_VARIABLE = "TOKPROF_COLLECT_TOKEN"
PATHS = {"/v1/traces": "traces", "/v1/logs": "logs", "/v1/metrics": "metrics"}
MAX_BODY = 16 * 1024 * 1024  # bytes of a request body, as sent and once decompressed


@dataclass(frozen=True)
class CollectOptions:
    destination: str
    host: str = "127.0.0.1"
    port: int = 4318
    token: str | None = None
    collector: str = ""
    keep: str = "calls"
    hash_users: bool = False
    salt: str = ""
    max_rows: int = 10_000
    max_seconds: float = 60.0
    max_body: int = MAX_BODY
    read_timeout: float = 10.0  # seconds a request's head or body may take to arrive
    spool: str = ".tokprof-spool"
    spool_bytes: int = 512 * 1024 * 1024
    model: str | None = None


class Rejected(Exception):
    """A request answered with a 4xx (or 503): its status and the one line that says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Collector:
    """The receiver's work, apart from HTTP: a request's body to rows held by the store."""

    def __init__(self, options: CollectOptions, log: Callable[[str], None]) -> None:
        self.options = options
        self.log = log
        self.telemetry = Telemetry(
            options.collector or socket.gethostname(), options.keep, options.hash_users, options.salt, options.model
        )
        self.store = Store(
            StoreOptions(
                options.destination,
                self.telemetry.collector,
                options.max_rows,
                options.max_seconds,
                options.spool,
                options.spool_bytes,
            ),
            self.telemetry.files,
            log,
        )
        self.requests = 0
        self.rejected = 0

    def take(self, path: str, body: bytes, content_type: str | None, encoding: str | None, where: str) -> int:
        """The rows a request's body gives, held; raises :class:`Rejected`. The rows taken."""
        signal_name = PATHS.get(path)
        if signal_name is None:
            raise Rejected(404, f"{path[:80]}: not an OTLP path (POST /v1/traces, /v1/logs or /v1/metrics)")
        wrong = self.telemetry.media_error(content_type)
        if wrong is not None:
            raise Rejected(415, wrong)
        body = self._decompressed(body, encoding)
        if self.store.full:
            raise Rejected(503, "the destination cannot be written and the spool is full: retry later")
        try:
            made = self.telemetry.rows(signal_name, body, content_type, where)
        except TokprofError as exc:
            raise Rejected(400, str(exc)) from None
        except RecursionError:
            raise Rejected(400, f"{where}: nested too deeply") from None
        return self.store.add(made)

    def _decompressed(self, body: bytes, encoding: str | None) -> bytes:
        kind = (encoding or "identity").strip().lower()
        if kind in ("identity", ""):
            return body
        if kind not in ("gzip", "deflate"):
            raise Rejected(415, f"Content-Encoding {kind[:40]!r}: expected gzip, deflate or none")
        inflater = zlib.decompressobj(wbits=47)  # gzip or zlib, by its header
        try:
            out = inflater.decompress(body, self.options.max_body + 1)
        except zlib.error as exc:
            raise Rejected(400, f"the {kind} body cannot be decompressed: {exc}") from None
        if len(out) > self.options.max_body:
            raise Rejected(413, f"the body is over {self.options.max_body:,} bytes once decompressed")
        return out


def _handler(collector: Collector, token: bytes | None) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = collector.options.read_timeout  # a client slower than this is dropped
        server_version = "tokprof-collect"
        sys_version = ""

        def log_message(self, format: str, *args: Any) -> None:  # one line per rejected request only
            return

        def log_error(self, format: str, *args: Any) -> None:  # http.server's own: a bad request line, a timeout
            collector.rejected += 1
            collector.log(f"{visible(str(self.client_address[0]))}: {visible(format % args)[:200]}")

        def do_GET(self) -> None:
            if self._allowed():
                if self.path == "/health":
                    self._answer(200, b'{"status":"ok"}', "application/json")
                else:
                    self._reject(Rejected(404, f"{self.path[:80]}: POST OTLP to /v1/traces, /v1/logs or /v1/metrics"))

        def do_POST(self) -> None:
            if not self._allowed():
                return
            length = self.headers.get("Content-Length")
            if length is None or not length.strip().isdigit():
                self._reject(Rejected(411, "a request needs a Content-Length (chunked bodies are not taken)"))
                return
            size = int(length)
            if size > collector.options.max_body:
                self._reject(Rejected(413, f"the body is {size:,} bytes, over {collector.options.max_body:,}"))
                return
            body = self.rfile.read(size)
            content_type = self.headers.get("Content-Type")
            where = f"{self.client_address[0]} {self.path[:80]}"
            try:
                collector.take(self.path, body, content_type, self.headers.get("Content-Encoding"), where)
            except Rejected as exc:
                self._reject(exc)
                return
            collector.requests += 1
            proto = (content_type or "").split(";", 1)[0].strip().lower() != "application/json"
            self._answer(200, b"" if proto else b"{}", "application/x-protobuf" if proto else "application/json")

        def _allowed(self) -> bool:
            if token is not None:
                given = self.headers.get("Authorization", "")
                given = given[7:].strip() if given.lower().startswith("bearer ") else self.headers.get("x-api-key", "")
                if not hmac.compare_digest(given.encode("utf-8", "replace"), token):
                    self._reject(Rejected(401, "this collector needs its token: send 'Authorization: Bearer TOKEN'"))
                    return False
                return True
            host = (self.headers.get("Host") or "").rsplit(":", 1)[0].strip("[]")
            if host and not loopback_host(host):
                self._reject(Rejected(403, "the Host header names another host; give the collector a --token"))
                return False
            return True

        def _reject(self, exc: Rejected) -> None:
            collector.rejected += 1
            collector.log(
                f"{self.client_address[0]} {visible(self.command or '')} {visible(self.path[:80])}: "
                f"{exc.status} {visible(exc.message)}"
            )
            body = json.dumps({"code": exc.status, "message": visible(exc.message)}).encode()
            self.close_connection = exc.status in (411, 413)  # the body was not read
            self._answer(exc.status, body, "application/json")

        def _answer(self, status: int, body: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            if status == 503:
                self.send_header("Retry-After", "30")
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)

    return Handler


class _Server(ThreadingHTTPServer):
    """The HTTP server; a connection that fails (a client too slow, gone mid-request) is one log line."""

    say: Callable[[str], None] = staticmethod(lambda line: None)

    def handle_error(self, request: Any, client_address: Any) -> None:
        kind = sys.exc_info()[0]
        self.say(f"{visible(str(client_address[0]))}: connection dropped ({kind.__name__ if kind else 'error'})")


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond the loopback interface without a token."""
    if not loopback_host(host) and not token:
        raise TokprofError(
            f"--host {host}: listening beyond the loopback interface needs a token (--token or {TOKEN_VARIABLE}), "
            "which every request then carries as a bearer token"
        )


def run(
    options: CollectOptions,
    log: Callable[[str], None] | None = None,
    started: Callable[[str, int], None] | None = None,
    stop: threading.Event | None = None,
) -> int:
    """Serve until SIGTERM or Ctrl-C (or ``stop`` is set), then write what is held; 0. ``started`` is
    told the address once the collector listens."""
    check_bind(options.host, options.token)
    say = log or _stderr
    collector = Collector(options, say)
    server = _Server((options.host, options.port), _handler(collector, _token(options.token)))
    server.say = say
    server.daemon_threads = False  # closing waits for the requests being answered: their rows are written
    stop = stop or threading.Event()
    host, port = str(server.server_address[0]), int(server.server_address[1])
    say(
        f"tokprof collect: listening on http://{host}:{port} (OTLP/HTTP: /v1/traces, /v1/logs, /v1/metrics), "
        f"collector {collector.store.options.collector}, writing to {options.destination}"
    )
    serving = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    serving.start()
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for number in (signal.SIGTERM, signal.SIGINT):
            previous[number] = signal.signal(number, lambda *_: stop.set())
    if started is not None:
        started(host, port)
    try:
        while not stop.wait(0.2):
            if collector.store.due():
                collector.store.flush()
    finally:
        server.shutdown()
        server.server_close()
        collector.store.flush()
        for number, handler in previous.items():
            signal.signal(number, handler)
    say(
        f"tokprof collect: stopped; {collector.store.written:,} rows written, {collector.requests:,} requests "
        f"taken, {collector.rejected:,} rejected"
    )
    return 0


def _token(token: str | None) -> bytes | None:
    return token.encode("utf-8") if token else None


def _stderr(line: str) -> None:
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {line}", file=sys.stderr, flush=True)
