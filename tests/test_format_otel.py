"""The OpenTelemetry GenAI spans reader: OTLP/JSON, flat dumps, Copilot's file exporter, the three
attribute layouts (GenAI conventions, the older gen_ai.prompt.N, OpenInference), usage, redaction.

The fixtures are written here by hand. Their shapes follow: the OpenTelemetry semantic conventions'
JSON schemas for gen_ai.input.messages / gen_ai.system_instructions (open-telemetry/
semantic-conventions, docs/gen-ai/gen-ai-input-messages.json: messages {role, parts[{type: text,
content} | {type: tool_call, id, name, arguments} | {type: tool_call_response, id, response}]}),
and the notes there that gen_ai.usage.cache_read/cache_creation.input_tokens are included in
gen_ai.usage.input_tokens; OpenInference's spec/semantic_conventions.md (Arize-ai/openinference:
llm.input_messages.N.message.*, llm.tools.N.tool.json_schema, llm.token_count.prompt /
completion / prompt_details.cache_read); OTLP/JSON's {key, value: {stringValue | intValue}}
attributes with intValue as a string; and the two corpus files (any-agent's flat dump,
Copilot CLI's JSONL with [REDACTED] usage).
"""

from __future__ import annotations

import json

import pytest

import tokprof
from conftest import ROOT, write_json
from tokprof.frontends.cli import main
from tokprof.base.errors import InputError
from tokprof.formats import read_trace

CORPUS = ROOT.parent / "shared" / "corpus" / "otel"
TOOLS = [
    {
        "type": "function",
        "name": "lookup",
        "description": "Look up a word.",
        "parameters": {"type": "object", "properties": {"word": {"type": "string"}}},
    }
]


def kv(attrs: dict) -> list[dict]:
    """Attributes as OTLP/JSON writes them."""
    out = []
    for key, value in attrs.items():
        if isinstance(value, bool):
            wrapped = {"boolValue": value}
        elif isinstance(value, int):
            wrapped = {"intValue": str(value)}
        elif isinstance(value, float):
            wrapped = {"doubleValue": value}
        else:
            wrapped = {"stringValue": value if isinstance(value, str) else json.dumps(value)}
        out.append({"key": key, "value": wrapped})
    return out


def chat_span(n: int, messages: list, usage: dict, output: list | None = None, **extra) -> dict:
    attrs = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "qwen2.5-7b-instruct",
        "gen_ai.system_instructions": [{"type": "text", "content": "You are a test bot."}],
        "gen_ai.tool.definitions": TOOLS,
        "gen_ai.input.messages": messages,
        **usage,
        **extra,
    }
    if output is not None:
        attrs["gen_ai.output.messages"] = output
    return {
        "traceId": "ab" * 16,
        "spanId": f"{n:016x}",
        "name": "chat qwen2.5-7b-instruct",
        "kind": 3,
        "startTimeUnixNano": str(1767268800_000000000 + n * 10**9),
        "endTimeUnixNano": "0",
        "attributes": kv(attrs),
        "status": {},
    }


USER = {"role": "user", "parts": [{"type": "text", "content": "Define cat."}]}
CALL = {
    "role": "assistant",
    "parts": [{"type": "tool_call", "id": "c1", "name": "lookup", "arguments": {"word": "cat"}}],
}
RESULT = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "a small feline"}]}
ANSWER = {"role": "assistant", "parts": [{"type": "text", "content": "A cat is a small feline."}]}


def otlp(spans: list[dict]) -> dict:
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": kv({"service.name": "agent"})},
                "scopeSpans": [{"scope": {"name": "test"}, "spans": spans}],
            }
        ]
    }


def usage(prompt: int, output: int, read: int = 0, write: int = 0) -> dict:
    return {
        "gen_ai.usage.input_tokens": prompt,
        "gen_ai.usage.output_tokens": output,
        "gen_ai.usage.cache_read.input_tokens": read,
        "gen_ai.usage.cache_creation.input_tokens": write,
    }


def two_calls() -> dict:
    tool_span = {
        "spanId": "ff",
        "name": "execute_tool lookup",
        "startTimeUnixNano": "1767268801500000000",
        "attributes": kv({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}),
    }
    agent = {
        "spanId": "aa",
        "name": "invoke_agent",
        "startTimeUnixNano": "1767268799000000000",
        "attributes": kv({"gen_ai.operation.name": "invoke_agent", **usage(300, 40)}),
    }
    # the second call is written first: calls are ordered by start time
    return otlp(
        [
            chat_span(2, [USER, CALL, RESULT], usage(180, 12, read=100), [ANSWER]),
            agent,
            tool_span,
            chat_span(1, [USER], usage(120, 28, write=100), [CALL]),
        ]
    )


