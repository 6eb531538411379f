"""The Anthropic Messages reader: claude-trace captures, pairs, bare bodies, streams, usage, detection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import ROOT, write_json
from tokprof.frontends.cli import main
from tokprof.base.errors import InputError
from tokprof.formats import anthropic, read_trace
from tokprof.formats.jsonfile import load

URL = "https://api.anthropic.com/v1/messages?beta=true"
SECRET = "sk-ant-api03-SECRET-do-not-leak"
SYSTEM = [
    {"type": "text", "text": "You are a test bot.", "cache_control": {"type": "ephemeral"}},
    {"type": "text", "text": "Look up a word."},
]
LOOKUP = {
    "name": "lookup",
    "description": "Look up a word.",
    "input_schema": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
    "cache_control": {"type": "ephemeral"},
}
BASH = {"type": "bash_20250124", "name": "bash"}


# -- fixtures ----------------------------------------------------------------------------------------
def sse(*events: dict) -> str:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


def message_start(usage: dict) -> dict:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [],
        "stop_reason": None,
        "usage": usage,
    }
    return {"type": "message_start", "message": message}


def traced(body, response: dict | None = None, raw: str | None = None, status: int = 200, url: str = URL) -> dict:
    """One claude-trace line, with credentials in the headers (they must never come out)."""
    out = {
        "request": {
            "timestamp": 1767268800.5,
            "method": "POST",
            "url": url,
            "headers": {"x-api-key": SECRET, "anthropic-version": "2023-06-01"},
            "body": body,
        },
        "response": {"timestamp": 1767268801.0, "status_code": status, "headers": {"request-id": "req_SECRETHEADER"}},
        "logged_at": "2026-01-01T12:00:01.000Z",
    }
    if raw is not None:
        out["response"]["body_raw"] = raw
    else:
        out["response"]["body"] = response
    return out


def first_body() -> dict:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "stream": True,
        "system": SYSTEM,
        "tools": [LOOKUP, BASH],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "define cat"}]}],
    }


def first_stream() -> str:
    return sse(
        message_start(
            {"input_tokens": 10, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 0, "output_tokens": 1}
        ),
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "a cat"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "ping"},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Look"}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": " up"}},
        {"type": "content_block_stop", "index": 1},
        {
            "type": "content_block_start",
            "index": 2,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}},
        },
        {"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": '{"word": '}},
        {"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": '"cat"}'}},
        {"type": "content_block_stop", "index": 2},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 42}},
        {"type": "message_stop"},
    )


def conversation() -> list[dict]:
    """user, assistant (thinking, text, tool_use), user (tool_result, text)."""
    return [
        {"role": "user", "content": "define cat"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "a cat", "signature": "sig"},
                {"type": "text", "text": "Look up"},
                {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"word": "cat"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": "cat is an animal",
                    "cache_control": {"type": "ephemeral"},
                },
                {"type": "text", "text": "define dog"},
            ],
        },
    ]


def second_body() -> dict:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": SYSTEM,
        "tools": [LOOKUP, BASH],
        "messages": conversation(),
    }


SECOND_RESPONSE = {
    "id": "msg_2",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "A cat is an animal."}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 5, "cache_creation_input_tokens": 20, "cache_read_input_tokens": 100, "output_tokens": 7},
}


def cut_body() -> dict:
    messages = conversation()
    messages[2]["content"][0]["content"] = [
        {"type": "text", "text": "cat is an animal"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
    ]
    messages += [
        {"role": "assistant", "content": "A cat is an animal."},
        {
            "role": "user",
            "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
                {"type": "text", "text": "what is this"},
            ],
        },
    ]
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "stream": True,
        "system": SYSTEM,
        "tools": [LOOKUP, BASH],
        "messages": messages,
    }


CUT_STREAM = sse(
    message_start({"input_tokens": 3, "cache_read_input_tokens": 120, "output_tokens": 1}),
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "A dog"}},
)
ERROR_BODY = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
STREAM_ERROR = sse(
    message_start({"input_tokens": 3, "output_tokens": 1}),
    {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}},
)


def claude_trace_lines() -> list[dict]:
    return [
        {
            "request": {
                "timestamp": 1767268790.0,
                "method": "POST",
                "url": "https://statsig.anthropic.com/v1/rgstr",
                "headers": {"x-api-key": SECRET},
                "body": {"events": [{"eventName": "start"}]},
            },
            "response": {"status_code": 202, "headers": {}, "body": {"success": True}},
        },
        {
            "request": {
                "timestamp": 1767268791.0,
                "method": "GET",
                "url": "https://api.anthropic.com/v1/models",
                "headers": {"x-api-key": SECRET},
                "body": None,
            },
            "response": {"status_code": 200, "headers": {}, "body": {"data": []}},
        },
        traced(
            {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "define cat"}]},
            {"input_tokens": 12},
            url="https://api.anthropic.com/v1/messages/count_tokens",
        ),
        traced(first_body(), raw=first_stream()),  # line 4: call 0, streamed
        traced(second_body(), SECOND_RESPONSE),  # line 5: call 1, JSON
        traced(second_body(), ERROR_BODY, status=529),  # line 6: skipped
        traced(cut_body(), raw=CUT_STREAM),  # line 7: call 2, cut off
        traced(second_body(), raw=STREAM_ERROR),  # line 8: skipped
    ]


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture
def trace_file(tmp_path) -> Path:
    return write_jsonl(tmp_path / "log-2026-01-01.jsonl", claude_trace_lines())


def read(path: Path):
    return anthropic.read(str(path), load(str(path)))


def notes(trace) -> dict[str, list[str]]:
    return {n.code: n.places for n in trace.notes}


# -- reading claude-trace --------------------------------------------------------------------------
def test_claude_trace_calls_and_skips(trace_file):
    trace = read(trace_file)
    assert trace.format == "anthropic/jsonl"
    assert trace.model == "claude-sonnet-4-5"
    assert [c.where for c in trace.calls] == ["line 4", "line 5", "line 7"]
    assert [c.index for c in trace.calls] == [0, 1, 2]
    assert all(str(c.day) == "2026-01-01" for c in trace.calls)
    found = notes(trace)
    assert found["error-response"] == ["line 6 (HTTP 529 overloaded_error)", "line 8 (api_error in the stream)"]
    assert found["stream-cut"] == ["line 7"]
    assert found["content-not-text"] == [
        "line 7: request.body.messages[2].content[0].content[1] (image)",
        "line 7: request.body.messages[4].content[0] (image)",
    ]
    assert found["server-tool"] == ["line 4: request.body.tools[1] (bash_20250124)"]  # once per kind
    assert "other-endpoint" not in found  # telemetry, /v1/models and count_tokens are skipped quietly


def test_system_and_tools(trace_file):
    call = read(trace_file).calls[0]
    assert call.messages == [
        {"role": "system", "content": "You are a test bot.\nLook up a word."},
        {"role": "user", "content": "define cat"},
    ]
    assert call.tools == [
        {
            "type": "function",
            "function": {"name": "lookup", "description": "Look up a word.", "parameters": LOOKUP["input_schema"]},
        },
        {"type": "function", "function": {"name": "bash", "description": "", "parameters": {"type": "bash_20250124"}}},
    ]


def test_streamed_response_and_usage(trace_file):
    call = read(trace_file).calls[0]
    assert call.reported.to_dict() == {"prompt": 110, "cache_read": 0, "cache_write": 100, "output": 42}
    assert call.response == {
        "role": "assistant",
        "content": "Look up",
        "reasoning_content": "a cat",
        "tool_calls": [
            {"id": "toolu_1", "type": "function", "function": {"name": "lookup", "arguments": '{"word": "cat"}'}}
        ],
    }


def test_tool_round_trip_and_json_response(trace_file):
    call = read(trace_file).calls[1]
    assert call.messages[1:] == [
        {"role": "user", "content": "define cat"},
        {
            "role": "assistant",
            "content": "Look up",
            "reasoning_content": "a cat",
            "tool_calls": [
                {"id": "toolu_1", "type": "function", "function": {"name": "lookup", "arguments": '{"word": "cat"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "toolu_1", "content": "cat is an animal"},
        {"role": "user", "content": "define dog"},
    ]
    assert call.reported.to_dict() == {"prompt": 125, "cache_read": 100, "cache_write": 20, "output": 7}
    assert call.response == {"role": "assistant", "content": "A cat is an animal."}


def test_cut_stream_keeps_the_call_and_drops_images(trace_file):
    call = read(trace_file).calls[2]
    # missing cache_creation counts as 0 because input_tokens is there
    assert call.reported.to_dict() == {"prompt": 123, "cache_read": 120, "cache_write": 0, "output": 1}
    assert call.messages[3] == {"role": "tool", "tool_call_id": "toolu_1", "content": "cat is an animal"}
    assert call.messages[-1] == {"role": "user", "content": "what is this"}
    assert call.response == {"role": "assistant", "content": "A dog"}


def test_message_delta_usage_replaces_start_usage(tmp_path):
    """message_delta usage is cumulative: with server tools it carries the final input counts too."""
    stream = sse(
        message_start({"input_tokens": 10, "cache_read_input_tokens": 5, "output_tokens": 1}),
        {"type": "message_delta", "delta": {}, "usage": {"output_tokens": 3}},
        {
            "type": "message_delta",
            "delta": {},
            "usage": {
                "input_tokens": 30,
                "cache_read_input_tokens": 5,
                "output_tokens": 9,
                "server_tool_use": {"web_search_requests": 1},
            },
        },
        {"type": "message_stop"},
    )
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    trace = read(write_jsonl(tmp_path / "log.jsonl", [{"request": body, "response": stream}]))
    assert trace.calls[0].reported.to_dict() == {"prompt": 35, "cache_read": 5, "cache_write": 0, "output": 9}
    assert trace.calls[0].response is None
    assert trace.notes == []


def test_usage_without_input_tokens(tmp_path):
    response = {"type": "message", "content": [], "usage": {"output_tokens": 4}}
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    call = read(write_jsonl(tmp_path / "log.jsonl", [{"request": body, "response": response}])).calls[0]
    assert call.reported.to_dict() == {"prompt": None, "cache_read": None, "cache_write": None, "output": 4}


# -- message shapes --------------------------------------------------------------------------------
def test_tool_results_come_before_the_remaining_text(tmp_path):
    body = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "a", "name": "lookup", "input": {"word": "çat"}},
                    {"type": "tool_use", "id": "b", "name": "lookup", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "before"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "a",
                        "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}],
                    },
                    {"type": "tool_result", "tool_use_id": "b", "is_error": True},
                    {"type": "text", "text": "after"},
                ],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b", "content": "again"}]},
        ],
    }
    messages = read(write_json(tmp_path / "one.json", body)).calls[0].messages
    assert messages[1]["content"] is None
    assert messages[1]["tool_calls"][0]["function"]["arguments"] == '{"word": "çat"}'
    assert messages[2:] == [
        {"role": "tool", "tool_call_id": "a", "content": "one\ntwo"},
        {"role": "tool", "tool_call_id": "b", "content": ""},
        {"role": "user", "content": "before\nafter"},
        {"role": "tool", "tool_call_id": "b", "content": "again"},  # no empty user message after it
    ]


def test_same_role_runs_and_prefill_are_kept(tmp_path):
    body = {
        "model": "m",
        "system": "Be brief.",
        "messages": [
            {"role": "user", "content": "one"},
            {"role": "user", "content": "two"},
            {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "xyz"}]},
            {"role": "user", "content": [{"type": "document", "source": {"type": "text", "data": "d"}}]},
            {"role": "assistant", "content": "{"},
        ],
    }
    trace = read(write_json(tmp_path / "one.json", body))
    assert trace.format == "anthropic/records"
    assert [(m["role"], m["content"]) for m in trace.calls[0].messages] == [
        ("system", "Be brief."),
        ("user", "one"),
        ("user", "two"),
        ("assistant", ""),
        ("user", ""),
        ("assistant", "{"),
    ]
    assert notes(trace)["content-not-text"] == [
        "record 0: messages[2].content[0] (redacted_thinking)",
        "record 0: messages[3].content[0] (document)",
    ]


def test_server_tools(tmp_path):
    tools = [
        {"type": "text_editor_20250429", "name": "str_replace_based_edit_tool", "cache_control": {"type": "ephemeral"}},
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 5},
        {"type": "computer_20250124", "name": "computer", "display_width_px": 1024, "display_height_px": 768},
        {"type": "custom", "name": "mine", "input_schema": {"type": "object"}},
    ]
    body = {
        "model": "m",
        "tools": tools,
        "messages": [
            {"role": "user", "content": "search"},
            {
                "role": "assistant",
                "content": [
                    {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "cats"}},
                    {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
                    {"type": "text", "text": "Cats are animals."},
                ],
            },
            {"role": "user", "content": "thanks"},
        ],
    }
    trace = read(write_jsonl(tmp_path / "log.jsonl", [body, body]))
    functions = [t["function"] for t in trace.calls[0].tools]
    assert functions[1] == {
        "name": "web_search",
        "description": "",
        "parameters": {"type": "web_search_20250305", "max_uses": 5},
    }
    assert functions[0] == {
        "name": "str_replace_based_edit_tool",
        "description": "",
        "parameters": {"type": "text_editor_20250429"},
    }
    assert functions[3] == {"name": "mine", "parameters": {"type": "object"}}
    assert notes(trace)["server-tool"] == [
        "line 1: tools[0] (text_editor_20250429)",
        "line 1: tools[1] (web_search_20250305)",
        "line 1: tools[2] (computer_20250124)",
    ]
    assert trace.calls[0].messages[1]["tool_calls"][0]["function"]["name"] == "web_search"
    assert "line 2: messages[1].content[1] (web_search_tool_result)" in notes(trace)["content-not-text"]


def test_error_pages_and_orphaned_requests(tmp_path):
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    page = traced(body, raw="<html>502 Bad Gateway</html>", status=502)
    orphan = {**traced(body), "response": None, "note": "ORPHANED_REQUEST"}
    trace = read(write_jsonl(tmp_path / "log.jsonl", [page, orphan]))
    assert notes(trace) == {"error-response": ["line 1 (HTTP 502)"]}
    assert [c.where for c in trace.calls] == ["line 2"]  # the prompt may have been sent: kept, unreported
    assert trace.calls[0].reported is None and trace.calls[0].response is None


def test_other_endpoint_with_messages_is_noted(tmp_path):
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    rows = [traced(body, url="https://bedrock.example/model/claude/invoke"), traced(body, SECOND_RESPONSE)]
    trace = read(write_jsonl(tmp_path / "log.jsonl", rows))
    assert len(trace.calls) == 1
    assert notes(trace)["other-endpoint"] == ["line 1 (invoke)"]  # the kind, never the path


def test_pair_with_stream_text_and_record_usage(tmp_path):
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    rows = [
        {"request": body, "response": first_stream(), "timestamp": "2025-03-04T05:06:07Z"},
        {"request": body, "usage": {"input_tokens": 2, "cache_read_input_tokens": 1, "output_tokens": 3}},
    ]
    trace = read(write_json(tmp_path / "pairs.json", rows))
    assert str(trace.calls[0].day) == "2025-03-04"
    assert trace.calls[0].reported.prompt == 110
    assert trace.calls[1].reported.to_dict() == {"prompt": 3, "cache_read": 1, "cache_write": 0, "output": 3}


def test_body_saved_as_text(tmp_path):
    row = traced(json.dumps(second_body()), SECOND_RESPONSE)
    trace = read(write_jsonl(tmp_path / "log.jsonl", [row]))
    assert trace.calls[0].messages[-1] == {"role": "user", "content": "define dog"}


# -- detection -------------------------------------------------------------------------------------
def test_sniff_claude_trace(trace_file):
    assert anthropic.sniff(load(str(trace_file)))
    assert read_trace(str(trace_file)).format == "anthropic/jsonl"


@pytest.mark.parametrize(
    "body",
    [
        {"system": "Be brief.", "messages": [{"role": "user", "content": "hi"}]},
        {"tools": [LOOKUP], "messages": [{"role": "user", "content": "hi"}]},
        {"messages": conversation()},
    ],
    ids=["system", "input_schema", "blocks"],
)
def test_sniff_bare_bodies(tmp_path, body):
    path = write_jsonl(tmp_path / "bodies.jsonl", [body])
    assert anthropic.sniff(load(str(path)))
    assert read_trace(str(path)).format == "anthropic/jsonl"


def test_sniff_responses(tmp_path):
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    for response in (SECOND_RESPONSE, first_stream()):
        path = write_json(tmp_path / "pair.json", [{"request": body, "response": response}])
        assert anthropic.sniff(load(str(path)))


def test_openai_chat_is_not_sniffed(tmp_path):
    record = {
        "request": {
            "model": "gpt-4o",
            "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
        },
        "response": {
            "id": "c",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello"}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 1},
        },
    }
    path = write_jsonl(tmp_path / "chat.jsonl", [record, record["request"]])
    assert not anthropic.sniff(load(str(path)))
    assert read_trace(str(path)).format == "openai-chat/jsonl"
    transcript = write_json(
        tmp_path / "t.json",
        {"model": "x", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]},
    )
    assert not anthropic.sniff(load(str(transcript)))


@pytest.mark.parametrize(
    "value",
    [None, 3, "text", [], [1, "x", None], {"request": 5}, {"messages": "x"}, [{"request": {"url": 5, "body": None}}]],
)
def test_sniff_never_raises(tmp_path, value):
    path = write_json(tmp_path / "odd.json", value)
    assert anthropic.sniff(load(str(path))) is False


def test_claude_code_transcript_is_not_sniffed():
    path = ROOT.parent / "shared" / "corpus" / "claude_code_medium_full-session-four.jsonl"
    if not path.exists():
        pytest.skip("the shared corpus is absent")
    assert not anthropic.sniff(load(str(path)))


# -- errors ------------------------------------------------------------------------------------------
def user(content) -> dict:
    return {"model": "m", "messages": [{"role": "user", "content": content}]}


@pytest.mark.parametrize(
    "record, where, what",
    [
        (5, "line 1", "expected a captured request object"),
        ({"model": "m"}, "line 1", "missing field 'messages'"),
        ({"messages": "hi"}, "line 1: messages", "expected a list of messages, found a string"),
        ({"messages": []}, "line 1: messages", "empty"),
        ({"messages": [5]}, "line 1: messages[0]", "expected a message object"),
        ({"messages": [{"role": "system", "content": "x"}]}, "line 1: messages[0].role", "unknown role 'system'"),
        ({"messages": [{"role": "user"}]}, "line 1: messages[0].content", "missing"),
        (user(7), "line 1: messages[0].content", "expected a string or a list of content blocks, found a number"),
        (user([{"text": "x"}]), "line 1: messages[0].content[0].type", "missing: expected a string"),
        (user(["x"]), "line 1: messages[0].content[0]", "expected a content block object"),
        (user([{"type": "text", "text": 3}]), "line 1: messages[0].content[0].text", "expected a string"),
        (
            user([{"type": "tool_result", "tool_use_id": "nope", "content": "x"}]),
            "line 1: messages[0].content[0].tool_use_id",
            "'nope' matches no tool_use block",
        ),
        (
            user([{"type": "tool_use", "id": "a", "name": "f", "input": {}}]),
            "line 1: messages[0].content[0].type",
            "belongs in an assistant message",
        ),
        (
            {
                "messages": [
                    {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": "x"}]}
                ]
            },
            "line 1: messages[0].content[0].input",
            "expected an object, found a string",
        ),
        (
            {"messages": [{"role": "assistant", "content": [{"type": "tool_use", "name": "f"}]}]},
            "line 1: messages[0].content[0].id",
            "missing: expected a string",
        ),
        (
            {"messages": [{"role": "assistant", "content": [{"type": "thinking", "thinking": None}]}]},
            "line 1: messages[0].content[0].thinking",
            "expected a string",
        ),
        ({**user("x"), "system": 4}, "line 1: system", "expected a string or a list of text blocks"),
        ({**user("x"), "system": [{"type": "text"}]}, "line 1: system[0].text", "expected a string"),
        ({**user("x"), "tools": {}}, "line 1: tools", "expected a list of tool definitions"),
        ({**user("x"), "tools": [{"name": "f"}]}, "line 1: tools[0].input_schema", "expected an object, found null"),
        ({**user("x"), "tools": [{"input_schema": {}}]}, "line 1: tools[0].name", "missing"),
        (
            {**user("x"), "tools": [{"name": "f", "description": 1, "input_schema": {}}]},
            "line 1: tools[0].description",
            "expected a string",
        ),
        (
            {**user("x"), "tools": [{"name": "f", "type": 3}]},
            "line 1: tools[0].type",
            "expected a string, found a number",
        ),
        ({**user("x"), "tools": [LOOKUP, LOOKUP]}, "line 1: tools[1].name", "duplicate tool name 'lookup'"),
        ({**user("x"), "model": 4}, "line 1: model", "expected a string"),
        ({"request": user("x"), "response": [1]}, "line 1: response", "expected the response message"),
        (
            {"request": user("x"), "response": {"type": "message", "content": 3}},
            "line 1: response.content",
            "expected a string or a list of content blocks",
        ),
        (
            {"request": user("x"), "response": {"type": "message", "content": [], "usage": {"input_tokens": "ten"}}},
            "line 1: response.usage.input_tokens",
            "expected a non-negative integer",
        ),
        (
            {"request": user("x"), "response": {"type": "message", "content": [], "usage": 5}},
            "line 1: response.usage",
            "expected an object",
        ),
        (
            {"request": user("x"), "response": sse(message_start({"input_tokens": -1}), {"type": "message_stop"})},
            "line 1: response (stream) usage.input_tokens",
            "expected a non-negative integer",
        ),
        ({"request": user(5)}, "line 1: request.messages[0].content", "expected a string or a list"),
        (
            traced(user([{"type": "text", "text": True}]), SECOND_RESPONSE),
            "line 1: request.body.messages[0].content[0].text",
            "expected a string, found a boolean",
        ),
        ({"request": {"url": 5, "body": user("x")}}, "line 1: request.url", "expected a string, found a number"),
        (traced("not json", SECOND_RESPONSE), "line 1: request.body", "not JSON"),
        ({"request": user("bad \ud800")}, "line 1: request.messages[0].content", "invalid Unicode"),
    ],
)
def test_odd_input_is_one_line_error(tmp_path, record, where, what):
    path = write_jsonl(tmp_path / "odd.jsonl", [record])
    with pytest.raises(InputError) as info:
        read(path)
    assert info.value.where == where
    assert what in info.value.what
    assert "\n" not in str(info.value)


def test_odd_files(tmp_path):
    for value, what in (([], "empty"), (3, "expected a JSON object or list")):
        with pytest.raises(InputError, match=what):
            read(write_json(tmp_path / "odd.json", value))
    only_skipped = claude_trace_lines()[:3] + [claude_trace_lines()[5]]
    with pytest.raises(InputError, match="no successful /v1/messages call"):
        read(write_jsonl(tmp_path / "skipped.jsonl", only_skipped))


# -- end to end through the CLI --------------------------------------------------------------------


def profile(args: list[str], capsys) -> tuple[dict, str]:
    code = main(["profile", *args, "-f", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out), out


def check_buckets(doc: dict) -> None:
    for call in doc["calls"]:
        assert all(value >= 0 for value in call["buckets"].values())
        assert sum(call["buckets"].values()) == call["total"]


def test_end_to_end(trace_file, model_dir, capsys):
    doc, out = profile([str(trace_file), "--model", str(model_dir), "--input-format", "anthropic"], capsys)
    check_buckets(doc)
    assert doc["source"]["format"] == "anthropic/jsonl"
    assert [c["reported"]["prompt"] for c in doc["calls"]] == [10 + 100 + 0, 5 + 20 + 100, 3 + 0 + 120]
    assert doc["summary"]["billed_input_reported"] == 110 + 125 + 123
    codes = {w["code"] for w in doc["warnings"]}
    assert {"error-response", "stream-cut", "content-not-text", "server-tool"} <= codes
    assert doc["calls"][1]["buckets"]["tool_results"] > 0
    assert SECRET not in out and "SECRETHEADER" not in out and "x-api-key" not in out


def test_end_to_end_auto_detected(tmp_path, model_dir, capsys):
    rows = [traced(second_body(), SECOND_RESPONSE)]
    doc, out = profile([str(write_json(tmp_path / "capture.json", rows)), "--model", str(model_dir)], capsys)
    check_buckets(doc)
    assert doc["source"]["format"] == "anthropic/records"
    assert doc["summary"]["billed_input_reported"] == 125
    assert doc["calls"][0]["buckets"]["system"] > 0 and doc["calls"][0]["buckets"]["tool_definitions"] > 0
    assert "server-tool" in {w["code"] for w in doc["warnings"]}
    assert SECRET not in out
