"""Inspect AI eval logs: .json and .eval (zip) logs end to end, attachments, message pools, nested
events, the usage rules, zips that are not Inspect logs, odd input, and the real corpus log."""

from __future__ import annotations

import copy
import json
import os
import re
import sys
import types
import zipfile
from pathlib import Path

import pytest

from conftest import CHATML, profile_json, train_tiny_tokenizer, write_json
from tokprof.frontends.cli import main
from tokprof.base.errors import InputError
from tokprof.formats import inspect_ai, read_trace
from tokprof.formats.jsonfile import Document
from tokprof.formats.neutral import check_messages, check_tools

HASH = "0123456789abcdef0123456789abcdef"
TOOL = {
    "name": "lookup",
    "description": "Look up a word.",
    "parameters": {
        "type": "object",
        "properties": {"word": {"type": "string", "description": "The word.", "default": None}},
        "required": ["word"],
        "additionalProperties": False,
    },
}
SYSTEM = {"role": "system", "content": "You are a test bot."}
USER = {"role": "user", "content": f"attachment://{HASH}", "source": "input"}
CALL = {"id": "c1", "function": "lookup", "arguments": {"word": "cat"}, "type": "function"}
ASSISTANT = {
    "role": "assistant",
    "content": [{"type": "reasoning", "reasoning": "a cat"}, {"type": "text", "text": "Look up"}],
    "tool_calls": [CALL],
    "model": "test",
}
TOOL_MESSAGE = {"role": "tool", "content": "cat is an animal", "tool_call_id": "c1", "function": "lookup"}
IMAGE_USER = {
    "role": "user",
    "content": [{"type": "text", "text": "a dog"}, {"type": "image", "image": "data:image/png;base64,AAAA"}],
}


def model_event(messages, usage=None, output_message=None, **extra):
    message = output_message or {"role": "assistant", "content": "A cat is an animal."}
    event = {
        "event": "model",
        "timestamp": "2025-05-12T20:27:50.018192-04:00",
        "model": "openai/test",
        "input": messages,
        "tools": [TOOL],
        "tool_choice": "auto",
        "config": {},
        "output": {"model": "test", "choices": [{"message": message, "stop_reason": "stop"}], "usage": usage},
    }
    event.update(extra)
    return event


def inspect_log() -> dict:
    """Two samples: a tool round trip with reasoning, an attachment and an image; an error event."""
    first = model_event(
        [SYSTEM, USER],
        usage={"input_tokens": 20, "output_tokens": 5, "total_tokens": 25},
        output_message={
            "role": "assistant",
            "content": [{"type": "reasoning", "reasoning": "a cat"}],
            "tool_calls": [CALL],
        },
    )
    second = model_event(
        [SYSTEM, USER, ASSISTANT, TOOL_MESSAGE, IMAGE_USER],
        usage={"input_tokens": 40, "output_tokens": 6, "total_tokens": 46, "input_tokens_cache_read": 16},
        call={
            "request": {"messages": [], "extra_headers": {"x-secret": "never read"}},
            "response": {
                "usage": {"prompt_tokens": 40, "completion_tokens": 6, "prompt_tokens_details": {"cached_tokens": 16}}
            },
        },
    )
    failed = model_event([{"role": "user", "content": "define dog"}], error="RateLimitError", tools=[])
    failed["output"] = {"model": "test", "choices": []}
    third = model_event(
        [{"role": "user", "content": "define dog"}],
        tools=[],
        call={
            "request": {},
            "response": {
                "type": "message",
                "usage": {
                    "input_tokens": 3,
                    "cache_creation_input_tokens": 5,
                    "cache_read_input_tokens": 10,
                    "output_tokens": 7,
                },
            },
        },
    )
    return json.loads(
        json.dumps(
            {  # no shared objects: tests change the log in place
                "version": 2,
                "status": "success",
                "eval": {
                    "task": "t",
                    "model": "openai/test",
                    "created": "2025-05-12T20:27:36-04:00",
                    "packages": {"inspect_ai": "0.3.95.dev16+g6527d0861"},
                    "dataset": {},
                    "config": {},
                },
                "plan": {},
                "samples": [
                    {
                        "id": 1,
                        "epoch": 1,
                        "input": "x",
                        "target": "y",
                        "events": [
                            {"event": "span_begin", "id": "s", "name": "solvers"},
                            first,
                            {
                                "event": "tool",
                                "id": "c1",
                                "function": "lookup",
                                "arguments": {"word": "cat"},
                                "result": "cat is an animal",
                            },
                            second,
                        ],
                        "attachments": {HASH: "define cat"},
                    },
                    {
                        "id": "two",
                        "epoch": 1,
                        "input": "x",
                        "target": "y",
                        "events": [failed, third],
                        "attachments": {},
                    },
                ],
            }
        )
    )


