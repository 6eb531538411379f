"""Running the app: a listening socket, uvicorn's settings, the command's loop, and a server in a
thread for tests and benchmarks."""

from __future__ import annotations

import logging
import socket
import threading
import time
from typing import Any, Callable

from tokprof.base.errors import TokprofError
from tokprof.frontends.serve.answers import LOG
from tokprof.frontends.serve.connections import ACCEPT_BATCH
from tokprof.frontends.serve.app import create_app
from tokprof.frontends.serve.guard import check_bind
from tokprof.frontends.serve.limits import (
    CONNECTION_LIMITS,
    DEFAULT_HOST,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_PORT,
    DEFAULT_READ_TIMEOUT,
)

#: The time the requests in flight are given to be answered when the server stops (their counts
#: have ended by then: the workers are stopped first).
STOP_GRACE = 2
#: Connections the kernel queues until they are accepted (they hold no descriptor of the server's).
LISTEN_QUEUE = 1024


def _socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # accepted connections inherit it: an answer's head and body are written apart, and Nagle's
    # algorithm would hold the body until the client's delayed acknowledgement (40 ms a request)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise TokprofError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    except (socket.gaierror, UnicodeError) as exc:
        sock.close()
        raise TokprofError(f"--host {host}: not an address of this machine ({exc})") from None
    sock.listen(ACCEPT_BATCH)
    sock.set_inheritable(True)
    return sock


def _url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _uvicorn_config(app, log_level: str):
    import uvicorn

    from tokprof.frontends.serve.connections import bounded_protocol, descriptor_room

    state = getattr(app, "state", None)
    read_timeout = getattr(state, "read_timeout", DEFAULT_READ_TIMEOUT)
    connections = descriptor_room(getattr(state, "max_connections", DEFAULT_MAX_CONNECTIONS))
    return uvicorn.Config(
        app,
        log_level=log_level,
        access_log=False,
        lifespan="on",
        log_config=None,
        proxy_headers=False,
        timeout_graceful_shutdown=STOP_GRACE,
        http=bounded_protocol(connections, read_timeout),
        backlog=ACCEPT_BATCH,
        **CONNECTION_LIMITS,
    )


def _server(config):
    """A uvicorn server whose listening queue is :data:`LISTEN_QUEUE` (asyncio makes it the accept
    batch, :data:`ACCEPT_BATCH`), and that, told to stop, first stops the app's workers: the counts in
    flight end (their requests get 503) rather than hold the server up."""
    import uvicorn

    class Server(uvicorn.Server):
        async def startup(self, sockets=None) -> None:
            await super().startup(sockets)
            for sock in sockets or ():  # the kernel's queue of connections longer than a turn's batch
                sock.listen(LISTEN_QUEUE)

        async def shutdown(self, sockets=None) -> None:
            pool = getattr(getattr(self.config.app, "state", None), "pool", None)
            if pool is not None:
                pool.close()
            await super().shutdown(sockets)

    return Server(config)


def configure_logging(level: int = logging.INFO) -> None:
    """The server's request lines on standard error (``tokprof serve: ...``)."""
    if not LOG.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("tokprof serve: %(message)s"))
        LOG.addHandler(handler)
        LOG.propagate = False
    LOG.setLevel(level)


def serve(
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    quiet: bool = False,
    on_ready: Callable[[str], None] | None = None,
    **options: Any,
) -> None:
    """Run the server until interrupted (the ``tokprof serve`` command): ``options`` as
    :func:`create_app` takes them. Refuses to listen beyond the loopback interface without a token."""

    check_bind(host, options.get("token"))
    configure_logging(logging.WARNING if quiet else logging.INFO)
    app = create_app(**options)
    sock = _socket(host, port)
    server = _server(_uvicorn_config(app, "warning"))
    if on_ready is not None:
        on_ready(_url(sock))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()


class Running:
    """A server on a socket of its own in a background thread (for tests and benchmarks):
    ``with Running(app) as server: server.url``. It stops when the block ends."""

    def __init__(self, app, host: str = "127.0.0.1", port: int = 0):

        self.app = app
        self.sock = _socket(host, port)
        self.url = _url(self.sock)
        self.server = _server(_uvicorn_config(app, "warning"))
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True, name="tokprof-serve"
        )

    def __enter__(self) -> "Running":
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 30.0) -> bool:
        """Stop the server; whether its thread ended within ``timeout`` seconds."""
        self.server.should_exit = True
        self.thread.join(timeout)
        self.sock.close()
        return not self.thread.is_alive()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
