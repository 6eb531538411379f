"""What keeps memory down on big logs (#33 item 7) keeps every output the same: the JSON text joined
as it is encoded is json.dumps's, byte for byte; the Claude Code reader's calls share message
objects but never a prompt list; repeated line fields are held once. Transcripts written here by
hand (the shape of Claude Code's lines, as in test_format_claude_code.py)."""

from __future__ import annotations

import json
import math

import pytest

from tokprof.formats import read_trace
from tokprof.formats.claude_code.lines import Text, Thinking, ToolResult, ToolUse, assistant, kept
from tokprof.base.jsontext import BATCH, dumps, object_chunks
from tokprof.trace import PromptView, extended

SESSION = "mem-1"
MODEL = "claude-sonnet-4-5-20250929"


@pytest.mark.parametrize(
    "value",
    [
        {},
        [],
        "",
        0,
        None,
        True,
        -1.5,
        1e300,
        'é \u2028 \U0001f600 "quoted" \\ \n\t',
        {"a": [], "b": {}, "c": [1, [2, [3, {}]]], "d": {"e": None, "f": False}},
        [{"index": i, "buckets": {"system": i, "conversation": 2 * i}, "where": f"line {i}"} for i in range(BATCH)],
    ],
)
def test_dumps_is_json_dumps_with_indent_byte_for_byte(value):
    assert dumps(value) == json.dumps(value, indent=2, ensure_ascii=False)
    assert dumps(value, indent=None) == json.dumps(value, ensure_ascii=False)


def test_dumps_refuses_nan_rather_than_writing_invalid_json():
    import pytest

    from tokprof.base.errors import TokprofError

    for value in (math.nan, math.inf):
        with pytest.raises(TokprofError, match="NaN or infinity"):
            dumps({"x": value})