def write_eval(path: Path, log: dict, compression: int = zipfile.ZIP_DEFLATED) -> Path:
    """The same log as a .eval zip: header.json and one member per sample."""
    header = {key: value for key, value in log.items() if key != "samples"}
    with zipfile.ZipFile(path, "w", compression) as archive:
        archive.writestr("_journal/start.json", json.dumps({"version": 2, "eval": log["eval"], "plan": {}}))
        for sample in log.get("samples") or []:
            archive.writestr(f"samples/{sample['id']}_epoch_{sample['epoch']}.json", json.dumps(sample))
        archive.writestr("header.json", json.dumps(header))
    return path


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tiny-model")
    train_tiny_tokenizer().save(str(directory / "tokenizer.json"))
    write_json(directory / "tokenizer_config.json", {"chat_template": CHATML, "eos_token": "<|im_end|>"})
    return directory


def profile(capsys, log: Path, model, *extra: str) -> dict:
    return profile_json([str(log), "--model", str(model), *extra], capsys)


def fails(capsys, log: Path, *extra: str) -> str:
    code = main(["profile", str(log), "--model", "qwen2.5", "-f", "json", *extra])
    _, err = capsys.readouterr()
    assert code == 2 and err.startswith("tokprof: error: ") and err.count("\n") == 1, err
    return err


def read_log(tmp_path: Path, log) -> "inspect_ai.Trace":
    return read_trace(str(write_json(tmp_path / "log.json", log)), "inspect")


def error_of(tmp_path: Path, log) -> str:
    with pytest.raises(InputError) as caught:
        read_log(tmp_path, log)
    return str(caught.value)


# -- end to end --------------------------------------------------------------------------------


def test_json_log_end_to_end(tmp_path, capsys, model_dir):
    log = write_json(tmp_path / "run.json", inspect_log())
    doc = profile(capsys, log, model_dir, "--input-format", "inspect")
    assert doc["source"]["format"] == "inspect/json"
    assert [c["reported"]["prompt"] for c in doc["calls"]] == [20, 40, 18]
    assert [c["reported"]["cache_read"] for c in doc["calls"]] == [None, 16, 10]
    assert doc["calls"][2]["reported"]["cache_write"] == 5
    assert doc["summary"]["billed_input_reported"] == 78
    assert doc["calls"][1]["buckets"]["tool_results"] > 0
    codes = {w["code"]: w for w in doc["warnings"]}
    assert codes["error-response"]["places"] == ["samples[1].events[0] (sample two, epoch 1)"]
    assert codes["content-not-text"]["places"] == [
        "samples[0].events[3].input[4].content[1] (image) (sample 1, epoch 1)"
    ]


def test_eval_zip_matches_the_json_log(tmp_path, capsys, model_dir):
    from_json = profile(capsys, write_json(tmp_path / "run.json", inspect_log()), model_dir)
    from_zip = profile(capsys, write_eval(tmp_path / "run.eval", inspect_log()), model_dir)
    assert from_zip["source"]["format"] == "inspect/eval"
    assert [c["total"] for c in from_zip["calls"]] == [c["total"] for c in from_json["calls"]]
    assert [c["reported"] for c in from_zip["calls"]] == [c["reported"] for c in from_json["calls"]]
    assert from_zip["summary"]["billed_input_reported"] == 78
    assert from_zip["calls"][0]["source"] == "samples/1_epoch_1.json: events[1]"


def test_messages_and_tools(tmp_path):
    trace = read_log(tmp_path, inspect_log())
    assert trace.model == "openai/test" and len(trace.calls) == 3
    first, second, third = trace.calls
    assert first.messages == [SYSTEM | {"content": "You are a test bot."}, {"role": "user", "content": "define cat"}]
    assert first.day.isoformat() == "2025-05-12"
    assert first.response["reasoning_content"] == "a cat" and first.response["tool_calls"][0]["id"] == "c1"
    assistant, tool, user = second.messages[2:]
    assert assistant == {
        "role": "assistant",
        "content": "Look up",
        "reasoning_content": "a cat",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"word": "cat"}'}}
        ],
    }
    assert tool == {"role": "tool", "content": "cat is an animal", "tool_call_id": "c1"}
    assert user == {"role": "user", "content": "a dog"}
    assert second.tools == [
        {
            "type": "function",
            "function": {
                "name": "lookup",
                "description": "Look up a word.",
                "parameters": {
                    "type": "object",
                    "properties": {"word": {"type": "string", "description": "The word."}},
                    "required": ["word"],
                    "additionalProperties": False,
                },
            },
        }
    ]
    assert third.tools is None and third.where == "samples[1].events[1]"


