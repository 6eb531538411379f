"""Exact bucket counts on the tiny tokenizer, and the template cases that break naive subtraction."""

from __future__ import annotations

import pytest

from conftest import CHATML, small_transcript, tiny_model, write_json
from tokprof.attribution.attributor import Attributor
from tokprof.attribution.buckets import WARN_RESULTS_DROPPED, WARN_TOOLS_IGNORED
from tokprof.formats import read_trace


def profile_calls(model, path):
    trace = read_trace(str(path))
    attributor = Attributor(model)
    return trace, [attributor.attribute(call) for call in trace.calls]


def assert_invariants(model, trace, results, shape="parsed"):

    for call, r in zip(trace.calls, results):
        for value in r.as_dict().values():
            assert value >= 0
        full = model.prompt_format.render(model.prompt_format.prepare(call.messages, shape), call.tools, True, call.day)
        assert r.total == model.count(full)


def test_exact_buckets_tiny(tmp_path):
    model = tiny_model()
    trace, results = profile_calls(model, write_json(tmp_path / "t.json", small_transcript()))
    # call 0: <|im_start|> system You are a test bot . <|im_end|>  -> system 9
    #         Tools : lookup : Look up a word .                     -> tool definitions 9
    #         <|im_start|> user define cat <|im_end|> <|im_start|> assistant -> conversation 7
    assert results[0].as_dict() == {"system": 9, "tool_definitions": 9, "tool_results": 0, "conversation": 7}
    # call 1 adds the assistant's call (<|im_start|> assistant call lookup {" word ": " cat "} <|im_end|>: 11)
    # and the tool result (<|im_start|> tool cat is an animal <|im_end|>: 7)
    assert results[1].as_dict() == {"system": 9, "tool_definitions": 9, "tool_results": 7, "conversation": 18}
    assert_invariants(model, trace, results)
    assert all(r.spans for r in results)


def test_no_tools_tiny(tmp_path):
    model = tiny_model()
    trace, results = profile_calls(model, write_json(tmp_path / "t.json", small_transcript(tools=False)))
    assert results[0].as_dict() == {"system": 9, "tool_definitions": 0, "tool_results": 0, "conversation": 7}
    assert not results[0].warnings


def test_template_needing_empty_tools_list(tmp_path):
    # Iterates over tools unguarded: fails with tools=None, so the ablation must use tools=[].
    template = (
        "{{- '<|im_start|>system\\nTools:\\n' }}"
        "{%- for t in tools %}{{- t.function.name + ': ' + t.function.description + '\\n' }}{%- endfor %}"
        "{{- '<|im_end|>\\n' }}"
        "{%- for m in messages %}{{- '<|im_start|>' + m.role + '\\n' + (m.content or '') + '<|im_end|>\\n' }}{%- endfor %}"
        "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
    )
    model = tiny_model(template)
    trace, results = profile_calls(model, write_json(tmp_path / "t.json", small_transcript(system=False)))
    # "lookup: Look up a word.\n" is the only text tools add: lookup : Look up a word . (7)
    assert results[0].tool_definitions == 7
    # the "<|im_start|> system Tools : <|im_end|>" shell stays when tools=[]: it is the template's preamble
    assert results[0].system == 5
    assert_invariants(model, trace, results)


def test_named_templates_pick_tool_use(tmp_path):
    templates = {"default": "{%- for m in messages %}{{- m.content or '' }}{%- endfor %}", "tool_use": CHATML}
    model = tiny_model(templates)
    trace, results = profile_calls(model, write_json(tmp_path / "t.json", small_transcript()))
    assert results[0].tool_definitions == 9
    assert_invariants(model, trace, results)


def test_template_ignoring_tools_warns(tmp_path):
    template = (
        "{%- for m in messages %}{{- '<|im_start|>' + m.role + '\\n' + (m.content or '') + '<|im_end|>\\n' }}{%- endfor %}"
        "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
    )
    model = tiny_model(template)
    trace, results = profile_calls(model, write_json(tmp_path / "t.json", small_transcript()))
    assert results[0].tool_definitions == 0
    assert WARN_TOOLS_IGNORED in results[0].warnings


