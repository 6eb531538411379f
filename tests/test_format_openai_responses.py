"""The OpenAI Responses API reader: chains rebuilt from previous_response_id, streams, errors, odd input."""

from __future__ import annotations

import copy
import json

import pytest

from conftest import CHATML, profile_json, train_tiny_tokenizer, write_json
from tokprof.frontends.cli import main
from tokprof.base.errors import InputError
from tokprof.formats import openai_responses, read_trace
from tokprof.formats.jsonfile import Document, load

INSTRUCTIONS = "You are a test bot."
LOOKUP = {
    "type": "function",
    "name": "lookup",
    "description": "Look up a word.",
    "strict": True,
    "parameters": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
}
NEUTRAL_LOOKUP = {"type": "function", "function": {k: LOOKUP[k] for k in ("name", "description", "parameters")}}


def reasoning(rid: str, text: str) -> dict:
    return {
        "type": "reasoning",
        "id": rid,
        "summary": [{"type": "summary_text", "text": text}],
        "encrypted_content": "gAAAAB-opaque",
    }


def function_call(n: int, word: str) -> dict:
    return {
        "type": "function_call",
        "id": f"fc_{n}",
        "call_id": f"call_{n}",
        "name": "lookup",
        "arguments": json.dumps({"word": word}),
        "status": "completed",
    }


def say(mid: str, text: str) -> dict:
    return {
        "type": "message",
        "id": mid,
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def response(rid: str, output: list, input_tokens: int, cached: int = 0) -> dict:
    return {
        "id": rid,
        "object": "response",
        "created_at": 1735689600,
        "status": "completed",
        "error": None,
        "model": "gpt-test-2025",
        "output": output,
        "usage": {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": 7,
            "output_tokens_details": {"reasoning_tokens": 3},
            "total_tokens": input_tokens + 7,
        },
    }


RESPONSES = [
    response("resp_1", [reasoning("rs_1", "Look up cat"), function_call(1, "cat")], 40),
    response(
        "resp_2", [reasoning("rs_2", "Look up dog"), say("msg_2", "a dog"), function_call(2, "dog")], 60, cached=32
    ),
    response("resp_3", [say("msg_3", "A word is a word.")], 80, cached=48),
]
NEW_INPUT = [
    [{"role": "user", "content": "define cat"}],
    [{"type": "function_call_output", "call_id": "call_1", "output": "cat is an animal"}],
    [
        {
            "type": "function_call_output",
            "call_id": "call_2",
            "output": [{"type": "input_text", "text": "dog is an animal"}],
        },
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "define word"}]},
    ],
]


def tool_call(n: int, word: str) -> dict:
    return {
        "id": f"call_{n}",
        "type": "function",
        "function": {"name": "lookup", "arguments": json.dumps({"word": word})},
    }


EXPECTED = [
    {"role": "system", "content": INSTRUCTIONS},
    {"role": "user", "content": "define cat"},
    {"role": "assistant", "content": None, "reasoning_content": "Look up cat", "tool_calls": [tool_call(1, "cat")]},
    {"role": "tool", "tool_call_id": "call_1", "content": "cat is an animal"},
    {"role": "assistant", "content": "a dog", "reasoning_content": "Look up dog", "tool_calls": [tool_call(2, "dog")]},
    {"role": "tool", "tool_call_id": "call_2", "content": "dog is an animal"},
    {"role": "user", "content": "define word"},
]
PROMPT_LENGTHS = [2, 4, 7]  # how many of EXPECTED each call's prompt holds


def body(new_input, previous: str | None = None, **extra) -> dict:
    out = {"model": "gpt-test", "instructions": INSTRUCTIONS, "input": copy.deepcopy(new_input), "tools": [LOOKUP]}
    if previous:
        out["previous_response_id"] = previous
    return {**out, **extra}


def chained_records() -> list[dict]:
    return [
        {"request": body(new, RESPONSES[i - 1]["id"] if i else None), "response": copy.deepcopy(RESPONSES[i])}
        for i, new in enumerate(NEW_INPUT)
    ]