def test_auto_detection(tmp_path):
    log = inspect_log()
    assert inspect_ai.sniff(Document(value=log))
    assert inspect_ai.sniff(Document(value={"version": 2, "status": "started", "eval": {}}))
    assert not inspect_ai.sniff(Document(value={"eval": "x", "samples": []}))
    assert not inspect_ai.sniff(Document(value={"eval": {}}))
    assert not inspect_ai.sniff(Document(value=[log]))
    assert not inspect_ai.sniff(Document(lines=[(1, log)]))
    assert read_trace(str(write_json(tmp_path / "a.json", log))).format == "inspect/json"
    assert read_trace(str(write_eval(tmp_path / "a.eval", log))).format == "inspect/eval"
    # a zip whose name is not .eval is still read as one
    assert read_trace(str(write_eval(tmp_path / "a.zip", log))).format == "inspect/eval"


# -- the .eval zip -----------------------------------------------------------------------------


def test_zip_that_is_not_an_inspect_log(tmp_path, capsys):
    path = tmp_path / "other.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("readme.txt", "hello")
    assert "a zip file, but not an Inspect .eval log" in fails(capsys, path)
    assert "a zip file, not a log of format openai-chat" in fails(capsys, path, "--input-format", "openai-chat")


def test_corrupt_zip_member_is_named(tmp_path, capsys):
    path = write_eval(tmp_path / "run.eval", inspect_log(), zipfile.ZIP_STORED)
    data = bytearray(path.read_bytes())
    at = data.index(b"define cat")
    data[at : at + 6] = b"DEFINE"
    path.write_bytes(bytes(data))
    err = fails(capsys, path)
    assert f"{path}: samples/1_epoch_1.json: cannot read the zip member" in err and "CRC" in err


def test_member_that_is_not_json(tmp_path, capsys):
    path = tmp_path / "run.eval"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("header.json", json.dumps({"version": 2, "status": "success", "eval": {"model": "m"}}))
        archive.writestr("samples/1_epoch_1.json", '{"id": 1, "events": [')
    assert f"{path}: samples/1_epoch_1.json: line 1, column 22: invalid JSON" in fails(capsys, path)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("header.json", b"\xff\xfe")
    assert "header.json: byte 0: not UTF-8 text" in fails(capsys, path)


def test_log_without_samples(tmp_path, capsys):
    log = inspect_log()
    del log["samples"]
    assert "the log has no samples (status 'success')" in fails(capsys, write_json(tmp_path / "a.json", log))
    assert "the log has no samples" in fails(capsys, write_eval(tmp_path / "a.eval", log))
    log["samples"] = []
    assert "the log has no samples" in fails(capsys, write_json(tmp_path / "b.json", log))


def test_a_repeated_member_name_reads_the_last_entry(tmp_path):
    log = inspect_log()
    path = write_eval(tmp_path / "run.eval", log)
    stale = copy.deepcopy(log["samples"][0])
    stale["events"] = []
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
    rebuilt = tmp_path / "again.eval"
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(rebuilt, "w") as target:
        target.writestr("samples/1_epoch_1.json", json.dumps(stale))
        with pytest.warns(UserWarning, match="Duplicate name"):
            for name in names:
                target.writestr(name, source.read(name))
    assert len(read_trace(str(rebuilt)).calls) == 3


