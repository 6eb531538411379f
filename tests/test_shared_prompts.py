"""A log of request records holds every call's whole prompt; the trace holds each message once
(#33 item 7): a call's prompt is a view of the list of the earlier prompt it extends, equal tool
lists are one object, and nothing a profile says changes. Logs written here by hand."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from tokprof import Model, profile, read_log
from tokprof.formats.sharing import SharedPrompts
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
        shared = profile(trace, Model(tiny_model())).to_dict()
        alone = profile(unshared(trace), Model(tiny_model())).to_dict()
        assert shared == alone, name


# -- the facade streams a JSONL of request records -------------------------------------------------


def side_call(text: str) -> list[dict]:
    """A side call without tools (a title, a summary), threaded apart from the conversation."""
    return [message("system", "Give a title."), message("user", text)]


def write_rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def capture_rows(model_names: tuple[str, ...] = ("test",)) -> list[dict]:
    """A capture of a conversation with side calls and a subagent (another system prompt) between its calls."""
    rows = []
    sub = conversation(3, first="define dog")
    for k, prompt in enumerate(conversation(6)):
        rows.append({"model": model_names[k % len(model_names)], "messages": prompt, "tools": [WEATHER_TOOL]})
        if k % 2:
            rows.append({"model": "test", "messages": side_call(f"title {k}")})
        if k < 3:
            sub_prompt = [message("system", "You are a sub agent."), *sub[k][1:]]
            rows.append({"model": "test", "messages": sub_prompt, "tools": [WEATHER_TOOL]})
    for i, row in enumerate(rows):
        row["usage"] = {"prompt_tokens": 20 + i}
    return rows


def streamed_and_whole(path: Path, model=None) -> tuple[dict, dict, list[bool]]:
    """The profile of ``path`` as :func:`tokprof.profile` makes it (streamed when it can), the profile of
    the log read whole, and whether the stream was taken."""
    import tokprof.api as api

    taken: list[bool] = []
    stream = api._profile_stream

    def spy(*args, **kwargs):
        found = stream(*args, **kwargs)
        taken.append(found is not None)
        return found

    api._profile_stream = spy
    try:
        streamed = profile(path, model).to_dict()
    finally:
        api._profile_stream = stream
    return streamed, profile(read_log(path), model).to_dict(), taken


def test_a_capture_is_profiled_as_a_stream_as_it_is_read_whole(tmp_path):
    path = write_rows(tmp_path / "capture.jsonl", capture_rows())
    streamed, whole, taken = streamed_and_whole(path, Model(tiny_model()))
    assert taken == [True]
    assert streamed == whole
    threads = {c["thread"] for c in whole["calls"]}
    assert {None, "subagent-1", "side-1"} <= threads  # the threads were named at the end of the stream


def test_a_stream_whose_model_names_choose_another_model_is_read_whole(tmp_path):
    path = write_rows(tmp_path / "mixed.jsonl", capture_rows(("qwen2.5-7b-instruct", "llama-3.1-8b-instruct")))
    streamed, whole, taken = streamed_and_whole(path)
    assert taken == [False]  # the first call's name chose Qwen2.5; the log's two names choose a stand-in
    assert streamed == whole


def test_a_stream_with_one_model_name_keeps_the_model_it_chose(tmp_path):
    rows = capture_rows(("qwen2.5-7b-instruct",))
    for row in rows:
        row["model"] = "qwen2.5-7b-instruct"
    streamed, whole, taken = streamed_and_whole(write_rows(tmp_path / "one.jsonl", rows))
    assert taken == [True] and streamed == whole
    assert streamed["model"]["name"] == "qwen2.5"


def test_a_streamed_log_cut_off_mid_line_says_so_as_read_whole(tmp_path):
    path = write_rows(tmp_path / "cut.jsonl", capture_rows())
    path.write_text(path.read_text(encoding="utf-8") + '{"model": "test", "messa', encoding="utf-8")
    streamed, whole, taken = streamed_and_whole(path, Model(tiny_model()))
    assert taken == [True] and streamed == whole
    assert any(w["code"] == "truncated-line" for w in streamed["warnings"])


def test_a_bad_line_in_a_stream_is_the_same_one_line_error(tmp_path, capsys):
    from tokprof.frontends.cli import main

    rows = capture_rows()
    lines = [json.dumps(r) for r in rows]
    lines[4] = '{"model": "test", "messages": "not a list"}'
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out.json"
    code = main(["profile", str(path), "--model", "qwen2.5", "-f", "json", "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and not out.exists()
    assert err.count("\n") == 1 and "line 5" in err and "messages" in err and "Traceback" not in err


def test_a_stream_without_a_successful_call_is_an_error(tmp_path, capsys):
    from tokprof.frontends.cli import main

    path = write_rows(
        tmp_path / "none.jsonl",
        [
            {
                "request": {"model": "test", "messages": [message("user", "hi")]},
                "response": {"status_code": 500, "body": {"error": {"message": "x"}}},
            }
        ],
    )
    code = main(["profile", str(path), "--model", "qwen2.5"])
    err = capsys.readouterr().err
    assert code == 2 and "no successful model call" in err


def test_an_anthropic_capture_is_profiled_as_a_stream_as_it_is_read_whole(tmp_path):
    from test_format_anthropic import claude_trace_lines

    path = write_rows(tmp_path / "claude-trace.jsonl", claude_trace_lines())
    streamed, whole, taken = streamed_and_whole(path, Model(tiny_model()))
    assert taken == [True] and streamed == whole
    assert {w["code"] for w in streamed["warnings"]} >= {"error-response"}  # notes made while streaming
