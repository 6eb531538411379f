"""Qwen Code chats (#27): ``~/.qwen/projects/<project>/chats/<session>.jsonl``.

The fixtures are written here by hand in the shape of QwenLM/qwen-code's ``ChatRecord``
(``packages/core/src/services/chatRecordingService.ts``: ``uuid``/``parentUuid``, ``type``,
``message`` a Gemini ``Content``, ``usageMetadata``, ``systemPayload`` of ``chat_compression`` and
``ui_telemetry`` records) and of the corpus's synthetic fixtures; no text comes from a real chat.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT

import tokprof
from tokprof.frontends.cli import main
from tokprof.formats import read_trace

CORPUS = ROOT.parent / "shared" / "corpus" / "qwen_code_synthetic"
T = "2026-08-17T13:00:00.000Z"


def record(uuid: str, parent: str | None, kind: str, **extra) -> dict:
    return {
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "qs-1",
        "timestamp": T,
        "type": kind,
        "cwd": "/work/app",
        "version": "0.21.13",
        **extra,
    }


def user(uuid: str, parent: str | None, text: str) -> dict:
    return record(uuid, parent, "user", message={"role": "user", "parts": [{"text": text}]})


def model(uuid: str, parent: str, parts: list, usage: dict | None = None, name: str = "qwen3-coder-plus") -> dict:
    extra = {"model": name, "message": {"role": "model", "parts": parts}}
    if usage is not None:
        extra["usageMetadata"] = usage
    return record(uuid, parent, "assistant", **extra)


def usage(prompt: int, out: int, cached: int = 0, thoughts: int = 0) -> dict:
    return {
        "promptTokenCount": prompt,
        "candidatesTokenCount": out,
        "cachedContentTokenCount": cached,
        "thoughtsTokenCount": thoughts,
        "totalTokenCount": prompt + out + thoughts,
    }


def lines() -> list:
    call = {"functionCall": {"id": "call-1", "name": "read_file", "args": {"path": "README.md"}}}
    return [
        user("u1", None, "What is in README.md?"),
        model("a1", "u1", [{"text": "Reading it first.", "thought": True}]),
        model("a1", "u1", [call], usage(1200, 20, cached=0, thoughts=30)),  # the same response, completed
        record(
            "t1",
            "a1",
            "tool_result",
            message={
                "role": "user",
                "parts": [
                    {"functionResponse": {"id": "call-1", "name": "read_file", "response": {"output": "# App\nNotes."}}}
                ],
            },
        ),
        record(
            "s1",
            "t1",
            "system",
            subtype="ui_telemetry",
            systemPayload={
                "uiEvent": {"event.name": "qwen-code.api_response", "input_token_count": 1200, "output_token_count": 20}
            },
        ),
        model("a2", "s1", [{"text": "It holds notes."}], usage(1300, 8, cached=1100)),
        record(
            "c1",
            "a2",
            "system",
            subtype="chat_compression",
            systemPayload={
                "info": {"originalTokenCount": 1308, "newTokenCount": 40},
                "compressedHistory": [
                    {"role": "user", "parts": [{"text": "Summary: README holds notes."}]},
                    {"role": "model", "parts": [{"text": "Got it."}]},
                ],
            },
        ),
        user("u2", "c1", "Thanks."),
        model("a3", "u2", [{"text": "You're welcome."}], usage(90, 4)),
    ]


def write(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def own_sum(rows: list) -> int:
    """The billed input as the file states it: the promptTokenCount of each response, once (its last record)."""
    last = {
        row["uuid"]: row["usageMetadata"] for row in rows if row.get("type") == "assistant" and row.get("usageMetadata")
    }
    return sum(u.get("promptTokenCount", 0) + u.get("toolUsePromptTokenCount", 0) for u in last.values())


def test_records_tree_compression_and_merged_responses(tmp_path):
    trace = read_trace(str(write(tmp_path / "qs-1.jsonl", lines())))
    assert trace.format == "qwen-code" and trace.session == "qs-1" and trace.unrecorded == ("system", "tools")
    assert len(trace.calls) == 3 and trace.compactions == 1  # ui_telemetry is not a call
    first, second, third = trace.calls
    assert first.response["reasoning_content"] == "Reading it first."
    assert first.response["tool_calls"][0]["id"] == "call-1"
    assert (first.reported.prompt, first.reported.output) == (1200, 50)
    assert [m["role"] for m in second.messages] == ["user", "assistant", "tool"]
    assert second.messages[2]["content"] == "# App\nNotes."
    assert second.reported.cache_read == 1100
    assert [m["content"] for m in third.messages] == ["Summary: README holds notes.", "Got it.", "Thanks."]


def test_a_qwen_model_is_counted_exactly_and_billed_input_is_the_files_sum(tmp_path):
    rows = lines()
    trace = read_trace(str(write(tmp_path / "qs-1.jsonl", rows)))
    profile = tokprof.profile(trace)
    assert profile.model.name == "qwen3" and profile.model.exact  # qwen3-coder-plus: Qwen3's own template
    summary = profile.summary()
    assert summary.reported.billed_input == own_sum(rows) == 1200 + 1300 + 90
    for row in profile.calls:
        assert all(count >= 0 for count in row.buckets.values()) and sum(row.buckets.values()) == row.total


def test_an_alias_model_is_a_labelled_stand_in(tmp_path):
    rows = [user("u1", None, "hi"), model("a1", "u1", [{"text": "hello"}], usage(500, 2), name="coder-model")]
    profile = tokprof.profile(read_trace(str(write(tmp_path / "q.jsonl", rows))))
    assert not profile.model.exact


def test_calls_carry_the_records_cwd_and_branch(tmp_path):
    """Each record says where Qwen Code worked (``cwd``, ``gitBranch`` when in a repository)."""
    rows = lines()
    rows[-1]["gitBranch"] = "feat/x"
    calls = read_trace(str(write(tmp_path / "q.jsonl", rows))).calls
    assert {call.cwd for call in calls} == {"/work/app"}
    assert [call.git_branch for call in calls][-1] == "feat/x" and calls[0].git_branch is None


def test_not_read_as_claude_code(tmp_path):
    """Qwen Code lines have Claude Code's uuid/sessionId/type: detection must try Qwen Code first."""
    assert read_trace(str(write(tmp_path / "q.jsonl", lines()))).format == "qwen-code"


@pytest.mark.parametrize("field, value", [("promptTokenCount", 1.5), ("cachedContentTokenCount", 10**6)])
def test_malformed_usage_names_the_file_and_field(tmp_path, capsys, field, value):
    rows = lines()
    rows[2]["usageMetadata"][field] = value  # 10**6 cached: more than the prompt that includes them
    path = write(tmp_path / "bad.jsonl", rows)
    assert main(["profile", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and f"{path}: line 3: usageMetadata.{field}" in err


@pytest.mark.parametrize("name", ["019f0000-0000-7000-8000-000000000004.jsonl", "system_telemetry.jsonl"])
def test_corpus_synthetic_shapes(name):
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"{name}: the shared corpus is absent")
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    trace = read_trace(str(path))
    assert trace.format == "qwen-code"
    assert sum(call.reported.prompt for call in trace.calls if call.reported) == own_sum(rows)
