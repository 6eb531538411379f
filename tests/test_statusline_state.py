"""The status line's saved state: the Claude Code reader without prompts (``SessionReader(follow=True, prompts=False)``)
gives the same calls as with them, and keeps none of the conversation (#32 item 2)."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from tokprof.formats.claude_code import SessionReader
from tokprof.formats.reader import Record

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"


def lines(calls: int) -> list[dict]:
    """Hand-made Claude Code lines: a user turn, an assistant tool call with usage, its result; then a
    subagent (sidechain) call and a repeated line."""
    out: list[dict] = []
    for i in range(calls):
        base = {"sessionId": "s-1", "isSidechain": False, "timestamp": f"2025-10-01T10:{i:02d}:00Z"}
        out.append(
            {
                **base,
                "type": "user",
                "uuid": f"u{i}",
                "parentUuid": f"r{i - 1}" if i else None,
                "message": {"role": "user", "content": f"step {i}"},
            }
        )
        out.append(
            {
                **base,
                "type": "assistant",
                "uuid": f"a{i}",
                "parentUuid": f"u{i}",
                "requestId": f"req{i}",
                "message": {
                    "id": f"msg{i}",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5",
                    "content": [{"type": "tool_use", "id": f"t{i}", "name": "Read", "input": {"n": i}}],
                    "usage": {"input_tokens": 10, "cache_read_input_tokens": 1000 * i, "output_tokens": 5},
                },
            }
        )
        out.append(
            {
                **base,
                "type": "user",
                "uuid": f"r{i}",
                "parentUuid": f"a{i}",
                "message": {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": f"SECRET-{i} " * 50}],
                },
            }
        )
    side = {"sessionId": "s-1", "isSidechain": True, "timestamp": "2025-10-01T11:00:00Z"}
    out.append({**side, "type": "user", "uuid": "s0", "parentUuid": None, "message": {"role": "user", "content": "go"}})
    out.append(
        {
            **side,
            "type": "assistant",
            "uuid": "s1",
            "parentUuid": "s0",
            "requestId": "reqs",
            "message": {
                "id": "msgs",
                "role": "assistant",
                "model": "claude-haiku-4-5",
                "content": [{"type": "text", "text": "done"}],
                "usage": {"input_tokens": 30, "output_tokens": 2},
            },
        }
    )
    out.append(out[1])  # a duplicate line
    return out


def fed(records: list[dict], prompts: bool) -> tuple[SessionReader, list]:
    reader = SessionReader("session.jsonl", follow=True, prompts=prompts)
    calls = [c for n, r in enumerate(records, 1) for c in reader.feed(Record(r, n))]
    return reader, calls


def without_messages(call) -> tuple:
    return (
        call.model,
        call.reported,
        call.day,
        call.where,
        call.response,
        call.kind,
        call.thread,
        call.request_id,
        call.time,
        call.cwd,
        call.git_branch,
    )


def test_the_same_calls_without_prompts() -> None:
    records = lines(12)
    full, with_prompts = fed(records, True)
    slim, without = fed(records, False)
    assert [without_messages(c) for c in without] == [without_messages(c) for c in with_prompts]
    assert all(c.messages == [] for c in without) and with_prompts[-2].messages
    assert slim.trace.session == full.trace.session == "s-1"
    assert [n.code for n in slim.trace.notes] == [n.code for n in full.trace.notes]


def test_the_state_keeps_no_content() -> None:
    slim, _ = fed(lines(40), False)
    blob = pickle.dumps(slim, protocol=pickle.HIGHEST_PROTOCOL)
    assert b"SECRET-" not in blob
    assert not slim.transcript.states and len(slim.reader.lists) <= 1  # the empty prompt's


@pytest.mark.skipif(not (CORPUS / "claude_code_medium_full-session-four.jsonl").is_file(), reason="no corpus")
def test_corpus_session_the_same_calls_without_prompts() -> None:
    path = CORPUS / "claude_code_medium_full-session-four.jsonl"
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    _, with_prompts = fed(records, True)
    _, without = fed(records, False)
    assert len(without) == len(with_prompts) > 10
    assert [without_messages(c) for c in without] == [without_messages(c) for c in with_prompts]


def test_a_followed_session_forgets_old_prompt_states_and_still_rewinds() -> None:
    """A session followed for long keeps only its newest prompt states (LiveSession calls
    SessionReader.forget): every call, a rewind to an early line included, has the prompt a reader
    that forgets nothing gives."""
    records = lines(60)
    base = {"sessionId": "s-1", "isSidechain": False, "timestamp": "2025-10-01T12:00:00Z"}
    records += [  # a rewind: a new user turn after call 5's result, and its call
        {**base, "type": "user", "uuid": "w0", "parentUuid": "r5", "message": {"role": "user", "content": "back"}},
        {
            **base,
            "type": "assistant",
            "uuid": "w1",
            "parentUuid": "w0",
            "requestId": "reqw",
            "message": {
                "id": "msgw",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": "ok"}],
                "usage": {"input_tokens": 10, "output_tokens": 1},
            },
        },
    ]
    _, everything = fed(records, True)
    forgetful = SessionReader("session.jsonl", follow=True)
    calls = []
    for n, record in enumerate(records, 1):
        calls += forgetful.feed(Record(record, n))
        forgetful.forget(4)
        assert len(forgetful.transcript.states) <= 4
    assert [c.messages for c in calls] == [c.messages for c in everything]
    assert len(calls[-1].messages) == 19  # the rewound call: turns 0 to 5, three messages each, then "back"
