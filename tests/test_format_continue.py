"""Continue sessions (#48.1): a session file written here by hand in the shape of continuedev/continue's
``core/index.d.ts`` (``Session``, ``ChatHistoryItem``, ``ChatMessage``, ``PromptLog``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tokprof
from tokprof.formats import read_trace
from tokprof.formats.discovery import local_session_files
from tokprof.frontends.cli import main

SESSION = "5d2c0a1e-9f8b-4c7d-a6e5-1b2c3d4e5f60"


def session() -> dict:
    def item(message: dict, **more) -> dict:
        return {"message": message, "contextItems": [], **more}

    log = {
        "modelTitle": "Claude",
        "completionOptions": {"model": "claude-sonnet-4-5", "maxTokens": 4096},
        "prompt": "",
        "completion": "",
    }
    return {
        "sessionId": SESSION,
        "title": "Read a file",
        "workspaceDirectory": "file:///src/app",
        "history": [
            {
                "message": {"role": "user", "content": [{"type": "text", "text": "What does a.py do?"}]},
                "contextItems": [
                    {
                        "name": "a.py",
                        "description": "src/a.py",
                        "content": "```a.py\nprint(1)\n```",
                        "id": {"providerTitle": "file", "itemId": "a"},
                    }
                ],
            },
            item({"role": "thinking", "content": "Look at it."}),
            item(
                {
                    "role": "assistant",
                    "content": "",
                    "toolCalls": [
                        {
                            "id": "tc1",
                            "type": "function",
                            "function": {"name": "read_file", "arguments": '{"filepath": "a.py"}'},
                        }
                    ],
                },
                promptLogs=[log],
            ),
            item({"role": "tool", "content": "print(1)", "toolCallId": "tc1"}),
            item({"role": "assistant", "content": "It prints 1."}, promptLogs=[log]),
        ],
    }


def write(path: Path, value: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2))
    return path


def test_session_calls_without_usage(tmp_path):
    trace = read_trace(str(write(tmp_path / f"{SESSION}.json", session())))
    assert trace.format == "continue" and trace.session == SESSION and trace.model == "claude-sonnet-4-5"
    first, second = trace.calls
    assert first.messages[0]["content"].startswith("```a.py") and first.messages[0]["content"].endswith(
        "What does a.py do?"
    )
    assert first.response["reasoning_content"] == "Look at it." and first.cwd == "/src/app"
    assert [m["role"] for m in second.messages] == ["user", "assistant", "tool"]
    assert first.reported is None and second.reported is None  # Continue records no usage: not recorded, never 0
    assert {"no-usage", "context-items"} <= {n.code for n in trace.notes}
    profile = tokprof.profile(trace, model="qwen2.5")
    assert profile.summary().reported is None
    for row in profile.calls:
        assert row.total == sum(row.buckets.values()) and min(row.buckets.values()) >= 0


def test_found_in_its_folder_without_the_index(tmp_path):
    home = tmp_path / "home"
    path = write(home / ".continue/sessions" / f"{SESSION}.json", session())
    (home / ".continue/sessions/sessions.json").write_text(
        json.dumps([{"sessionId": SESSION, "title": "t", "dateCreated": "1", "workspaceDirectory": ""}])
    )
    assert [(f.format, f.path) for f in local_session_files("continue", home=home, environ={})] == [("continue", path)]
    moved = write(tmp_path / "cg/sessions/s.json", session())
    found = local_session_files("continue", home=home, environ={"CONTINUE_GLOBAL_DIR": str(tmp_path / "cg")})
    assert [f.path for f in found] == [moved]


@pytest.mark.parametrize(
    "change, named",
    [
        (lambda s: s["history"][3]["message"].pop("toolCallId"), "history[3].message.toolCallId"),
        (
            lambda s: s["history"][2]["message"]["toolCalls"][0]["function"].update(name=5),
            "history[2].message.toolCalls[0].function.name",
        ),
        (lambda s: s["history"][0]["message"].update(role="robot"), "history[0].message.role"),
    ],
)
def test_hostile_session_is_one_line(tmp_path, capsys, change, named):
    value = session()
    change(value)
    path = write(tmp_path / "s.json", value)
    out = tmp_path / "out.json"
    assert main(["profile", str(path), "-f", "json", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err and named in err and not out.exists()
