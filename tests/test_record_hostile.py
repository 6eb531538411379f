"""tokprof record against hostile upstreams (#45 items 5 and 12): a compressed body that inflates far
past the cap, an event stream past it, a recorder that fails; the agent's answer is relayed whole
every time, the recording keeps at most the cap (``TOKPROF_RECORD_MAX_BODY``, lowered to 1 MiB here
so that "huge" is a few MB) and says what it did not keep. Stub upstreams on 127.0.0.1."""

from __future__ import annotations

import gzip
import json
from types import SimpleNamespace

import pytest

pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

import httpx
from starlette.applications import Starlette
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

import tokprof
from tokprof.frontends.cli import main
from tokprof.frontends.record.proxy import create_app
from tokprof.frontends.record.store import Recording
from tokprof.frontends.serve import Running

MIB = 1024 * 1024
REQUEST = {"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
#: A JSON answer of 8 MiB that gzip makes about 8 KB.
BOMB = gzip.compress(b'{"type":"message","content":[{"type":"text","text":"' + b"a" * (8 * MIB) + b'"}]}', 9)
START = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant",'
    b'"model":"claude-sonnet-4-5","content":[],"usage":{"input_tokens":7,"output_tokens":1}}}\n\n'
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
    b'"content_block":{"type":"text","text":""}}\n\n'
)
DELTA = (
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
    '"delta":{"type":"text_delta","text":"' + "x" * 1000 + '"}}\n\n'
).encode()
DELTAS = 1500  # about 1.5 MB of events: past the 1 MiB cap


async def _bomb(request):
    await request.body()
    return Response(BOMB, media_type="application/json", headers={"content-encoding": "gzip"})


async def _zstd(request):
    import zstandard

    await request.body()
    data = zstandard.ZstdCompressor().compress(b"z" * (4 * MIB))
    return Response(data, media_type="application/json", headers={"content-encoding": "zstd"})


async def _events(request):
    await request.body()

    async def events():
        yield START
        for _ in range(DELTAS):
            yield DELTA

    return StreamingResponse(events(), media_type="text/event-stream")


async def _models(request):
    return Response(b"m" * (3 * MIB), media_type="application/octet-stream")


STUB = Starlette(
    routes=[
        Route("/v1/messages", _bomb, methods=["POST"]),
        Route("/zstd/v1/messages", _zstd, methods=["POST"]),
        Route("/stream/v1/messages", _events, methods=["POST"]),
        Route("/v1/models", _models, methods=["GET"]),
    ]
)


def raw(client: httpx.Client, url: str, method: str = "POST") -> bytes:
    with client.stream(method, url, json=REQUEST if method == "POST" else None) as answer:
        assert answer.status_code == 200
        return b"".join(answer.iter_raw())


