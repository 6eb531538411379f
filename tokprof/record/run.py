"""Running ``tokprof record``: the proxy on 127.0.0.1 in a background thread, the agent's command
with its base-URL variables pointing at it, and one line per recorded call on standard error."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence

from tokprof.record.proxy import create_app
from tokprof.record.store import Recording
from tokprof.text import visible


def live_line(record: dict) -> str:
    """One line for a recorded call: model, status, prompt tokens as reported, cache read share."""
    request, response = record["request"], record["response"]
    body = request.get("body") if isinstance(request.get("body"), dict) else {}
    model = visible(str(body.get("model") or "?"))
    answer = response.get("body") if isinstance(response.get("body"), dict) else {}
    usage: dict = answer["usage"] if isinstance(answer.get("usage"), dict) else {}
    prompt, read = _prompt(usage)
    where = request.get("url", "").rsplit("/", 1)[-1]
    parts = [f"{model} {where}", f"HTTP {response.get('status_code') or '-'}"]
    if prompt is not None:
        parts.append(f"prompt {prompt:,}" + (f", cache read {read / prompt:.0%}" if prompt and read is not None else ""))
    else:
        parts.append("prompt not recorded")
    if not record["tokprof_record"]["complete"]:
        parts.append(visible(str(record["tokprof_record"]["error"])))
    return "tokprof record: " + " · ".join(parts)


def _prompt(usage: Mapping) -> tuple[int | None, int | None]:
    """(whole prompt, cache reads) from an Anthropic or OpenAI usage object."""
    if "cache_read_input_tokens" in usage or "cache_creation_input_tokens" in usage:  # Anthropic
        read = usage.get("cache_read_input_tokens") or 0
        return (usage.get("input_tokens") or 0) + read + (usage.get("cache_creation_input_tokens") or 0), read
    for key, details in (("prompt_tokens", "prompt_tokens_details"), ("input_tokens", "input_tokens_details")):
        if isinstance(usage.get(key), int):
            cached = (usage.get(details) or {}).get("cached_tokens") if isinstance(usage.get(details), dict) else None
            return usage[key], cached
    return None, None


def record(directory: str, command: Sequence[str], port: int = 0, upstreams: Mapping[str, str] | None = None,
           quiet: bool = False) -> int:
    """Record until the command ends (its exit code), or without a command until interrupted (0)."""
    import uvicorn

    recording = Recording(directory, command[0] if command else "serve")

    def on_call(line: dict) -> None:
        if not quiet:
            print(live_line(line), file=sys.stderr, flush=True)

    app = create_app(recording, upstreams, on_call)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, log_config=None,
                                           server_header=False, date_header=False, lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True, name="tokprof-record")
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    env = {**os.environ, "ANTHROPIC_BASE_URL": url + "/anthropic", "OPENAI_BASE_URL": url + "/openai/v1"}
    print(f"tokprof record: recording to {recording.path} via {url} (ANTHROPIC_BASE_URL={env['ANTHROPIC_BASE_URL']}, "
          f"OPENAI_BASE_URL={env['OPENAI_BASE_URL']})", file=sys.stderr, flush=True)
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
    return code