def test_template_dropping_tool_results_warns(tmp_path):
    template = (
        "{%- for m in messages %}{%- if m.role != 'tool' %}"
        "{{- '<|im_start|>' + m.role + '\\n' + (m.content or '') + '<|im_end|>\\n' }}{%- endif %}{%- endfor %}"
        "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
    )
    model = tiny_model(template)
    trace, results = profile_calls(model, write_json(tmp_path / "t.json", small_transcript(tools=False)))
    assert results[1].tool_results == 0
    assert WARN_RESULTS_DROPPED in results[1].warnings
    assert_invariants(model, trace, results)


def test_date_is_pinned(tmp_path):
    template = (
        "{{- 'Today ' + strftime_now('%d %b %Y') + '\\n' }}"
        "{%- for m in messages %}{{- m.role + ': ' + (m.content or '') + '\\n' }}{%- endfor %}"
    )
    model = tiny_model(template)
    log = small_transcript(tools=False)
    first = model.prompt_format.render(log["messages"][:2], None, True)
    assert "01 Jan 2025" in first
    log["timestamp"] = "2026-03-14T09:00:00Z"
    trace = read_trace(str(write_json(tmp_path / "t.json", log)))

    text = model.prompt_format.render(
        model.prompt_format.prepare(trace.calls[0].messages, model.prompt_format.shapes[0]),
        None,
        True,
        trace.calls[0].day,
    )
    assert "14 Mar 2026" in text


def test_qwen25_default_system_prompt(qwen25, tmp_path):
    """Qwen2.5 prints its own system prompt when the log has none: that is system, never negative."""
    with_tools = profile_calls(qwen25, write_json(tmp_path / "a.json", small_transcript(system=False)))
    without_tools = profile_calls(qwen25, write_json(tmp_path / "b.json", small_transcript(system=False, tools=False)))
    default_block = (
        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
    )
    assert without_tools[1][0].system == qwen25.count(default_block)
    assert with_tools[1][0].system == without_tools[1][0].system
    assert with_tools[1][0].tool_definitions > 100
    for trace, results in (with_tools, without_tools):
        assert_invariants(qwen25, trace, results)


def test_qwen25_system_message(qwen25, tmp_path):
    trace, results = profile_calls(qwen25, write_json(tmp_path / "a.json", small_transcript()))
    # <|im_start|> system \n You are a test bot . \n\n ... <|im_end|> \n ; the tool block is apart
    assert results[0].system == qwen25.count("<|im_start|>system\nYou are a test bot.<|im_end|>\n")
    assert_invariants(qwen25, trace, results)


def test_qwen3_tool_call_stays_in_conversation(qwen3, tmp_path):
    """Qwen3 renders the last assistant message differently; its tool call must not leak into tool results."""
    trace, results = profile_calls(qwen3, write_json(tmp_path / "a.json", small_transcript()))
    result_text = "\n<tool_response>\ncat is an animal\n</tool_response><|im_end|>\n"
    header = "<|im_start|>user"
    assert qwen3.count(result_text) <= results[1].tool_results <= qwen3.count(header + result_text)
    assert_invariants(qwen3, trace, results)


@pytest.mark.parametrize("model_name", ["tiny", "qwen2.5", "qwen3"])
def test_invariants_on_every_fixture(model_name, tmp_path, request):
    from conftest import FIXTURES

    model = (
        tiny_model()
        if model_name == "tiny"
        else request.getfixturevalue({"qwen2.5": "qwen25", "qwen3": "qwen3"}[model_name])
    )
    paths = sorted(FIXTURES.glob("good_*"))
    assert paths
    for path in paths:
        trace, results = profile_calls(model, path)
        assert_invariants(model, trace, results)


def test_trimming_template_keeps_markers(tmp_path):
    """Content with surrounding whitespace, rendered by a template that trims it, still gets its spans."""
    template = CHATML.replace("{{- m.content }}", "{{- m.content | trim }}")
    model = tiny_model(template)
    log = small_transcript()
    padded = json_copy(log)
    for message in padded["messages"]:
        if message.get("content"):
            message["content"] = "\n" + message["content"] + "\n\n"
    _, plain = profile_calls(model, write_json(tmp_path / "a.json", log))
    _, trimmed = profile_calls(model, write_json(tmp_path / "b.json", padded))
    assert [r.as_dict() for r in trimmed] == [r.as_dict() for r in plain]
    assert all(r.spans for r in trimmed)


