"""Where counts run: a fixed number of worker processes (:mod:`tokprof.frontends.serve.worker`), one request at a
time each, so that no count holds the server's interpreter lock: the event loop stays free to read
requests, answer ``/health`` and refuse bad ones whatever a count costs.

A conversation is counted by the worker that counted its last request when that one is free (or
frees within :data:`PREFER_WAIT`), so that it extends the conversation it keeps; otherwise by any
free worker (which counts it afresh: the same buckets, at a fresh count's cost). A request waits
for a worker at most until its deadline (``--timeout`` from its arrival); a count still running at
its deadline is stopped by killing its worker, which is started again, and the request is answered
503. Stopping the server kills the workers, so that no count holds it up."""

from __future__ import annotations

import asyncio
import math
import socket
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection

from tokprof.frontends.serve.answers import LOG, Rejected
from tokprof.frontends.serve.worker import Settings

#: How long a request waits for the worker that keeps its conversation before taking another one.
PREFER_WAIT = 1.0
#: How long a worker may take to start (load its models).
START_TIMEOUT = 120.0
#: What a worker process runs (``-c``, not ``-m``, so that its classes are the server's).
WORKER = "import sys; from tokprof.frontends.serve.worker import main; sys.exit(main(sys.argv[1:]))"
#: The conversations whose worker is remembered, at most.
AFFINITY_ENTRIES = 4096


class Timeout(Exception):
    """A count ran past its deadline (its worker has been killed)."""


class Stopped(Exception):
    """A worker ended while counting (killed, crashed, or the server is stopping)."""


