"""``tokprof probe`` against hostile endpoints (#45 item 11), a stub on 127.0.0.1: an answer larger than
the cap (``TOKPROF_PROBE_MAX_ANSWER``, lowered to 1 MiB: "huge" is a few MB), with and without a length,
an endpoint that never answers, one that drips its answer or its headers a byte at a time. The time-out
bounds a request whole (its tries included): checked by the tries the stub saw, not by a clock."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import tokprof
from tokprof.runs.whatif import probe
from test_probe import model, trace  # noqa: F401 - fixtures
from test_retention import SHARD
from tokprof.base.chat_client import ChatClient, ChatError
from tokprof.base.errors import TokprofError
from tokprof.frontends.cli import main

MIB = 1024 * 1024
GOOD = json.dumps({"choices": [{"message": {"role": "assistant", "content": f"It is {SHARD}."}}]}).encode()
STOP = threading.Event()


class Hostile(BaseHTTPRequestHandler):
    tries: dict[str, int] = {}
    protocol_version = "HTTP/1.1"

    def do_POST(self):  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers["content-length"]))
        path = self.path.split("/")[1]
        Hostile.tries[path] = Hostile.tries.get(path, 0) + 1
        try:
            getattr(self, "answer_" + path.replace("-", "_"))()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up, as it should

    def head(self, length: int | None = None, status: int = 200) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        if length is None:
            self.send_header("transfer-encoding", "chunked")
        else:
            self.send_header("content-length", str(length))
        self.end_headers()

    def answer_huge(self):  # says 600 MB, sends 3 MB
        self.head(600 * MIB)
        for _ in range(3):
            self.wfile.write(b" " * MIB)

    def answer_endless(self):  # chunked, no length: 3 MB of spaces before the JSON
        self.head()
        for _ in range(3):
            self.wfile.write(b"100000\r\n" + b" " * MIB + b"\r\n")
        self.wfile.write(b"0\r\n\r\n")

    def answer_hang(self):
        STOP.wait(30)

    def answer_drip(self):  # the answer, a byte every 0.1 s: each read returns within any socket time-out
        self.head(len(GOOD) + 400)
        for byte in b" " * 400 + GOOD:
            if STOP.wait(0.1):
                return
            self.wfile.write(bytes([byte]))
            self.wfile.flush()

    def answer_drip_headers(self):
        for byte in b"HTTP/1.1 200 OK\r\n" + b"x-slow: " + b"s" * 400:
            if STOP.wait(0.1):
                return
            self.wfile.write(bytes([byte]))
            self.wfile.flush()

    def answer_busy(self):  # 503 with a small body, every time
        self.head(2, 503)
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serving(handler: type[BaseHTTPRequestHandler], stop: threading.Event) -> Iterator[str]:
    """A stub endpoint on 127.0.0.1 (its URL) until the block ends; ``stop`` ends the handlers that wait."""
    stop.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.fixture(scope="module")
def hostile():
    with serving(Hostile, STOP) as url:
        yield url


def ask(url: str, timeout: float = 1.0, retries: int = 2) -> str:
    client = ChatClient(url, timeout=timeout, retries=retries, backoff=0.05)
    with pytest.raises(ChatError) as failed:
        client.complete([{"role": "user", "content": "which shard?"}])
    return str(failed.value)


def test_an_answer_over_the_cap_is_an_error_and_never_a_retry(hostile, monkeypatch):
    monkeypatch.setenv("TOKPROF_PROBE_MAX_ANSWER", "1")
    Hostile.tries.clear()
    for path in ("huge", "endless"):
        said = ask(f"{hostile}/{path}", timeout=20)
        assert "an answer over 1 MiB (TOKPROF_PROBE_MAX_ANSWER sets the cap in MiB)" in said, said
        assert "\n" not in said
    assert Hostile.tries == {"huge": 1, "endless": 1}


@pytest.mark.parametrize("path", ["hang", "drip", "drip-headers"])
def test_the_time_out_bounds_the_request_whole(hostile, path):
    """Each try took the whole time-out (3 tries and the back-off: 34 s for 2 requests at --timeout 5),
    and a drip reset it at every byte: the time-out is the request's, so one try ends at it."""
    Hostile.tries.clear()
    said = ask(f"{hostile}/{path}", timeout=1.0)
    assert said.endswith("/v1/chat/completions: no answer within 1 s"), said
    assert Hostile.tries == {path: 1}


def test_retries_happen_within_the_time_out(hostile):
    Hostile.tries.clear()
    assert ask(f"{hostile}/busy", timeout=20).endswith("HTTP 503 after 3 tries")
    assert Hostile.tries == {"busy": 3}


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), float("inf")])
def test_a_time_out_that_is_no_duration_is_refused(timeout):
    with pytest.raises(TokprofError, match="timeout: expected a positive number of seconds"):
        ChatClient("http://127.0.0.1:9", timeout=timeout)


def test_the_command_at_a_hanging_endpoint(hostile, tmp_path, capsys, model, trace):  # noqa: F811
    """Two requests (the control and one policy) at --timeout 1: one try each, errors in the report."""
    log = tmp_path / "log.json"
    log.write_text(json.dumps({"messages": trace.calls[-1].messages}), encoding="utf-8")
    Hostile.tries.clear()
    report = probe(
        trace, "Which shard?", SHARD, f"{hostile}/hang", ["window:4"], tokprof.Options(model=model), timeout=1.0
    )
    assert [r.count("error") for r in report.results] == [1, 1, 1]
    assert all(r.answers[0].text.endswith("no answer within 1 s") for r in report.results)
    assert Hostile.tries == {"hang": 3}
    code = main(["probe", str(log), "--question", "q", "--expect", SHARD, "--endpoint", hostile, "--timeout", "0"])
    err = capsys.readouterr().err
    assert code == 2 and err == "tokprof: error: --timeout: give a positive number of seconds\n"