def test_template_needing_string_arguments(tmp_path):
    """A template that concatenates arguments as a string fails on parsed objects: the API shape is retried."""
    template = CHATML.replace("(c.function.arguments | tojson)", "c.function.arguments")
    model = tiny_model(template)
    trace, results = profile_calls(model, write_json(tmp_path / "a.json", small_transcript()))
    assert results[1].conversation == 18
    assert_invariants(model, trace, results, shape="string-arguments")


def test_hermes_style_named_templates(tmp_path):
    """tool_use adds a preamble even for tools=[] and fails on None; the preamble is tool scaffolding."""
    tool_use = CHATML.replace("{{- '\\nTools:\\n' }}", "{{- '\\nUse functions . Tools:\\n' }}").replace(
        "{%- if tools %}", "{%- if tools is not none %}{%- for t in tools %}{%- endfor %}"
    )
    model = tiny_model({"default": CHATML, "tool_use": tool_use})
    trace, results = profile_calls(model, write_json(tmp_path / "a.json", small_transcript()))
    # "Use functions . Tools :" (5) plus the tool line (7)
    assert [r.tool_definitions for r in results] == [12, 12]
    assert results[0].system == 9


def json_copy(value):
    import json

    return json.loads(json.dumps(value))


JSON_TEMPLATE = (
    "{% for t in tools or [] %}{{ t | tojson }}\n{% endfor %}"
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content or '' }}"
    "{% for c in m.tool_calls or [] %}{{ {'name': c.function.name, 'arguments': c.function.arguments} | tojson }}"
    "{% endfor %}<|im_end|>\n{% endfor %}"
)


@pytest.mark.parametrize("keep_json", [False, True])
def test_remembered_json_is_what_json_dumps_writes(keep_json):
    """The JSON templates write of a call's tools and tool calls (remembered by identity) equals a
    fresh render's; objects a template builds are written anew each time."""
    from tokprof.trace import Call

    model = tiny_model(JSON_TEMPLATE)
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    messages = [
        {"role": "user", "content": "cat"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"a": "dog"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a cat is an animal"},
    ]
    attributor = Attributor(model, keep_json=keep_json)
    first = attributor.attribute(Call(index=0, messages=messages[:1], tools=tools))
    second = attributor.attribute(Call(index=1, messages=messages, tools=tools))
    assert second == Attributor(model).attribute(Call(index=1, messages=messages, tools=tools))
    assert first == Attributor(model).attribute(Call(index=0, messages=messages[:1], tools=tools))
    remembered = list(attributor._json._json.values())
    if keep_json:  # the tools' JSON is remembered, the object the template builds of each tool call is not
        assert any('"lookup"' in text for text in remembered)
        assert not any(text.startswith('{"name": "lookup", "arguments"') for text in remembered)
    else:
        assert remembered == []


def test_a_long_lived_attributor_stays_bounded_and_exact(monkeypatch):
    """Model.count and tokprof serve keep one attributor: what it remembers of messages is bounded,
    and starting it afresh changes no count."""
    import tokprof.attribution.attributor as attribution
    from tokprof.trace import Call

    monkeypatch.setattr(attribution, "_REMEMBERED", 30)
    model = tiny_model(JSON_TEMPLATE)
    attributor = Attributor(model)
    for i in range(40):
        messages = [
            {"role": "system", "content": "You are a test bot ."},
            {"role": "user", "content": f"cat {i}"},
            {"role": "assistant", "content": "a cat is an animal ."},
            {"role": "user", "content": "dog"},
        ]
        call = Call(index=i, messages=messages, tools=None)
        assert attributor.attribute(call) == Attributor(model).attribute(call)
        assert len(attributor._messages) + len(attributor._marks) <= 30 + 2 * len(messages)