def test_chunked_samples(tmp_path):
    """Samples converted to the chunked layout: shell, events, a message pool and indexed attachments."""
    log = inspect_log()
    sample = log["samples"][0]
    pool = [SYSTEM, {"role": "user", "content": "attachment://0"}]
    # chunked samples number their attachments: attachment://<hash> becomes attachment://0
    events = json.loads(json.dumps(sample["events"]).replace(f"attachment://{HASH}", "attachment://0"))
    events[1]["input"], events[1]["input_refs"] = [], [[0, 2]]
    path = tmp_path / "chunked.eval"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("header.json", json.dumps({k: v for k, v in log.items() if k != "samples"}))
        base = "samples/1_epoch_1/"
        archive.writestr(base + "sample.json", json.dumps({"id": 1, "epoch": 1, "message_refs": [[0, 2]]}))
        archive.writestr(base + "events/stats.json", "{}")
        archive.writestr(base + "events/2.json", json.dumps(events[2:]))
        archive.writestr(base + "events/0.json", json.dumps(events[:2]))
        archive.writestr(base + "messages/0.json", json.dumps(pool))
        archive.writestr(base + "attachments/0.json", json.dumps(["define cat"]))
    trace = read_trace(str(path))
    assert [c.where for c in trace.calls] == [
        "samples/1_epoch_1/events/0.json: [1]",
        "samples/1_epoch_1/events/2.json: [1]",
    ]
    assert trace.calls[0].messages[1] == {"role": "user", "content": "define cat"}
    assert trace.calls[1].messages[1] == {"role": "user", "content": "define cat"}
    assert trace.notes[0].places == [
        "samples/1_epoch_1/events/2.json: [1].input[4].content[1] (image) (sample 1, epoch 1)"
    ]


def _relabelled_zip(tmp_path: Path, method: int = 93) -> Path:
    """A stored zip whose members claim another compression method (93: Zstandard, as newer Inspect writes)."""
    path = write_eval(tmp_path / f"m{method}.eval", inspect_log(), zipfile.ZIP_STORED)
    data = bytearray(path.read_bytes())
    for signature, offset in ((b"PK\x03\x04", 8), (b"PK\x01\x02", 10)):
        for match in re.finditer(re.escape(signature), bytes(data)):
            data[match.start() + offset : match.start() + offset + 2] = method.to_bytes(2, "little")
    path.write_bytes(bytes(data))
    return path


def test_zstandard_members(tmp_path, capsys, monkeypatch):
    if hasattr(zipfile, "ZIP_ZSTANDARD"):
        pytest.skip("this Python's zipfile reads Zstandard members itself")
    assert "header.json: compressed with a method this Python cannot read (zip method 99)" in fails(
        capsys, _relabelled_zip(tmp_path, 99)
    )
    path = _relabelled_zip(tmp_path)
    monkeypatch.setitem(sys.modules, "zstandard", None)  # not installed
    err = fails(capsys, path)
    assert f"{path}: header.json: compressed with Zstandard" in err and "pip install zstandard" in err

    class Decompressor:  # the members are stored, so "decompressing" returns them as they are
        def stream_reader(self, source, read_across_frames=False):
            assert read_across_frames
            return source

    fake = types.SimpleNamespace(ZstdDecompressor=Decompressor, ZstdError=ValueError)
    monkeypatch.setitem(sys.modules, "zstandard", fake)
    assert len(read_trace(str(path)).calls) == 3


# -- usage -------------------------------------------------------------------------------------


def usage_log(usage=None, response=None, version="0.3.200", model="openai/test") -> dict:
    event = model_event([{"role": "user", "content": "define cat"}], usage=usage, model=model)
    if response is not None:
        event["call"] = {"request": {}, "response": response}
    packages = {"inspect_ai": version} if version else {}
    return {
        "version": 2,
        "status": "success",
        "eval": {"model": model, "packages": packages},
        "samples": [{"id": 1, "epoch": 1, "events": [event]}],
    }


@pytest.mark.parametrize(
    "usage, version, model, prompt",
    [
        # no cache: input_tokens is the prompt under either reading
        ({"input_tokens": 50, "output_tokens": 5}, None, "openai/x", 50),
        # total_tokens decides: cache excluded (Inspect >= 0.3.184, or Anthropic)...
        (
            {"input_tokens": 10, "input_tokens_cache_read": 30, "output_tokens": 5, "total_tokens": 45},
            "0.3.95",
            "openai/x",
            40,
        ),
        # ... or included (OpenAI before 0.3.184, as in the corpus log)
        (
            {"input_tokens": 40, "input_tokens_cache_read": 30, "output_tokens": 5, "total_tokens": 45},
            "0.3.200",
            "openai/x",
            40,
        ),
        # cache larger than input: it cannot be included
        ({"input_tokens": 10, "input_tokens_cache_read": 30}, "0.3.95", "openai/x", 40),
        # no total: the version, then the provider
        ({"input_tokens": 50, "input_tokens_cache_read": 30}, "0.3.184", "openai/x", 80),
        ({"input_tokens": 50, "input_tokens_cache_read": 30}, "0.3.183", "openai/x", 50),
        ({"input_tokens": 50, "input_tokens_cache_read": 30}, "0.3.183", "anthropic/claude", 80),
        (
            {"input_tokens": 50, "input_tokens_cache_read": 30, "input_tokens_cache_write": 5},
            None,
            "anthropic/claude",
            85,
        ),
        ({"input_tokens": 50, "input_tokens_cache_read": 30}, None, "google/gemini", 50),
    ],
)
def test_inspect_usage_rule(tmp_path, usage, version, model, prompt):
    call = read_log(tmp_path, usage_log(usage, version=version, model=model)).calls[0]
    assert call.reported.prompt == prompt
    assert call.reported.cache_read == usage.get("input_tokens_cache_read")


