"""The Claude Code transcript reader: calls per requestId, prompts along the parentUuid chain,
subagents counted once, compaction, usage, odd input; the shared corpus file end to end."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from conftest import profile_json
from tokprof.base.errors import InputError
from tokprof.formats import claude_code, read_trace
from tokprof.formats.jsonfile import Document, load

SESSION = "5e55-1"
MODEL = "claude-sonnet-4-5-20250929"
SUB_MODEL = "claude-haiku-4-5-20251001"


def corpus_file() -> Path:
    folder = Path(os.environ.get("TOKPROF_CORPUS") or Path(__file__).resolve().parents[2] / "shared" / "corpus")
    return folder / "claude_code_medium_full-session-four.jsonl"


# -- building transcripts --------------------------------------------------------------------------
def base(kind: str, uuid: str | None, parent: str | None, sidechain: bool = False, **extra) -> dict:
    row = {
        "parentUuid": parent,
        "isSidechain": sidechain,
        "sessionId": SESSION,
        "type": kind,
        "uuid": uuid,
        "timestamp": "2025-10-26T10:38:30.633Z",
    }
    row.update(extra)
    return row


def user(uuid: str, parent: str | None, content, **extra) -> dict:
    return base("user", uuid, parent, message={"role": "user", "content": content}, **extra)


def usage(fresh=3, write=100, read=1000, out=5, **extra) -> dict:
    return {
        "input_tokens": fresh,
        "cache_creation_input_tokens": write,
        "cache_read_input_tokens": read,
        "output_tokens": out,
        **extra,
    }


def assistant(
    uuid: str,
    parent: str | None,
    request: str,
    blocks: list,
    use: dict | None = None,
    model: str = MODEL,
    stop=None,
    **extra,
) -> dict:
    message = {
        "model": model,
        "id": "msg_" + request,
        "type": "message",
        "role": "assistant",
        "content": blocks,
        "stop_reason": stop,
        "usage": use if use is not None else usage(),
    }
    return base("assistant", uuid, parent, message=message, requestId=request, **extra)


def text(value: str) -> dict:
    return {"type": "text", "text": value}


def tool_use(call_id: str, name: str = "Read", **arguments) -> dict:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments or {"file_path": "/a.py"}}


def result(call_id: str, content="file text") -> dict:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content}


def write_jsonl(path: Path, rows: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def read(path: Path):
    return read_trace(str(path), "claude-code")


def notes(trace) -> dict[str, list[str]]:
    return {note.code: note.places for note in trace.notes}


def roles(call) -> list[str]:
    return [m["role"] for m in call.messages]


# -- one response over several lines, tool round trips ----------------------------------------------
def split_response() -> list[dict]:
    """A response written as three lines with growing output_tokens, its tool results, a final answer."""
    return [
        {"type": "file-history-snapshot", "messageId": "u1", "snapshot": {}, "isSnapshotUpdate": False},
        user("u1", None, "Read a.py and b.py"),
        assistant(
            "a1", "u1", "req_1", [{"type": "thinking", "thinking": "two files", "signature": "sig"}], usage(out=3)
        ),
        assistant("a2", "a1", "req_1", [text("Reading both.")], usage(out=10)),
        assistant("a3", "a2", "req_1", [tool_use("t1")], usage(out=57)),
        user("r1", "a3", [result("t1", "alpha")], toolUseResult={"secret": "metadata"}),
        assistant("a4", "r1", "req_1", [tool_use("t2", file_path="/b.py")], usage(out=40)),
        user("r2", "a4", [result("t2", [text("beta"), text("gamma")])]),
        assistant("a5", "r2", "req_2", [text("Done.")], usage(fresh=2, write=30, read=1100, out=8), stop="end_turn"),
    ]


def test_one_response_split_over_lines_is_one_call(tmp_path):
    trace = read(write_jsonl(tmp_path / "s.jsonl", split_response()))
    assert len(trace.calls) == 2
    first, second = trace.calls
    assert first.where == "line 3" and first.model == MODEL and first.kind == "call"
    assert first.reported.output == 57  # the largest seen, not the first or last line's
    assert first.reported.prompt == 3 + 100 + 1000
    assert first.response["reasoning_content"] == "two files"
    assert first.response["content"] == "Reading both."
    assert [c["id"] for c in first.response["tool_calls"]] == ["t1", "t2"]
    assert first.messages == [{"role": "user", "content": "Read a.py and b.py"}]
    assert first.tools is None and trace.unrecorded == ("system", "tools")
    assert trace.session == SESSION and trace.model == MODEL and trace.format == "claude-code"
    assert str(first.day) == "2025-10-26"


def test_tool_results_written_between_blocks_follow_the_whole_response(tmp_path):
    trace = read(write_jsonl(tmp_path / "s.jsonl", split_response()))
    second = trace.calls[1]
    assert roles(second) == ["user", "assistant", "tool", "tool"]
    merged = second.messages[1]
    assert [c["function"]["name"] for c in merged["tool_calls"]] == ["Read", "Read"]
    assert json.loads(merged["tool_calls"][1]["function"]["arguments"]) == {"file_path": "/b.py"}
    assert second.messages[2] == {"role": "tool", "tool_call_id": "t1", "content": "alpha"}
    assert second.messages[3] == {"role": "tool", "tool_call_id": "t2", "content": "beta\ngamma"}
    assert "metadata" not in json.dumps(list(second.messages))  # toolUseResult is never sent
    assert second.response == {"role": "assistant", "content": "Done."}


def test_usage_at_stream_start_names_the_calls_whose_output_looks_like_a_placeholder(tmp_path):
    """A call without a stop_reason whose output count is under one token per 10 characters of its output
    is noted; one whose count fits its output (a final count) is not, nor one with a stop_reason."""
    trace = read(write_jsonl(tmp_path / "s.jsonl", split_response()))
    assert "usage-at-stream-start" not in notes(trace)  # req_1: 57 tokens for about 70 characters
    rows = split_response()
    long_read = tool_use("t2", file_path="/b.py", note="x" * 800)
    rows[5] = assistant("a4", "r1", "req_1", [long_read], usage(out=40))  # 40 tokens for 850 characters
    trace = read(write_jsonl(tmp_path / "p.jsonl", rows))
    assert notes(trace)["usage-at-stream-start"] == ["line 3"]  # req_2 has a stop_reason


def test_tool_results_come_before_the_remaining_text(tmp_path):
    rows = [
        user("u1", None, "go"),
        assistant("a1", "u1", "req_1", [tool_use("t1", "Bash", command="ls")]),
        user("r1", "a1", [result("t1", "a b"), text("[Request interrupted by user]")]),
        user("u2", "r1", [{"type": "text", "text": "try again"}]),
        assistant("a2", "u2", "req_2", [text("ok")]),
    ]
    call = read(write_jsonl(tmp_path / "s.jsonl", rows)).calls[1]
    assert call.messages[2:] == [
        {"role": "tool", "tool_call_id": "t1", "content": "a b"},
        {"role": "user", "content": "[Request interrupted by user]\ntry again"},
    ]


def test_usage_normalisation(tmp_path):
    rows = [
        user("u1", None, "one"),
        assistant("a1", "u1", "r1", [text("x")], {"input_tokens": 7, "output_tokens": 2}, stop="end_turn"),
        user("u2", "a1", "two"),
        assistant("a2", "u2", "r2", [text("y")], {"cache_read_input_tokens": 50, "output_tokens": 1}, stop="end_turn"),
        user("u3", "a2", "three"),
        assistant("a3", "u3", "r3", [text("z")], {}, stop="end_turn"),
        user("u4", "a3", "four"),
        assistant(
            "a4",
            "u4",
            "r4",
            [text("w")],
            usage(fresh=4, write=0, read=900, out=12, cache_creation={"ephemeral_5m_input_tokens": 0}),
            stop="end_turn",
        ),
    ]
    trace = read(write_jsonl(tmp_path / "s.jsonl", rows))
    got = [c.reported.to_dict() if c.reported else None for c in trace.calls]
    assert got == [
        {"prompt": 7, "cache_read": 0, "cache_write": 0, "output": 2},
        {"prompt": None, "cache_read": 50, "cache_write": None, "output": 1},
        None,
        {"prompt": 904, "cache_read": 900, "cache_write": 0, "output": 12, "cache_write_5m": 0, "cache_write_1h": 0},
    ]
    assert "usage-at-stream-start" not in notes(trace)


def test_cache_writes_by_lifetime(tmp_path):
    rows = [
        user("u1", None, "one"),
        assistant(
            "a1",
            "u1",
            "r1",
            [text("x")],
            usage(
                fresh=3,
                write=300,
                read=0,
                out=2,
                cache_creation={"ephemeral_5m_input_tokens": 100, "ephemeral_1h_input_tokens": 200},
            ),
            stop="end_turn",
        ),
    ]
    [call] = read(write_jsonl(tmp_path / "s.jsonl", rows)).calls
    assert call.reported is not None and (call.reported.cache_write_5m, call.reported.cache_write_1h) == (100, 200)


# -- what the model saw -------------------------------------------------------------------------------
def test_meta_lines_commands_and_synthetic_messages(tmp_path):
    rows = [
        user("m1", None, "Caveat: local commands below.", isMeta=True),
        user("m2", "m1", "<command-name>/model</command-name>"),
        user("m3", "m2", "<local-command-stdout>Set model</local-command-stdout>"),
        base("system", "s1", "m3", subtype="local_command", content="<command-name>/cost</command-name>"),
        {
            "type": "attachment",
            "uuid": "at1",
            "parentUuid": "s1",
            "sessionId": SESSION,
            "attachment": {"type": "hook_additional_context", "content": ["ctx"]},
        },
        user("u1", "at1", "hello"),
        assistant(
            "x1",
            "u1",
            "",
            [text("API Error: overloaded")],
            model="<synthetic>",
            use=usage(fresh=0, write=0, read=0, out=0),
            isApiErrorMessage=True,
        ),
        user("u2", "x1", "hello again"),
        assistant("a1", "u2", "req_1", [text("hi")]),
        {"type": "future-thing", "uuid": "f1", "sessionId": SESSION},
        {"type": "summary", "summary": "Greeting", "leafUuid": "a1"},
    ]
    trace = read(write_jsonl(tmp_path / "s.jsonl", rows))
    assert len(trace.calls) == 1
    call = trace.calls[0]
    assert call.messages == [
        {
            "role": "user",
            "content": "Caveat: local commands below.\n<command-name>/model</command-name>\n"
            "<local-command-stdout>Set model</local-command-stdout>\nhello\nhello again",
        }
    ]
    found = notes(trace)
    assert found["synthetic-message"] == ["line 7"]
    assert found["attachment-lines"] == ["line 5 (attachment)"]
    assert found["unknown-line-type"] == ["line 10 (future-thing)"]


def test_images_are_left_out_and_noted(tmp_path):
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
    rows = [
        user("u1", None, [image, text("what is this?")]),
        assistant("a1", "u1", "r1", [tool_use("t1", "Read", file_path="/x.png")]),
        user("r1", "a1", [result("t1", [image])]),
        assistant("a2", "r1", "r2", [text("a cat")]),
    ]
    trace = read(write_jsonl(tmp_path / "s.jsonl", rows))
    assert trace.calls[1].messages[0] == {"role": "user", "content": "what is this?"}
    assert trace.calls[1].messages[2] == {"role": "tool", "tool_call_id": "t1", "content": ""}
    assert notes(trace)["content-not-text"] == ["line 1 (image)", "line 3 (image in a tool result)"]


def test_branches_each_call_follows_its_own_chain(tmp_path):
    rows = [
        user("u1", None, "start"),
        assistant("a1", "u1", "r1", [text("one")]),
        user("u2", "a1", "first try"),
        assistant("a2", "u2", "r2", [text("two")]),
        user("u3", "a1", "edited try"),  # a rewind: branches from a1 again
        assistant("a3", "u3", "r3", [text("three")]),
    ]
    trace = read(write_jsonl(tmp_path / "s.jsonl", rows))
    assert [c.messages[-1]["content"] for c in trace.calls] == ["start", "first try", "edited try"]
    assert [m["content"] for m in trace.calls[2].messages] == ["start", "one", "edited try"]


def test_lines_without_uuids_chain_in_file_order(tmp_path):
    rows = [
        {"type": "user", "message": {"role": "user", "content": "a"}},
        {"type": "assistant", "requestId": "r1", "message": {"role": "assistant", "content": [text("b")]}},
        {"type": "user", "message": {"role": "user", "content": "c"}},
        {"type": "assistant", "message": {"role": "assistant", "id": "m2", "content": [text("d")]}},
    ]
    trace = read(write_jsonl(tmp_path / "s.jsonl", rows))
    assert [m["content"] for m in trace.calls[1].messages] == ["a", "b", "c"]
    assert trace.calls[0].reported is None and trace.session is None and trace.model is None


def test_a_missing_parent_is_noted_and_orphan_results_kept_as_text(tmp_path):
    rows = [
        user("r0", "gone", [result("t0", "late output")]),
        assistant("a1", "r0", "r1", [text("ok")]),
    ]
    trace = read(write_jsonl(tmp_path / "s.jsonl", rows))
    assert trace.calls[0].messages == [{"role": "user", "content": "late output"}]
    assert notes(trace)["chain-broken"] == ["line 1 (parent gone)"]
    assert notes(trace)["orphan-tool-result"] == ["line 1 (t0)"]


def test_prompts_share_message_objects(tmp_path):
    trace = read(write_jsonl(tmp_path / "s.jsonl", split_response()))
    first, second = trace.calls
    assert second.messages[0] is first.messages[0]


# -- compaction ---------------------------------------------------------------------------------------
def compacted() -> list[dict]:
    return [
        user("u1", None, "build it"),
        assistant("a1", "u1", "r1", [tool_use("t1", "Bash", command="make")]),
        user("r1", "a1", [result("t1", "long build log")]),
        assistant("a2", "r1", "r2", [text("built")]),
        base(
            "system",
            "b1",
            None,
            subtype="compact_boundary",
            content="Conversation compacted",
            logicalParentUuid="a2",
            compactMetadata={"trigger": "auto", "preTokens": 155000},
        ),
        user(
            "s1",
            "b1",
            "This session is being continued from a previous conversation. Summary: built it.",
            isCompactSummary=True,
            isVisibleInTranscriptOnly=True,
        ),
        user("u2", "s1", "now test it"),
        assistant("a3", "u2", "r3", [text("testing")]),
    ]


def test_compaction_restarts_the_prompt_from_the_summary(tmp_path):
    trace = read(write_jsonl(tmp_path / "s.jsonl", compacted()))
    assert len(trace.calls) == 3 and all(c.kind == "call" for c in trace.calls)
    after = trace.calls[2]
    assert after.messages == [
        {
            "role": "user",
            "content": "This session is being continued from a previous conversation. Summary: built it.\nnow test it",
        }
    ]
    assert "long build log" not in json.dumps(list(after.messages))
    assert notes(trace)["compaction"] == ["line 5"]
    assert "not profiled" in next(n.message for n in trace.notes if n.code == "compaction")


def at(seconds: int) -> str:
    """A timestamp ``seconds`` after the start of the hand-made sessions."""
    return f"2025-10-26T10:{seconds // 60:02d}:{seconds % 60:02d}.000Z"


def timed(rows: list[dict], start: int = 0, step: int = 10) -> list[dict]:
    return [dict(row, timestamp=at(start + i * step)) for i, row in enumerate(rows)]


SUMMARY_REQUEST = "Your task is to create a detailed summary of the conversation so far."


def compaction_transcript(request_parent: str | None = "a2", hook_parent: str | None = "r1") -> list[dict]:
    """An agent-acompact file as Claude Code 2.1 writes it: a hook's output the session file does not
    keep (after a main-thread tool result), the summarisation request, the summary."""
    extra = {"agentId": "acompact-f00d"}
    return [
        user(
            "c-m1",
            hook_parent,
            "<system-reminder>hook says hi</system-reminder>",
            sidechain=True,
            isMeta=True,
            timestamp=at(25),
            **extra,
        ),
        user("c-u1", request_parent, SUMMARY_REQUEST, sidechain=True, timestamp=at(32), **extra),
        assistant(
            "c-a1",
            "c-u1",
            "req_c",
            [text("<summary>built it</summary>")],
            usage(fresh=3, write=50, read=1100, out=300),
            sidechain=True,
            stop="end_turn",
            timestamp=at(38),
            **extra,
        ),
    ]


def compacted_session(tmp_path: Path, sub_rows: list[dict] | None = None) -> Path:
    session = write_jsonl(tmp_path / f"{SESSION}.jsonl", timed(compacted()))
    write_jsonl(
        tmp_path / SESSION / "subagents" / "agent-acompact-f00d.jsonl",
        compaction_transcript() if sub_rows is None else sub_rows,
    )
    return session


def test_a_compaction_transcript_is_the_compaction_call_of_its_boundary(tmp_path):
    trace = read(compacted_session(tmp_path))
    assert [c.kind for c in trace.calls] == ["call", "call", "compaction", "call"]
    compaction = trace.calls[2]
    assert compaction.index == 2 and compaction.thread == "" and compaction.request_id == "req_c"
    assert compaction.where == f"{SESSION}/subagents/agent-acompact-f00d.jsonl line 3 (compaction)"
    # the main thread's history before the boundary, the hook output after the result it followed, the request
    assert compaction.messages == [
        {"role": "user", "content": "build it"},
        trace.calls[1].messages[1],
        {"role": "tool", "tool_call_id": "t1", "content": "long build log"},
        {"role": "user", "content": "<system-reminder>hook says hi</system-reminder>"},
        {"role": "assistant", "content": "built"},
        {"role": "user", "content": SUMMARY_REQUEST},
    ]
    assert compaction.response == {"role": "assistant", "content": "<summary>built it</summary>"}
    assert compaction.reported.prompt == 3 + 50 + 1100
    assert "compaction" not in notes(trace) and "chain-broken" not in notes(trace)
    assert trace.compactions == 1
    after = trace.calls[3]
    assert after.messages[0]["content"].startswith("This session is being continued")


def test_a_compaction_call_found_by_time_when_its_parent_is_missing(tmp_path):
    trace = read(compacted_session(tmp_path, compaction_transcript(request_parent="gone", hook_parent="gone")))
    compaction = trace.calls[2]
    assert compaction.kind == "compaction"  # the first boundary written after it; its history is the main thread's
    assert [m["role"] for m in compaction.messages] == ["user", "assistant", "tool", "assistant", "user"]
    assert "compaction" not in notes(trace) and "chain-broken" not in notes(trace)


def test_a_compaction_transcript_that_matches_nothing_is_a_subagent(tmp_path):
    rows = [dict(row, timestamp=at(900)) for row in compaction_transcript(request_parent="gone", hook_parent="gone")]
    trace = read(compacted_session(tmp_path, rows))
    assert [c.kind for c in trace.calls] == ["call", "call", "call", "call"]
    assert trace.calls[3].where.endswith("(subagent)") and trace.calls[3].thread == "acompact-f00d"
    assert notes(trace)["compaction"] == ["line 5"]
    assert notes(trace)["compaction-unmatched"] == [str(tmp_path / SESSION / "subagents" / "agent-acompact-f00d.jsonl")]


def test_a_compaction_call_is_bucketed_from_its_own_prompt(tmp_path, registered, model_dir, capsys):
    doc = profile([str(compacted_session(tmp_path)), "--model", str(model_dir)], capsys)
    rows = doc["calls"]
    assert [row["kind"] for row in rows] == ["call", "call", "compaction", "call"]
    compaction = rows[2]
    fixed = rows[0]["buckets"]["unrecorded"]  # the main thread's inferred part, from its first call
    assert compaction["buckets"]["unrecorded"] == fixed
    assert compaction["buckets"]["tool_results"] > 0 and compaction["buckets"]["conversation"] > 0
    assert "compaction" not in {w["code"] for w in doc["warnings"]}
    assert doc["summary"]["compactions"] == 1


# -- call order -----------------------------------------------------------------------------------------
def test_calls_are_numbered_in_time_order_with_their_threads(tmp_path):
    main_rows = main_thread_with_task([])
    main_rows = [dict(row, timestamp=at(t)) for row, t in zip(main_rows, [0, 5, 60, 65])]
    session = write_jsonl(tmp_path / f"{SESSION}.jsonl", main_rows)
    write_jsonl(tmp_path / SESSION / "subagents" / "agent-a1b2.jsonl", timed(subagent_lines(), start=10))
    trace = read(session)
    assert [c.where for c in trace.calls] == [
        "line 2",
        f"{SESSION}/subagents/agent-a1b2.jsonl line 2 (subagent)",
        f"{SESSION}/subagents/agent-a1b2.jsonl line 4 (subagent)",
        "line 4",
    ]
    assert [c.index for c in trace.calls] == [0, 1, 2, 3]
    assert trace.calls[0].time == datetime(2025, 10, 26, 10, 0, 5, tzinfo=timezone.utc)
    assert all(c.time is not None and c.time.utcoffset() == timedelta(0) for c in trace.calls)


def test_a_thread_keeps_its_order_when_its_clock_steps_back(tmp_path):
    rows = [
        user("u1", None, "one", timestamp=at(50)),
        assistant("a1", "u1", "r1", [text("x")], timestamp=at(50)),
        user("u2", "a1", "two", timestamp=at(10)),
        assistant("a2", "u2", "r2", [text("y")], timestamp=at(10)),
        user("u3", "a2", "three"),
        assistant("a3", "u3", "r3", [text("z")], timestamp=None),
    ]
    trace = read(write_jsonl(tmp_path / "s.jsonl", rows))
    assert [c.where for c in trace.calls] == ["line 2", "line 4", "line 6"]
    assert trace.calls[2].time is None


def test_in_time_order_merges_sequences():
    from tokprof.formats.neutral import in_time_order
    from tokprof.trace import Call

    def call(name, seconds):
        when = None if seconds is None else datetime(2025, 1, 1, tzinfo=timezone.utc) + timedelta(seconds=seconds)
        return Call(index=-1, messages=[], tools=None, where=name, time=when)

    main = [call("m1", 0), call("m2", 30), call("m3", None), call("m4", 5), call("m5", 90)]
    sub = [call("s0", None), call("s1", 10), call("s2", 30), call("s3", 95)]
    merged = in_time_order([main, sub])
    assert [c.where for c in merged] == ["s0", "m1", "s1", "m2", "m3", "m4", "s2", "m5", "s3"]
    assert [c.index for c in merged] == list(range(9))


# -- reused request ids -----------------------------------------------------------------------------
def redacted_session(same_message_ids: bool) -> list[dict]:
    """Three calls whose requestIds a sanitiser replaced with one placeholder; the first response is
    written as two lines."""
    rows = []
    parent = None
    for i in range(3):
        u, a = f"u{i}", f"a{i}"
        rows.append(user(u, parent, f"question {i}"))
        use = usage(fresh=3 + i, write=100 * i, read=1000 + i)
        message_id = "msg_REDACTED" if same_message_ids else f"msg_{i}"
        line = assistant(a, u, "req_REDACTED", [text(f"answer {i}")], use, stop="end_turn")
        line["message"]["id"] = message_id
        rows.append(line)
        parent = a
        if i == 0:
            extra = assistant("a0b", "a0", "req_REDACTED", [text("more")], use, stop="end_turn")
            extra["message"]["id"] = message_id
            rows.append(extra)
            parent = "a0b"
    return rows


@pytest.mark.parametrize("same_message_ids", [False, True])
def test_a_request_id_shared_by_different_calls_is_not_one_call(tmp_path, same_message_ids):
    trace = read(write_jsonl(tmp_path / "s.jsonl", redacted_session(same_message_ids)))
    assert [c.where for c in trace.calls] == ["line 2", "line 5", "line 7"]
    assert [c.reported.prompt for c in trace.calls] == [3 + 0 + 1000, 4 + 100 + 1001, 5 + 200 + 1002]
    assert trace.calls[0].response == {"role": "assistant", "content": "answer 0\nmore"}
    assert [m["content"] for m in trace.calls[2].messages] == [
        "question 0",
        "answer 0\nmore",
        "question 1",
        "answer 1",
        "question 2",
    ]
    expected_ids = [None, None, None] if same_message_ids else ["msg_0", "msg_1", "msg_2"]
    assert [c.request_id for c in trace.calls] == expected_ids
    assert notes(trace)["request-id-reused"] == ["requestId req_REDACTED on 3 calls (line 2, line 5, line 7)"]


def test_a_request_id_of_one_response_is_not_reused(tmp_path):
    trace = read(write_jsonl(tmp_path / "s.jsonl", split_response()))
    assert "request-id-reused" not in notes(trace) and [c.request_id for c in trace.calls] == ["req_1", "req_2"]


def test_microcompact_is_noted(tmp_path):
    rows = compacted()[:4] + [
        base("system", "m1", "a2", subtype="microcompact_boundary"),
        user("u2", "m1", "more"),
        assistant("a3", "u2", "r3", [text("x")]),
    ]
    trace = read(write_jsonl(tmp_path / "s.jsonl", rows))
    assert "long build log" in json.dumps(list(trace.calls[2].messages))  # passes through the system line
    assert notes(trace)["microcompact"] == ["line 5"]


# -- subagents ----------------------------------------------------------------------------------------
def subagent_lines(parent: str | None = None) -> list[dict]:
    """A subagent's thread: its prompt, a tool call, the result, its answer (two calls)."""
    extra = {"agentId": "a1b2"}
    return [
        user("s-u1", parent, "Find the config", sidechain=True, **extra),
        assistant(
            "s-a1",
            "s-u1",
            "req_s1",
            [tool_use("st1", "Glob", pattern="*.toml")],
            usage(fresh=4, write=300, read=0, out=20),
            model=SUB_MODEL,
            sidechain=True,
            **extra,
        ),
        user("s-r1", "s-a1", [result("st1", "pyproject.toml")], sidechain=True, **extra),
        assistant(
            "s-a2",
            "s-r1",
            "req_s2",
            [text("pyproject.toml")],
            usage(fresh=5, write=20, read=300, out=9),
            model=SUB_MODEL,
            sidechain=True,
            **extra,
        ),
    ]