@pytest.mark.parametrize(
    "items", [[], [{}], [1, "two\nlines", None], [{"a": [1, {"b": []}], "c": "é\n"}] * (BATCH // 3)]
)
def test_an_object_written_in_pieces_is_json_dumps_byte_for_byte(items):
    value = {"first": {"x": [1, 2], "y": {}}, "rows": items, "empty": [], "last": "a\nb \U0001f600"}
    fields = [(key, lambda key=key: value[key]) for key in value]
    pieces = list(object_chunks(fields, "rows", iter(items)))
    assert "".join(pieces) == json.dumps(value, indent=2, ensure_ascii=False)


def test_an_object_written_in_pieces_refuses_nan():
    from tokprof.base.errors import TokprofError

    with pytest.raises(TokprofError, match="NaN or infinity"):
        "".join(object_chunks([("rows", list)], "rows", [{"x": math.nan}]))


def test_a_profile_written_in_pieces_is_its_json(tmp_path):
    """What ``profile -f json -o FILE`` writes (``Profile.json_chunks``, a piece at a time) and ``save``
    give ``json.dumps(to_dict(), indent=2)`` and a line break, byte for byte."""
    from pathlib import Path

    from tokprof.frontends.cli import main

    sample = Path(__file__).parent.parent / "samples" / "retention_session.json"
    assert (
        main(
            [
                "profile",
                str(sample),
                "--model",
                "qwen2.5",
                "--no-progress",
                "-f",
                "json",
                "-o",
                str(tmp_path / "a.json"),
            ]
        )
        == 0
    )
    written = (tmp_path / "a.json").read_text(encoding="utf-8")
    from tokprof import Profile

    profile = Profile.load(tmp_path / "a.json")
    assert written == json.dumps(profile.to_dict(), indent=2, ensure_ascii=False) + "\n" == profile.to_json()
    profile.save(tmp_path / "b.json")
    assert (tmp_path / "b.json").read_text(encoding="utf-8") == written


def _line(kind: str, uuid: str, parent: str | None, **extra) -> dict:
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "sessionId": SESSION,
        "type": kind,
        "uuid": uuid,
        "cwd": "/home/dev/project",
        "gitBranch": "main",
        "timestamp": "2025-10-26T10:38:30.633Z",
        **extra,
    }


def _session(calls: int) -> list[dict]:
    rows = [_line("user", "u0", None, message={"role": "user", "content": "Read the files."})]
    parent = "u0"
    for i in range(calls):
        message = {
            "model": MODEL,
            "id": f"msg_{i}",
            "type": "message",
            "role": "assistant",
            "stop_reason": "tool_use",
            "content": [{"type": "tool_use", "id": f"t{i}", "name": "Read", "input": {"file_path": f"/{i}.py"}}],
            "usage": {
                "input_tokens": 3,
                "cache_creation_input_tokens": 10,
                "cache_read_input_tokens": 100 + i,
                "output_tokens": 5,
            },
        }
        rows.append(_line("assistant", f"a{i}", parent, message=message, requestId=f"req_{i}"))
        result = {"type": "tool_result", "tool_use_id": f"t{i}", "content": f"text of {i}.py"}
        rows.append(_line("user", f"r{i}", f"a{i}", message={"role": "user", "content": [result]}))
        parent = f"r{i}"
    return rows


def _read(tmp_path, rows):
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return read_trace(str(path), "claude-code")


def test_calls_share_one_list_of_messages_each_through_its_own_view(tmp_path):
    trace = _read(tmp_path, _session(6))
    lists = [call.messages for call in trace.calls]
    assert all(isinstance(messages, PromptView) for messages in lists)
    assert len({id(messages) for messages in lists}) == len(lists)
    assert len({id(messages.base) for messages in lists}) == 1  # one list: O(messages), not O(calls x messages)
    for before, after in zip(lists, lists[1:]):
        assert after[: len(before)] == before
        assert after.extends(before) and not before.extends(after)
        assert all(a is b for a, b in zip(after, before))  # one object per message, shared
    assert [len(m) for m in lists] == [1, 3, 5, 7, 9, 11]
    assert lists[-1][-1] == {"role": "tool", "tool_call_id": "t4", "content": "text of 4.py"}


def test_a_response_and_the_message_of_it_in_later_prompts_are_one_object(tmp_path):
    trace = _read(tmp_path, _session(6))
    for before, after in zip(trace.calls, trace.calls[1:]):
        message = after.messages[len(before.messages)]
        assert message is before.response
        assert message["role"] == "assistant" and message["tool_calls"]


def test_a_prompt_is_read_only_and_a_new_list_for_one_call_changes_no_other(tmp_path):
    trace = _read(tmp_path, _session(3))
    with pytest.raises(AttributeError):
        trace.calls[1].messages.append({"role": "user", "content": "added"})  # type: ignore[union-attr]
    trace.calls[1].messages = [*trace.calls[1].messages, {"role": "user", "content": "added"}]
    assert [len(call.messages) for call in trace.calls] == [1, 4, 5]
    assert trace.calls[2].messages[-1]["role"] == "tool"


def test_a_view_reads_as_the_list_it_shows():
    base = [{"n": i} for i in range(5)]
    view, whole = PromptView(base, 3), PromptView(base, 5)
    assert len(view) == 3 and list(view) == base[:3] and view[-1] is base[2]
    assert view[1:] == base[1:3] and type(view[1:]) is list and view[::-1] == base[2::-1]
    assert view == base[:3] and base[:3] == view and view != base and view != tuple(base[:3])
    assert view + [{"n": 9}] == [*base[:3], {"n": 9}] and [{"n": 9}] + view == [{"n": 9}, *base[:3]]
    assert {"n": 2} in view and {"n": 3} not in view and view.index({"n": 1}) == 1
    assert list(reversed(view)) == base[2::-1] and repr(view) == repr(base[:3])
    with pytest.raises(IndexError):
        view[3]
    assert whole.extends(view) and not view.extends(whole) and not view.extends(base[:3])
    import pickle

    assert pickle.loads(pickle.dumps(view)) == base[:3]
    with pytest.raises(ValueError):
        PromptView(base, 6)


def test_a_view_extended_grows_its_list_only_when_it_shows_all_of_it():
    first = extended([], [{"n": 0}])
    second = extended(first, [{"n": 1}])
    assert second.base is first.base and list(first) == [{"n": 0}] and len(second) == 2
    branch = extended(first, [{"n": 2}])  # first no longer shows all of its list: a new list
    assert branch.base is not first.base and list(branch) == [{"n": 0}, {"n": 2}]
    assert list(second) == [{"n": 0}, {"n": 1}]


def test_repeated_line_fields_are_one_string(tmp_path):
    message = {"role": "assistant", "model": MODEL, "content": [], "usage": {"input_tokens": 1}}
    one = kept(json.loads(json.dumps(_line("assistant", "a1", None, message=message))), "assistant")
    two = kept(json.loads(json.dumps(_line("assistant", "a2", "a1", message=message))), "assistant")
    for key in ("sessionId", "cwd", "gitBranch"):
        assert one[key] is two[key]
    assert one["message"]["model"] is two["message"]["model"]
    # the rest is on the line (uuid, parent, type): a user line keeps its session alone
    assert "uuid" not in one and "parentUuid" not in two and "content" not in one["message"]
    assert kept(json.loads(json.dumps(_line("user", "u1", "a2"))), "user") == {"sessionId": SESSION}


def test_parts_are_frozen_dataclasses_with_the_assistant_message_of_before():
    call = {"id": "t1", "type": "function", "function": {"name": "Read", "arguments": "{}"}}
    parts = (Text("a"), Thinking("hmm"), ToolUse(call), Text("b"))
    message = assistant(parts)
    assert message == {"role": "assistant", "content": "a\nb", "reasoning_content": "hmm", "tool_calls": [call]}
    with pytest.raises(AttributeError):
        ToolResult("t1", "x").text = "y"  # type: ignore[misc]


# -- what an attributor holds: a huge prompt fewer times, the messages of a long log only while used --


def test_recent_forgets_what_a_whole_generation_did_not_use():
    from tokprof.attribution.recent_cache import MISSING, Recent

    cache: Recent[str, int | None] = Recent()
    cache["a"], cache["b"], cache["none"] = 1, 2, None
    cache.age()
    assert cache.find("a") == 1 and cache.find("none") is None  # used: moved to the new generation
    cache.age()
    assert cache.find("b") is MISSING and "b" not in cache
    assert cache.get("a") == 1 and len(cache) == 2


def test_the_json_memo_keeps_only_what_it_is_told_to():
    from tokprof.models.jsonmemo import JsonMemo

    kept, dropped = {"a": [1, {"b": 2}]}, {"c": 3}
    memo = JsonMemo()
    memo.add(kept)
    memo.add(dropped)
    assert memo.json(kept["a"][1]) == '{"b": 2}' and memo.json(dropped) == '{"c": 3}'
    written = memo._json[id(kept["a"][1])]
    memo.retain([kept])
    assert memo.json(dropped) is None and memo.json(kept) == '{"a": [1, {"b": 2}]}'
    assert memo._json[id(kept["a"][1])] is written  # the JSON already written of what is kept stays


def test_a_grown_array_copies_the_array_it_started_from_before_writing():
    import numpy as np

    from tokprof.attribution.splice import Grow

    given = np.arange(5, dtype=np.int64)
    grown = Grow(given, np.int64)
    assert grown.data is given  # shared, not copied, until written
    grown.put(3, np.array([9, 9, 9]))
    assert given.tolist() == [0, 1, 2, 3, 4] and grown.view().tolist() == [0, 1, 2, 9, 9, 9]
    grown.put(1, np.array([7]))
    assert grown.view().tolist() == [0, 7]


def test_a_splice_state_shares_its_calls_render_until_extended():
    import numpy as np

    from tokprof.attribution.splice import Grow, SpliceState

    full = "<body text>GEN"
    empty = Grow(np.zeros(0, dtype=np.int8), np.int8)
    state = SpliceState("s", True, [full], 11, "GEN", empty, empty, np.zeros(4), empty, empty, 0, frozenset(), None)
    state.over = 3
    assert state.text() is full and state.tail(5) == "text>" and state.tail(99) == "<body text>"
    state.extend("<more>")
    state.gen, state._text = "G2", None
    assert state.body == ["<body text>", "<more>"] and state.body_len == 17 and state.over == 0
    assert state.text() == "<body text><more>G2" and state.tail(8) == "t><more>"


def _long_log(threads: int, calls: int) -> list:
    """Calls of ``threads`` conversations one after the other (a compacted session's stretches), each
    growing by a user message and a reply."""
    from tokprof.trace import Call

    out = []
    for t in range(threads):
        messages = [{"role": "system", "content": f"You are bot {t} ."}, {"role": "user", "content": f"task {t}"}]
        for i in range(calls):
            out.append(Call(index=len(out), messages=list(messages), tools=None))
            messages += [{"role": "assistant", "content": f"step {i} of {t} ."}, {"role": "user", "content": "next"}]
    return out


def test_an_attributor_forgets_the_messages_of_finished_conversations(monkeypatch):
    import tokprof.attribution.attributor as attribution
    from conftest import tiny_model
    from tokprof.attribution.attributor import Attributor

    monkeypatch.setattr(attribution, "_GENERATION", 40)
    model = tiny_model()
    calls = _long_log(threads=12, calls=10)
    on, fresh = Attributor(model, keep_json=True), Attributor(model, keep_json=True, incremental=False)
    held = []
    for call in calls:
        assert on.attribute(call) == fresh.attribute(call)
        held.append(len(on._messages) + len(on._marks))
    largest = max(len(call.messages) for call in calls)
    assert max(held) <= 2 * max(40, 4 * largest) + 3 * largest  # two generations, not every message of the log
    assert len(on._json._objects) < sum(len(call.messages) for call in calls[-20:]) * 4


def test_a_huge_new_message_is_rendered_whole_with_the_same_buckets(monkeypatch):
    import tokprof.attribution.attributor as attribution
    from conftest import tiny_model
    from tokprof.attribution.attributor import Attributor
    from tokprof.trace import Call

    monkeypatch.setattr(attribution, "_MARK_CACHED", 50)
    model = tiny_model()
    head = [{"role": "system", "content": "You are a test bot ."}, {"role": "user", "content": "dump it"}]
    big = " ".join(["row"] * 200)
    prompts = [head, head + [{"role": "assistant", "content": "ok ."}, {"role": "user", "content": big}]]
    prompts.append(prompts[-1] + [{"role": "assistant", "content": "done ."}, {"role": "user", "content": "and ?"}])
    on, off = Attributor(model, keep_json=True), Attributor(model, keep_json=True, incremental=False)
    for i, messages in enumerate(prompts):
        call = Call(index=i, messages=messages, tools=None)
        assert on.attribute(call) == off.attribute(call)
        assert on.last_prompt()[0] == off.last_prompt()[0]
    assert all(len(m.get("content") or "") <= 50 for m in on._marks.values() if m is not None)


def test_an_attributor_keeps_the_conversations_of_a_bounded_number_of_characters(monkeypatch):
    import tokprof.attribution.attributor as attribution
    from conftest import tiny_model
    from tokprof.attribution.attributor import Attributor, _prompt_chars

    monkeypatch.setattr(attribution, "_THREAD_CHARS", 400)
    model = tiny_model()
    on, off = Attributor(model, keep_json=True), Attributor(model, keep_json=True, incremental=False)
    for call in _long_log(threads=6, calls=8):
        assert on.attribute(call) == off.attribute(call)
        chars = [_prompt_chars(thread) for thread in on._threads.values()]
        assert len(chars) == 1 or sum(chars) <= max(400, 2 * chars[-1])
    assert on.spliced > 0


def test_a_prompt_with_more_messages_than_markers_is_marked_a_chunk_at_a_time(monkeypatch):
    """Past 65,533 messages (one opening marker each) a prompt is marked in chunks, a render each:
    with chunks of 3, every call's buckets are those of marking all at once."""
    import tokprof.attribution.attributor as attribution
    from conftest import tiny_model
    from tokprof.attribution.attributor import Attributor

    model = tiny_model()
    calls = _long_log(threads=2, calls=6)
    once = [Attributor(model, keep_json=True, incremental=False).attribute(call) for call in calls]
    monkeypatch.setattr(attribution, "_MARK_CHUNK", 3)
    chunked = Attributor(model, keep_json=True, incremental=False)
    for call, want in zip(calls, once):
        got = chunked.attribute(call)
        assert got == want and got.spans


def test_the_first_reuse_check_compares_part_by_part_as_reuse_would_whole(qwen25):
    """The tiktoken counter's first check of reuse no longer holds the reused array beside the whole
    text's: its answer is what comparing the two whole arrays gives."""
    import random

    import numpy as np

    counter = qwen25.counter
    if not hasattr(counter, "_reused_alike"):
        pytest.skip("not a tiktoken counter")
    rng = random.Random(5)
    pieces = ["alpha ", "beta\n", "  gamma", "\n\nDelta", "<|im_start|>user\n", "é ", "x", "\n}\n"]
    for _ in range(200):
        old = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 30)))
        common = rng.randint(0, len(old))
        text = old[:common] + "".join(rng.choice(pieces) for _ in range(rng.randint(0, 10)))
        starts, before = counter._starts(text), counter._starts(old)
        want = np.array_equal(counter._reuse(text, before, common), starts)
        assert counter._reused_alike(text, starts, before, common) == want