@pytest.mark.parametrize(
    "response, expected",
    [
        (
            {
                "object": "response",
                "usage": {"input_tokens": 40, "input_tokens_details": {"cached_tokens": 30}, "output_tokens": 5},
            },
            (40, 30, None, 5),
        ),
        ({"type": "message", "usage": {"input_tokens": 4, "output_tokens": 5}}, (4, None, None, 5)),
        (
            {
                "usage": {
                    "input_tokens": 4,
                    "cache_read_input_tokens": 30,
                    "cache_creation_input_tokens": 6,
                    "output_tokens": 5,
                }
            },
            (40, 30, 6, 5),
        ),
        (
            {
                "usage_metadata": {
                    "prompt_token_count": 40,
                    "cached_content_token_count": 30,
                    "candidates_token_count": 4,
                    "thoughts_token_count": 2,
                }
            },
            (40, 30, None, 6),
        ),
        ({"usageMetadata": {"promptTokenCount": 40}}, (40, None, None, None)),
        (
            {
                "usage": {
                    "prompt_tokens": 40,
                    "prompt_tokens_details": {"cached_tokens": 8, "cache_write_tokens": 2},
                    "completion_tokens": 1,
                }
            },
            (40, 8, 2, 1),
        ),
        # unrecognised, or without a prompt count: Inspect's usage
        ({"usage": {"tokens": 3}}, (7, None, None, 1)),
        ({"usage": {"prompt_tokens": None}}, (7, None, None, 1)),
        ("not an object", (7, None, None, 1)),
    ],
)
def test_provider_usage_is_preferred(tmp_path, response, expected):
    log = usage_log({"input_tokens": 7, "output_tokens": 1}, response=response)
    usage = read_log(tmp_path, log).calls[0].reported
    assert (usage.prompt, usage.cache_read, usage.cache_write, usage.output) == expected


# -- events ------------------------------------------------------------------------------------


def one_sample(events, **sample) -> dict:
    return {
        "version": 2,
        "status": "success",
        "eval": {"model": "openai/test"},
        "samples": [{"id": 1, "epoch": 1, "events": events, **sample}],
    }


def test_nested_events_and_legacy_transcript(tmp_path):
    event = model_event([{"role": "user", "content": "define cat"}])
    tool = {"event": "tool", "function": "lookup", "events": [{"event": "span_begin"}, event]}
    subtask = {"event": "subtask", "name": "s", "events": [tool]}
    trace = read_log(tmp_path, one_sample([event, subtask, event]))
    assert [c.where for c in trace.calls] == [
        "samples[0].events[0]",
        "samples[0].events[1].events[0].events[1]",
        "samples[0].events[2]",
    ]
    log = one_sample(None)
    del log["samples"][0]["events"]
    log["samples"][0]["transcript"] = {"events": [model_event([USER])], "content": {HASH: "define cat"}}
    trace = read_log(tmp_path, log)
    assert trace.calls[0].where == "samples[0].transcript.events[0]"
    assert trace.calls[0].messages == [{"role": "user", "content": "define cat"}]


