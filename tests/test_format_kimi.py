"""Kimi Code and Kimi CLI wire logs (#48.1).

The fixtures are written here by hand in the record shapes of Kimi Code's wire protocol 1.4 (as the
shared corpus's redacted capture shows them) and of MoonshotAI/kimi-cli's ``wire/file.py`` and
``wire/types.py`` (``{timestamp, message: {type, payload}}``); no text comes from a real session.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT

import tokprof
from tokprof.runs.sessions import local_sessions
from tokprof.formats import read_trace
from tokprof.frontends.cli import main

CORPUS = ROOT.parent / "shared" / "corpus" / "kimi_code" / "subagent_agent-0.jsonl"
MS = 1785615359837


def write(path: Path, rows: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def loop(event: dict, t: int) -> dict:
    return {"type": "context.append_loop_event", "event": event, "time": MS + t}


def code_usage(other: int, output: int, read: int = 0, write: int = 0) -> dict:
    return {"inputOther": other, "output": output, "inputCacheRead": read, "inputCacheCreation": write}


def code_agent(prompt: str, steps: list[tuple[dict, str | None]], t0: int = 0) -> list:
    """A Kimi Code agent's wire: config, tools, the user's prompt, then steps (usage, tool call or None)."""
    rows = [
        {"type": "metadata", "protocol_version": "1.4", "created_at": MS},
        {"type": "config.update", "cwd": "/work/app", "modelAlias": "moonshot-ai/kimi-k2.7-code", "time": MS},
        {"type": "config.update", "profileName": "explore", "systemPrompt": "You are Kimi Code CLI.", "time": MS},
        {
            "type": "llm.tools_snapshot",
            "hash": "h",
            "tools": [
                {"name": "Bash", "description": "Run a command.", "parameters": {"type": "object", "properties": {}}}
            ],
        },
        {
            "type": "context.append_message",
            "message": {"role": "user", "content": [{"type": "text", "text": prompt}], "toolCalls": []},
            "time": MS + t0,
        },
    ]
    for n, (usage, tool) in enumerate(steps, 1):
        t = t0 + n * 10
        step = f"step-{t0}-{n}"
        rows.append(loop({"type": "step.begin", "uuid": step, "turnId": "0", "step": n}, t))
        rows.append(
            {
                "type": "llm.request",
                "kind": "loop",
                "provider": "kimi",
                "model": "kimi-k2.7-code",
                "messageCount": n,
                "time": MS + t,
            }
        )
        rows.append(
            loop({"type": "content.part", "stepUuid": step, "part": {"type": "think", "think": "Plan."}}, t + 1)
        )
        if tool:
            rows.append(
                loop(
                    {
                        "type": "tool.call",
                        "toolCallId": tool,
                        "name": "Bash",
                        "args": {"command": "ls"},
                        "stepUuid": step,
                    },
                    t + 2,
                )
            )
            rows.append(
                loop(
                    {
                        "type": "tool.result",
                        "parentUuid": tool,
                        "toolCallId": tool,
                        "result": {"output": "a.txt\nb.txt\n"},
                    },
                    t + 3,
                )
            )
        else:
            rows.append(
                loop({"type": "content.part", "stepUuid": step, "part": {"type": "text", "text": "Two files."}}, t + 2)
            )
        rows.append(
            loop(
                {
                    "type": "step.end",
                    "uuid": step,
                    "step": n,
                    "usage": usage,
                    "finishReason": "tool_use",
                    "messageId": f"chatcmpl-{t0}-{n}",
                },
                t + 4,
            )
        )
        rows.append(
            {
                "type": "usage.record",
                "model": "moonshot-ai/kimi-k2.7-code",
                "usage": usage,
                "usageScope": "turn",
                "time": MS + t + 4,
            }
        )
    return rows


def code_sum(rows: list) -> int:
    """billed input as the file states it: each step.end's usage (usage.record lines repeat them)."""
    total = 0
    for row in rows:
        event = row.get("event") or {}
        if row["type"] == "context.append_loop_event" and event.get("type") == "step.end" and event.get("usage"):
            u = event["usage"]
            total += u["inputOther"] + u["inputCacheRead"] + u["inputCacheCreation"]
    return total


