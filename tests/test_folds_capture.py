"""The API-capture, eval and Codex readers as folds (#43.1, #43.4): each record fed gives the calls it
completes, not the whole log at the end; what they hold stays bounded. Logs written here by hand."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from test_format_codex import Counter, call, context, meta, result, say, think, user, write
from tokprof.formats import log_format, open_log
from tokprof.formats.jsonfile import load
from tokprof.formats.reader import Record
from tokprof.formats.shared_prompts import SharedPrompts
from tokprof.trace import Call


def fed(path: Path, name: str) -> tuple[list[list[Call]], list[Call]]:
    """The calls each line gives when fed to the format's reader, and those ``finish`` gives."""
    doc = load(str(path))
    reader = log_format(name).reader(str(path), doc)
    assert doc.lines is not None
    per_line = [list(reader.feed(Record(value, number))) for number, value in doc.lines]
    return per_line, list(reader.finish())


def conversation(turns: int, first: str = "go") -> list[list[dict]]:
    messages = [{"role": "system", "content": "You are a bot."}, {"role": "user", "content": first}]
    prompts = []
    for k in range(turns):
        prompts.append(copy.deepcopy(messages))
        tool_call = {"id": f"c{k}", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
        messages = messages + [
            {"role": "assistant", "content": None, "tool_calls": [tool_call]},
            {"role": "tool", "tool_call_id": f"c{k}", "content": f"file{k}.txt"},
        ]
    return prompts


def jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def anthropic_record(k: int) -> dict:
    messages: list[dict] = [{"role": "user", "content": "go"}]
    for j in range(k):
        messages.append(
            {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{j}", "name": "ls", "input": {}}]}
        )
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{j}", "content": "x"}]})
    return {
        "request": {"model": "claude-sonnet-4-5", "system": "Be brief.", "messages": messages},
        "response": {"type": "message", "content": [{"type": "text", "text": "ok"}], "usage": {"input_tokens": 9}},
    }


def responses_record(k: int) -> dict:
    request: dict = {"model": "gpt-5", "input": f"step {k}"}
    if k:
        request["previous_response_id"] = f"resp_{k - 1}"
    response = {"id": f"resp_{k}", "object": "response", "output": [], "usage": {"input_tokens": 5, "output_tokens": 1}}
    return {"request": request, "response": response}


@pytest.mark.parametrize(
    ("name", "rows"),
    [
        ("openai-chat", [{"model": "gpt-4o", "messages": p, "usage": {"prompt_tokens": 9}} for p in conversation(3)]),
        ("anthropic", [anthropic_record(k) for k in range(3)]),
        ("openai-responses", [responses_record(k) for k in range(3)]),
    ],
)
def test_a_capture_gives_each_call_as_its_record_is_fed(tmp_path, name, rows):
    path = jsonl(tmp_path / "capture.jsonl", rows)
    per_line, at_end = fed(path, name)
    assert [len(calls) for calls in per_line] == [1, 1, 1] and at_end == []
    assert [call.index for calls in per_line for call in calls] == [0, 1, 2]
    whole = open_log(str(path), name).read()
    assert [len(c.messages) for c in whole.calls] == [len(calls[0].messages) for calls in per_line]


def test_a_responses_chain_is_rebuilt_from_the_responses_read_before(tmp_path):
    path = jsonl(tmp_path / "chain.jsonl", [responses_record(k) for k in range(4)])
    per_line, _ = fed(path, "openai-responses")
    assert [len(calls[0].messages) for calls in per_line] == [1, 2, 3, 4]  # each step's input, after the last


def test_a_codex_call_is_given_once_its_outputs_are_all_read(tmp_path):
    count = Counter()
    lines = [meta(), context(), user("list the files")]
    for k in range(3):
        lines += [think(f"thinking {k}"), call(f"c{k}"), count(100 + 10 * k), result(f"c{k}")]
    lines += [say("done"), count(140)]
    per_line, at_end = fed(write(tmp_path, lines), "codex")
    given = [i for i, calls in enumerate(per_line) if calls]
    # outputs come before a call's token count (newer Codex): a call is given at the input item after it
    assert given == [6, 10, 14]
    assert len(at_end) == 1 and at_end[0].response is not None
    whole = open_log(str(write(tmp_path, lines, "rollout-whole.jsonl")), "codex").read()
    assert [c.reported for c in whole.calls] == [c.reported for calls in per_line for c in calls] + [at_end[0].reported]


def test_a_codex_compaction_lets_the_history_before_it_go(tmp_path):
    count = Counter()
    lines = [meta(), context(), user("task")]
    for k in range(4):
        if k == 2:
            lines.append(
                {
                    "timestamp": "2025-09-25T15:49:47.000Z",
                    "type": "compacted",
                    "payload": {"message": "summary", "replacement_history": [user("task")["payload"]]},
                }
            )
        lines += [call(f"c{k}"), count(50 + k), result(f"c{k}", "out " * 50)]
    per_line, at_end = fed(write(tmp_path, lines), "codex")
    calls = [call for calls in per_line for call in calls] + at_end
    assert [len(c.messages) for c in calls] == [1, 3, 1, 3]  # the prompt restarts at the compaction
    assert at_end == []  # each given at the input item after its group


def test_shared_prompts_let_finished_conversations_go():
    shared = SharedPrompts()
    first = conversation(2, first="the first task")
    shared.prompt(copy.deepcopy(first[0]))
    for n in range(400):  # a day's capture: one conversation after the other
        for prompt in conversation(2, first=f"task {n}"):
            shared.prompt(prompt)
    recent = conversation(3, first="task 399")
    assert shared.prompt(copy.deepcopy(recent[2])).length == 6
    again = shared.prompt(copy.deepcopy(first[1]))
    assert again.base is not None and len(again.base) == 4  # a list of its own: the first conversation was let go


def test_an_inspect_log_gives_each_sample_s_calls_as_it_is_read(tmp_path):
    from test_format_inspect import inspect_log, write_eval

    from tokprof.formats.inspect_ai import sample_records

    log = inspect_log()
    path = tmp_path / "log.json"
    path.write_text(json.dumps(log), encoding="utf-8")
    doc = load(str(path))
    reader = log_format("inspect").reader(str(path), doc)
    per_sample = [list(reader.feed(record)) for record in sample_records(doc)]
    assert [len(calls) for calls in per_sample] == [2, 1] and list(reader.finish()) == []
    assert [call.index for calls in per_sample for call in calls] == [0, 1, 2]
    zipped = open_log(str(write_eval(tmp_path / "log.eval", log)))
    calls = zipped.calls()
    first = next(calls)  # the first sample member read, the second not yet
    assert first.where.startswith("samples/1_epoch_1.json: ") and zipped.trace.model == log["eval"]["model"]
    assert [first.index, *(c.index for c in calls)] == [0, 1, 2]
