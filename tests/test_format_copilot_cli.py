"""GitHub Copilot CLI session state (#48.1): ``~/.copilot/session-state/<id>/events.jsonl``.

The fixture is written here by hand in the event shapes of Copilot CLI 1.0.x (``{type, data, id,
timestamp, parentId}``; ``assistant.message.data.outputTokens``; ``session.shutdown.data.modelMetrics``);
no text comes from a real session.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT

import tokprof
from tokprof.runs.sessions import local_sessions
from tokprof.formats import read_trace
from tokprof.formats.copilot_cli import session_totals
from tokprof.frontends.cli import main

CORPUS = ROOT.parent / "shared" / "corpus" / "copilot_cli_synthetic" / "events_small.jsonl"


def event(n: int, kind: str, data: dict) -> dict:
    return {
        "type": kind,
        "data": data,
        "id": f"e{n}",
        "timestamp": f"2026-02-04T10:51:{n:02d}.000Z",
        "parentId": f"e{n - 1}" if n > 1 else None,
    }


def say(n: int, text: str, calls: list[tuple[str, str]], output: int, parent: str | None = None) -> dict:
    data = {
        "messageId": f"m{n}",
        "content": text,
        "model": "claude-sonnet-4.5",
        "outputTokens": output,
        "toolRequests": [
            {"toolCallId": cid, "name": name, "arguments": {"command": "ls"}, "type": "function"} for cid, name in calls
        ],
    }
    if parent:
        data["parentToolCallId"] = parent
    return event(n, "assistant.message", data)


def done(n: int, call_id: str, text: str, parent: str | None = None) -> dict:
    data = {"toolCallId": call_id, "success": True, "result": {"content": text, "detailedContent": text}}
    if parent:
        data["parentToolCallId"] = parent
    return event(n, "tool.execution_complete", data)


def shutdown(n: int, usage: dict, requests: int) -> dict:
    return event(
        n,
        "session.shutdown",
        {
            "shutdownType": "routine",
            "currentModel": "claude-sonnet-4.5",
            "modelMetrics": {"claude-sonnet-4.5": {"requests": {"count": requests, "cost": 1}, "usage": usage}},
        },
    )


def events() -> list:
    return [
        event(
            1,
            "session.start",
            {
                "sessionId": "51854430-83f7",
                "version": 1,
                "producer": "copilot-agent",
                "copilotVersion": "1.0.54",
                "selectedModel": "claude-sonnet-4.5",
                "context": {"cwd": "/work/app", "branch": "main", "headCommit": "abc123"},
            },
        ),
        event(2, "system.message", {"content": "You are the GitHub Copilot CLI.", "role": "system"}),
        event(3, "user.message", {"content": "List the files", "transformedContent": "List the files please"}),
        say(4, "Listing.", [("call-1", "shell"), ("task-1", "task")], 12),
        done(5, "call-1", "a.txt\nb.txt\n"),
        say(6, "Looking.", [("sub-1", "view")], 7, parent="task-1"),
        done(7, "sub-1", "contents", parent="task-1"),
        say(8, "Sub-agent done.", [], 4, parent="task-1"),
        done(9, "task-1", "The sub-agent found it."),
        say(10, "Done.", [], 3),
        shutdown(11, {"inputTokens": 21583, "outputTokens": 26, "cacheReadTokens": 21187, "cacheWriteTokens": 0}, 4),
        event(12, "session.resume", {"eventCount": 11, "context": {"cwd": "/work/app"}}),
        event(13, "user.message", {"content": "Summarise."}),
        event(
            14,
            "session.compaction_complete",
            {
                "success": True,
                "preCompactionTokens": 900,
                "summaryContent": "Listed two files.",
                "compactionTokensUsed": {
                    "model": "claude-sonnet-4.5",
                    "inputTokens": 900,
                    "outputTokens": 40,
                    "cachedInput": 800,
                },
            },
        ),
        say(15, "Two files.", [], 5),
        shutdown(16, {"inputTokens": 1000, "outputTokens": 45, "cacheReadTokens": 800, "cacheWriteTokens": 10}, 2),
    ]


def write(path: Path, rows: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_calls_output_only_and_shutdown_totals(tmp_path):
    rows = events()
    trace = read_trace(str(write(tmp_path / "events.jsonl", rows)))
    assert trace.format == "copilot-cli" and trace.session == "51854430-83f7" and trace.unrecorded == ("tools",)
    assert [call.thread for call in trace.calls] == ["", "task-1", "task-1", "", "", ""]
    main_call = trace.calls[0]
    assert [m["content"] for m in main_call.messages] == ["You are the GitHub Copilot CLI.", "List the files please"]
    assert (main_call.cwd, main_call.git_branch, main_call.git_commit) == ("/work/app", "main", "abc123")
    sub = trace.calls[1]
    assert sub.messages[-1] == {"role": "user", "content": '{"command": "ls"}'}  # the task the parent gave
    # only output is recorded per call: the prompt is not recorded, never 0
    outputs = [r["data"]["outputTokens"] for r in rows if r["type"] == "assistant.message"]
    plain = [c for c in trace.calls if c.kind == "call"]
    assert all(c.reported.prompt is None and c.reported.cache_read is None for c in plain)
    assert [c.reported.output for c in plain] == outputs
    compaction = next(c for c in trace.calls if c.kind == "compaction")
    assert compaction.reported.prompt == 900 and compaction.reported.cache_read == 800
    assert trace.compactions == 1 and trace.calls[-1].messages[-1]["content"] == "Listed two files."
    # the agent's own totals, summed over both shutdowns, exactly as the file states them
    sums: dict[str, int] = {}
    for row in rows:
        if row["type"] == "session.shutdown":
            for key, value in row["data"]["modelMetrics"]["claude-sonnet-4.5"]["usage"].items():
                sums[key] = sums.get(key, 0) + value
    assert session_totals(trace) == (
        f"claude-sonnet-4.5: inputTokens {sums['inputTokens']:,}, outputTokens {sums['outputTokens']:,}, "
        f"cacheReadTokens {sums['cacheReadTokens']:,}, cacheWriteTokens {sums['cacheWriteTokens']:,}, requests 6"
    )
    summary = tokprof.profile(trace).summary()
    assert summary.reported.billed_input == 900  # only the compaction's call reports its input
    assert summary.reported.calls == 1


def test_output_is_never_shown_as_a_prompt_of_zero(tmp_path, capsys):
    path = write(tmp_path / "events.jsonl", events())
    assert main(["profile", str(path), "-f", "json"]) == 0
    profile = json.loads(capsys.readouterr().out)
    first = profile["calls"][0]["reported"]
    assert first["prompt"] is None and first["output"] == 12
    assert any(note["code"] == "session-totals" for note in profile["warnings"])


def test_sessions_lists_both_layouts_and_copilot_home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("COPILOT_HOME", raising=False)
    write(home / ".copilot/session-state/51854430-83f7/events.jsonl", events())
    write(home / ".copilot/session-state/0f0f0f0f-old.jsonl", events()[:10])  # before 1.0.11
    rows = local_sessions("copilot-cli")
    assert sorted(row.calls for row in rows) == [4, 6]
    moved = tmp_path / "elsewhere"
    write(moved / "session-state/s2/events.jsonl", events()[:5])
    monkeypatch.setenv("COPILOT_HOME", str(moved))
    assert [row.calls for row in local_sessions("copilot-cli")] == [1]


@pytest.mark.parametrize(
    "damage, where",
    [
        (lambda rows: rows[3]["data"].update(outputTokens=-4), "line 4: data.outputTokens"),
        (
            lambda rows: rows[10]["data"]["modelMetrics"]["claude-sonnet-4.5"]["usage"].update(inputTokens="lots"),
            "line 11: data.modelMetrics.claude-sonnet-4.5.usage.inputTokens",
        ),
        (lambda rows: rows.insert(4, '{"type": "tool.execution_complete", "data": {"toolC'), "line 5"),
        (
            lambda rows: rows[13]["data"]["compactionTokensUsed"].update(cachedInput=5000),
            "line 14: data.compactionTokensUsed.cachedInput",
        ),
    ],
)
def test_hostile_input_is_one_line(tmp_path, capsys, damage, where):
    rows = events()
    damage(rows)
    path = write(tmp_path / "events.jsonl", rows)
    out_file = tmp_path / "out.json"
    assert main(["profile", str(path), "-f", "json", "-o", str(out_file)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and str(path) in err and where in err and "Traceback" not in err
    assert not out_file.exists()


def test_corpus_synthetic_session():
    if not CORPUS.exists():
        pytest.skip("the shared corpus is absent")
    rows = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]
    trace = read_trace(str(CORPUS))
    assert trace.format == "copilot-cli" and trace.session == "copilot_stage0_small"
    outputs = [r["data"].get("outputTokens") for r in rows if r["type"] == "assistant.message"]
    assert sum(c.reported.output for c in trace.calls if c.reported) <= sum(o or 0 for o in outputs)
    assert "gpt-5-mini: requests 2" in (session_totals(trace) or "")
    assert "input 100" in (session_totals(trace) or "")  # tokenDetails, as the file states it
    profile = tokprof.profile(trace)
    assert profile.summary().reported is None  # no call reports its input: not recorded, never 0
    for row in profile.calls:
        assert all(count >= 0 for count in row.buckets.values()) and sum(row.buckets.values()) == row.total


def test_a_session_that_starts_with_other_events_is_recognised(tmp_path):
    rows = [event(0, "abort", {"reason": "user"}), event(1, "pending_messages.modified", {}), *events()[2:6]]
    trace = read_trace(str(write(tmp_path / "events.jsonl", rows)))
    assert trace.format == "copilot-cli" and len(trace.calls) == 2


def test_sessions_lists_the_opentelemetry_file_export(tmp_path, monkeypatch):
    """Copilot CLI's OpenTelemetry file export (~/.copilot/otel/*.jsonl, or the file
    COPILOT_OTEL_FILE_EXPORTER_PATH names) is listed under copilot-cli, read by the otel format."""
    import test_format_otel as otel_log

    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    for name in ("COPILOT_HOME", "COPILOT_OTEL_FILE_EXPORTER_PATH"):
        monkeypatch.delenv(name, raising=False)
    export = home / ".copilot" / "otel" / "copilot.jsonl"
    export.parent.mkdir(parents=True)
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "claude-sonnet-4", **otel_log.usage(900, 40)}
    span = {"type": "span", "name": "chat claude-sonnet-4", "spanId": "1", "startTime": [1767268800, 0]}
    export.write_text(json.dumps({**span, "attributes": attrs}) + "\n")
    (export.parent / "notes.jsonl").write_text('{"not": "spans"}\n')
    rows = local_sessions("copilot-cli")
    assert [(Path(row.path).name, row.format, row.calls) for row in rows] == [("copilot.jsonl", "otel", 1)]
    elsewhere = tmp_path / "export.jsonl"
    elsewhere.write_text(export.read_text())
    monkeypatch.setenv("COPILOT_OTEL_FILE_EXPORTER_PATH", str(elsewhere))
    assert str(elsewhere) in [row.path for row in local_sessions("copilot-cli")]
