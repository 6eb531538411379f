"""A log of request records holds every call's whole prompt; the trace holds each message once
(#33 item 7): a call's prompt is a view of the list of the earlier prompt it extends, equal tool
lists are one object, and nothing a profile says changes. Logs written here by hand."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from tokprof import Model, profile, read_log
from tokprof.formats.shared_prompts import SharedPrompts
from tokprof.trace import Call, PromptView, Trace

from conftest import WEATHER_TOOL, tiny_model


def message(role: str, text: str, **more) -> dict:
    return {"role": role, "content": text, **more}


def conversation(turns: int, first: str = "define cat") -> list[list[dict]]:
    """The prompts of a conversation of ``turns`` calls, each the one before plus a tool call and its result."""
    messages = [message("system", "You are a test bot."), message("user", first)]
    prompts = []
    for k in range(turns):
        prompts.append(copy.deepcopy(messages))  # as parsed from its own line: equal, not the same objects
        call = {"id": f"c{k}", "type": "function", "function": {"name": "lookup", "arguments": '{"word": "dog"}'}}
        messages = messages + [
            message("assistant", "", tool_calls=[call]),
            message("tool", f"dog is an animal {k}", tool_call_id=f"c{k}"),
        ]
    return prompts


def write_records(path: Path, prompts: list[list[dict]]) -> Path:
    rows = [
        {"model": "test", "messages": p, "tools": [WEATHER_TOOL], "usage": {"prompt_tokens": 10 + i}}
        for i, p in enumerate(prompts)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_prompt_that_extends_the_one_before_is_a_view_of_its_list():
    shared = SharedPrompts()
    first, second, third = conversation(3)
    views = [shared.prompt(p) for p in (first, second, third)]
    assert all(isinstance(v, PromptView) for v in views)
    assert views[0].base is views[1].base is views[2].base
    assert [len(v) for v in views] == [2, 4, 6]
    assert [list(v) for v in views] == conversation(3)  # each shows what its record holds


def test_a_rewritten_prompt_gets_its_own_list_with_the_equal_messages_shared():
    shared = SharedPrompts()
    first, second = conversation(2)
    a = shared.prompt(second)
    rewritten = copy.deepcopy(second[:2]) + [message("user", "start over")]
    b = shared.prompt(rewritten)
    assert b.base is not a.base
    assert b[0] is a[0] and b[1] is a[1]  # the system prompt and first turn: one object each
    assert list(b) == second[:2] + [message("user", "start over")]


def test_a_sliding_window_holds_each_message_once():
    shared = SharedPrompts()
    prompts = conversation(8)
    window = [p if len(p) <= 6 else [p[0], *p[-4:]] for p in prompts]  # the system prompt and the last 4
    views = [shared.prompt(copy.deepcopy(p)) for p in window]
    assert [list(v) for v in views] == window
    objects = {id(m): m for v in views for m in v}
    assert len(objects) == len({json.dumps(m, sort_keys=True) for v in views for m in v})


def test_interleaved_conversations_each_extend_their_own():
    shared = SharedPrompts()
    one, other = conversation(3), conversation(3, first="define dog")
    views = [shared.prompt(p) for pair in zip(one, other) for p in pair]
    assert views[0].base is views[2].base is views[4].base
    assert views[1].base is views[3].base is views[5].base
    assert views[0].base is not views[1].base


def test_equal_tool_lists_are_one_object():
    shared = SharedPrompts()
    first = shared.tools([copy.deepcopy(WEATHER_TOOL)])
    again = shared.tools([copy.deepcopy(WEATHER_TOOL)])
    other = shared.tools([{**WEATHER_TOOL, "function": {**WEATHER_TOOL["function"], "name": "other"}}])
    assert again is first and other is not first
    assert shared.tools(None) is None and shared.tools([]) == []


def test_a_records_log_holds_each_message_once(tmp_path):
    trace = read_log(write_records(tmp_path / "log.jsonl", conversation(5)))
    bases = {id(c.messages.base) for c in trace.calls if isinstance(c.messages, PromptView)}
    assert len(bases) == 1 and len(trace.calls) == 5
    assert len({id(c.tools) for c in trace.calls}) == 1


def test_an_anthropic_records_log_holds_each_message_once(tmp_path):
    rows = []
    messages: list[dict] = [{"role": "user", "content": "define cat"}]
    for k in range(4):
        rows.append(
            {"model": "claude-sonnet-4-5", "system": "You are a test bot.", "messages": copy.deepcopy(messages)}
        )
        messages = messages + [
            {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{k}", "name": "lookup", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k}", "content": "an animal"}]},
        ]
    path = tmp_path / "anthropic.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    trace = read_log(path, input_format="anthropic")
    assert len({id(c.messages.base) for c in trace.calls}) == 1


def unshared(trace: Trace) -> Trace:
    """The trace with every call's prompt a list of its own copies, as a reader that shares nothing gives."""
    calls = [
        Call(**{**{f: getattr(c, f) for f in Call.__slots__}, "messages": copy.deepcopy(list(c.messages))})
        for c in trace.calls
    ]
    return Trace(**{**trace.__dict__, "calls": calls})


