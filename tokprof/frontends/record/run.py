"""Running ``tokprof record``: the proxy on 127.0.0.1 in a background thread, the agent's command
with its base-URL variables pointing at it, and one line per recorded call on standard error.

The live lines are made on a thread of their own (:class:`LiveLines`), never on the proxy's event
loop: counting a call's buckets (the tokenizer loads at the first call) never holds up a stream."""

from __future__ import annotations

import os
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from tokprof.frontends.record.proxy import create_app
from tokprof.frontends.record.store import Recording
from tokprof.base.text import visible

if TYPE_CHECKING:
    from tokprof.live import LiveCall

#: The buckets of a live line, by their short names, in the order the profile shows them.
BUCKET_NAMES = (
    ("system", "system"),
    ("tool_definitions", "tools"),
    ("tool_results", "results"),
    ("conversation", "conversation"),
    ("unrecorded", "unrecorded"),
)


def call_line(figures: LiveCall) -> str:
    """One line for a recorded model call: model, the prompt and its buckets (an estimate says so),
    the fill of the window against the thresholds, the cache read share and the cost so far."""
    parts = [visible(figures.model or "?")]
    prompt = f"prompt {figures.prompt:,}" + ("" if figures.basis == "reported" else " (counted)")
    if figures.buckets:
        shown = [
            f"{label} {figures.buckets[name]:,}"
            for name, label in BUCKET_NAMES
            if figures.buckets.get(name) or (name != "unrecorded" and name in figures.buckets)
        ]
        prompt += " = " + " + ".join(shown) + (" (estimate)" if figures.estimate else "")
    parts.append(prompt)
    if figures.fill is not None and figures.window:
        past = f", past {max(figures.past):.0%}" if figures.past else ""
        parts.append(f"ctx {figures.fill:.0%} of {_k(figures.window)}{past}")
    else:
        parts.append("window not known")
    if figures.cache_read_share is not None:
        parts.append(f"cache read {figures.cache_read_share:.0%} so far")
    parts.append("cost not known" if figures.cost is None else f"{_usd(figures.cost)} so far")
    return "tokprof record: " + " · ".join(parts)


def _k(n: int) -> str:
    return (
        f"{n / 1_000_000:g}M"
        if n >= 1_000_000 and n % 100_000 == 0
        else f"{n / 1000:g}k"
        if n % 1000 == 0
        else f"{n:,}"
    )


def _usd(cost: float) -> str:
    return f"${cost:.2f}" if cost >= 1 else f"${cost:.4f}" if cost >= 0.0001 or cost == 0 else "<$0.0001"


class LiveLines:
    """The live lines of a recording, made on their own thread from the records the proxy writes:
    ``__call__`` (the proxy's ``on_call``) queues a record and returns at once."""

    def __init__(self, path: str, write: Callable[[str], None]):
        from tokprof.live_record import LiveRecording

        self.live = LiveRecording(path)
        self.write = write
        self.records: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self._run, daemon=True, name="tokprof-record-live")
        self.thread.start()

    def __call__(self, record: dict) -> None:
        self.records.put(record)

    def close(self, timeout: float = 30.0) -> None:
        """The lines of the calls still queued, then the thread ends (at most ``timeout`` seconds)."""
        self.records.put(None)
        self.thread.join(timeout)

    def _run(self) -> None:
        while (record := self.records.get()) is not None:
            try:
                self.write(self._line(record))
            except Exception:  # noqa: BLE001 - nowhere to say it (standard error closed?): the next call's line
                pass

    def _line(self, record: dict) -> str:
        """The line of one record: its figures, else the short line, else what went wrong (never an
        exception: the thread makes the lines of every later call too)."""
        try:
            figures = self.live.add(record) if record["tokprof_record"]["complete"] else None
            line = call_line(figures) if figures is not None else live_line(record)
            missing = record["tokprof_record"].get("not_recorded")
            return line + (f" · {visible(missing)}" if missing and missing != record["tokprof_record"]["error"] else "")
        except Exception as exc:  # noqa: BLE001 - a live line never stops the recording
            failed = type(exc).__name__
        try:
            return live_line(record) + f" · (no figures: {failed})"
        except Exception as exc:  # noqa: BLE001 - a record the short line cannot read either
            return f"tokprof record: a call (no figures: {failed}, {type(exc).__name__})"