def main_thread_with_task(between: list[dict]) -> list[dict]:
    return [
        user("u1", None, "Where is the config?"),
        assistant("a1", "u1", "req_1", [tool_use("task1", "Task", prompt="Find the config")]),
        *between,
        user("r1", "a1", [result("task1", [text("pyproject.toml")])]),
        assistant("a2", "r1", "req_2", [text("In pyproject.toml.")], usage(fresh=6, write=50, read=1100)),
    ]


def progress_copies(lines: list[dict], parent: str = "a1") -> list[dict]:
    out = []
    for i, row in enumerate(lines):
        nested = {k: row[k] for k in ("type", "message", "uuid", "timestamp") if k in row}
        if "requestId" in row:
            nested["requestId"] = row["requestId"]
        out.append(
            base(
                "progress",
                f"p{i}",
                parent,
                toolUseID=f"agent_msg_{i}",
                parentToolUseID="task1",
                data={
                    "type": "agent_progress",
                    "agentId": "a1b2",
                    "prompt": "Find the config",
                    "message": nested,
                    "normalizedMessages": [],
                },
            )
        )
        parent = f"p{i}"
    return out


def check_subagent_calls(trace, where_suffix: str) -> None:
    assert len(trace.calls) == 4  # two main-thread calls, two subagent calls: each once
    subs = [c for c in trace.calls if "(subagent" in c.where]
    assert len(subs) == 2 and all(c.where.endswith(where_suffix) for c in subs)
    assert all(c.model == SUB_MODEL for c in subs)
    assert subs[0].messages == [{"role": "user", "content": "Find the config"}]
    assert roles(subs[1]) == ["user", "assistant", "tool"]
    assert [c.reported.prompt for c in subs] == [304, 325]
    main_calls = [c for c in trace.calls if "(subagent" not in c.where]
    assert "Glob" not in json.dumps(list(main_calls[1].messages))  # the subagent's thread is not the parent's
    assert roles(main_calls[1]) == ["user", "assistant", "tool"]
    assert trace.model == MODEL
    billed = sum(c.reported.prompt for c in trace.calls)
    assert billed == (3 + 100 + 1000) + (6 + 50 + 1100) + 304 + 325