def test_sharing_changes_nothing_a_profile_says(tmp_path):
    one, other = conversation(6), conversation(6, first="define dog")
    interleaved = [p for pair in zip(one, other) for p in pair]
    window = [p if len(p) <= 6 else [p[0], *p[-4:]] for p in conversation(8)]  # a sliding window
    for name, prompts in (("one", one), ("interleaved", interleaved), ("window", window)):
        trace = read_log(write_records(tmp_path / f"{name}.jsonl", prompts))
        shared = profile(trace, model=Model(tiny_model())).to_dict()
        alone = profile(unshared(trace), model=Model(tiny_model())).to_dict()
        assert shared == alone, name


def random_prompts(seed: int, calls: int = 24) -> list[list[dict]]:
    """Prompts as a capture of a few conversations gives them, with what agents do to their history:
    a conversation grows, is cut to a window, rewritten from a message on, repeats a prompt, or
    starts over; conversations interleave. Each prompt is its own copy."""
    import random

    rng = random.Random(seed)
    histories = [[message("system", f"You are bot {k}."), message("user", f"define cat {k}")] for k in range(3)]
    out = []
    for n in range(calls):
        k = rng.randrange(len(histories))
        history = histories[k]
        move = rng.random()
        if move < 0.55:
            call = {"id": f"c{n}", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
            history += [message("assistant", "", tool_calls=[call]), message("tool", f"dog {n}", tool_call_id=f"c{n}")]
        elif move < 0.7 and len(history) > 4:
            del history[1:3]  # a window: the oldest exchange dropped, the system prompt kept
            if history[1]["role"] == "tool":
                del history[1]
        elif move < 0.8:
            history[-1] = message("user", f"again {n}")  # the last message rewritten
        elif move < 0.9:
            pass  # the same prompt again (a retry)
        else:
            histories[k] = history = [message("system", f"You are bot {k}."), message("user", f"restart {n}")]
        out.append(copy.deepcopy(history))
    return out


@pytest.mark.parametrize("seed", range(12))
def test_sharing_changes_nothing_on_random_captures(tmp_path, seed):
    prompts = random_prompts(seed)
    trace = read_log(write_records(tmp_path / "log.jsonl", prompts))
    assert [list(c.messages) for c in trace.calls] == prompts  # each call reads as its record
    shared = profile(trace, model=Model(tiny_model())).to_dict()
    alone = profile(unshared(trace), model=Model(tiny_model())).to_dict()
    assert shared == alone


def test_tool_lists_equal_but_rendered_apart_stay_apart():
    # ``==`` takes 1 for 1.0 (and for True) and ignores key order; a template's tojson renders them
    # apart, so a later call given the earlier list would be counted with text it was not sent
    def tool(minimum: object, order: tuple[str, ...] = ("a", "b")) -> dict:
        properties = {name: {"type": "number", "minimum": minimum} for name in order}
        return {
            "type": "function",
            "function": {"name": "f", "parameters": {"type": "object", "properties": properties}},
        }

    shared = SharedPrompts()
    first = shared.tools([tool(1)])
    for other in ([tool(1.0)], [tool(True)], [tool(1, ("b", "a"))]):
        got = shared.tools(other)
        assert got is other and json.dumps(got) == json.dumps(other)
    assert shared.tools([tool(1)]) is first


def test_a_records_log_keeps_each_record_s_tools_as_sent(tmp_path):
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}
    rows = [
        {"model": "test", "messages": p, "tools": [{**tool, "function": {**tool["function"], "strict": value}}]}
        for p, value in zip(conversation(2), (1, True))
    ]
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    trace = read_log(path)
    assert [json.dumps(c.tools) for c in trace.calls] == [json.dumps(r["tools"]) for r in rows]