def test_otlp_with_content_is_profiled_exactly(tmp_path):
    path = write_json(tmp_path / "trace.json", two_calls())
    trace = read_trace(str(path))
    assert trace.format == "otel/json" and len(trace.calls) == 2  # invoke_agent and execute_tool are not calls
    first, second = trace.calls
    assert [m["role"] for m in first.messages] == ["system", "user"]
    assert [m["role"] for m in second.messages] == ["system", "user", "assistant", "tool"]
    assert second.messages[3] == {"role": "tool", "tool_call_id": "c1", "content": "a small feline"}
    assert first.response["tool_calls"][0]["function"] == {"name": "lookup", "arguments": '{"word": "cat"}'}
    assert first.tools[0]["function"]["name"] == "lookup" and trace.unrecorded == ()
    assert (first.reported.prompt, first.reported.cache_write, second.reported.cache_read) == (120, 100, 100)
    profile = tokprof.profile(trace, model="qwen2.5")
    assert all(row.exact for row in profile.calls) and "unrecorded" not in profile.buckets()
    for row in profile.calls:
        assert row.total == sum(row.buckets.values()) and min(row.buckets.values()) >= 0
        assert row.buckets["tool_definitions"] > 0 and row.buckets["system"] > 0


def test_billed_input_and_cost_are_the_files_own_usage(tmp_path):
    doc = two_calls()
    path = write_json(tmp_path / "trace.json", doc)
    profile = tokprof.profile(str(path), model="qwen2.5", prices=["1/2/0.1/1.25"])
    # an independent sum of the file's own fields: the chat spans' input and output tokens
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    fields = [{a["key"]: a["value"] for a in s["attributes"]} for s in spans if s["name"].startswith("chat")]
    billed = sum(int(f["gen_ai.usage.input_tokens"]["intValue"]) for f in fields)
    reads = sum(int(f["gen_ai.usage.cache_read.input_tokens"]["intValue"]) for f in fields)
    writes = sum(int(f["gen_ai.usage.cache_creation.input_tokens"]["intValue"]) for f in fields)
    output = sum(int(f["gen_ai.usage.output_tokens"]["intValue"]) for f in fields)
    summary = profile.summary()
    assert sum(row.reported.prompt for row in profile.calls) == billed == 300
    expected = ((billed - reads - writes) * 1 + reads * 0.1 + writes * 1.25 + output * 2) / 1e6
    assert summary.cost.total == pytest.approx(expected, abs=1e-12)


def test_content_not_captured_counts_the_reported_prompt_as_unrecorded(tmp_path):
    spans = []
    for n, (prompt, out) in enumerate([(1000, 50), (1400, 60)]):
        attrs = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "qwen2.5-7b-instruct",
            **usage(prompt, out, read=n * 900),
        }
        spans.append({"name": "chat", "spanId": str(n), "startTime": [1767268800 + n, 0], "attributes": attrs})
    path = tmp_path / "copilot.jsonl"
    path.write_text(
        "\n".join(json.dumps({"type": "span", **s}) for s in spans)
        + "\n"
        + json.dumps({"type": "metric", "name": "gen_ai.client.token.usage", "dataPoints": []})
        + "\n"
    )
    trace = read_trace(str(path))
    assert trace.format == "otel/jsonl" and [c.messages for c in trace.calls] == [[], []]
    assert "content-not-captured" in [n.code for n in trace.notes]
    profile = tokprof.profile(trace, model="qwen2.5")
    assert [row.buckets["unrecorded"] for row in profile.calls] == [1000, 1400]
    assert [row.total for row in profile.calls] == [1000, 1400] and not any(row.exact for row in profile.calls)


def test_redacted_usage_is_not_recorded_never_zero(tmp_path):
    attrs = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "m",
        "gen_ai.usage.input_tokens": "[REDACTED]",
        "gen_ai.usage.output_tokens": "[REDACTED]",
        "gen_ai.input.messages": [USER],
    }
    path = write_json(tmp_path / "t.json", {"spans": [{"name": "chat m", "attributes": attrs}]})
    trace = read_trace(str(path))
    assert trace.calls[0].reported is None and "usage-redacted" in [n.code for n in trace.notes]
    # neither content nor usage anywhere: nothing to profile, one line
    attrs.pop("gen_ai.input.messages")
    write_json(path, {"spans": [{"name": "chat m", "attributes": attrs}]})
    with pytest.raises(InputError, match="none records its prompt"):
        read_trace(str(path))


