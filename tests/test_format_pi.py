"""pi coding-agent sessions (#27): the v3 tree and the older layout with a ``session`` header.

The fixtures are written here by hand in the shapes of badlogic/pi-mono's
``packages/coding-agent/src/core/session-manager.ts`` (``SessionHeader``, ``SessionMessageEntry``,
``ModelChangeEntry``, ``CompactionEntry``) and ``packages/ai`` (assistant ``usage``); no text comes
from a real session.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT
from test_cost import genai

import tokprof
from tokprof.frontends.cli import main
from tokprof.formats import read_trace

CORPUS = ROOT.parent / "shared" / "corpus" / "pi"
T = "2026-06-05T05:24:28.000Z"


def usage(input: int, output: int, read: int = 0, write: int = 0) -> dict:
    return {
        "input": input,
        "output": output,
        "cacheRead": read,
        "cacheWrite": write,
        "totalTokens": input + output + read + write,
        "cost": {"input": 0.001, "output": 0.001, "cacheRead": 0, "cacheWrite": 0, "total": 0.002},
    }


def entry(id: str, parent: str | None, message: dict) -> dict:
    return {"type": "message", "id": id, "parentId": parent, "timestamp": T, "message": message}


def say(text: str) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1780637068253}


def answer(model: str, use: dict | None, text: str = "", calls: list | None = None, stop: str = "stop") -> dict:
    content = [{"type": "thinking", "thinking": "Look first."}] if calls else []
    content += [{"type": "text", "text": text}] if text else []
    content += [{"type": "toolCall", "id": c, "name": "read", "arguments": {"path": "a.md"}} for c in calls or []]
    message = {
        "role": "assistant",
        "content": content,
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": model,
        "stopReason": stop,
        "timestamp": 1780637068257,
    }
    if use is not None:
        message["usage"] = use
    return message


def result(call_id: str, text: str) -> dict:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": "read",
        "content": [{"type": "text", "text": text}],
        "isError": False,
        "timestamp": 1780637068300,
    }


def v3_lines() -> list:
    return [
        {"type": "session", "version": 3, "id": "sess-1", "timestamp": T, "cwd": "/work/app"},
        {
            "type": "model_change",
            "id": "m1",
            "parentId": None,
            "timestamp": T,
            "provider": "anthropic",
            "modelId": "claude-sonnet-4-5",
        },
        entry("u1", "m1", say("Read a.md.")),
        entry("a1", "u1", answer("claude-sonnet-4-5", usage(10, 20, read=1000, write=200), calls=["t1"])),
        entry("r1", "a1", result("t1", "# A\nSome notes.")),
        entry("a2", "r1", answer("claude-sonnet-4-5", usage(30, 15, read=1200), text="It has notes.")),
        {
            "type": "compaction",
            "id": "c1",
            "parentId": "a2",
            "timestamp": T,
            "summary": "The user read a.md.",
            "firstKeptEntryId": "a2",
            "tokensBefore": 1300,
        },
        {
            "type": "model_change",
            "id": "m2",
            "parentId": "c1",
            "timestamp": T,
            "provider": "openai",
            "modelId": "gpt-5.1-codex",
        },
        entry("u2", "m2", say("Now summarise.")),
        entry("a3", "u2", answer("gpt-5.1-codex", usage(0, 0), stop="aborted")),
        entry("a4", "u2", answer("gpt-5.1-codex", usage(400, 50, read=100), text="Summary.")),
        entry("u3", "a2", say("A branch from before the compaction.")),
        entry("a5", "u3", answer("claude-sonnet-4-5", usage(40, 5, read=1300), text="Branch answer.")),
    ]


def old_lines() -> list:
    return [
        {
            "type": "session",
            "id": "sess-old",
            "timestamp": T,
            "cwd": "/work/app",
            "provider": "anthropic",
            "modelId": "claude-sonnet-4-5",
            "thinkingLevel": "off",
        },
        {"type": "message", "timestamp": T, "message": say("Read a.md.")},
        {
            "type": "message",
            "timestamp": T,
            "message": answer("claude-sonnet-4-5", usage(10, 20, 1000, 200), calls=["t1"]),
        },
        {"type": "message", "timestamp": T, "message": result("t1", "# A")},
        {"type": "thinking_level_change", "timestamp": T, "thinkingLevel": "high"},
        {"type": "message", "timestamp": T, "message": answer("claude-sonnet-4-5", usage(5, 3, 1210), text="Ok.")},
    ]


def write(path: Path, lines: list) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def own_sum(lines: list) -> int:
    """The billed input as the file states it: input + cacheRead + cacheWrite of every assistant
    message that reports usage."""
    total = 0
    for line in lines:
        message = line.get("message") or {}
        if message.get("role") == "assistant" and message.get("usage"):
            u = message["usage"]
            total += u["input"] + u["cacheRead"] + u["cacheWrite"]
    return total


def test_v3_tree_prompts_compaction_and_models(tmp_path):
    trace = read_trace(str(write(tmp_path / "2026-06-05_sess-1.jsonl", v3_lines())))
    assert trace.format == "pi" and trace.session == "sess-1" and trace.unrecorded == ("system", "tools")
    assert trace.compactions == 1
    assert [call.where for call in trace.calls] == ["line 4", "line 6", "line 11", "line 13"]  # a3 aborted
    first, second, after, branch = trace.calls
    assert first.reported.prompt == 1210 and first.reported.cache_write == 200 and first.reported.cache_read == 1000
    assert [m["role"] for m in second.messages] == ["user", "assistant", "tool"]
    # after the compaction: its summary, the kept entries from firstKeptEntryId (a2), then the new ones
    assert [m["content"] for m in after.messages] == ["The user read a.md.", "It has notes.", "Now summarise."]
    assert after.model == "gpt-5.1-codex" and first.model == "claude-sonnet-4-5"
    # a branch from before the compaction sees the uncompacted path
    assert [m["role"] for m in branch.messages] == ["user", "assistant", "tool", "assistant", "user"]
    assert any(note.code == "failed-call" for note in trace.notes)


def test_v3_billed_input_and_cost_are_the_files_own_sums(tmp_path):
    lines = v3_lines()
    trace = read_trace(str(write(tmp_path / "s.jsonl", lines)))
    profile = tokprof.profile(trace)
    summary = profile.summary()
    assert summary.reported.billed_input == own_sum(lines) == 1210 + 1230 + 500 + 1340
    for call, row in zip(trace.calls, profile.calls):  # each call priced as its own model
        assert row.cost.priced
        assert row.cost.total == pytest.approx(float(genai(call.model, call.reported, call.day)), abs=1e-8)
    assert summary.cost.total == pytest.approx(sum(row.cost.total for row in profile.calls), abs=1e-8)


def test_older_layout_chains_in_file_order(tmp_path):
    lines = old_lines()
    trace = read_trace(str(write(tmp_path / "old.jsonl", lines)))
    assert trace.format == "pi" and trace.session == "sess-old" and len(trace.calls) == 2
    assert [m["role"] for m in trace.calls[1].messages] == ["user", "assistant", "tool"]
    assert sum(call.reported.prompt for call in trace.calls) == own_sum(lines)


def test_the_headers_cwd_is_every_calls_project(tmp_path):
    """pi records the folder it worked in once, in the session header: ``--by project`` groups by it."""
    for lines in (v3_lines(), old_lines()):
        trace = read_trace(str(write(tmp_path / "s.jsonl", lines)))
        assert trace.calls and {call.cwd for call in trace.calls} == {"/work/app"}
    lines = v3_lines()
    lines[0]["cwd"] = 7
    path = write(tmp_path / "bad.jsonl", lines)
    with pytest.raises(tokprof.InputError, match="line 1: cwd"):
        read_trace(str(path))


def test_malformed_usage_names_the_file_and_field(tmp_path, capsys):
    lines = v3_lines()
    lines[3]["message"]["usage"]["cacheRead"] = "lots"
    path = write(tmp_path / "bad.jsonl", lines)
    assert main(["profile", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and f"{path}: line 4: message.usage.cacheRead" in err


@pytest.mark.parametrize("name", ["pi_large-session.jsonl", "pi_v3_session-01.jsonl"])
def test_corpus_sessions(name):
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"{name}: the shared corpus is absent")
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    trace = read_trace(str(path))
    assert trace.format == "pi"
    profile = tokprof.profile(trace)
    assert profile.summary().reported.billed_input == own_sum(lines)
    for call, row in zip(trace.calls, profile.calls):
        assert all(count >= 0 for count in row.buckets.values()) and sum(row.buckets.values()) == row.total
        if row.cost.priced:
            assert row.cost.total == pytest.approx(float(genai(call.model, call.reported, call.day)), abs=1e-8)
