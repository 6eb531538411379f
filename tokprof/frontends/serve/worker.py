"""A worker process of ``tokprof serve`` (:data:`tokprof.frontends.serve.pool.WORKER`, with a socket's ``FD``). It counts one request at a
time with a :class:`Counter` of its own (its models, its conversations) and answers over the socket
``FD``, a :class:`multiprocessing.connection.Connection`. It ends when the server closes the socket
(or dies), and is killed by the server when a count takes longer than ``--timeout``.

Messages: the server sends :class:`Settings` first, then ``(route, body)`` per request; the worker
answers ``("ready", stats)`` once, then per request ``("ok", answer, said, stats)``,
``("rejected", status, kind, message, field, extra, stats)``, ``("memory", stats)`` or ``("bug",
exception type, place, stats)``."""

from __future__ import annotations

import signal
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from tokprof.frontends.serve.answers import Rejected


@dataclass(frozen=True)
class Settings:
    """What a worker counts with: the ``--model`` names, its share of the conversation cache's
    bounds, the fill thresholds and ``--window``."""

    models: tuple[str, ...]
    cache_entries: int
    cache_bytes: int
    thresholds: tuple[float, ...]
    window: int | None


def stats(counter: Any) -> dict:
    """The worker's conversation cache and the models it has loaded (for ``/health``)."""
    return dict(counter.cache.stats(), loaded=sorted(counter.models.loaded()))


def answer(counter: Any, route: str, raw: bytes) -> tuple:
    """One request's reply (never raises but for the process's end)."""
    from tokprof.frontends.serve.guard import place_of

    try:
        found, said = counter.count(route, raw)
        return ("ok", found, said, stats(counter))
    except Rejected as exc:
        return ("rejected", exc.status, exc.kind, exc.message, exc.field, exc.extra, stats(counter))
    except MemoryError:
        return ("memory", stats(counter))
    except Exception as error:  # a bug: its type and place, nothing of the request
        return ("bug", type(error).__name__, place_of(error), stats(counter))


def run(connection: Connection) -> None:
    from tokprof.frontends.serve.conversations import ConversationCache
    from tokprof.frontends.serve.counter import Counter
    from tokprof.frontends.serve.models import Models

    settings = connection.recv()
    assert isinstance(settings, Settings)
    models = Models(settings.models)
    models.preload()
    models.resolve(None)  # the default loaded now, too
    counter = Counter(
        models, ConversationCache(settings.cache_entries, settings.cache_bytes), settings.thresholds, settings.window
    )
    connection.send(("ready", stats(counter)))
    while True:
        try:
            message = connection.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        route, raw = message
        connection.send(answer(counter, route, raw))


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server stops its workers itself
    connection = Connection(int(argv[0]))
    try:
        run(connection)
    except (EOFError, BrokenPipeError, ConnectionResetError):
        pass
    except Exception as error:  # starting failed (a model that cannot be loaded): said to the server, in one line
        try:
            connection.send(("failed", f"{type(error).__name__}: {error}"))
        except OSError:
            pass
        return 2
    return 0