def test_older_layout_and_openinference(tmp_path):
    old = {
        "gen_ai.request.model": "qwen2.5-7b-instruct",
        "gen_ai.prompt.0.role": "system",
        "gen_ai.prompt.0.content": "You are a test bot.",
        "gen_ai.prompt.1.role": "user",
        "gen_ai.prompt.1.content": "Define cat.",
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.tool_calls.0.id": "c1",
        "gen_ai.completion.0.tool_calls.0.name": "lookup",
        "gen_ai.completion.0.tool_calls.0.arguments": '{"word": "cat"}',
        "llm.request.functions.0.name": "lookup",
        "llm.request.functions.0.description": "Look up a word.",
        "llm.request.functions.0.parameters": json.dumps(TOOLS[0]["parameters"]),
        "gen_ai.usage.prompt_tokens": 90,
        "gen_ai.usage.completion_tokens": 9,
    }
    oi = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "qwen2.5-7b-instruct",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "Define cat.",
        "llm.input_messages.1.message.role": "assistant",
        "llm.input_messages.1.message.tool_calls.0.tool_call.id": "c1",
        "llm.input_messages.1.message.tool_calls.0.tool_call.function.name": "lookup",
        "llm.input_messages.1.message.tool_calls.0.tool_call.function.arguments": '{"word": "cat"}',
        "llm.input_messages.2.message.role": "tool",
        "llm.input_messages.2.message.tool_call_id": "c1",
        "llm.input_messages.2.message.contents.0.message_content.type": "text",
        "llm.input_messages.2.message.contents.0.message_content.text": "a small feline",
        "llm.tools.0.tool.json_schema": json.dumps(
            {
                "type": "function",
                "function": {"name": "lookup", "description": "Look up a word.", "parameters": TOOLS[0]["parameters"]},
            }
        ),
        "llm.token_count.prompt": 130,
        "llm.token_count.completion": 7,
        "llm.token_count.prompt_details.cache_read": 64,
    }
    chain = {"openinference.span.kind": "CHAIN", "llm.token_count.prompt": 999}
    path = write_json(
        tmp_path / "spans.json",
        [
            {"name": "openai.chat", "start_time": 1767268800_000000000, "attributes": old},
            {"name": "ChatCompletion", "start_time": 1767268801_000000000, "attributes": oi},
            {"name": "agent", "attributes": chain},
        ],
    )
    trace = read_trace(str(path))
    assert len(trace.calls) == 2
    a, b = trace.calls
    assert [m["role"] for m in a.messages] == ["system", "user"] and a.tools[0]["function"]["name"] == "lookup"
    assert a.response["tool_calls"][0]["id"] == "c1" and a.reported.prompt == 90
    assert [m["role"] for m in b.messages] == ["user", "assistant", "tool"] and b.messages[2][
        "content"
    ] == "a small feline"
    assert (b.reported.prompt, b.reported.cache_read, b.reported.output) == (130, 64, 7)
    assert tokprof.profile(trace, model="qwen2.5").calls[1].buckets["tool_results"] > 0


@pytest.mark.parametrize(
    "attrs, field",
    [
        ({"gen_ai.usage.input_tokens": "lots"}, "attributes.gen_ai.usage.input_tokens"),
        ({"gen_ai.usage.input_tokens": -3}, "attributes.gen_ai.usage.input_tokens"),
        (usage(50, 1, read=40, write=20), "attributes.gen_ai.usage.cache_read.input_tokens"),  # cache over the prompt
        ({"gen_ai.input.messages": "[{not json"}, "attributes.gen_ai.input.messages"),
        ({"gen_ai.input.messages": [{"role": "user", "parts": [{"type": "tool_call"}]}]}, "parts[0].name"),
    ],
)
def test_malformed_is_one_line_naming_file_and_field(tmp_path, capsys, attrs, field):
    base = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.usage.output_tokens": 1}
    path = write_json(tmp_path / "bad.json", otlp([{"name": "chat", "attributes": kv({**base, **attrs})}]))
    assert main(["profile", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err and field in err and "Traceback" not in err


# -- the corpus ----------------------------------------------------------------------------------
def test_corpus_any_agent_dump():
    path = CORPUS / "any-agent_openai-agents_trace.json"
    if not path.exists():
        pytest.skip("the shared corpus is absent")
    doc = json.loads(path.read_text())
    calls = [s for s in doc["spans"] if s["attributes"].get("gen_ai.operation.name") == "call_llm"]
    trace = read_trace(str(path))
    assert len(trace.calls) == len(calls) == 3 and trace.unrecorded == ("tools",)
    assert [m["role"] for m in trace.calls[0].messages] == ["system", "user"]
    profile = tokprof.profile(trace)
    billed = sum(s["attributes"]["gen_ai.usage.input_tokens"] for s in calls)
    assert sum(row.total for row in profile.calls) == billed == profile.summary().billed_input
    for row in profile.calls:
        assert row.total == row.reported.prompt and min(row.buckets.values()) >= 0


def test_corpus_copilot_redacted_reports_its_calls_and_the_metric_totals(capsys):
    """#48.2: the calls, each not recorded, and the totals of its metric (tests/test_copilot_otel.py)."""
    path = CORPUS / "copilot-cli_file-exporter_phase2.jsonl"
    if not path.exists():
        pytest.skip("the shared corpus is absent")
    assert main(["profile", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "(21 calls" in out and "749,425 input and 5,219 output tokens over 21 calls" in out