def test_fitted_ids_keep_interleaved_conversations_shared(tmp_path):
    # a capture's two conversations interleaved are one thread: the fitted messages stay one object each
    from tokprof.transforms.tool_ids import fit_tool_call_ids

    def long_ids(prompts: list[list[dict]]) -> list[list[dict]]:
        for prompt in prompts:
            for m in prompt:
                for c in m.get("tool_calls") or []:
                    c["id"] = f"call_{c['id']}_0123456789"
                if m.get("tool_call_id"):
                    m["tool_call_id"] = f"call_{m['tool_call_id']}_0123456789"
        return prompts

    one, other = long_ids(conversation(6)), long_ids(conversation(6, first="define dog"))
    trace = read_log(write_records(tmp_path / "log.jsonl", [p for pair in zip(one, other) for p in pair]))
    fitted = fit_tool_call_ids(trace)
    assert {c.thread for c in fitted.calls} == {""}
    assert [list(c.messages) for c in fitted.calls] != [list(c.messages) for c in trace.calls]  # ids mapped
    objects = {id(m) for c in fitted.calls for m in c.messages}
    assert len(objects) == len({id(m) for c in trace.calls for m in c.messages})  # one copy a message


def test_messages_that_render_apart_are_not_shared_though_equal():
    """``==`` takes 1 for 1.0 and True and ignores the order of keys; tool-call arguments given as
    JSON values render them apart, so such a message is never another's object."""

    def asking(value) -> dict:
        call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"n": value, "b": True}}}
        return message("assistant", "", tool_calls=[call])

    start = [message("system", "s"), message("user", "hi")]
    for later in (1.0, True):
        shared = SharedPrompts()
        first = shared.prompt(copy.deepcopy([*start, asking(1)]))
        grown = shared.prompt(copy.deepcopy([*start, asking(later), message("tool", "r", tool_call_id="c1")]))
        assert grown.base is not first.base  # not an extension of the first
        assert grown[2] is not first[2] and type(grown[2]["tool_calls"][0]["function"]["arguments"]["n"]) is type(later)
        assert grown[0] is first[0]  # the equal ones are shared still
    shared = SharedPrompts()
    first = shared.prompt(copy.deepcopy([*start, asking(1)]))
    again = shared.prompt(copy.deepcopy([*start, asking(1), message("tool", "r", tool_call_id="c1")]))
    assert again.base is first.base  # the same values: an extension


def test_many_interleaved_conversations_each_extend_their_own():
    """A proxy's capture of many sessions at once: each call's prompt extends its own session's,
    found by how the session starts, not only among the last few prompts read."""
    shared = SharedPrompts()
    sessions = [conversation(4, first=f"define word {k}") for k in range(12)]
    views = [[shared.prompt(copy.deepcopy(s[turn])) for s in sessions] for turn in range(4)]
    for k in range(12):
        assert len({id(views[turn][k].base) for turn in range(4)}) == 1
    assert len({id(views[3][k].base) for k in range(12)}) == 12