def test_inline_sidechain_is_its_own_conversation(tmp_path):
    trace = read(write_jsonl(tmp_path / "s.jsonl", main_thread_with_task(subagent_lines())))
    check_subagent_calls(trace, "(subagent)")
    assert [c.where for c in trace.calls] == ["line 2", "line 4 (subagent)", "line 6 (subagent)", "line 8"]


def test_subagent_file_and_progress_copies_count_once(tmp_path):
    session = write_jsonl(tmp_path / f"{SESSION}.jsonl", main_thread_with_task(progress_copies(subagent_lines())))
    write_jsonl(tmp_path / SESSION / "subagents" / "agent-a1b2.jsonl", subagent_lines())
    trace = read(session)
    check_subagent_calls(trace, "(subagent)")
    assert trace.calls[2].where == f"{SESSION}/subagents/agent-a1b2.jsonl line 2 (subagent)"
    assert "subagent-from-progress" not in notes(trace)


def test_progress_copies_stand_in_for_a_missing_subagent_file(tmp_path):
    session = write_jsonl(tmp_path / f"{SESSION}.jsonl", main_thread_with_task(progress_copies(subagent_lines())))
    trace = read(session)
    check_subagent_calls(trace, "(subagent, from progress)")
    assert notes(trace)["subagent-from-progress"] == [
        "line 4 (subagent, from progress)",
        "line 6 (subagent, from progress)",
    ]


