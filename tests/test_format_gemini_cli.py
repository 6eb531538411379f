"""Gemini CLI session files (#27): the ``.json`` ConversationRecord and the append-only ``.jsonl``.

The fixtures are written here by hand in the shapes of google-gemini/gemini-cli's
``packages/core/src/services/chatRecordingTypes.ts`` (``ConversationRecord``, ``MessageRecord``,
``ToolCallRecord``, ``TokensSummary``, ``$rewindTo`` and ``$set`` records) and of the corpus's real
session files; no text comes from a real session.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from conftest import ROOT
from test_cost import genai

import tokprof
from tokprof.frontends.cli import main
from tokprof.formats import read_trace

CORPUS = ROOT.parent / "shared" / "corpus" / "gemini_cli"
MODEL = "gemini-2.5-pro"


def tokens(input: int, output: int, cached: int = 0, thoughts: int = 0, tool: int = 0) -> dict:
    return {
        "input": input,
        "output": output,
        "cached": cached,
        "thoughts": thoughts,
        "tool": tool,
        "total": input + output + thoughts + tool,
    }


def user(id: str, text, ts: str = "2026-03-26T04:33:40.000Z") -> dict:
    return {"id": id, "timestamp": ts, "type": "user", "content": text}


def gemini(
    id: str, text: str = "", calls: list | None = None, usage: dict | None = None, ts: str = "2026-03-26T04:34:00.000Z"
) -> dict:
    message = {
        "id": id,
        "timestamp": ts,
        "type": "gemini",
        "content": text,
        "thoughts": [{"subject": "Planning", "description": "Read the file first.", "timestamp": ts}],
        "tokens": usage,
        "model": MODEL,
    }
    if calls is not None:
        message["toolCalls"] = calls
    return message


def tool_call(id: str, name: str, args: dict, output: str | None) -> dict:
    call = {
        "id": id,
        "name": name,
        "args": args,
        "status": "success",
        "timestamp": "2026-03-26T04:34:01.000Z",
        "displayName": name,
        "description": "",
        "renderOutputAsMarkdown": True,
    }
    if output is not None:
        call["result"] = [{"functionResponse": {"id": id, "name": name, "response": {"output": output}}}]
    return call


def session(messages: list) -> dict:
    return {
        "sessionId": "b36c9e17",
        "projectHash": "4aa47759",
        "startTime": "2026-03-26T04:33:40.000Z",
        "lastUpdated": "2026-03-26T04:40:00.000Z",
        "messages": messages,
        "kind": "main",
    }


def messages() -> list:
    return [
        user("u1", [{"text": "Fix the validator."}]),
        gemini(
            "g1",
            calls=[tool_call("read_file_1", "read_file", {"file_path": "TASK.md"}, "The task: fix it.")],
            usage=tokens(8756, 30, thoughts=177),
        ),
        {"id": "i1", "timestamp": "2026-03-26T04:34:02.000Z", "type": "info", "content": "Request cancelled."},
        {"id": "e1", "timestamp": "2026-03-26T04:34:03.000Z", "type": "error", "content": "Quota exceeded."},
        gemini("g2", text="Done: the regex is fixed.", usage=tokens(8868, 12, cached=8000, tool=5)),
    ]


def write(path: Path, value) -> Path:
    path.write_text(
        json.dumps(value, indent=2) if not isinstance(value, list) else "".join(json.dumps(v) + "\n" for v in value)
    )
    return path


def test_json_session_is_read_as_gemini_not_openai_chat(tmp_path):
    trace = read_trace(str(write(tmp_path / "session-2026-03-26T04-33-b36c9e17.json", session(messages()))))
    assert trace.format == "gemini-cli" and trace.session == "b36c9e17"
    assert trace.unrecorded == ("system", "tools") and trace.model == MODEL
    assert len(trace.calls) == 2  # info and error entries are not calls
    first, second = trace.calls
    assert first.messages == [{"role": "user", "content": "Fix the validator."}]
    assert first.response["tool_calls"][0]["function"] == {"name": "read_file", "arguments": '{"file_path": "TASK.md"}'}
    assert first.response["reasoning_content"] == "Planning: Read the file first."
    assert [m["role"] for m in second.messages] == ["user", "assistant", "tool"]
    assert second.messages[2] == {"role": "tool", "content": "The task: fix it.", "tool_call_id": "read_file_1"}
    assert (first.reported.prompt, first.reported.cache_read, first.reported.output) == (8756, 0, 207)
    assert (second.reported.prompt, second.reported.cache_read, second.reported.output) == (8873, 8000, 12)


def test_billed_input_and_cost_are_the_files_own_sums(tmp_path):
    path = write(tmp_path / "session.json", session(messages()))
    raw = json.loads(path.read_text())["messages"]
    billed = sum(m["tokens"]["input"] + m["tokens"]["tool"] for m in raw if m["type"] == "gemini")
    trace = read_trace(str(path))
    profile = tokprof.profile(trace)
    summary = profile.summary()
    assert summary.reported.billed_input == billed == 17629
    assert summary.billed_input == billed  # the stand-in's estimate is scaled to the reported tokens
    assert not profile.model.exact  # Gemini's tokenizer is not public: labelled estimates
    expected = sum(genai(MODEL, call.reported, call.day) for call in trace.calls)
    assert Decimal(str(summary.cost.total)) == pytest.approx(expected, abs=Decimal("1e-9"))


def test_jsonl_keeps_the_last_record_of_each_id_and_replays_rewinds(tmp_path):
    g1_early = gemini("g1", usage=None)
    g1 = messages()[1]
    lines = [
        {"sessionId": "s2", "projectHash": "p", "startTime": "2026-03-26T04:33:40.000Z"},
        user("u1", "Fix the validator."),
        g1_early,
        g1,  # the record is appended again, whole, when its tool calls and tokens come in
        user("u2", "Wrong turn."),
        gemini("g2", text="Going the wrong way.", usage=tokens(9000, 4)),
        {"$rewindTo": "u2"},
        user("u3", "Try again."),
        gemini("g3", text="Fixed.", usage=tokens(9100, 6)),
        {"$set": {"summary": "validator fix"}},
    ]
    trace = read_trace(str(write(tmp_path / "session-2026-03-26T04-33-s2.jsonl", lines)))
    assert trace.format == "gemini-cli" and trace.session == "s2"
    assert [call.where for call in trace.calls] == ["line 4", "line 6", "line 9"]  # the rewound call was made
    assert trace.calls[0].reported.prompt == 8756  # the last record of g1 is its message
    last = trace.calls[2].messages
    assert [m["content"] for m in last if m["role"] == "user"] == ["Fix the validator.", "Try again."]
    assert any(note.code == "rewind" for note in trace.notes)


def test_jsonl_set_messages_replaces_the_history(tmp_path):
    kept = [user("u9", "Summary of the work so far.")]
    lines = [
        {"sessionId": "s3", "projectHash": "p"},
        user("u1", "a"),
        gemini("g1", "b", usage=tokens(100, 1)),
        {"$set": {"messages": kept}},
        user("u2", "c"),
        gemini("g2", "d", usage=tokens(50, 1)),
    ]
    trace = read_trace(str(write(tmp_path / "s.jsonl", lines)))
    assert [m["content"] for m in trace.calls[1].messages] == ["Summary of the work so far.", "c"]


def test_zero_and_null_tokens_are_no_usage(tmp_path):
    msgs = [user("u1", "hi"), gemini("g1", "hello", usage=tokens(0, 0)), user("u2", "go"), gemini("g2", "ok")]
    trace = read_trace(str(write(tmp_path / "s.json", session(msgs))))
    assert [call.reported for call in trace.calls] == [None, None]
    assert any(note.code == "no-usage" for note in trace.notes)


@pytest.mark.parametrize(
    "field, value, where",
    [
        ("input", "many", "messages[1].tokens.input"),
        ("cached", -3, "messages[1].tokens.cached"),
        ("cached", 9000, "messages[1].tokens.cached"),  # more cached tokens than the prompt (8,756) holding them
    ],
)
def test_malformed_tokens_name_the_file_and_field(tmp_path, capsys, field, value, where):
    msgs = messages()
    msgs[1]["tokens"][field] = value
    path = write(tmp_path / "bad.json", session(msgs))
    assert main(["profile", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and f"{path}: {where}" in err


def test_malformed_jsonl_record_names_the_line_and_field(tmp_path, capsys):
    lines = [{"sessionId": "s2", "projectHash": "p"}, *messages()]
    lines[2]["tokens"]["cached"] = -3
    path = write(tmp_path / "s.jsonl", lines)
    assert main(["profile", str(path)]) == 2
    assert f"{path}: line 3: tokens.cached: expected" in capsys.readouterr().err  # before: "line 3.tokens.cached"


def test_malformed_tool_call_is_one_line(tmp_path, capsys):
    msgs = messages()
    msgs[1]["toolCalls"][0]["args"] = "not an object"
    path = write(tmp_path / "bad.json", session(msgs))
    assert main(["profile", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "messages[1].toolCalls[0].args" in err


@pytest.mark.parametrize("name", ["gemini-3.1-pro_control_pro.json", "gemini-2.5-pro_pomodoro-timer.json"])
def test_corpus_sessions(name):
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"{name}: the shared corpus is absent")
    raw = json.loads(path.read_text())["messages"]
    billed = sum(
        m["tokens"]["input"] + (m["tokens"].get("tool") or 0)
        for m in raw
        if m["type"] == "gemini" and m.get("tokens") and any(m["tokens"].values())
    )
    trace = read_trace(str(path))
    assert trace.format == "gemini-cli"
    assert len(trace.calls) == sum(1 for m in raw if m["type"] == "gemini")
    profile = tokprof.profile(trace)
    summary = profile.summary()
    assert summary.reported.billed_input == billed
    for row in profile.calls:
        assert all(count >= 0 for count in row.buckets.values()) and sum(row.buckets.values()) == row.total
    priced = [(call, row) for call, row in zip(trace.calls, profile.calls) if call.reported is not None]
    for call, row in priced:
        if row.cost.priced:
            assert row.cost.total == pytest.approx(float(genai(call.model, call.reported, call.day)), abs=1e-8)


def test_a_directory_scan_finds_a_session_file_larger_than_the_peek(tmp_path):
    """Gemini CLI rewrites one JSON object: a real session is soon larger than the 64 KB a scan peeks at."""
    msgs = messages()
    msgs[1]["toolCalls"][0]["result"][0]["functionResponse"]["response"]["output"] = "line of a file\n" * 6000
    folder = tmp_path / "4aa47759" / "chats"
    folder.mkdir(parents=True)
    write(folder / "session-2026-03-26T04-33-b36c9e17.json", session(msgs))
    report = tokprof.profile(tmp_path)
    assert [(row.format, row.calls) for row in report.sessions] == [("gemini-cli", 2)]


def test_jsonl_whose_first_line_is_a_whole_record(tmp_path):
    """gemini-cli's loader takes a metadata line that holds ``messages`` (a legacy record on one line)."""
    lines = [session(messages()), user("u2", "More?"), gemini("g3", "No.", usage=tokens(9000, 2))]
    trace = read_trace(str(write(tmp_path / "s.jsonl", lines)))
    assert trace.format == "gemini-cli" and len(trace.calls) == 3
    assert [m["role"] for m in trace.calls[2].messages] == ["user", "assistant", "tool", "assistant", "user"]