def lines(recording: Recording) -> list[dict]:
    with open(recording.path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture
def small_cap(monkeypatch):
    monkeypatch.setenv("TOKPROF_RECORD_MAX_BODY", "1")


def test_a_gzip_bomb_is_relayed_whole_and_recorded_up_to_the_cap(tmp_path, small_cap):
    recording = Recording(str(tmp_path), "test")
    with Running(STUB) as stub, Running(create_app(recording, {"anthropic": stub.url})) as proxy:
        with httpx.Client(timeout=30) as client:
            got = raw(client, proxy.url + "/anthropic/v1/messages")
            zstd = raw(client, proxy.url + "/anthropic/zstd/v1/messages")
    recording.close()
    assert got == BOMB  # the agent's answer, byte for byte, still compressed
    assert len(zstd) < MIB
    bomb, packed = lines(recording)
    for line in (bomb, packed):
        mark = line["tokprof_record"]
        assert mark["complete"] is True and mark["error"] is None
        assert mark["not_recorded"].startswith("not recorded: the response body past its first 1 MiB decoded")
        assert "TOKPROF_RECORD_MAX_BODY" in mark["not_recorded"]
        assert line["response"]["body"] is None and "body_raw" not in line["response"]
    assert f"{len(BOMB):,} bytes received" in bomb["tokprof_record"]["not_recorded"]
    assert [call.reported for call in tokprof.read_log(recording.path).calls] == [None, None]
    assert list(tmp_path.iterdir()) == [tmp_path / recording.path.rsplit("/", 1)[-1]]  # no spool left


def test_an_event_stream_past_the_cap_keeps_its_whole_first_events(tmp_path, small_cap):
    recording = Recording(str(tmp_path), "test")
    with Running(STUB) as stub, Running(create_app(recording, {"anthropic": stub.url})) as proxy:
        with httpx.Client(timeout=30) as client:
            got = raw(client, proxy.url + "/anthropic/stream/v1/messages")
            other = raw(client, proxy.url + "/anthropic/v1/models", "GET")  # not recorded: nothing kept
    recording.close()
    assert got == START + DELTA * DELTAS and len(other) == 3 * MIB
    (line,) = lines(recording)
    text = line["response"]["body_raw"]
    assert len(text) <= MIB and text.endswith("\n\n") and text.count("event: content_block_delta") < DELTAS
    assert (len(text) - len(START)) % len(DELTA) == 0  # whole events, the one the cap cut left out
    assert line["response"]["body"]["usage"]["input_tokens"] == 7
    assert "past its first 1 MiB" in line["tokprof_record"]["not_recorded"]
    assert [call.reported.prompt for call in tokprof.read_log(recording.path).calls] == [7]


def test_a_recorder_that_fails_never_cuts_the_agent_off(tmp_path, monkeypatch):
    """No memory for a line (the 1 GB body did that on main: MemoryError, the client's answer cut off
    and a 0-byte recording), no room for the spool, a full disk: the answer is relayed whole each
    time, and the recording says what it could not keep where it still can."""
    real = Recording.append
    trouble = {"append": "memory once"}

    def append(self, ex):
        if trouble["append"] == "memory once" and ex.not_recorded is None:
            trouble["append"] = ""
            raise MemoryError()
        if trouble["append"] == "disk full":
            raise OSError(28, "No space left on device")
        return real(self, ex)

    def no_spool(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Recording, "append", append)
    recording = Recording(str(tmp_path), "test")
    url = "/anthropic/stream/v1/messages"
    with Running(STUB) as stub, Running(create_app(recording, {"anthropic": stub.url})) as proxy:
        with httpx.Client(timeout=30) as client:
            assert raw(client, proxy.url + url) == START + DELTA * DELTAS
            with monkeypatch.context() as patch:
                patch.setattr("tokprof.frontends.record.body.tempfile", SimpleNamespace(TemporaryFile=no_spool))
                assert raw(client, proxy.url + url) == START + DELTA * DELTAS
            trouble["append"] = "disk full"
            assert raw(client, proxy.url + url) == START + DELTA * DELTAS
    recording.close()
    memory, spool = lines(recording)  # the third call: no line (the disk is "full"), and no trouble
    assert memory["tokprof_record"] == {
        "version": tokprof.__version__,
        "complete": False,
        "error": "not recorded: MemoryError",
        "not_recorded": "not recorded: MemoryError",
    }
    assert memory["request"]["headers"] == {} and memory["response"]["body"] is None
    assert spool["tokprof_record"]["complete"] is True
    assert spool["tokprof_record"]["not_recorded"] == "not recorded: the response body (no temporary file (OSError))"
    assert spool["request"]["body"] == REQUEST


def test_record_into_a_file_is_one_line(tmp_path, capsys):
    """#45 item 12: ``record -o /etc/passwd`` was a FileExistsError traceback."""
    target = tmp_path / "passwd"
    target.write_text("root:x:0:0\n")
    link = tmp_path / "link"
    link.symlink_to(target)
    for given in (target, link, tmp_path / "passwd" / "sub"):
        assert main(["record", "-o", str(given), "--", "true"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("tokprof: error: ") and err.count("\n") == 1 and str(given) in err, err
    assert target.read_text() == "root:x:0:0\n"