def test_message_pool(tmp_path):
    pool = [SYSTEM, USER, ASSISTANT, TOOL_MESSAGE]
    first = model_event([], input_refs=[[0, 2]])
    second = model_event([], input_refs=[[0, 1], [1, 4]])
    log = one_sample([first, second], events_data={"messages": pool, "calls": []}, attachments={HASH: "define cat"})
    trace = read_log(tmp_path, log)
    assert [len(c.messages) for c in trace.calls] == [2, 4]
    assert trace.calls[1].messages[3]["tool_call_id"] == "c1"
    second["input_refs"] = [[1, 9]]
    assert (
        "samples[0].events[1].input_refs[0]: expected a range [start, end] inside the sample's message pool"
        in error_of(tmp_path, log)
    )
    second["input_refs"] = [[0, 1], [3, 4]]  # a tool message whose call is not in the prompt: named in the pool
    assert "samples[0].events_data.messages[3].tool_call_id: 'c1' matches no earlier" in error_of(tmp_path, log)


def test_skipped_kept_and_noted_events(tmp_path):
    prompt = [{"role": "user", "content": "define cat"}]
    pending = model_event(prompt, pending=True)
    pending["output"] = {"choices": []}
    cached = model_event(prompt, cache="read", uuid="u2")
    again = model_event(prompt, uuid="u1")
    redacted = model_event(
        [{"role": "assistant", "content": [{"type": "reasoning", "reasoning": "ENC", "redacted": True}]}, *prompt]
    )
    redacted["tools"] = [TOOL | {"name": "web_search", "options": {"__internal_tool_type__": "web_search"}}]
    errored = model_event(prompt, error="boom")  # an error after output: the call stands
    log = one_sample(
        [pending, cached, again, again, redacted, errored], error_retries=[{"message": "x", "events": [again]}]
    )
    trace = read_log(tmp_path, log)
    assert [c.where for c in trace.calls] == [f"samples[0].events[{i}]" for i in (0, 2, 4, 5)]
    assert trace.calls[0].reported is None
    assert trace.calls[2].messages[0] == {"role": "assistant", "content": ""}
    notes = {note.code: note.places for note in trace.notes}
    assert notes == {
        "pending-call": ["samples[0].events[0] (sample 1, epoch 1)"],
        "inspect-cache": ["samples[0].events[1] (sample 1, epoch 1)"],
        "redacted-reasoning": ["samples[0].events[4].input[0].content[0] (sample 1, epoch 1)"],
        "server-tool": ["samples[0].events[4].tools[0] (web_search) (sample 1, epoch 1)"],
        "error-retries": ["samples[0]"],
    }


def test_tool_errors_and_older_fields(tmp_path):
    assistant = {
        "role": "assistant",
        "content": "",
        "reasoning": "hmm",
        "tool_calls": [CALL | {"arguments": '{"word": "x"}'}],
    }
    failed = TOOL_MESSAGE | {"content": "", "error": {"type": "parsing", "message": "bad word"}}
    older = TOOL_MESSAGE | {"tool_error": "old error"}
    trace = read_log(
        tmp_path, one_sample([model_event([USER, assistant, failed, older])], attachments={HASH: "define cat"})
    )
    messages = trace.calls[0].messages
    assert (
        messages[1]["reasoning_content"] == "hmm"
        and messages[1]["tool_calls"][0]["function"]["arguments"] == '{"word": "x"}'
    )
    assert [messages[2]["content"], messages[3]["content"]] == ["bad word", "old error"]


def test_no_usable_call(tmp_path, capsys):
    failed = model_event([{"role": "user", "content": "x"}], error="boom")
    failed["output"] = {"choices": []}
    err = fails(capsys, write_json(tmp_path / "a.json", one_sample([failed, {"event": "info"}])))
    assert "no model call to profile" in err and "error-response" in err
    assert "no model call to profile" in fails(capsys, write_json(tmp_path / "b.json", one_sample([])))


# -- odd input ---------------------------------------------------------------------------------


def _set(path: str, value):
    """A change to the log: set the value at a dotted path (list indexes as numbers)."""

    def change(log):
        keys = [int(k) if k.isdigit() else k for k in path.split(".")]
        target = log
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value

    return change