def test_progress_copies_of_assistant_lines_only_start_from_the_prompt(tmp_path):
    copies = [row for row in progress_copies(subagent_lines()) if row["data"]["message"]["type"] == "assistant"]
    trace = read(write_jsonl(tmp_path / "s.jsonl", main_thread_with_task(copies)))
    subs = [c for c in trace.calls if "(subagent" in c.where]
    assert subs[0].messages == [{"role": "user", "content": "Find the config"}]
    assert len(subs) == 2


def test_version_2_0_agent_files_beside_the_session(tmp_path):
    session = write_jsonl(tmp_path / f"{SESSION}.jsonl", main_thread_with_task([]))
    write_jsonl(tmp_path / "agent-a1b2.jsonl", subagent_lines())
    other = [dict(row, sessionId="other") for row in subagent_lines()]
    write_jsonl(tmp_path / "agent-zz.jsonl", [dict(row, requestId="x" + row.get("requestId", "")) for row in other])
    trace = read(session)
    check_subagent_calls(trace, "(subagent)")
    assert trace.calls[2].where == "agent-a1b2.jsonl line 2 (subagent)"
    alone = read(tmp_path / "agent-a1b2.jsonl")  # a subagent file read on its own: only its calls
    assert [c.where for c in alone.calls] == ["line 2 (subagent)", "line 4 (subagent)"]
    assert alone.model == SUB_MODEL