def code_session(home: Path) -> tuple[Path, list, list]:
    session = home / ".kimi-code/sessions/wd_app_ac3bb318/session_1bcbe023-4f7e"
    main_rows = code_agent(
        "List the files.", [(code_usage(10982, 75, read=1792), "Bash_0"), (code_usage(271, 119, read=14080), None)]
    )
    sub_rows = code_agent("Count Swift files.", [(code_usage(500, 20, write=300), None)], t0=5)
    write(session / "agents/main/wire.jsonl", main_rows)
    write(session / "agents/agent-0/wire.jsonl", sub_rows)
    (session / "state.json").write_text(json.dumps({"workDir": "/work/app", "agents": {}}))
    return session / "agents/main/wire.jsonl", main_rows, sub_rows


def test_kimi_code_steps_usage_once_and_subagents_as_threads(tmp_path):
    path, main_rows, sub_rows = code_session(tmp_path)
    trace = read_trace(str(path))
    assert trace.format == "kimi-code" and trace.session == "1bcbe023-4f7e" and trace.unrecorded == ()
    assert [call.thread for call in trace.calls] == ["", "agent-0", ""]  # in time order
    first, sub, last = trace.calls
    assert [m["role"] for m in first.messages] == ["system", "user"]
    assert first.tools[0]["function"]["name"] == "Bash" and first.model == "kimi-k2.7-code"
    assert [m["role"] for m in last.messages] == ["system", "user", "assistant", "tool"]
    assert first.reported.prompt == 10982 + 1792 and first.reported.cache_read == 1792
    assert sub.reported.cache_write == 300 and sub.where.startswith("agent-0: line")
    assert {call.cwd for call in trace.calls} == {"/work/app"}
    summary = tokprof.profile(trace).summary()
    assert summary.reported.billed_input == code_sum(main_rows) + code_sum(sub_rows)