@pytest.mark.parametrize(
    "change, expected",
    [
        (_set("eval", "x"), ": eval: expected the eval spec, an object"),
        (_set("samples", {}), ": samples: expected a list of samples"),
        (_set("samples.0", 3), ": samples[0]: expected a sample object"),
        (_set("samples.0.events", "x"), ": samples[0].events: expected a list of events"),
        (_set("samples.0.events.1", None), ": samples[0].events[1]: expected an event object"),
        (_set("samples.0.attachments", []), ": samples[0].attachments: expected an object"),
        (
            _set("samples.0.attachments", {}),
            f": samples[0].events[1].input[1].content: 'attachment://{HASH}' has no entry",
        ),
        (_set(f"samples.0.attachments.{HASH}", 5), f": samples[0].attachments.{HASH}: expected a string"),
        (_set("samples.0.events_data", {"messages": 3}), ": samples[0].events_data.messages: expected a list"),
        (_set("samples.0.events_data", "x"), ": samples[0].events_data: expected an object"),
        (_set("samples.0.events.1.input", "x"), ": samples[0].events[1].input: expected a list of messages"),
        (_set("samples.0.events.1.input", []), ": samples[0].events[1].input: empty: a call needs a prompt"),
        (_set("samples.0.events.1.input_refs", {}), ": samples[0].events[1].input_refs: expected a list"),
        (_set("samples.0.events.1.input.0", "x"), ": samples[0].events[1].input[0]: expected a message object"),
        (
            _set("samples.0.events.1.input.0.role", "robot"),
            ": samples[0].events[1].input[0].role: unknown role 'robot'",
        ),
        (
            _set("samples.0.events.1.input.0.content", 3),
            ": samples[0].events[1].input[0].content: expected a string or a list",
        ),
        (_set("samples.0.events.1.input.0.content", None), ": samples[0].events[1].input[0].content: missing"),
        (_set("samples.0.events.1.input.0.content", [3]), ".input[0].content[0]: expected a content item object"),
        (
            _set("samples.0.events.1.input.0.content", [{"text": "x"}]),
            ".input[0].content[0].type: expected the content item's type",
        ),
        (
            _set("samples.0.events.1.input.0.content", [{"type": "text"}]),
            ".input[0].content[0].text: missing: expected a string",
        ),
        (
            _set("samples.0.events.1.input.0.content", [{"type": "reasoning"}]),
            ".content[0].reasoning: missing: expected a string",
        ),
        (_set("samples.0.events.1.input.0.content", "bad \ud800"), ".input[0].content: invalid Unicode"),
        (
            _set("samples.0.events.3.input.2.tool_calls", "x"),
            ".events[3].input[2].tool_calls: expected a list of tool calls",
        ),
        (_set("samples.0.events.3.input.2.tool_calls", [3]), ".input[2].tool_calls[0]: expected a tool call object"),
        (
            _set("samples.0.events.3.input.2.tool_calls.0.function", {"name": "x"}),
            ".tool_calls[0].function: expected the tool's name",
        ),
        (_set("samples.0.events.3.input.2.tool_calls.0.arguments", 3), ".tool_calls[0].arguments: expected an object"),
        (_set("samples.0.events.3.input.2.tool_calls.0.id", 3), ".input[2].tool_calls[0].id: expected a string"),
        (
            _set("samples.0.events.3.input.3.tool_call_id", "zz"),
            ".events[3].input[3].tool_call_id: 'zz' matches no earlier",
        ),
        (_set("samples.0.events.3.input.3.tool_call_id", None), ".events[3].input[3].tool_call_id: missing"),
        (_set("samples.0.events.1.tools", {}), ": samples[0].events[1].tools: expected a list of tool definitions"),
        (_set("samples.0.events.1.tools", [3]), ": samples[0].events[1].tools[0]: expected a tool object"),
        (
            _set("samples.0.events.1.tools", [{"description": "x"}]),
            ".events[1].tools[0].name: missing: expected a string",
        ),
        (
            _set("samples.0.events.1.tools", [{"name": ""}]),
            ".events[1].tools[0].name: empty: expected a non-empty string",
        ),
        (_set("samples.0.events.1.tools", [TOOL, TOOL]), ".events[1].tools[1].function.name: duplicate tool name"),
        (
            _set("samples.0.events.1.tools", [TOOL | {"parameters": "x"}]),
            ".tools[0].function.parameters: expected an object",
        ),
        (
            _set("samples.0.events.1.tools", [TOOL | {"description": 3}]),
            ".tools[0].function.description: expected a string",
        ),
        (_set("samples.0.events.1.model", 3), ": samples[0].events[1].model: expected a string"),
        (_set("samples.0.events.1.output.usage", []), ": samples[0].events[1].output.usage: expected an object"),
        (
            _set("samples.0.events.1.output.usage.input_tokens", -1),
            ".output.usage.input_tokens: expected a non-negative integer",
        ),
        (
            _set("samples.0.events.1.output.usage.output_tokens", "5"),
            ".output.usage.output_tokens: expected a non-negative",
        ),
        (
            _set("samples.0.events.3.call.response.usage.prompt_tokens", 1.5),
            ".call.response.usage.prompt_tokens: expected a non-negative",
        ),
        (
            _set("samples.0.events.3.call.response.usage.prompt_tokens_details", 3),
            ".usage.prompt_tokens_details: expected an object",
        ),
        (
            _set("samples.0.events.1.output.choices.0.message.tool_calls.0.id", 5),
            ".output.choices[0].message.tool_calls[0].id: expected",
        ),
    ],
)
def test_odd_input(tmp_path, change, expected):
    log = inspect_log()
    change(log)
    assert expected in error_of(tmp_path, log)