def test_a_call_in_two_transcripts_is_counted_once(tmp_path):
    session = write_jsonl(tmp_path / f"{SESSION}.jsonl", main_thread_with_task(subagent_lines()))
    write_jsonl(tmp_path / SESSION / "subagents" / "agent-a1b2.jsonl", subagent_lines())
    trace = read(session)
    check_subagent_calls(trace, "(subagent)")
    assert notes(trace)["duplicate-call"] == [
        f"{SESSION}/subagents/agent-a1b2.jsonl line 2",
        f"{SESSION}/subagents/agent-a1b2.jsonl line 4",
    ]


def test_subagent_file_errors_name_that_file(tmp_path):
    session = write_jsonl(tmp_path / f"{SESSION}.jsonl", main_thread_with_task([]))
    bad = write_jsonl(tmp_path / SESSION / "subagents" / "agent-x.jsonl", [{"type": "user", "message": 3}])
    with pytest.raises(InputError) as info:
        read(session)
    assert info.value.path == str(bad) and str(info.value.where) == "line 1: message"


def test_sessions_of_a_project_folder(tmp_path):
    write_jsonl(tmp_path / "b-session.jsonl", main_thread_with_task([]))
    write_jsonl(tmp_path / "a-session.jsonl", [dict(row, sessionId="a") for row in main_thread_with_task([])])
    write_jsonl(tmp_path / "b-session" / "subagents" / "agent-1.jsonl", subagent_lines())
    write_jsonl(tmp_path / "agent-2.jsonl", subagent_lines())  # SESSION is b-session's: read with it
    write_jsonl(tmp_path / "agent-3.jsonl", [dict(row, sessionId="gone") for row in subagent_lines()])
    (tmp_path / "notes.txt").write_text("x")
    write_jsonl(tmp_path / "rollout-1.jsonl", [{"timestamp": "t", "type": "session_meta", "payload": {"id": "c"}}])
    (tmp_path / "broken.jsonl").write_bytes(b"\xff\xfe not text")
    names = [p.name for p in claude_code.sessions(tmp_path)]
    assert names == ["a-session.jsonl", "agent-3.jsonl", "b-session.jsonl"]