def test_kimi_code_sessions_lists_the_main_agent(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    code_session(home)
    rows = local_sessions("kimi-code")
    assert len(rows) == 1 and rows[0].calls == 3 and rows[0].project == "/work/app"  # state.json's workDir


def cli_line(t: float, kind: str, payload: dict) -> dict:
    return {"timestamp": 1770983400.0 + t, "message": {"type": kind, "payload": payload}}


def cli_usage(other: int, output: int, read: int = 0, write: int = 0) -> dict:
    return {"input_other": other, "output": output, "input_cache_read": read, "input_cache_creation": write}


def cli_rows() -> list:
    return [
        {"type": "metadata", "protocol_version": "1.3"},
        cli_line(0, "TurnBegin", {"user_input": [{"type": "text", "text": "List the files."}]}),
        cli_line(1, "StepBegin", {"n": 1}),
        cli_line(2, "ContentPart", {"type": "think", "think": "Use "}),
        cli_line(2, "ContentPart", {"type": "think", "think": "Glob."}),
        cli_line(3, "ToolCall", {"type": "function", "id": "t1", "function": {"name": "Glob", "arguments": '{"pat'}}),
        cli_line(3, "ToolCallPart", {"arguments_part": 'tern": "*"}'}),
        cli_line(
            4,
            "StatusUpdate",
            {"context_usage": 0.02, "token_usage": cli_usage(1562, 40, read=0, write=1000), "message_id": "chatcmpl-1"},
        ),
        cli_line(
            4,
            "StatusUpdate",
            {"context_usage": 0.02, "token_usage": cli_usage(1562, 43, read=0, write=1000), "message_id": "chatcmpl-1"},
        ),  # an update of the same step: counted once
        cli_line(5, "ToolResult", {"tool_call_id": "t1", "return_value": {"is_error": False, "output": "a.go"}}),
        cli_line(6, "StepBegin", {"n": 2}),
        cli_line(7, "ContentPart", {"type": "text", "text": "Found "}),
        cli_line(7, "ContentPart", {"type": "text", "text": "a.go."}),
        cli_line(
            8, "SubagentEvent", {"agent_id": "a1", "event": {"type": "TurnBegin", "payload": {"user_input": "Look."}}}
        ),
        cli_line(8, "SubagentEvent", {"agent_id": "a1", "event": {"type": "StepBegin", "payload": {"n": 1}}}),
        cli_line(
            8,
            "SubagentEvent",
            {
                "agent_id": "a1",
                "event": {
                    "type": "StatusUpdate",
                    "payload": {"token_usage": cli_usage(300, 5, read=100), "message_id": "chatcmpl-sub"},
                },
            },
        ),
        cli_line(9, "StatusUpdate", {"token_usage": cli_usage(60, 12, read=2600), "message_id": "chatcmpl-2"}),
        cli_line(10, "TurnEnd", {}),
        cli_line(11, "TurnBegin", {"user_input": "Thanks."}),
        cli_line(12, "StepBegin", {"n": 1}),
        cli_line(13, "ContentPart", {"type": "text", "text": "Welcome."}),
        cli_line(13, "ToolCall", {"type": "function", "id": "t9", "function": {"name": "Shell", "arguments": "{}"}}),
        cli_line(
            13,
            "ToolResult",
            {
                "tool_call_id": "t9",
                "return_value": {"is_error": True, "output": "", "message": "Shell blocked by hook"},
            },
        ),
        cli_line(14, "StepInterrupted", {}),
        cli_line(15, "StepBegin", {"n": 2}),
        cli_line(16, "ContentPart", {"type": "text", "text": "The hook blocked it."}),
        cli_line(16, "StatusUpdate", {"token_usage": cli_usage(50, 6, read=2700), "message_id": "chatcmpl-3"}),
    ]


def test_kimi_cli_wire_steps_and_subagent_events(tmp_path):
    path = write(tmp_path / ".kimi/sessions/0f3a/sess-9/wire.jsonl", cli_rows())
    trace = read_trace(str(path))
    assert trace.format == "kimi-cli" and trace.session == "sess-9" and trace.unrecorded == ("system", "tools")
    assert len(trace.calls) == 5
    first = trace.calls[0]
    assert first.response["tool_calls"][0]["function"]["arguments"] == '{"pattern": "*"}'
    assert first.response["reasoning_content"] == "Use Glob." and first.reported.output == 43
    assert first.reported.prompt == 2562 and first.reported.cache_write == 1000
    by_thread = {call.thread for call in trace.calls}
    assert by_thread == {"", "a1"}
    interrupted, after = trace.calls[-2:]
    assert interrupted.reported is None  # not recorded, never 0
    assert interrupted.response["tool_calls"][0]["id"] == "t9"
    assert after.messages[-1] == {"role": "tool", "tool_call_id": "t9", "content": "Shell blocked by hook"}
    assert {"no-usage", "no-model"} <= {note.code for note in trace.notes}
    summary = tokprof.profile(trace).summary()
    assert summary.reported.billed_input == 2562 + 400 + 2660 + 2750  # the interrupted step reports none


def test_kimi_cli_sessions_and_its_variable(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("KIMI_SHARE_DIR", raising=False)
    write(home / ".kimi/sessions/0f3a/sess-9/wire.jsonl", cli_rows())
    write(home / ".local/share/kimi/sessions/77aa/sess-0/wire.jsonl", cli_rows()[:5])  # an early version's
    assert sorted(row.calls for row in local_sessions("kimi-cli")) == [1, 5]
    other = tmp_path / "share"
    write(other / "sessions/1b2c/sess-1/wire.jsonl", cli_rows())
    monkeypatch.setenv("KIMI_SHARE_DIR", str(other))  # Kimi CLI's own variable moves ~/.kimi
    assert sorted((row.project, row.calls) for row in local_sessions("kimi-cli")) == [("1b2c", 5), ("77aa", 1)]


@pytest.mark.parametrize(
    "kind, damage, where",
    [
        ("code", lambda rows: rows[-2]["event"]["usage"].update(inputOther=-1), "event.usage.inputOther"),
        ("code", lambda rows: rows.insert(6, "garbage"), "line 7"),
        ("cli", lambda rows: rows[7]["message"]["payload"]["token_usage"].update(output="x"), "token_usage.output"),
        ("cli", lambda rows: rows[5]["message"]["payload"].update(function=None), "line 6: message.payload.function"),
    ],
)
def test_hostile_input_is_one_line(tmp_path, capsys, kind, damage, where):
    rows = code_agent("Hi.", [(code_usage(10, 1), None)]) if kind == "code" else cli_rows()
    damage(rows)
    path = tmp_path / "wire.jsonl"
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    out_file = tmp_path / "out.json"
    assert main(["profile", str(path), "-f", "json", "-o", str(out_file)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and str(path) in err and where in err and "Traceback" not in err
    assert not out_file.exists()


def test_corpus_kimi_code_subagent():
    if not CORPUS.exists():
        pytest.skip("the shared corpus is absent")
    rows = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]
    trace = read_trace(str(CORPUS))
    assert trace.format == "kimi-code" and len(trace.calls) == 3
    assert sum(1 for row in rows if row["type"] == "usage.record") == 3  # repeated, not counted again
    profile = tokprof.profile(trace)
    assert profile.summary().reported.billed_input == code_sum(rows) == 10982 + 1792 + 1652 + 12544 + 271 + 14080
    for row in profile.calls:
        assert all(count >= 0 for count in row.buckets.values()) and sum(row.buckets.values()) == row.total
