"""The recording proxy against a stub upstream on 127.0.0.1 (Anthropic JSON and streaming)."""

import asyncio
import json

import pytest

pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

import httpx
from starlette.applications import Starlette
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

import tokprof
from test_record_store import ANTHROPIC_STREAM
from tokprof.frontends.record.proxy import create_app
from tokprof.frontends.record.store import Recording
from tokprof.frontends.serve import Running

REPLY = {
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "hi"}],
    "usage": {"input_tokens": 7, "output_tokens": 1},
}


async def _messages(request):
    body = json.loads(await request.body())
    if body.get("stream"):

        async def events():
            for part in ANTHROPIC_STREAM.split("\n\n")[:-1]:
                yield (part + "\n\n").encode()
                await asyncio.sleep(0.01)

        return StreamingResponse(events(), media_type="text/event-stream")
    return Response(json.dumps(REPLY), media_type="application/json", headers={"x-stub": "1"})


STUB = Starlette(routes=[Route("/v1/messages", _messages, methods=["POST"])])


def test_json_and_streams_pass_unchanged_and_are_recorded(tmp_path):
    recording = Recording(str(tmp_path), "test")
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 5,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": "hi"}],
    }
    with Running(STUB) as stub:
        with Running(create_app(recording, {"anthropic": stub.url})) as proxy:
            with httpx.Client(timeout=10) as client:
                headers = {"x-api-key": "sk-secret", "anthropic-version": "2023-06-01"}
                plain = client.post(proxy.url + "/anthropic/v1/messages", json=body, headers=headers)
                assert plain.status_code == 200 and plain.json() == REPLY and plain.headers["x-stub"] == "1"
                streamed = client.post(
                    proxy.url + "/anthropic/v1/messages", json={**body, "stream": True}, headers=headers
                )
                assert streamed.text == ANTHROPIC_STREAM
    recording.close()
    text = open(recording.path).read()
    assert "sk-secret" not in text
    lines = [json.loads(line) for line in text.splitlines()]
    assert [line["request"]["body"] for line in lines] == [body, {**body, "stream": True}]
    assert lines[1]["response"]["body_raw"] == ANTHROPIC_STREAM
    trace = tokprof.read_log(recording.path)
    assert [call.reported.prompt for call in trace.calls] == [7, 42]


class _Cut(Exception):
    pass


async def _cut(request):
    await request.body()

    async def events():
        yield ANTHROPIC_STREAM[:200].encode()  # stops mid-event, then the connection drops
        await asyncio.sleep(0.01)
        raise _Cut()

    return StreamingResponse(events(), media_type="text/event-stream")


async def _error(request):
    return Response(
        '{"type":"error","error":{"type":"overloaded_error","message":"busy"}}',
        status_code=529,
        media_type="application/json",
    )


STUB_FAULTS = Starlette(
    routes=[Route("/v1/messages", _cut, methods=["POST"]), Route("/v1/chat/completions", _error, methods=["POST"])]
)


def test_errors_and_disconnects_are_passed_on_and_recorded(tmp_path):
    import logging

    logging.getLogger("uvicorn.error").setLevel(logging.CRITICAL)  # the stub's own cut is expected
    recording = Recording(str(tmp_path), "test")
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 5,
        "stream": True,
        "messages": [{"role": "user", "content": "x"}],
    }
    with Running(STUB_FAULTS) as stub:
        with Running(create_app(recording, {"anthropic": stub.url, "openai": stub.url})) as proxy:
            with httpx.Client(timeout=10) as client:
                failed = client.post(
                    proxy.url + "/openai/v1/chat/completions", json={"model": "gpt-4o", "messages": []}
                )
                assert failed.status_code == 529 and failed.json()["error"]["type"] == "overloaded_error"
                with pytest.raises(httpx.HTTPError):
                    client.post(proxy.url + "/anthropic/v1/messages", json=body)
    recording.close()
    lines = [json.loads(line) for line in open(recording.path).read().splitlines()]
    assert [line["response"]["status_code"] for line in lines] == [529, 200]
    assert lines[1]["tokprof_record"]["complete"] is False
    assert lines[1]["response"]["body_raw"] == ANTHROPIC_STREAM[:200]