# -- detection ----------------------------------------------------------------------------------------
def test_sniff(tmp_path):
    assert claude_code.sniff(load(str(write_jsonl(tmp_path / "s.jsonl", split_response()))))
    anthropic_capture = [
        {
            "request": {"model": MODEL, "messages": [{"role": "user", "content": "x"}]},
            "response": {"type": "message", "content": []},
        }
    ]
    codex = [
        {"timestamp": "t", "type": "session_meta", "payload": {"id": "x"}},
        {"timestamp": "t", "type": "response_item", "payload": {"type": "message"}},
    ]
    chat = [{"messages": [{"role": "user", "content": "x"}], "model": "gpt-4o"}]
    for i, rows in enumerate([anthropic_capture, codex, chat]):
        assert not claude_code.sniff(load(str(write_jsonl(tmp_path / f"o{i}.jsonl", rows))))


@pytest.mark.parametrize(
    "doc",
    [
        Document(value={"type": "user", "sessionId": "x"}),
        Document(value=[1, 2]),
        Document(lines=[]),
        Document(lines=[(1, None), (2, "user"), (3, [1]), (4, {"type": None, "uuid": 3})]),
    ],
)
def test_sniff_never_raises(doc):
    assert claude_code.sniff(doc) is False


# -- odd input ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "row, where, what",
    [
        ([1, 2], "line 1", "expected a transcript line object, found a list"),
        ({"uuid": "x"}, "line 1: type", "missing: expected a string"),
        ({"type": "user", "uuid": 5}, "line 1: uuid", "expected a string or null, found a number"),
        ({"type": "user", "uuid": "x", "parentUuid": 5}, "line 1: parentUuid", "expected a string or null"),
        ({"type": "user", "message": "hi"}, "line 1: message", "expected the message, an object"),
        ({"type": "user", "message": {"role": "user"}}, "line 1: message.content", "missing"),
        ({"type": "user", "message": {"content": 3}}, "line 1: message.content", "expected a string or a list"),
        ({"type": "user", "message": {"content": [3]}}, "line 1: message.content[0]", "expected a content block"),
        ({"type": "user", "message": {"content": [{"text": "x"}]}}, "line 1: message.content[0].type", "missing"),
        (
            {"type": "user", "message": {"content": [{"type": "text", "text": 1}]}},
            "line 1: message.content[0].text",
            "expected a string",
        ),
        (
            {"type": "user", "message": {"content": [{"type": "tool_result"}]}},
            "line 1: message.content[0].tool_use_id",
            "expected a string",
        ),
        (
            {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t", "content": 4}]}},
            "line 1: message.content[0].content",
            "expected a string or a list",
        ),
        (
            {"type": "user", "message": {"content": [tool_use("t")]}},
            "line 1: message.content[0].type",
            "belongs in an assistant message",
        ),
        (
            {"type": "assistant", "message": {"content": [result("t")]}},
            "line 1: message.content[0].type",
            "belongs in a user message",
        ),
        (
            {"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t", "name": "R", "input": "x"}]}},
            "line 1: message.content[0].input",
            "expected an object",
        ),
        (
            {"type": "assistant", "message": {"content": [{"type": "tool_use", "id": 1, "name": "R"}]}},
            "line 1: message.content[0].id",
            "expected a string",
        ),
        (
            {"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t"}]}},
            "line 1: message.content[0].name",
            "missing",
        ),
        ({"type": "assistant", "message": {"content": [], "model": 4}}, "line 1: message.model", "expected a string"),
        ({"type": "assistant", "requestId": 9, "message": {"content": []}}, "line 1: requestId", "expected a string"),
        (
            {"type": "assistant", "requestId": "r", "message": {"content": [], "usage": [1]}},
            "line 1: message.usage",
            "expected an object",
        ),
        (
            {"type": "assistant", "requestId": "r", "message": {"content": [], "usage": {"input_tokens": -1}}},
            "line 1: message.usage.input_tokens",
            "non-negative integer",
        ),
        (
            {"type": "assistant", "requestId": "r", "message": {"content": [], "usage": {"output_tokens": "3"}}},
            "line 1: message.usage.output_tokens",
            "non-negative integer",
        ),
        (
            {"type": "user", "message": {"content": "bad \ud800 text"}},
            "line 1: message.content.text",
            "invalid Unicode",
        ),
    ],
)
def test_odd_input_is_one_line_error(tmp_path, row, where, what):
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(row) + "\n" + json.dumps(assistant("z", None, "rz", [text("x")])) + "\n")
    with pytest.raises(InputError) as info:
        read(path)
    assert str(info.value.where) == where
    assert what in info.value.what
    assert "\n" not in str(info.value)