def unchained_records() -> list[dict]:
    """The same conversation, each request sending the whole input (outputs passed back)."""
    out, history = [], []
    for new, resp in zip(NEW_INPUT, RESPONSES):
        history = history + copy.deepcopy(new)
        out.append({"request": body(history), "response": copy.deepcopy(resp)})
        history = history + copy.deepcopy(resp["output"])
    return out


def write_jsonl(path, rows) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


def notes(trace) -> dict:
    return {note.code: note.places for note in trace.notes}


# -- chains ---------------------------------------------------------------------------------------


def test_chain_rebuilds_every_prompt(tmp_path):
    trace = read_trace(write_jsonl(tmp_path / "log.jsonl", chained_records()))
    assert trace.format == "openai-responses/jsonl"
    assert trace.model == "gpt-test"
    assert len(trace.calls) == 3
    for call, length in zip(trace.calls, PROMPT_LENGTHS):
        assert call.messages == EXPECTED[:length]
        assert call.tools == [NEUTRAL_LOOKUP]
        assert str(call.day) == "2025-01-01"
    assert [c.reported.prompt for c in trace.calls] == [40, 60, 80]
    assert [c.reported.cache_read for c in trace.calls] == [0, 32, 48]
    assert [c.reported.output for c in trace.calls] == [7, 7, 7]
    assert all(c.reported.cache_write is None for c in trace.calls)
    assert [c.where for c in trace.calls] == ["line 1", "line 2", "line 3"]
    assert trace.calls[0].response == {"role": "assistant", "content": None, "tool_calls": [tool_call(1, "cat")]}
    assert trace.calls[1].response["tool_calls"] == [tool_call(2, "dog")]
    assert trace.calls[2].response is None
    # each encrypted reasoning item is noted once, at the place it was logged
    assert notes(trace)["encrypted-reasoning"] == ["line 1: response.output[0]", "line 2: response.output[0]"]


def test_unchained_conversation_gives_the_same_prompts(tmp_path):
    chained = read_trace(write_jsonl(tmp_path / "chained.jsonl", chained_records()))
    unchained = read_trace(write_jsonl(tmp_path / "unchained.jsonl", unchained_records()))
    assert [c.messages for c in unchained.calls] == [c.messages for c in chained.calls]
    assert notes(unchained)["encrypted-reasoning"] == [
        "line 2: request.input[1]",
        "line 3: request.input[1]",
        "line 3: request.input[4]",
    ]


def test_instructions_are_not_carried_over_a_chain(tmp_path):
    records = chained_records()
    del records[1]["request"]["instructions"]
    records[2]["request"]["instructions"] = "Be brief."
    trace = read_trace(write_jsonl(tmp_path / "log.jsonl", records))
    assert trace.calls[1].messages == EXPECTED[1:4]
    assert trace.calls[2].messages == [{"role": "system", "content": "Be brief."}] + EXPECTED[1:7]


def test_chain_from_a_json_list_out_of_order(tmp_path):
    records = chained_records()
    path = write_json(tmp_path / "log.json", [records[2], records[0], records[1]])
    trace = read_trace(str(path))
    assert trace.format == "openai-responses/records"
    assert [len(c.messages) for c in trace.calls] == [7, 2, 4]
    assert trace.calls[0].where == "record 0"


def test_one_json_object(tmp_path):
    trace = read_trace(str(write_json(tmp_path / "log.json", chained_records()[0])))
    assert trace.format == "openai-responses/records"
    assert [c.where for c in trace.calls] == ["record 0"]
    assert trace.calls[0].messages == EXPECTED[:2]


def test_broken_chain_skips_the_calls_that_cannot_be_rebuilt(tmp_path):
    records = chained_records()[1:]  # resp_1 is not in the log
    records.append({"request": {"model": "gpt-test", "input": "define dog"}, "response": response("resp_x", [], 9)})
    trace = read_trace(write_jsonl(tmp_path / "log.jsonl", records))
    assert [c.where for c in trace.calls] == ["line 3"]
    assert notes(trace)["chain-broken"] == [
        "line 1 (previous_response_id 'resp_1')",
        "line 2 (previous_response_id 'resp_2')",
    ]
    assert "cannot be rebuilt" in next(n.message for n in trace.notes if n.code == "chain-broken")


