"""The recording proxy against a stub upstream on 127.0.0.1 (Anthropic JSON and streaming)."""

import asyncio
import json

import pytest

pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

import httpx  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.responses import Response, StreamingResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402

import tokprof  # noqa: E402
from tests.test_record_store import ANTHROPIC_STREAM  # noqa: E402
from tokprof.record.proxy import create_app  # noqa: E402
from tokprof.record.store import Recording  # noqa: E402
from tokprof.serve import Running  # noqa: E402

REPLY = {"type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": "hi"}],
         "usage": {"input_tokens": 7, "output_tokens": 1}}


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
    body = {"model": "claude-sonnet-4-5", "max_tokens": 5, "system": "Be brief.",
            "messages": [{"role": "user", "content": "hi"}]}
    with Running(STUB) as stub:
        with Running(create_app(recording, {"anthropic": stub.url})) as proxy:
            with httpx.Client(timeout=10) as client:
                headers = {"x-api-key": "sk-secret", "anthropic-version": "2023-06-01"}
                plain = client.post(proxy.url + "/anthropic/v1/messages", json=body, headers=headers)
                assert plain.status_code == 200 and plain.json() == REPLY and plain.headers["x-stub"] == "1"
                streamed = client.post(proxy.url + "/anthropic/v1/messages", json={**body, "stream": True},
                                       headers=headers)
                assert streamed.text == ANTHROPIC_STREAM
    recording.close()
    text = open(recording.path).read()
    assert "sk-secret" not in text
    lines = [json.loads(line) for line in text.splitlines()]
    assert [line["request"]["body"] for line in lines] == [body, {**body, "stream": True}]
    assert lines[1]["response"]["body_raw"] == ANTHROPIC_STREAM
    trace = tokprof.read_log(recording.path)
    assert [call.reported.prompt for call in trace.calls] == [7, 42]