def test_odd_files(tmp_path):
    only_users = write_jsonl(tmp_path / "u.jsonl", [user("u1", None, "hi"), {"type": "summary", "summary": "s"}])
    with pytest.raises(InputError, match="no model call"):
        read(only_users)
    whole = tmp_path / "w.json"
    whole.write_text(json.dumps([user("u1", None, "hi")]))
    with pytest.raises(InputError, match="expected a JSONL transcript"):
        read(whole)
    loop = write_jsonl(tmp_path / "l.jsonl", [user("u1", "a1", "hi"), assistant("a1", "u1", "r1", [text("x")])])
    with pytest.raises(InputError, match="loops"):
        read(loop)
    one = tmp_path / "one.json"  # a single line saved as .json is still a transcript
    one.write_text(json.dumps(assistant("a1", None, "r1", [text("x")])))
    assert len(read(one).calls) == 1


def test_odd_but_readable_lines(tmp_path):
    rows = [
        user("u1", None, ""),  # empty content: nothing sent
        user("u1", None, "repeat of u1"),  # a repeated uuid is skipped
        user("u2", "u1", "hello"),
        assistant("a1", "u2", "r1", []),  # a response with no content
        base("progress", "p1", "a1", data={"type": "agent_progress", "message": "not a line"}),
        base("progress", "p2", "p1", data={"type": "bash_progress", "output": "..."}),
        user("u3", "p2", "again"),
        assistant("a2", "u3", "r2", [{"type": "redacted_thinking", "data": "xx"}, text("ok")]),
    ]
    trace = read(write_jsonl(tmp_path / "s.jsonl", rows))
    assert [c.messages for c in trace.calls] == [
        [{"role": "user", "content": "hello"}],
        [
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": ""},
            {"role": "user", "content": "again"},
        ],
    ]
    assert trace.calls[1].response == {"role": "assistant", "content": "ok"}
    assert notes(trace)["duplicate-line"] == ["line 2"]


def test_truncated_subagent_file_is_noted(tmp_path):
    session = write_jsonl(tmp_path / f"{SESSION}.jsonl", main_thread_with_task([]))
    sub = write_jsonl(tmp_path / SESSION / "subagents" / "agent-a1b2.jsonl", subagent_lines())
    sub.write_text(sub.read_text() + '{"type": "user", "message": ')
    trace = read(session)
    assert len(trace.calls) == 4
    assert notes(trace)["truncated-line"] == [f"{SESSION}/subagents/agent-a1b2.jsonl line 5"]


# -- end to end through the CLI -----------------------------------------------------------------------
@pytest.fixture
def registered(monkeypatch):
    """Nothing to do: the reader is registered (kept for the tests that name the fixture)."""


def profile(args: list[str], capsys) -> dict:
    return profile_json(args, capsys)


def test_end_to_end_with_input_format(tmp_path, registered, model_dir, capsys):
    session = write_jsonl(tmp_path / f"{SESSION}.jsonl", main_thread_with_task(progress_copies(subagent_lines())))
    write_jsonl(tmp_path / SESSION / "subagents" / "agent-a1b2.jsonl", subagent_lines())
    doc = profile([str(session), "--model", str(model_dir), "--input-format", "claude-code"], capsys)
    assert doc["source"]["format"] == "claude-code"
    assert len(doc["calls"]) == 4
    assert doc["summary"]["billed_input_reported"] == (3 + 100 + 1000) + (6 + 50 + 1100) + 304 + 325