def test_all_calls_broken_is_an_error(tmp_path):
    path = write_jsonl(tmp_path / "log.jsonl", chained_records()[1:])
    with pytest.raises(InputError, match="no usable model call in the log .calls skipped: chain-broken"):
        read_trace(path)


def test_a_chain_that_loops_is_broken(tmp_path):
    records = [
        {"request": body([], "resp_b"), "response": response("resp_a", [], 5)},
        {"request": body([], "resp_a"), "response": response("resp_b", [], 5)},
        {"request": body("define cat"), "response": response("resp_c", [], 5)},
    ]
    trace = read_trace(write_jsonl(tmp_path / "log.jsonl", records))
    assert [c.where for c in trace.calls] == ["line 3"]
    assert len(notes(trace)["chain-broken"]) == 2


# -- request shapes ---------------------------------------------------------------------------------


def test_string_input_and_no_response(tmp_path):
    path = write_jsonl(tmp_path / "log.jsonl", [{"model": "gpt-test", "input": "define cat"}])
    trace = read_trace(path)
    call = trace.calls[0]
    assert call.messages == [{"role": "user", "content": "define cat"}]
    assert call.tools is None and call.reported is None and call.response is None and call.where == "line 1"


def test_parts_roles_and_tool_call_merging(tmp_path):
    items = [
        {"role": "developer", "content": "Use tools."},
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "look at"},
                {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
                {"type": "input_text", "text": "this"},
            ],
        },
        {"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": "No."}]},
        {"role": "user", "content": "please"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]},
        function_call(1, "cat"),
        function_call(2, "dog"),
        {"type": "function_call_output", "call_id": "call_2", "output": [{"type": "input_file", "file_id": "f"}]},
        {"type": "function_call_output", "call_id": "call_1", "output": "cat is an animal"},
        {
            "type": "reasoning",
            "id": "rs",
            "summary": [{"type": "summary_text", "text": "first"}, {"type": "summary_text", "text": "second"}],
        },
        {"type": "custom_tool_call", "call_id": "call_3", "name": "patch", "input": "*** Begin Patch"},
        {"type": "custom_tool_call_output", "call_id": "call_3", "output": "done"},
        {"type": "reasoning", "id": "rs_end", "summary": [], "content": [{"type": "reasoning_text", "text": "hmm"}]},
    ]
    trace = read_trace(write_jsonl(tmp_path / "log.jsonl", [{"input": items}]))
    assert trace.calls[0].messages == [
        {"role": "developer", "content": "Use tools."},
        {"role": "user", "content": "look at\nthis"},
        {"role": "assistant", "content": "No."},
        {"role": "user", "content": "please"},
        {"role": "assistant", "content": "Checking.", "tool_calls": [tool_call(1, "cat"), tool_call(2, "dog")]},
        {"role": "tool", "tool_call_id": "call_2", "content": ""},
        {"role": "tool", "tool_call_id": "call_1", "content": "cat is an animal"},
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "first\nsecond",
            "tool_calls": [
                {"id": "call_3", "type": "function", "function": {"name": "patch", "arguments": "*** Begin Patch"}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_3", "content": "done"},
    ]
    found = notes(trace)
    assert found["content-not-text"] == [
        "line 1: input[1].content[1] (input_image)",
        "line 1: input[7].output[0] (input_file)",
    ]
    assert found["reasoning-unattached"] == ["line 1: input[12]"]
    assert "encrypted-reasoning" not in found


def test_builtin_tools_and_hosted_items(tmp_path):
    tools = [
        LOOKUP,
        {"type": "web_search_preview", "search_context_size": "low"},
        {
            "type": "mcp",
            "server_label": "deepwiki",
            "server_url": "https://mcp.example/sse",
            "headers": {"Authorization": "Bearer sk-mcp-secret"},
            "authorization": "sk-oauth-secret",
            "require_approval": "never",
        },
        {"type": "custom", "name": "patch", "description": "Apply a patch.", "format": {"type": "text"}},
    ]
    items = [
        {"role": "user", "content": "search"},
        {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "cats"}},
        say("msg_1", "Found."),
    ]
    trace = read_trace(write_jsonl(tmp_path / "log.jsonl", [{"input": items, "tools": tools}]))
    call = trace.calls[0]
    assert [t["function"]["name"] for t in call.tools] == ["lookup", "web_search_preview", "deepwiki", "patch"]
    assert call.tools[1]["function"]["parameters"] == {"search_context_size": "low"}
    assert call.tools[3]["function"] == {
        "name": "patch",
        "description": "Apply a patch.",
        "parameters": {"type": "text"},
    }
    assert "secret" not in repr(trace)
    assert call.messages == [{"role": "user", "content": "search"}, {"role": "assistant", "content": "Found."}]
    found = notes(trace)
    assert found["server-tool"] == ["line 1: tools[1] (web_search_preview)", "line 1: tools[2] (mcp)"]
    assert found["hosted-tool-item"] == ["line 1: input[1] (web_search_call)"]


def test_item_references(tmp_path):
    records = [
        {"request": body(NEW_INPUT[0]), "response": copy.deepcopy(RESPONSES[0])},
        {
            "request": body(
                NEW_INPUT[0]
                + [{"type": "item_reference", "id": "rs_1"}, {"type": "item_reference", "id": "fc_1"}]
                + NEW_INPUT[1]
            ),
            "response": copy.deepcopy(RESPONSES[1]),
        },
        {"request": body([{"type": "item_reference", "id": "msg_gone"}])},
    ]
    trace = read_trace(write_jsonl(tmp_path / "log.jsonl", records))
    assert [c.where for c in trace.calls] == ["line 1", "line 2"]
    assert trace.calls[1].messages == EXPECTED[:4]
    assert notes(trace)["unresolved-reference"] == ["line 3: request.input[0] ('msg_gone')"]


def test_server_conversation_and_stored_prompt(tmp_path):
    records = [
        {"input": "define cat", "conversation": "conv_1"},
        {"input": "define dog", "prompt": {"id": "pmpt_1", "variables": {}}},
    ]
    trace = read_trace(write_jsonl(tmp_path / "log.jsonl", records))
    assert [c.where for c in trace.calls] == ["line 2"]
    assert notes(trace) == {"server-conversation": ["line 1"], "stored-prompt": ["line 2"]}


# -- responses: streams, errors, traced HTTP ---------------------------------------------------------


def sse(*events: dict) -> str:
    return "".join(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n" for event in events)


def stream_of(resp: dict, complete: bool = True) -> str:
    events = [
        {
            "type": "response.created",
            "sequence_number": 0,
            "response": {**resp, "status": "in_progress", "output": [], "usage": None},
        },
        {
            "type": "response.in_progress",
            "sequence_number": 1,
            "response": {**resp, "status": "in_progress", "output": []},
        },
    ]
    for i, item in enumerate(resp["output"]):
        events.append(
            {"type": "response.output_item.added", "output_index": i, "item": {**item, "status": "in_progress"}}
        )
        events.append({"type": "response.output_item.done", "output_index": i, "item": item})
    if complete:
        events.append({"type": "response.completed", "response": resp})
    return sse(*events)


def test_streamed_responses_complete_and_cut(tmp_path):
    records = chained_records()
    records[0]["response"] = stream_of(RESPONSES[0], complete=False)  # cut: id and output still known
    records[1]["response"] = stream_of(RESPONSES[1])
    trace = read_trace(write_jsonl(tmp_path / "log.jsonl", records))
    assert [c.messages for c in trace.calls] == [EXPECTED[:n] for n in PROMPT_LENGTHS]
    assert trace.calls[0].reported is None
    assert trace.calls[0].response["tool_calls"] == [tool_call(1, "cat")]
    assert trace.calls[1].reported.prompt == 60 and trace.calls[1].reported.cache_read == 32
    assert notes(trace)["stream-cut"] == ["line 1"]


def test_failed_responses_are_skipped(tmp_path):
    failed = {**response("resp_f", [], 10), "status": "failed", "error": {"code": "server_error", "message": "boom"}}
    records = [
        {"request": body("define cat"), "response": failed},
        {
            "request": body("define cat"),
            "response": sse(
                {
                    "type": "response.created",
                    "response": {"id": "resp_g", "object": "response", "status": "in_progress"},
                },
                {
                    "type": "response.failed",
                    "response": {"id": "resp_g", "status": "failed", "error": {"code": "rate_limit_exceeded"}},
                },
            ),
        },
        {
            "request": {"method": "POST", "url": "https://api.openai.com/v1/responses", "body": body("define cat")},
            "response": {"status_code": 500, "body": {"error": {"type": "server_error", "message": "oops"}}},
        },
        {"request": body("define dog"), "response": response("resp_ok", [], 12)},
        {"request": body([], "resp_f"), "response": response("resp_after", [], 12)},
    ]
    trace = read_trace(write_jsonl(tmp_path / "log.jsonl", records))
    assert [c.where for c in trace.calls] == ["line 4"]
    found = notes(trace)
    assert found["error-response"] == [
        "line 1 (server_error)",
        "line 2 (rate_limit_exceeded)",
        "line 3 (HTTP 500 server_error)",
    ]
    assert found["chain-broken"] == ["line 5 (previous_response_id 'resp_f')"]


def test_traced_http_exchanges(tmp_path):
    headers = {"Authorization": "Bearer sk-request-secret"}
    records = [
        {
            "request": {
                "timestamp": "2025-03-04T10:00:00Z",
                "method": "GET",
                "url": "https://api.openai.com/v1/models",
                "headers": headers,
                "body": None,
            },
            "response": {"status_code": 200, "body": {"data": []}},
        },
        {
            "request": {
                "timestamp": "2025-03-04T10:00:01Z",
                "method": "POST",
                "url": "https://api.openai.com/v1/responses",
                "headers": headers,
                "body": json.dumps(body(NEW_INPUT[0])),
            },
            "response": {"status_code": 200, "headers": {"set-cookie": "secret"}, "body_raw": stream_of(RESPONSES[0])},
        },
        {
            "request": {
                "timestamp": "2025-03-04T10:00:02Z",
                "method": "POST",
                "url": "https://api.openai.com/v1/responses?x=1",
                "headers": headers,
                "body": body(NEW_INPUT[1], "resp_1"),
            },
            "response": {"status_code": 200, "body": RESPONSES[1]},
        },
    ]
    path = write_jsonl(tmp_path / "log.jsonl", records)
    assert openai_responses.sniff(load(path))
    trace = read_trace(path)
    assert [c.messages for c in trace.calls] == [EXPECTED[:2], EXPECTED[:4]]
    assert str(trace.calls[0].day) == "2025-03-04"
    assert notes(trace)["other-endpoint"] == ["line 1 (models)"]  # the endpoint's kind, never its path
    assert "secret" not in repr(trace)


# -- detection ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "record, expected",
    [
        ({"model": "m", "input": "hi"}, True),
        ({"instructions": "x"}, True),
        ({"request": {"input": [], "model": "m"}, "response": None}, True),
        ({"request": {"url": "https://h/v1/responses", "body": "{}"}, "response": None}, True),
        ({"request": {"foo": 1}, "response": {"object": "response", "id": "r"}}, True),
        ({"request": {"foo": 1}, "response": "event: response.created\ndata: {}\n\n"}, True),
        ({"model": "m", "messages": [], "input": "x"}, False),
        ({"request": {"messages": []}, "response": {"choices": []}}, False),
        ({"request": {"url": "https://h/v1/chat/completions", "body": {"messages": []}}}, False),
        ({"conversation": []}, False),
    ],
)
def test_sniff(record, expected):
    assert openai_responses.sniff(Document(lines=[(1, record)])) is expected
    assert openai_responses.sniff(Document(value=[record])) is expected


@pytest.mark.parametrize(
    "doc",
    [
        Document(value=42),
        Document(value=None),
        Document(value=[]),
        Document(value="input"),
        Document(lines=[]),
        Document(lines=[(1, [1, 2])]),
        Document(value={"request": {"url": 5, "body": 3}, "response": {"body_raw": 7}}),
    ],
)
def test_sniff_never_raises_on_odd_files(doc):
    assert openai_responses.sniff(doc) is False


def test_auto_detection_picks_this_reader_and_leaves_chat_alone(tmp_path):
    assert read_trace(write_jsonl(tmp_path / "r.jsonl", unchained_records())).format == "openai-responses/jsonl"
    chat = {
        "request": {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
        "response": {"choices": [], "usage": {"prompt_tokens": 3}},
    }
    assert read_trace(write_jsonl(tmp_path / "c.jsonl", [chat])).format == "openai-chat/jsonl"


# -- odd input ------------------------------------------------------------------------------------


def pair(request: dict, resp=None) -> dict:
    return {"request": request, "response": resp}


ODD = {
    "record": (42, "line 1", "expected a captured request object"),
    "input type": ({"input": 5}, "line 1: input", "expected a string or a list of items, found a number"),
    "item type": (pair({"input": [5]}), "line 1: request.input[0]", "expected an input item object, found a number"),
    "role": (
        pair({"input": [{"role": "robot", "content": "x"}]}),
        "line 1: request.input[0].role",
        "unknown role 'robot'",
    ),
    "content": (
        pair({"input": [{"role": "user", "content": 5}]}),
        "line 1: request.input[0].content",
        "expected a string or a list",
    ),
    "content missing": (pair({"input": [{"role": "user"}]}), "line 1: request.input[0].content", "found null"),
    "part type": (
        pair({"input": [{"role": "user", "content": [{"type": "video"}]}]}),
        "line 1: request.input[0].content[0].type",
        "unknown content part type 'video'",
    ),
    "part text": (
        pair({"input": [{"role": "user", "content": [{"type": "input_text", "text": 3}]}]}),
        "line 1: request.input[0].content[0].text",
        "expected a string, found a number",
    ),
    "part object": (
        pair({"input": [{"role": "user", "content": ["x"]}]}),
        "line 1: request.input[0].content[0]",
        "expected a content part object",
    ),
    "call id": (
        pair({"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]}),
        "line 1: request.input[0].call_id",
        "missing: expected a string",
    ),
    "call name": (
        pair({"input": [{"type": "function_call", "call_id": "c", "name": 1, "arguments": "{}"}]}),
        "line 1: request.input[0].name",
        "found a number",
    ),
    "empty call name": (
        pair({"input": [{"type": "function_call", "call_id": "c", "name": "", "arguments": "{}"}]}),
        "line 1: request.input[0].name",
        "empty: expected a non-empty string",
    ),
    "call arguments": (
        pair({"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": {"a": 1}}]}),
        "line 1: request.input[0].arguments",
        "expected a string, found an object",
    ),
    "orphan output": (
        pair(
            {
                "input": [
                    {"role": "user", "content": "x"},
                    {"type": "function_call_output", "call_id": "zz", "output": "o"},
                ]
            }
        ),
        "line 1: request.input[1].call_id",
        "'zz' matches no earlier function call",
    ),
    "output type": (
        pair({"input": [function_call(1, "cat"), {"type": "function_call_output", "call_id": "call_1", "output": 5}]}),
        "line 1: request.input[1].output",
        "expected a string or a list",
    ),
    "summary": (
        pair({"input": [{"type": "reasoning", "summary": "x"}]}),
        "line 1: request.input[0].summary",
        "expected a list",
    ),
    "summary part": (
        pair({"input": [{"type": "reasoning", "summary": [7]}]}),
        "line 1: request.input[0].summary[0]",
        "expected a content part object, found a number",
    ),
    "item kind": (
        pair({"input": [{"type": "telepathy"}]}),
        "line 1: request.input[0].type",
        "unknown item type 'telepathy'",
    ),
    "reference id": (pair({"input": [{"type": "item_reference"}]}), "line 1: request.input[0].id", "expected a string"),
    "instructions": (pair({"input": "x", "instructions": 3}), "line 1: request.instructions", "expected a string"),
    "previous": (
        pair({"input": "x", "previous_response_id": 3}),
        "line 1: request.previous_response_id",
        "expected a string",
    ),
    "model": (pair({"input": "x", "model": 3}), "line 1: request.model", "expected a string"),
    "tools": (pair({"input": "x", "tools": {"a": 1}}), "line 1: request.tools", "expected a list of tool definitions"),
    "tool": (pair({"input": "x", "tools": ["lookup"]}), "line 1: request.tools[0]", "expected a tool object"),
    "tool type": (
        pair({"input": "x", "tools": [{"name": "f"}]}),
        "line 1: request.tools[0].type",
        "missing: expected a string",
    ),
    "tool name": (
        pair({"input": "x", "tools": [{"type": "function"}]}),
        "line 1: request.tools[0].name",
        "expected a string",
    ),
    "tool parameters": (
        pair({"input": "x", "tools": [{"type": "function", "name": "f", "parameters": []}]}),
        "line 1: request.tools[0].parameters",
        "expected an object, found a list",
    ),
    "duplicate tool": (
        pair({"input": "x", "tools": [LOOKUP, LOOKUP]}),
        "line 1: request.tools[1].function.name",
        "duplicate tool name",
    ),
    "no input": (pair({"model": "m"}), "line 1: request.input", "missing: not an OpenAI Responses request"),
    "chat request": (pair({"messages": []}), "line 1: request.messages", "--input-format openai-chat"),
    "empty input": (pair({"input": []}), "line 1: request.input", "empty: a call needs a prompt"),
    "response type": (pair({"input": "x"}, [1]), "line 1: response", "expected the response object, found a list"),
    "response id": (pair({"input": "x"}, {"id": 5, "output": []}), "line 1: response.id", "expected a string"),
    "response output": (
        pair({"input": "x"}, {"id": "r", "output": {}}),
        "line 1: response.output",
        "expected a list of items",
    ),
    "output item": (
        pair({"input": "x"}, {"id": "r", "output": [3]}),
        "line 1: response.output[0]",
        "expected an output item object",
    ),
    "output call": (
        pair({"input": "x"}, {"id": "r", "output": [{"type": "function_call", "call_id": "c", "name": "f"}]}),
        "line 1: response.output[0].arguments",
        "missing: expected a string",
    ),
    "usage": (
        pair({"input": "x"}, {"id": "r", "output": [], "usage": []}),
        "line 1: response.usage",
        "expected an object",
    ),
    "usage count": (
        pair({"input": "x"}, {"id": "r", "usage": {"input_tokens": -1}}),
        "line 1: response.usage.input_tokens",
        "expected a non-negative integer",
    ),
    "usage details": (
        pair({"input": "x"}, {"id": "r", "usage": {"input_tokens": 1, "input_tokens_details": 4}}),
        "line 1: response.usage.input_tokens_details",
        "expected an object",
    ),
    "stream usage": (
        pair(
            {"input": "x"},
            sse({"type": "response.completed", "response": {"id": "r", "usage": {"output_tokens": "9"}}}),
        ),
        "line 1: response (stream).usage.output_tokens",
        "expected a non-negative integer",
    ),
    "surrogate": (
        pair({"input": [{"role": "user", "content": "bad \ud800"}]}),
        "line 1: request.input[0].content",
        "invalid Unicode",
    ),
}


@pytest.mark.parametrize("case", sorted(ODD))
def test_odd_input_is_a_one_line_error(case, tmp_path):
    record, where, what = ODD[case]
    path = write_jsonl(tmp_path / "log.jsonl", [record])
    with pytest.raises(InputError) as caught:
        read_trace(path, "openai-responses")
    message = str(caught.value)
    assert "\n" not in message
    assert caught.value.where == where, message
    assert what in caught.value.what, message


@pytest.mark.parametrize("value, what", [([], "the list of records is empty"), (42, "expected a JSON object or list")])
def test_odd_files(value, what, tmp_path):
    path = write_json(tmp_path / "log.json", value)
    with pytest.raises(InputError, match=what):
        read_trace(str(path), "openai-responses")


# -- end to end ----------------------------------------------------------------------------------


@pytest.fixture()
def model_dir(tmp_path):
    target = tmp_path / "model"
    target.mkdir()
    train_tiny_tokenizer().save(str(target / "tokenizer.json"))
    write_json(target / "tokenizer_config.json", {"chat_template": CHATML, "eos_token": "<|im_end|>"})
    return target


def profile(log, model_dir, capsys, *extra) -> dict:
    return profile_json([str(log), "--model", str(model_dir), *extra], capsys)


def test_end_to_end_chain(tmp_path, model_dir, capsys):
    log = write_jsonl(tmp_path / "log.jsonl", chained_records())
    doc = profile(log, model_dir, capsys, "--input-format", "openai-responses")
    assert [c["reported"]["prompt"] for c in doc["calls"]] == [40, 60, 80]
    assert [c["reported"]["cache_read"] for c in doc["calls"]] == [0, 32, 48]
    assert doc["summary"]["billed_input_reported"] == 180
    totals = [c["total"] for c in doc["calls"]]
    assert totals == sorted(totals) and totals[0] > 0
    assert doc["calls"][2]["buckets"]["tool_results"] > 0
    assert doc["calls"][0]["buckets"]["tool_definitions"] > 0
    warnings = {w["code"]: w for w in doc["warnings"]}
    assert warnings["encrypted-reasoning"]["places"] == ["line 1: response.output[0]", "line 2: response.output[0]"]


def test_end_to_end_unchained_and_detected_gives_the_same_buckets(tmp_path, model_dir, capsys):
    chained = profile(write_jsonl(tmp_path / "chained.jsonl", chained_records()), model_dir, capsys)
    unchained = profile(write_jsonl(tmp_path / "unchained.jsonl", unchained_records()), model_dir, capsys)
    assert [c["buckets"] for c in unchained["calls"]] == [c["buckets"] for c in chained["calls"]]
    assert unchained["summary"]["billed_input_reported"] == 180


def test_end_to_end_notes_become_warnings(tmp_path, model_dir, capsys):
    records = chained_records()
    records[2]["response"] = stream_of(RESPONSES[2], complete=False)
    records.append(
        {
            "request": body("define dog"),
            "response": {**response("resp_f", [], 1), "status": "failed", "error": {"code": "server_error"}},
        }
    )
    records.append({"request": body([], "resp_gone"), "response": response("resp_z", [], 1)})
    doc = profile(write_jsonl(tmp_path / "log.jsonl", records), model_dir, capsys)
    assert len(doc["calls"]) == 3
    assert doc["summary"]["billed_input_reported"] == 100  # the cut stream reported nothing
    warnings = {w["code"]: w.get("places") for w in doc["warnings"]}
    assert warnings["stream-cut"] == ["line 3"]
    assert warnings["error-response"] == ["line 4 (server_error)"]
    assert warnings["chain-broken"] == ["line 5 (previous_response_id 'resp_gone')"]


def test_end_to_end_bad_input_exits_2(tmp_path, model_dir, capsys):
    log = write_jsonl(tmp_path / "log.jsonl", [pair({"input": [{"role": "robot", "content": "x"}]})])
    code = main(["profile", log, "--model", str(model_dir), "-f", "json"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert (
        err
        == f"tokprof: error: {log}: line 1: request.input[0].role: unknown role 'robot' (expected one of user, assistant, system, developer)\n"
    )


def test_built_in_tools_the_response_used_count_as_called(tmp_path, capsys):
    from tokprof.frontends.cli import main

    record = {
        "request": {
            "model": "gpt-4.1",
            "input": "weather in Paris?",
            "tools": [
                {"type": "web_search_preview"},
                {"type": "function", "name": "unused_fn", "description": "never", "parameters": {"type": "object"}},
            ],
        },
        "response": {
            "id": "resp_1",
            "object": "response",
            "status": "completed",
            "output": [
                {"type": "web_search_call", "id": "ws_1", "status": "completed"},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Sunny."}]},
            ],
            "usage": {"input_tokens": 300, "output_tokens": 10},
        },
    }
    log = tmp_path / "ws.jsonl"
    log.write_text(json.dumps(record) + "\n")
    assert main(["tools", str(log), "-f", "json"]) == 0
    tools = {t["name"]: t for t in json.loads(capsys.readouterr().out)["catalogues"][0]["tools"]}
    assert tools["web_search_preview"]["calls"] == 1 and tools["web_search_preview"]["unused"] is False
    assert tools["unused_fn"]["unused"] is True