@pytest.mark.parametrize(
    "value",
    [None, 3, "x", [], {"eval": {}}, {"samples": []}, {"eval": {}, "samples": [None]}, {"eval": {}, "samples": 3}],
)
def test_odd_documents_never_crash(tmp_path, value):
    inspect_ai.sniff(Document(value=value))
    with pytest.raises(InputError):
        inspect_ai.read(str(tmp_path / "x.json"), Document(value=value))


def test_forced_format_on_other_files(tmp_path, capsys):
    jsonl = tmp_path / "a.jsonl"
    jsonl.write_text('{"eval": {}}\n{"eval": {}}\n')
    assert "not an Inspect eval log" in fails(capsys, jsonl, "--input-format", "inspect")
    other = write_json(tmp_path / "b.json", {"messages": [{"role": "user", "content": "x"}]})
    assert "not an Inspect eval log" in fails(capsys, other, "--input-format", "inspect")


def test_deeply_nested_values_are_an_error(tmp_path):
    log = inspect_log()
    log["samples"][0]["events"][1]["tools"][0]["parameters"] = "DEEP"
    depth = 600  # loads, but deeper than tokprof's own walks can go
    text = json.dumps(log).replace('"DEEP"', '{"a": ' * depth + "{}" + "}" * depth)
    path = tmp_path / "deep.json"
    path.write_text(text)
    with pytest.raises(InputError, match="nested too deeply"):
        read_trace(str(path))


# -- the real corpus log -----------------------------------------------------------------------


def corpus_logs() -> list[Path]:
    root = Path(os.environ.get("TOKPROF_CORPUS") or Path(__file__).resolve().parents[2] / "shared" / "corpus")
    return sorted(root.glob("inspect_eval_*.json"))


def _resolved(value, attachments):
    if isinstance(value, str):
        match = re.fullmatch(r"attachment://(\w+)", value)
        return attachments[match.group(1)] if match else value
    if isinstance(value, list):
        return [_resolved(item, attachments) for item in value]
    if isinstance(value, dict):
        return {key: _resolved(item, attachments) for key, item in value.items()}
    return value


def test_corpus_log(capsys):
    logs = corpus_logs()
    if not logs:
        pytest.skip("the shared corpus (../shared/corpus or $TOKPROF_CORPUS) has no inspect_eval_*.json")
    path = logs[0]
    raw = json.loads(path.read_text(encoding="utf-8"))
    sample = raw["samples"][0]
    events = [event for event in sample["events"] if event["event"] == "model"]
    trace = read_trace(str(path))
    assert len(trace.calls) == 5 and all(len(call.tools) == 8 for call in trace.calls)
    assert trace.notes == []
    for call, event in zip(trace.calls, events):
        # call.request (OpenAI Chat) holds exactly the messages and tools built from Inspect's input
        request = _resolved(event["call"]["request"], sample["attachments"])
        assert check_messages(str(path), "", request["messages"]) == call.messages
        assert check_tools(str(path), "", request["tools"]) == call.tools
        # and Inspect 0.3.95 reports OpenAI's prompt_tokens, cached tokens included, as input_tokens
        assert event["output"]["usage"]["input_tokens"] == event["call"]["response"]["usage"]["prompt_tokens"]
    doc = profile(capsys, path, "qwen2.5")
    assert doc["source"]["format"] == "inspect/json"
    prompts = [event["call"]["response"]["usage"]["prompt_tokens"] for event in events]
    assert [call["reported"]["prompt"] for call in doc["calls"]] == prompts
    assert doc["summary"]["billed_input_reported"] == sum(prompts)
    cached = [event["call"]["response"]["usage"]["prompt_tokens_details"]["cached_tokens"] for event in events]
    assert [call["reported"]["cache_read"] for call in doc["calls"]] == cached