class Worker:
    """One worker process and the server's end of its socket."""

    def __init__(self, index: int, settings: Settings):
        self.index = index
        self.settings = settings
        self.process: subprocess.Popen | None = None
        self.connection: Connection | None = None
        self.busy = False
        self.stats: dict = {}
        self.started = 0  # how many times it has been started
        self.closed = False  # the server is stopping: no process starts again
        self._lock = threading.Lock()

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None and self.connection is not None

    def start(self) -> None:
        """Start the process and wait until it has loaded its models (blocking: call it in a thread)."""
        ours, theirs = socket.socketpair()
        try:
            process = subprocess.Popen(
                [sys.executable, "-c", WORKER, str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            theirs.close()
        connection = Connection(ours.detach())
        with self._lock:
            self.process, self.connection = process, connection
        if self.closed:  # the server stopped while this process started: it would run on unwatched
            self.kill()
            raise Stopped("the server is stopping")
        self.started += 1
        try:
            connection.send(self.settings)
            if not connection.poll(START_TIMEOUT):
                raise Stopped("the worker did not start in time")
            reply = connection.recv()
        except (EOFError, OSError) as exc:
            self.kill()
            raise Stopped(f"the worker ended while starting ({type(exc).__name__})") from None
        if reply[0] != "ready":
            self.kill()
            raise Stopped(f"the worker could not start: {reply[1]}")
        self.stats = reply[1]

    def exchange(self, message: tuple, deadline: float) -> tuple:
        """Send a request and wait for its reply until ``deadline`` (``time.monotonic``), starting the
        process first when it is not running (its start does not count against the deadline)."""
        if not self.alive():
            began = time.monotonic()
            self.start()
            deadline += time.monotonic() - began
        connection = self.connection
        assert connection is not None
        try:
            connection.send(message)
            if not connection.poll(max(0.0, deadline - time.monotonic())):
                self.kill()
                raise Timeout()
            reply = connection.recv()
        except (EOFError, OSError):
            self.kill()
            raise Stopped("the worker ended while counting") from None
        self.stats = reply[-1]
        return reply

    def kill(self) -> None:
        """End the process now (a count past its deadline, a stopping server)."""
        with self._lock:
            process, connection = self.process, self.connection
            self.process = self.connection = None
        if process is not None and process.poll() is None:
            process.kill()
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                pass
        if connection is not None:
            try:
                connection.close()
            except OSError:
                pass

    def conversations(self) -> int:
        return int(self.stats.get("conversations", 0))


class WorkerPool:
    """``size`` workers and the requests waiting for them (used from the event loop)."""

    def __init__(
        self,
        size: int,
        models: Sequence[str],
        *,
        cache_entries: int,
        cache_bytes: int,
        thresholds: Sequence[float],
        window: int | None,
    ):
        settings = Settings(
            tuple(models),
            max(1, math.ceil(cache_entries / size)),
            max(1, cache_bytes // size),
            tuple(thresholds),
            window,
        )
        self.size = size
        self.cache_entries = cache_entries
        self.cache_bytes = cache_bytes
        self.workers = [Worker(i, settings) for i in range(size)]
        self.threads = ThreadPoolExecutor(max_workers=2 * size, thread_name_prefix="tokprof-worker")
        self.affinity: OrderedDict[int, int] = OrderedDict()  # a conversation's key's hash: its worker
        self.closed = False
        self.timeouts = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._changed: asyncio.Event | None = None

    def start(self) -> None:
        """Start every worker now, in parallel (blocking); :class:`Stopped` for one that cannot start."""
        list(self.threads.map(lambda w: w.start() if not w.alive() else None, self.workers))

    async def count(self, route: str, raw: bytes, key: int, deadline: float) -> tuple[dict, dict]:
        """The answer to a count request and its log line's facts, counted by a worker before
        ``deadline`` (``time.monotonic``); :class:`Rejected` as the worker or the deadline says."""
        worker = await self._acquire(key, deadline)
        future = asyncio.get_running_loop().run_in_executor(self.threads, self._run, worker, (route, raw), deadline)
        try:
            reply = await asyncio.shield(future)  # the worker is freed by its thread, whatever happens here
        except Timeout:
            self.timeouts += 1
            raise Rejected(
                503,
                "timeout_error",
                "counting took longer than --timeout; the prompt may be too large or its chat template too slow",
            ) from None
        except Stopped as exc:
            if self.closed:
                raise Rejected(503, "overloaded_error", "the server is stopping") from None
            LOG.error("a worker ended while counting (%s); it is started again", str(exc).split(":")[0])
            raise Rejected(503, "overloaded_error", "the worker counting this request ended; try again") from None
        self.affinity[key] = worker.index
        self.affinity.move_to_end(key)
        while len(self.affinity) > AFFINITY_ENTRIES:
            self.affinity.popitem(last=False)
        return _decode(reply)

    def _run(self, worker: Worker, message: tuple, deadline: float) -> tuple:
        """One exchange with a worker, in a thread, which frees the worker when done; a worker killed
        at the deadline is started again first (still busy, so that no request finds it half-started)."""
        try:
            reply = worker.exchange(message, deadline)
        except Timeout:
            if self.closed or not self._submit(self._restart, worker):
                self._release(worker)
            raise
        except BaseException:
            self._release(worker)
            raise
        self._release(worker)
        return reply

    def _submit(self, function, *args) -> bool:
        try:
            self.threads.submit(function, *args)
        except RuntimeError:  # the pool is shut down
            return False
        return True

    def _restart(self, worker: Worker) -> None:
        try:
            worker.start()
        except Stopped:
            pass  # started again on its next request
        finally:
            self._release(worker)

    def _release(self, worker: Worker) -> None:
        """Free a worker (from any thread) and wake the requests waiting for one."""
        worker.busy = False
        loop, changed = self._loop, self._changed
        if loop is not None and changed is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(changed.set)
            except RuntimeError:  # the loop closed meanwhile
                pass

    async def _acquire(self, key: int, deadline: float) -> Worker:
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._changed is None:
            self._loop, self._changed = loop, asyncio.Event()
        changed = self._changed
        preferred = self.affinity.get(key)
        patience = time.monotonic() + min(PREFER_WAIT, max(0.0, deadline - time.monotonic()) / 4)
        while True:
            if self.closed:
                raise Rejected(503, "overloaded_error", "the server is stopping")
            free = [w for w in self.workers if not w.busy]
            now = time.monotonic()
            chosen = None
            if preferred is not None and not self.workers[preferred].busy:
                chosen = self.workers[preferred]
            elif free and (preferred is None or now >= patience):
                chosen = min(free, key=lambda w: (not w.alive(), w.conversations(), w.index))
            if chosen is not None:
                chosen.busy = True
                return chosen
            if now >= deadline:
                raise Rejected(
                    503,
                    "timeout_error",
                    "every worker was busy until this request's --timeout ran out (--workers counts at a time)",
                )
            wait = deadline - now
            if free and preferred is not None:
                wait = min(wait, patience - now)
            changed.clear()
            try:  # woken when a worker is freed; looking again now and then whatever happens
                await asyncio.wait_for(changed.wait(), min(max(wait, 0.001), 0.05))
            except TimeoutError:
                pass

    def stats(self) -> dict:
        """The conversation caches of the workers (as they last said) and the workers' state."""
        found = [w.stats for w in self.workers if w.stats]
        return {
            "conversations": sum(s.get("conversations", 0) for s in found),
            "estimated_bytes": sum(s.get("estimated_bytes", 0) for s in found),
            "max_conversations": self.cache_entries,
            "max_bytes": self.cache_bytes,
            "evicted": sum(s.get("evicted", 0) for s in found),
        }

    def state(self) -> dict:
        return {
            "processes": self.size,
            "running": sum(w.alive() for w in self.workers),
            "busy": sum(w.busy for w in self.workers),
            "timeouts": self.timeouts,
            "restarts": sum(max(0, w.started - 1) for w in self.workers),
        }

    def loaded(self) -> set[str]:
        return {name for w in self.workers for name in w.stats.get("loaded", ())}

    def close(self) -> None:
        """Kill the workers now: counts in progress end (their requests get 503), none start."""
        self.closed = True
        for worker in self.workers:
            worker.closed = True
            worker.kill()
        self.threads.shutdown(wait=False, cancel_futures=True)


def _decode(reply: tuple) -> tuple[dict, dict]:
    from tokprof.version import __version__

    kind = reply[0]
    if kind == "ok":
        return reply[1], reply[2]
    if kind == "rejected":
        _, status, error_kind, message, field, extra, _ = reply
        raise Rejected(status, error_kind, message, field, **extra)
    if kind == "memory":
        raise Rejected(413, "request_too_large", "out of memory counting the request: it is too large for this machine")
    _, name, where, _ = reply
    LOG.error("internal error: %s at %s (a bug in tokprof %s)", name, where, __version__)
    raise Rejected(500, "api_error", f"internal error ({name} at {where}): a bug in tokprof; please report it")