def test_end_to_end_auto_detected(tmp_path, registered, model_dir, capsys):
    doc = profile([str(write_jsonl(tmp_path / "s.jsonl", compacted())), "--model", str(model_dir)], capsys)
    assert doc["source"]["format"] == "claude-code"
    assert len(doc["calls"]) == 3
    assert doc["summary"]["billed_input_reported"] == 3 * (3 + 100 + 1000)
    assert "compaction" in {w["code"] for w in doc["warnings"]}


# -- the shared corpus file ---------------------------------------------------------------------------
@pytest.fixture
def corpus() -> Path:
    path = corpus_file()
    if not path.exists():
        pytest.skip("the shared corpus is absent")
    return path


def reported_prompts(path: Path) -> dict[str, int]:
    """input + cache_creation + cache_read per unique requestId, read straight from the file."""
    out = {}
    for raw in path.read_text().splitlines():
        row = json.loads(raw)
        if row.get("type") == "assistant":
            use = row["message"]["usage"]
            out[row["requestId"]] = (
                use["input_tokens"] + use["cache_creation_input_tokens"] + use["cache_read_input_tokens"]
            )
    return out


def test_corpus_file(corpus):
    trace = read(corpus)
    assert claude_code.sniff(load(str(corpus)))
    assert len(trace.calls) == 30
    assert sum(c.reported.prompt for c in trace.calls) == sum(reported_prompts(corpus).values())
    assert trace.model == "claude-sonnet-4-5-20250929" and trace.session == "2d984148-cddb-4605-aac1-13e720fe613c"
    assert all(c.tools is None for c in trace.calls)
    assert not any(m["role"] == "system" for c in trace.calls for m in c.messages)
    last = trace.calls[-1]
    assert roles(last)[0] == "user" and roles(last)[-1] == "tool"
    assert {n.code for n in trace.notes} == {"usage-at-stream-start"}


def test_corpus_end_to_end(corpus, registered, capsys):
    doc = profile([str(corpus), "--model", "claude-proxy", "--input-format", "claude-code"], capsys)
    assert len(doc["calls"]) == 30
    assert doc["summary"]["billed_input_reported"] == sum(reported_prompts(corpus).values())
    assert doc["source"]["session"] == "2d984148-cddb-4605-aac1-13e720fe613c"
    assert read_trace(str(corpus)).format == "claude-code"  # detected without --input-format


# -- the shared compacted 2.1 session -----------------------------------------------------------------
COMPACTED = "claude_code_2.1_compacted/8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl"


@pytest.fixture
def compacted_corpus() -> Path:
    path = corpus_file().parent / COMPACTED
    if not path.exists():
        pytest.skip("the shared corpus is absent")
    return path


def test_corpus_compaction_call_is_marked_and_bucketed_from_its_own_prompt(compacted_corpus):
    import tokprof

    trace = read(compacted_corpus)
    compactions = [c for c in trace.calls if c.kind == "compaction"]
    assert len(compactions) == 1 and len(trace.calls) == 157
    compaction = compactions[0]
    assert compaction.where.endswith("agent-acompact-f46190.jsonl line 7 (compaction)") and compaction.thread == ""
    assert compaction.reported.prompt == 169_910
    assert SUMMARY_REQUEST.split(" so far")[0] in compaction.messages[-1]["content"]
    before = trace.calls[compaction.index - 1]  # the last main-thread call before the boundary
    assert before.where == "line 703" and compaction.messages[:37] == before.messages[:37]
    assert len(compaction.messages) > len(before.messages)
    assert trace.calls[compaction.index + 1].messages[0]["content"].startswith("This session is being continued")
    assert "compaction" not in notes(trace) and "chain-broken" not in notes(trace)
    assert [c.time for c in trace.calls] == sorted(c.time for c in trace.calls)
    # bucketed from its own prompt, with the main thread's inferred part (from its first call)
    trace.calls = [trace.calls[0], compaction]
    row = tokprof.profile(trace, model="claude-proxy").calls[1]
    assert row.kind == "compaction" and row.total == 169_910
    share = row.buckets["unrecorded"] / row.total
    assert share < 0.3  # was 98.9%: the call was read as a subagent with a broken chain
    assert row.buckets["tool_results"] > row.buckets["conversation"] > 0


def test_a_parallel_tools_result_written_beside_the_chain_is_in_the_prompt(tmp_path):
    """Claude Code 2.1 writes each tool_use of a response as a line, and a parallel tool's result as
    a branch of its own while the chain goes on through the other tool's progress lines: the result
    answers a call on the chain, and the API took the next request only with it, so it is there."""
    rows = [
        user("u1", None, "read both files"),
        assistant("a1", "u1", "r1", [tool_use("t1", file_path="/a.py")]),
        assistant("a2", "a1", "r1", [tool_use("t2", name="Bash", command="make")]),
        user("u2", "a1", [result("t1", "contents of a")]),  # beside the chain: a sibling of a2
        base("progress", "p1", "a2", data={"type": "bash_progress", "output": "..."}),
        user("u3", "p1", [result("t2", "make: ok")]),
        assistant("a3", "u3", "r2", [text("done")]),
    ]
    trace = read(write_jsonl(tmp_path / "s.jsonl", rows))
    last = trace.calls[-1]
    answered = [m["tool_call_id"] for m in last.messages if m["role"] == "tool"]
    assert sorted(answered) == ["t1", "t2"]
    calls = [c["id"] for m in last.messages for c in m.get("tool_calls") or []]
    assert calls == ["t1", "t2"] and last.messages[-1]["role"] == "tool"
    assert notes(trace)["results-beside-chain"] == ["line 4"]
    # a result already on the chain is not added twice
    rows[3] = user("u2", "a2", [result("t1", "contents of a")])
    rows[4] = base("progress", "p1", "u2", data={"type": "bash_progress", "output": "..."})
    trace = read(write_jsonl(tmp_path / "t.jsonl", rows))
    assert sorted(m["tool_call_id"] for m in trace.calls[-1].messages if m["role"] == "tool") == ["t1", "t2"]
    assert "results-beside-chain" not in notes(trace)
