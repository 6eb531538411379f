"""tokprof profile DIR on a folder of recordings (issue #28 item 6): a recording made through the
proxy, against a stub upstream on 127.0.0.1, profiles to the same figures as the same requests given
as a capture; its composition holds the system prompt and every tool definition, rolled up per MCP
server; threads are shown. The requests are written here by hand (Anthropic JSON and a stream, an
OpenAI Chat Completions call of an open model)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

import httpx
from starlette.applications import Starlette
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from tokprof.runs.sessions import recordings
from tokprof.frontends.cli import main
from tokprof.frontends.record.proxy import create_app
from tokprof.frontends.record.store import Recording
from tokprof.frontends.serve import Running

SYSTEM = "You are a coding agent working in a repository. Use the tools to look before you change anything."
TOOLS = [
    {
        "name": "mcp__github__create_issue",
        "description": "Create an issue in a GitHub repository.",
        "input_schema": {
            "type": "object",
            "properties": {"title": {"type": "string"}, "body": {"type": "string"}},
            "required": ["title"],
        },
    },
    {
        "name": "mcp__github__list_pull_requests",
        "description": "List the open pull requests.",
        "input_schema": {"type": "object", "properties": {"state": {"type": "string"}}},
    },
    {
        "name": "mcp__slack__post_message",
        "description": "Post a message to a Slack channel.",
        "input_schema": {"type": "object", "properties": {"channel": {"type": "string"}, "text": {"type": "string"}}},
    },
    {
        "name": "Read",
        "description": "Read a file of the workspace.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
]


@pytest.fixture(autouse=True)
def _wide(monkeypatch):
    """Tables as wide as these tests read them, whatever the terminal running the tests is."""
    monkeypatch.setenv("COLUMNS", "160")


def usage(body: dict) -> dict:
    size = len(json.dumps(body))  # a stand-in for the provider's count: grows with the prompt
    return {
        "input_tokens": size // 40,
        "cache_creation_input_tokens": size // 400,
        "cache_read_input_tokens": size // 5,
        "output_tokens": 12,
    }


def answer(body: dict) -> dict:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": body["model"],
        "stop_reason": "end_turn",
        "content": [{"type": "text", "text": "Filed it."}],
        "usage": usage(body),
    }


def stream(body: dict) -> str:
    start = {
        "type": "message_start",
        "message": {**answer(body), "content": [], "stop_reason": None, "usage": {**usage(body), "output_tokens": 1}},
    }
    events = [
        ("message_start", start),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Filed it."}},
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 12}},
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)


async def messages(request):
    body = json.loads(await request.body())
    if body.get("stream"):
        return StreamingResponse(
            iter([part + "\n\n" for part in stream(body).split("\n\n")[:-1]]), media_type="text/event-stream"
        )
    return Response(json.dumps(answer(body)), media_type="application/json")


def chat_answer(body: dict) -> dict:
    return {
        "id": "c1",
        "object": "chat.completion",
        "model": body["model"],
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10 + len(json.dumps(body)) // 4, "completion_tokens": 1},
    }


async def chat(request):
    return Response(json.dumps(chat_answer(json.loads(await request.body()))), media_type="application/json")


STUB = Starlette(
    routes=[Route("/v1/messages", messages, methods=["POST"]), Route("/v1/chat/completions", chat, methods=["POST"])]
)


def conversation(turns: int) -> list[dict]:
    out: list[dict] = [{"role": "user", "content": "File an issue about the flaky upload test, then tell #dev."}]
    for i in range(turns):
        tool = ["Read", "mcp__github__create_issue"][i % 2]
        out += [
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Looking."},
                    {
                        "type": "tool_use",
                        "id": f"toolu_{i}",
                        "name": tool,
                        "input": {"path": f"tests/test_upload_{i}.py"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": f"toolu_{i}",
                        "content": f"def test_upload_{i}():\n    assert upload() == 'ok'\n" * 30,
                    }
                ],
            },
        ]
    return out


def requests() -> list[dict]:
    main = [
        {
            "model": "claude-sonnet-4-5",
            "max_tokens": 1000,
            "system": SYSTEM,
            "tools": TOOLS,
            "messages": conversation(turns),
            **({"stream": True} if turns == 1 else {}),
        }
        for turns in range(3)
    ]
    side = {
        "model": "claude-haiku-4-5",
        "max_tokens": 50,
        "system": "Write a 5-word title.",
        "messages": [{"role": "user", "content": "File an issue about the flaky upload test."}],
    }
    return [main[0], side, main[1], main[2]]


def test_a_recording_profiles_like_the_same_requests_as_a_capture(tmp_path):
    folder = tmp_path / "recordings"
    recording = Recording(str(folder), "claude")
    with Running(STUB) as stub, Running(create_app(recording, {"anthropic": stub.url})) as proxy:
        with httpx.Client(timeout=10) as client:
            for body in requests():
                assert (
                    client.post(
                        proxy.url + "/anthropic/v1/messages", json=body, headers={"x-api-key": "sk-test"}
                    ).status_code
                    == 200
                )
            count = {"model": "claude-sonnet-4-5", "messages": conversation(0)}
            client.post(proxy.url + "/anthropic/v1/messages/count_tokens", json=count)  # recorded, not a call
    recording.close()
    capture = tmp_path / "capture.jsonl"
    capture.write_text(
        as_capture(recording.path, requests(), lambda body: stream(body) if body.get("stream") else answer(body))
    )

    assert recordings(folder) == [recording.path]
    recorded = profile_json(folder)
    given = profile_json(capture)
    for doc in (recorded, given):
        doc.pop("source")
    assert recorded == given, "\n".join(map(repr, _diff(recorded, given)))
    calls = recorded["calls"]
    assert [c["thread"] for c in calls] == [None, "side-1", None, None]
    for c in calls:
        assert sum(c["buckets"].values()) == c["reported"]["prompt"]  # anchored on the reported usage
        assert "unrecorded" not in c["buckets"] or c["buckets"]["unrecorded"] == 0  # a recording holds it all
    assert all(calls[i]["buckets"]["system"] > 0 and calls[i]["buckets"]["tool_definitions"] > 0 for i in (0, 2, 3))
    assert calls[3]["buckets"]["tool_results"] > 0 and not recorded["model"]["exact"]


def as_capture(recorded: str, bodies: list[dict], response) -> str:
    """The same requests as {request, response} pairs, at the times the recording gives its calls."""
    times = [
        json.loads(line)["request"]["timestamp"]
        for line in open(recorded)
        if json.loads(line)["request"]["url"].endswith(("/v1/messages", "/chat/completions"))
    ]
    assert len(times) == len(bodies)
    return "".join(
        json.dumps({"request": body, "response": response(body), "timestamp": at}) + "\n"
        for body, at in zip(bodies, times)
    )


def profile_json(path, capsys=None) -> dict:
    out = path.parent / (path.name + ".json")
    assert main(["profile", str(path), "-f", "json", "-o", str(out), "--no-progress"]) == 0
    return json.loads(out.read_text())


def test_the_table_rolls_the_catalogue_up_per_mcp_server(tmp_path, capsys):
    capture = tmp_path / "capture.jsonl"
    capture.write_text("".join(json.dumps({"request": body, "response": answer(body)}) + "\n" for body in requests()))
    assert main(["profile", str(capture), "--no-progress"]) == 0
    out = capsys.readouterr().out
    section = out[out.index("MCP servers (from the tool names") :]
    rows = [line.split() for line in section.splitlines()[2:5]]
    assert [row[0] for row in rows] == ["github", "slack", "(not"]
    assert rows[0][1:5] == ["2", "1", rows[0][3], "1"]  # two tools, one never called, one call
    assert int(rows[0][5].replace(",", "")) > 0  # its result's tokens
    assert any(line.split()[:2] == ["call", "thread"] for line in out.splitlines())  # the threads are shown
    assert any(line.split()[:2] == ["1", "side-1"] for line in out.splitlines())


def test_an_open_model_recorded_is_counted_exactly(tmp_path):
    folder = tmp_path / "recordings"
    recording = Recording(str(folder), "agent")
    body = {
        "model": "qwen2.5-7b-instruct",
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "hello"}],
        "tools": [
            {
                "type": "function",
                "function": {"name": t["name"], "description": t["description"], "parameters": t["input_schema"]},
            }
            for t in TOOLS
        ],
    }
    with Running(STUB) as stub, Running(create_app(recording, {"openai": stub.url})) as proxy:
        assert httpx.post(proxy.url + "/openai/v1/chat/completions", json=body, timeout=10).status_code == 200
    recording.close()
    capture = tmp_path / "capture.jsonl"
    capture.write_text(as_capture(recording.path, [body], chat_answer))
    recorded, given = profile_json(folder), profile_json(capture)
    assert recorded["model"]["exact"] and recorded["calls"] == given["calls"], list(
        _diff(recorded["calls"], given["calls"])
    )[:10]
    assert recorded["calls"][0]["buckets"]["tool_definitions"] > 0


def test_several_recordings_profile_the_newest_or_the_one_named(tmp_path, capsys):
    folder = tmp_path / "recordings"
    folder.mkdir()
    line = (
        json.dumps(
            {
                "request": {
                    "timestamp": 1.0,
                    "method": "POST",
                    "url": "https://api.anthropic.com/v1/messages",
                    "headers": {},
                    "body": requests()[0],
                },
                "response": {"timestamp": 2.0, "status_code": 200, "headers": {}, "body": answer(requests()[0])},
                "logged_at": "2026-12-01T21:00:00Z",
                "tokprof_record": {"version": "x", "complete": True, "error": None},
            }
        )
        + "\n"
    )
    (folder / "20261201T210000Z-claude.jsonl").write_text(line)
    (folder / "20261201T220000Z-codex.jsonl").write_text(line + line)
    assert main(["profile", str(folder), "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert "20261201T220000Z-codex.jsonl" in out and "2 recordings; the newest" in err
    assert main(["profile", str(folder), "--session", "T2100", "--no-progress"]) == 0
    assert "20261201T210000Z-claude.jsonl" in capsys.readouterr().out
    assert main(["profile", str(folder), "--session", "nothing", "--no-progress"]) == 2
    assert "no recordings match" in capsys.readouterr().err
    (folder / "notes.jsonl").write_text('{"a": 1}\n')  # another file: no longer a folder of recordings
    assert recordings(folder) == []


def _diff(a, b, where=""):  # debugging aid
    if isinstance(a, dict) and isinstance(b, dict):
        for k in set(a) | set(b):
            yield from _diff(a.get(k), b.get(k), f"{where}/{k}")
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            yield from _diff(x, y, f"{where}/{i}")
    elif a != b:
        yield where, a, b