def test_ten_concurrent_streams(tmp_path):
    recording = Recording(str(tmp_path), "test")
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 5,
        "stream": True,
        "messages": [{"role": "user", "content": "x"}],
    }

    async def run(url):
        async with httpx.AsyncClient(timeout=20) as client:
            answers = await asyncio.gather(*(client.post(url + "/anthropic/v1/messages", json=body) for _ in range(10)))
        return [a.text for a in answers]

    with Running(STUB) as stub:
        with Running(create_app(recording, {"anthropic": stub.url})) as proxy:
            texts = asyncio.run(run(proxy.url))
    recording.close()
    assert texts == [ANTHROPIC_STREAM] * 10
    assert len(open(recording.path).read().splitlines()) == 10


def test_the_command_runs_the_agent_through_the_proxy(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    agent = (
        "import httpx, os, json\n"
        "r = httpx.post(os.environ['ANTHROPIC_BASE_URL'] + '/v1/messages', timeout=10, headers={'x-api-key': 'sk-x'},\n"
        "               json={'model': 'claude-sonnet-4-5', 'max_tokens': 5, 'messages': [{'role': 'user', 'content': 'hi'}]})\n"
        "print(r.status_code)\n"
    )
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root), "HOME": str(tmp_path)}
    with Running(STUB) as stub:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "tokprof",
                "record",
                "-o",
                str(tmp_path / "rec"),
                "--upstream",
                stub.url,
                "--",
                sys.executable,
                "-c",
                agent,
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "200"
    assert (
        "tokprof record: claude-sonnet-4-5 · prompt 7 = system 0 + tools 0 + results 0 + conversation 7 (estimate) "
        "· ctx 0% of 200k · cache read 0% so far · <$0.0001 so far" in done.stderr
    )
    files = list((tmp_path / "rec").iterdir())
    assert len(files) == 1 and files[0].name.endswith("-python.jsonl") or "python" in files[0].name
    calls = tokprof.read_log(files[0]).calls
    assert [call.reported.prompt for call in calls] == [7]


async def _endless(request):
    body = json.loads(await request.body())
    if not body.get("stream"):
        return await _messages(request)

    async def events():
        yield ANTHROPIC_STREAM.split("\n\n")[0].encode() + b"\n\n"
        for _ in range(600):  # never finishes within the test (bounded: a minute at most)
            await asyncio.sleep(0.1)
            yield b": ping\n\n"

    return StreamingResponse(events(), media_type="text/event-stream")


def test_a_recorder_killed_mid_stream_leaves_a_readable_file(tmp_path):
    import os
    import socket
    import subprocess
    import sys
    import time
    from pathlib import Path

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root), "HOME": str(tmp_path)}
    body = {"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
    stub_app = Starlette(routes=[Route("/v1/messages", _endless, methods=["POST"])])
    with Running(stub_app) as stub:
        recorder = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tokprof",
                "record",
                "-q",
                "-o",
                str(tmp_path / "rec"),
                "--port",
                str(port),
                "--upstream",
                stub.url,
            ],
            env=env,
            cwd=tmp_path,
            stderr=subprocess.DEVNULL,
        )
        try:
            url = f"http://127.0.0.1:{port}/anthropic/v1/messages"
            deadline = time.monotonic() + 30
            while True:
                try:
                    assert httpx.post(url, json=body, timeout=10).status_code == 200
                    break
                except httpx.ConnectError:
                    assert time.monotonic() < deadline
                    time.sleep(0.1)
            with httpx.stream("POST", url, json={**body, "stream": True}, timeout=10) as answer:
                next(answer.iter_raw())
                recorder.kill()
                recorder.wait(10)  # dead while the stream is still open: that call is lost, no more
        finally:
            recorder.kill()
            recorder.wait(10)
    files = list((tmp_path / "rec").iterdir())
    calls = tokprof.read_log(files[0]).calls  # readable: no line half-written
    prompts = [call.reported.prompt for call in calls]
    # the open stream is lost with the recorder, or (seen only under load in the full suite, cause not yet
    # found) saved first as an incomplete call: never more than that, never a broken line
    assert prompts in ([7], [7, 42]), prompts
