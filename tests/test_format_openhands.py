"""OpenHands trajectories and event streams (#48.1).

The fixtures are written here by hand in the shapes of All-Hands-AI/OpenHands' event serialisation
(``tests/runtime/trajs/*.json``: ``{id, timestamp, source, action|observation, args|content,
tool_call_metadata{function_name, tool_call_id, model_response}}``); no text comes from a real run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT

import tokprof
from tokprof.formats import read_trace
from tokprof.frontends.cli import main

CORPUS = ROOT.parent / "shared" / "corpus" / "openhands" / "openhands_basic.json"
T = "2026-01-27T22:45:13.764487"


def response(rid: str, calls: list[tuple[str, str]], usage: dict | None, text: str = "") -> dict:
    message = {
        "content": text,
        "role": "assistant",
        "tool_calls": [
            {"index": i, "id": cid, "type": "function", "function": {"name": name, "arguments": '{"path": "a.py"}'}}
            for i, (cid, name) in enumerate(calls)
        ],
    }
    out = {
        "id": rid,
        "model": "claude-3-5-sonnet-20241022",
        "object": "chat.completion",
        "choices": [{"finish_reason": "tool_calls", "index": 0, "message": message}],
    }
    if usage is not None:
        out["usage"] = usage
    return out


def litellm_usage(prompt: int, output: int, read: int = 0, write: int = 0) -> dict:
    return {
        "completion_tokens": output,
        "prompt_tokens": prompt,
        "total_tokens": prompt + output,
        "prompt_tokens_details": {"audio_tokens": None, "cached_tokens": read},
        "cache_creation_input_tokens": write,
        "cache_read_input_tokens": read,
    }


def action(eid: int, kind: str, meta: dict | None, args: dict) -> dict:
    event = {"id": eid, "timestamp": T, "source": "agent", "message": "", "action": kind, "args": args}
    if meta is not None:
        event["tool_call_metadata"] = meta
    return event


def observation(eid: int, cause: int, meta: dict, content: str) -> dict:
    return {
        "id": eid,
        "timestamp": T,
        "source": "agent",
        "message": "",
        "cause": cause,
        "observation": "read",
        "tool_call_metadata": meta,
        "content": content,
        "extras": {"path": "a.py"},
    }


def meta(call_id: str, name: str, model_response: dict) -> dict:
    return {
        "function_name": name,
        "tool_call_id": call_id,
        "model_response": model_response,
        "total_calls_in_response": 2,
    }


def events(system: bool = True) -> list:
    both = response(
        "chatcmpl-1",
        [("toolu_1", "str_replace_editor"), ("toolu_2", "str_replace_editor")],
        litellm_usage(3486, 135, write=3482),
        "Reading both files.",
    )
    last = response("chatcmpl-2", [("toolu_3", "finish")], litellm_usage(4646, 77, read=3482, write=1158))
    out = []
    if system:
        tools = [
            {
                "type": "function",
                "function": {
                    "name": "str_replace_editor",
                    "description": "Edit files.",
                    "parameters": {"type": "object", "properties": {}},
                },
            }
        ]
        out.append(
            {
                "id": 0,
                "timestamp": T,
                "source": "agent",
                "message": "You are OpenHands agent.",
                "action": "system",
                "args": {"content": "You are OpenHands agent.", "tools": tools},
            }
        )
    out += [
        {
            "id": 1,
            "timestamp": T,
            "source": "user",
            "message": "Read a.py and b.py.",
            "action": "message",
            "args": {"content": "Read a.py and b.py.", "image_urls": None, "wait_for_response": False},
        },
        {
            "id": 2,
            "timestamp": T,
            "source": "environment",
            "message": "",
            "observation": "agent_state_changed",
            "content": "",
            "extras": {"agent_state": "running"},
        },
        action(3, "read", meta("toolu_1", "str_replace_editor", both), {"path": "a.py"}),
        action(4, "read", meta("toolu_2", "str_replace_editor", both), {"path": "b.py"}),
        observation(5, 3, meta("toolu_1", "str_replace_editor", both), "print('a')"),
        observation(6, 4, meta("toolu_2", "str_replace_editor", both), "print('b')"),
        action(7, "finish", meta("toolu_3", "finish", last), {"outputs": {}, "thought": "Done."}),
        {
            "id": 8,
            "timestamp": T,
            "source": "agent",
            "message": "Anything else?",
            "action": "message",
            "args": {"content": "Anything else?", "wait_for_response": True},
        },
    ]
    return out


def own_sum(events: list) -> int:
    """The billed input as the file states it: prompt_tokens of each distinct model_response id."""
    seen, total = set(), 0
    for event in events:
        response = (event.get("tool_call_metadata") or {}).get("model_response")
        if response and response["id"] not in seen and response.get("usage"):
            seen.add(response["id"])
            total += response["usage"]["prompt_tokens"]
    return total


def test_a_trajectory_counts_each_response_once(tmp_path):
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(events()))
    trace = read_trace(str(path))
    assert trace.format == "openhands" and trace.unrecorded == ()
    assert [call.request_id for call in trace.calls] == ["chatcmpl-1", "chatcmpl-2", None]
    first, second, last = trace.calls
    assert [m["role"] for m in first.messages] == ["system", "user"]
    assert first.tools and first.tools[0]["function"]["name"] == "str_replace_editor"
    assert len(first.response["tool_calls"]) == 2  # both parallel calls, from the one response
    assert [m["role"] for m in second.messages] == ["system", "user", "assistant", "tool", "tool"]
    assert first.reported.prompt == 3486 and first.reported.cache_write == 3482 and first.reported.cache_read == 0
    assert second.reported.cache_read == 3482 and second.reported.output == 77
    assert last.reported is None  # an agent message records no response: not recorded, never 0
    assert {note.code for note in trace.notes} >= {"no-usage", "not-sent"}
    summary = tokprof.profile(trace).summary()
    assert summary.reported.billed_input == own_sum(events()) == 3486 + 4646


def test_an_event_stream_is_read_from_any_of_its_files(tmp_path):
    folder = tmp_path / "sessions" / "abc123" / "events"
    folder.mkdir(parents=True)
    for event in events(system=False):
        (folder / f"{event['id']}.json").write_text(json.dumps(event))
    trace = read_trace(str(folder / "1.json"))
    assert trace.format == "openhands" and trace.session == "abc123" and trace.unrecorded == ("system", "tools")
    assert len(trace.calls) == 3 and [c.where for c in trace.calls] == ["event 3", "event 7", "event 8"]
    assert sum(c.reported.prompt for c in trace.calls if c.reported) == own_sum(events(system=False))


def test_sessions_lists_the_file_store(tmp_path, monkeypatch):
    from tokprof.runs.sessions import local_sessions

    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("FILE_STORE_PATH", raising=False)
    folder = home / ".openhands" / "sessions" / "abc123" / "events"
    folder.mkdir(parents=True)
    for event in events():
        (folder / f"{event['id']}.json").write_text(json.dumps(event))
    rows = [row for row in local_sessions() if row.agent == "openhands"]
    assert len(rows) == 1 and rows[0].calls == 3
    store = tmp_path / "store"
    (store / "sessions" / "s2" / "events").mkdir(parents=True)
    (store / "sessions" / "s2" / "events" / "0.json").write_text(json.dumps(events()[0]))
    (store / "sessions" / "s2" / "events" / "1.json").write_text(json.dumps(events()[1]))
    monkeypatch.setenv("FILE_STORE_PATH", str(store))
    rows = [row for row in local_sessions() if row.agent == "openhands"]
    assert [Path(row.path).parent.parent.name for row in rows] == ["s2"]


@pytest.mark.parametrize(
    "damage, where",
    [
        (
            lambda ev: ev[3]["tool_call_metadata"]["model_response"]["usage"].update(prompt_tokens="many"),
            "event 3: tool_call_metadata.model_response.usage.prompt_tokens",
        ),
        (
            lambda ev: ev[3]["tool_call_metadata"]["model_response"]["usage"].update(cache_read_input_tokens=99999),
            "event 3: tool_call_metadata.model_response.usage.cache_read_input_tokens",
        ),
        (
            lambda ev: ev[3]["tool_call_metadata"].update(model_response=[]),
            "event 3: tool_call_metadata.model_response",
        ),
    ],
)
def test_hostile_input_is_one_line(tmp_path, capsys, damage, where):
    rows = events()
    damage(rows)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(rows))
    out_file = tmp_path / "out.json"
    assert main(["profile", str(path), "-f", "json", "-o", str(out_file)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and f"{path}: {where}" in err and "Traceback" not in err
    assert not out_file.exists()


def test_a_truncated_trajectory_is_one_line(tmp_path, capsys):
    path = tmp_path / "cut.json"
    path.write_text(json.dumps(events())[:-200])
    assert main(["profile", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and str(path) in err


def test_corpus_trajectory():
    if not CORPUS.exists():
        pytest.skip("the shared corpus is absent")
    rows = json.loads(CORPUS.read_text())
    trace = read_trace(str(CORPUS))
    assert trace.format == "openhands" and len(trace.calls) == 2  # the observation repeats its action's response
    profile = tokprof.profile(trace)
    assert profile.summary().reported.billed_input == own_sum(rows) == 8132
    for row in profile.calls:
        assert all(count >= 0 for count in row.buckets.values()) and sum(row.buckets.values()) == row.total


# -- conversations of the OpenHands CLI 1.x (the software agent SDK) --------------------------------------
def sdk_usage(response_id: str, prompt: int, output: int, read: int = 0, write: int = 0) -> dict:
    return {
        "model": "litellm_proxy/claude-sonnet-4-20250514",
        "prompt_tokens": prompt,
        "completion_tokens": output,
        "cache_read_tokens": read,
        "cache_write_tokens": write,
        "reasoning_tokens": 0,
        "context_window": 200000,
        "per_turn_token": prompt + output,
        "response_id": response_id,
    }


def sdk_state(key: str = "usage_to_metrics") -> dict:
    agent = [sdk_usage("resp-1", 9000, 120, write=8900), sdk_usage("resp-2", 9400, 40, read=8900, write=400)]
    return {
        "id": "2d73fc17-6d31",
        "persistence_dir": "/home/u/.openhands/conversations/2d73fc17-6d31",
        "workspace": {"kind": "LocalWorkspace", "working_dir": "/work/app"},
        "execution_status": "finished",
        "stats": {
            key: {
                "agent": {
                    "model_name": "litellm_proxy/claude-sonnet-4-20250514",
                    "accumulated_cost": 0.05,
                    "token_usages": agent,
                },
                "condenser": {"model_name": "x", "accumulated_cost": 0.01, "token_usages": [sdk_usage("", 5000, 300)]},
            }
        },
    }


def sdk_events() -> list:
    text = lambda value: [{"type": "text", "text": value}]  # noqa: E731
    action = lambda n, cid, rid: {  # noqa: E731
        "kind": "ActionEvent",
        "id": f"a{n}",
        "source": "agent",
        "timestamp": T,
        "thought": text("Look.") if n == 2 else [],
        "tool_name": "terminal",
        "tool_call_id": cid,
        "llm_response_id": rid,
        "tool_call": {"id": cid, "name": "terminal", "arguments": '{"command": "ls"}', "origin": "completion"},
        "action": {"kind": "TerminalAction", "command": "ls"},
    }
    return [
        {
            "kind": "SystemPromptEvent",
            "id": "s",
            "source": "agent",
            "timestamp": T,
            "system_prompt": {"type": "text", "text": "You are OpenHands agent."},
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "terminal",
                        "description": "Run.",
                        "parameters": {"type": "object", "properties": {}},
                    },
                }
            ],
        },
        {
            "kind": "MessageEvent",
            "id": "u",
            "source": "user",
            "timestamp": T,
            "llm_message": {"role": "user", "content": text("List the files twice.")},
        },
        action(2, "t1", "resp-1"),
        action(3, "t2", "resp-1"),  # a parallel tool call of the same response
        {
            "kind": "ObservationEvent",
            "id": "o1",
            "source": "environment",
            "timestamp": T,
            "tool_name": "terminal",
            "tool_call_id": "t1",
            "observation": {"kind": "TerminalObservation", "content": text("a.txt")},
        },
        {
            "kind": "AgentErrorEvent",
            "id": "o2",
            "source": "agent",
            "timestamp": T,
            "tool_name": "terminal",
            "tool_call_id": "t2",
            "error": "timed out",
        },
        {"kind": "ConversationStateUpdateEvent", "id": "x", "source": "environment", "timestamp": T, "key": "k"},
        {
            "kind": "MessageEvent",
            "id": "m",
            "source": "agent",
            "timestamp": T,
            "llm_response_id": "resp-2",
            "llm_message": {"role": "assistant", "content": text("One file.")},
        },
    ]


def sdk_conversation(root: Path, key: str = "usage_to_metrics") -> Path:
    folder = root / "2d73fc17-6d31"
    (folder / "events").mkdir(parents=True)
    for n, event in enumerate(sdk_events()):
        (folder / "events" / f"event-{n:05d}-{event['id']}.json").write_text(json.dumps(event))
    state = folder / "base_state.json"
    state.write_text(json.dumps(sdk_state(key)))
    return state


@pytest.mark.parametrize("key", ["usage_to_metrics", "service_to_metrics"])
def test_a_cli_conversation_matches_usage_by_response_id(tmp_path, key):
    path = sdk_conversation(tmp_path, key)
    trace = read_trace(str(path))
    assert trace.format == "openhands" and trace.session == "2d73fc17-6d31" and trace.unrecorded == ()
    first, second = trace.calls
    assert first.request_id == "resp-1" and len(first.response["tool_calls"]) == 2  # one response, two calls
    assert first.reported.prompt == 9000 and first.reported.cache_write == 8900
    assert [m["role"] for m in second.messages] == ["system", "user", "assistant", "tool", "tool"]
    assert second.reported.cache_read == 8900 and first.tools[0]["function"]["name"] == "terminal"
    assert {c.cwd for c in trace.calls} == {"/work/app"}
    assert first.model == "claude-sonnet-4-20250514"  # behind OpenHands' LiteLLM proxy prefix
    notes = {note.code: note for note in trace.notes}
    assert "proxied-model" in notes
    assert notes["other-usage"].places == ["condenser: 1 calls, prompt_tokens 5,000, completion_tokens 300"]
    matched = sum(u["prompt_tokens"] for u in sdk_state()["stats"]["usage_to_metrics"]["agent"]["token_usages"])
    assert tokprof.profile(trace).summary().reported.billed_input == matched == 9000 + 9400


def test_sessions_lists_cli_conversations(tmp_path, monkeypatch):
    from tokprof.runs.sessions import local_sessions

    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("FILE_STORE_PATH", raising=False)
    sdk_conversation(home / ".openhands" / "conversations")
    rows = local_sessions("openhands")
    assert [(Path(row.path).name, row.calls) for row in rows] == [("base_state.json", 2)]


def test_a_cli_conversation_with_a_bad_usage_is_one_line(tmp_path, capsys):
    path = sdk_conversation(tmp_path)
    state = sdk_state()
    state["stats"]["usage_to_metrics"]["agent"]["token_usages"][1]["cache_read_tokens"] = 99999
    path.write_text(json.dumps(state))
    assert main(["profile", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert f"{path}: stats.usage_to_metrics.agent.token_usages[1].cache_read_tokens" in err
