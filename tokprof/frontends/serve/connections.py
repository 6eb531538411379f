"""Connections, bounded: uvicorn's HTTP/1.1 protocol with a time limit on each request's head and a
cap on open connections, so that idle, half-sent or extra connections cannot hold the server's file
descriptors or keep ``/health`` from being answered.

* A request's head (its request line and headers) must arrive within ``head_timeout`` seconds of
  the connection's start, or of the previous answer on a kept-alive connection, however slowly it
  trickles in; else the connection is closed.
* At most ``max_connections`` are open: a new one beyond it closes the connection idle longest (one
  waiting for a request's head: new, half-sent or kept alive), or, when every one is in the middle
  of a request, the new one."""

from __future__ import annotations

import asyncio
import resource
from collections import OrderedDict
from typing import Any

#: Connections accepted in one turn of the event loop (and the listening queue): before any of them
#: can close an idle one, so file descriptors are kept for them besides the connection cap.
ACCEPT_BATCH = 32
#: File descriptors kept for everything but connections: two turns' accepted connections beyond the
#: cap (a closed connection's descriptor is freed on the next turn), the workers' sockets, models, logs.
RESERVED_DESCRIPTORS = 2 * ACCEPT_BATCH + 64


def descriptor_room(wanted: int) -> int:
    """The connections the process can hold, at most ``wanted``: its soft limit on open files raised
    to the hard one where it can be, less :data:`RESERVED_DESCRIPTORS`."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(8, min(wanted, soft - RESERVED_DESCRIPTORS))


def bounded_protocol(max_connections: int, head_timeout: float) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with the bounds above (one class per server: it keeps its connections)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    open_connections: OrderedDict[int, Any] = OrderedDict()  # the oldest first

    class Bounded(H11Protocol):
        _head_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            open_connections[id(self)] = self
            self._arm()
            if len(open_connections) > max_connections:
                victim = next((c for c in open_connections.values() if c is not self and c._waiting()), self)
                victim._drop()

        def connection_lost(self, exc: Exception | None) -> None:
            open_connections.pop(id(self), None)
            self._disarm()
            super().connection_lost(exc)

        def handle_events(self) -> None:
            before = self.cycle
            super().handle_events()
            if self.cycle is not before:  # a request's head is in: its body and answer are timed elsewhere
                self._disarm()

        def on_response_complete(self) -> None:
            self._arm()  # the next request's head, in time (a pipelined one already here disarms it)
            super().on_response_complete()

        def _waiting(self) -> bool:
            """Whether it waits for a request's head (new, half-sent, or kept alive after an answer)."""
            return self.cycle is None or self.cycle.response_complete

        def _arm(self) -> None:
            self._disarm()
            self._head_timer = self.loop.call_later(head_timeout, self._late)

        def _disarm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _late(self) -> None:
            self._head_timer = None
            if self._waiting():
                self._drop()

        def _drop(self) -> None:
            self._disarm()
            open_connections.pop(id(self), None)
            if not self.transport.is_closing():
                self.transport.close()

    setattr(Bounded, "open_connections", open_connections)  # noqa: B010 (for tests)
    return Bounded