def live_line(record: dict) -> str:
    """One line for a recorded exchange that is no complete model call (count_tokens, an error, a
    stream cut short): model, endpoint, status, prompt tokens as reported, cache read share."""
    request, response = record["request"], record["response"]
    body = request.get("body") if isinstance(request.get("body"), dict) else {}
    model = visible(str(body.get("model") or "?"))
    answer = response.get("body") if isinstance(response.get("body"), dict) else {}
    usage: dict = answer["usage"] if isinstance(answer.get("usage"), dict) else {}
    prompt, read = _prompt(usage)
    url = request.get("url") if isinstance(request.get("url"), str) else ""
    where = visible(urlsplit(url).path.rsplit("/", 1)[-1])  # never the query (a signature, a key)
    parts = [f"{model} {where}", f"HTTP {response.get('status_code') or '-'}"]
    if prompt is not None:
        parts.append(
            f"prompt {prompt:,}" + (f", cache read {read / prompt:.0%}" if prompt and read is not None else "")
        )
    else:
        parts.append("prompt not recorded")
    if not record["tokprof_record"]["complete"]:
        parts.append(visible(str(record["tokprof_record"]["error"])))
    return "tokprof record: " + " · ".join(parts)


def _tokens(value: object) -> int | None:
    """A usage field that is a count of tokens (a whole number, not negative, not a boolean), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _prompt(usage: Mapping) -> tuple[int | None, int | None]:
    """(whole prompt, cache reads) from an Anthropic or OpenAI usage object; None for what is not a
    count (a field that is text, null or negative is not recorded, not 0)."""
    if "cache_read_input_tokens" in usage or "cache_creation_input_tokens" in usage:  # Anthropic
        parts = [_tokens(usage.get(k, 0)) for k in ("input_tokens", "cache_read_input_tokens")]
        parts.append(_tokens(usage.get("cache_creation_input_tokens", 0)))
        if any(part is None for part in parts):
            return None, None
        return sum(p for p in parts if p is not None), parts[1]
    for key, details in (("prompt_tokens", "prompt_tokens_details"), ("input_tokens", "input_tokens_details")):
        prompt = _tokens(usage.get(key))
        if prompt is not None:
            cached = _tokens(usage[details].get("cached_tokens")) if isinstance(usage.get(details), dict) else None
            return prompt, cached
    return None, None


def record(
    directory: str,
    command: Sequence[str],
    port: int = 0,
    upstreams: Mapping[str, str] | None = None,
    quiet: bool = False,
) -> int:
    """Record until the command ends (its exit code), or without a command until interrupted (0)."""
    import uvicorn

    recording = Recording(directory, command[0] if command else "serve")
    lines = None if quiet else LiveLines(recording.path, lambda text: print(text, file=sys.stderr, flush=True))
    app = create_app(recording, upstreams, lines)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            log_config=None,
            server_header=False,
            date_header=False,
            lifespan="off",
        )
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True, name="tokprof-record")
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    env = {**os.environ, "ANTHROPIC_BASE_URL": url + "/anthropic", "OPENAI_BASE_URL": url + "/openai/v1"}
    print(
        f"tokprof record: recording to {recording.path} via {url} (ANTHROPIC_BASE_URL={env['ANTHROPIC_BASE_URL']}, "
        f"OPENAI_BASE_URL={env['OPENAI_BASE_URL']})",
        file=sys.stderr,
        flush=True,
    )
    code = 0
    try:
        if command:
            code = subprocess.call(list(command), env=env)
        else:
            while thread.is_alive():
                time.sleep(0.2)
    except KeyboardInterrupt:
        code = 130 if command else 0
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
        recording.close()
        if lines is not None:
            lines.close()
    return code
