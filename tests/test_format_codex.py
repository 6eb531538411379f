"""The Codex CLI rollout reader: calls from token counts, prompts from the recorded items, encrypted
reasoning attributed by usage, compactions, rollbacks, the legacy form, odd input, the real corpus
rollout, and the CLI end to end."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tokprof.base.errors import InputError
from tokprof.formats import codex
from tokprof.formats.jsonfile import Document, load

TS = "2025-09-25T15:49:46.552Z"
CORPUS_NAME = "codex_rollout-2025-09-25T09-49-46-01998190-fba6-7f40-9309-dc4e48c5844a.jsonl"


# --- building rollouts ----------------------------------------------------------------------------


def line(kind: str, payload: dict, ts: str = TS) -> dict:
    return {"timestamp": ts, "type": kind, "payload": payload}


def meta(instructions=None, base=None, session="sess-1") -> dict:
    payload = {
        "id": session,
        "timestamp": TS,
        "cwd": "/w",
        "originator": "codex_cli_rs",
        "cli_version": "0.40.0",
        "instructions": instructions,
    }
    if base is not None:
        payload["base_instructions"] = {"text": base}
    return line("session_meta", payload)


def context(model: str = "gpt-5-codex", **extra) -> dict:
    return line(
        "turn_context", {"cwd": "/w", "approval_policy": "on-request", "model": model, "summary": "auto", **extra}
    )


def item(payload: dict) -> dict:
    return line("response_item", payload)


def user(text: str, role: str = "user") -> dict:
    return item({"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]})


def say(text: str) -> dict:
    return item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})


def think(summary: str, encrypted: str | None = "gAAAA-secret") -> dict:
    return item(
        {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": summary}],
            "content": None,
            "encrypted_content": encrypted,
        }
    )


def call(call_id: str, command: str = "ls") -> dict:
    return item(
        {
            "type": "function_call",
            "name": "shell",
            "call_id": call_id,
            "arguments": json.dumps({"command": ["bash", "-lc", command]}),
        }
    )


def result(call_id: str, output: str = "a.txt") -> dict:
    return item({"type": "function_call_output", "call_id": call_id, "output": output})


class Counter:
    """token_count events with running totals, as Codex writes them."""

    def __init__(self):
        self.total = {
            "input_tokens": 0,
            "cached_input_tokens": 0,
            "output_tokens": 0,
            "reasoning_output_tokens": 0,
            "total_tokens": 0,
        }

    def __call__(self, prompt: int, output: int = 10, cached: int = 0, reasoning: int = 0, ts: str = TS) -> dict:
        last = {
            "input_tokens": prompt,
            "cached_input_tokens": cached,
            "output_tokens": output,
            "reasoning_output_tokens": reasoning,
            "total_tokens": prompt + output,
        }
        for key, value in last.items():
            self.total[key] += value
        self.last = last
        return self.repeat(last, ts)

    def repeat(self, last: dict | None = None, ts: str = TS, null: bool = False) -> dict:
        """The same totals again (a rate-limit update, with the last usage or another one), or
        ``info: null``."""
        if null:
            return line("event_msg", {"type": "token_count", "info": None, "rate_limits": {}}, ts)
        last = last or self.last
        info = {"total_token_usage": dict(self.total), "last_token_usage": last, "model_context_window": 272000}
        return line(
            "event_msg", {"type": "token_count", "info": info, "rate_limits": {"primary_used_percent": 1.0}}, ts
        )


def write(tmp_path: Path, lines: list, name: str = "rollout-2025-09-25T09-49-46-x.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join((v if isinstance(v, str) else json.dumps(v)) + "\n" for v in lines))
    return path


def read(tmp_path: Path, lines: list):
    path = write(tmp_path, lines)
    doc = load(str(path))
    assert codex.sniff(doc)
    return codex.read(str(path), doc)


def roles(call) -> list[str]:
    return [m["role"] for m in call.messages]


def notes(trace) -> dict:
    return {n.code: n for n in trace.notes}


# --- calls from token counts ----------------------------------------------------------------------


def test_calls_are_changed_token_counts_and_outputs_after_the_count(tmp_path):
    """Codex 0.40 to 0.60 record a call's output items just after its token count."""
    count = Counter()
    trace = read(
        tmp_path,
        [
            meta(),
            user("<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"),
            user("list files"),
            line("event_msg", {"type": "user_message", "message": "list files"}),
            context(),
            count.repeat(null=True),  # info null: a rate-limit update
            line("event_msg", {"type": "agent_reasoning", "text": "Listing"}),
            count(100, output=30, cached=64, reasoning=20),
            think("**Listing files**"),
            call("c1"),
            result("c1", "a.txt\nb.txt"),
            context(),
            count(140, output=12, ts="2025-09-26T01:00:00Z"),
            count.repeat(),  # the same totals again: not a call
            think("**Answering**", encrypted=None),
            say("Two files."),
        ],
    )
    assert trace.format == "codex" and trace.session == "sess-1" and trace.model == "gpt-5-codex"
    assert trace.unrecorded == ("system", "tools")
    assert len(trace.calls) == 2
    first, second = trace.calls
    assert first.where == "line 8" and second.where == "line 13"
    assert first.reported.prompt == 100 and first.reported.cache_read == 64 and first.reported.output == 30
    assert first.reported.cache_write is None
    assert first.tools is None and first.model == "gpt-5-codex"
    assert [m["content"] for m in first.messages][1] == "list files"
    assert roles(first) == ["user", "user"]
    assert roles(second) == ["user", "user", "assistant", "tool"]
    assistant = second.messages[2]
    assert assistant["reasoning_content"] == "**Listing files**"
    assert assistant["tool_calls"][0]["id"] == "c1"
    assert assistant["tool_calls"][0]["function"]["name"] == "shell"
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"])["command"][-1] == "ls"
    assert second.messages[3] == {"role": "tool", "content": "a.txt\nb.txt", "tool_call_id": "c1"}
    assert first.response["tool_calls"][0]["id"] == "c1"
    assert second.response["content"] == "Two files." and second.response["reasoning_content"] == "**Answering**"
    assert str(first.day) == "2025-09-25" and str(second.day) == "2025-09-26"


def test_outputs_recorded_before_the_count(tmp_path):
    """Newer Codex records each output item as it completes, before the token count."""
    count = Counter()
    trace = read(
        tmp_path,
        [
            meta(),
            user("fix it"),
            context(),
            think("**Looking**"),
            call("c1", "cat x"),
            count(100, reasoning=40),
            result("c1", "x"),
            think("**Patching**"),
            call("c2", "patch"),
            count(150, reasoning=8),
            result("c2", "ok"),
            say("Fixed."),
            count(200),
        ],
    )
    assert len(trace.calls) == 3
    assert [roles(c) for c in trace.calls] == [
        ["user"],
        ["user", "assistant", "tool"],
        ["user", "assistant", "tool", "assistant", "tool"],
    ]
    assert [c.response["tool_calls"][0]["id"] for c in trace.calls[:2]] == ["c1", "c2"]
    assert trace.calls[2].response["content"] == "Fixed."
    assert [c.unrendered for c in trace.calls] == [{}, {"conversation": 40}, {"conversation": 48}]


def test_parallel_calls_recorded_with_their_outputs(tmp_path):
    """Codex 0.40 records parallel tool calls each followed by its output: one call, one response."""
    count = Counter()
    trace = read(
        tmp_path,
        [
            meta(),
            user("two things"),
            context(),
            count(100),
            think("**Both**"),
            call("c1"),
            result("c1"),
            call("c2"),
            result("c2"),
            count(130),
            say("done"),
        ],
    )
    assert len(trace.calls) == 2
    assert [c["id"] for c in trace.calls[0].response["tool_calls"]] == ["c1", "c2"]
    assert roles(trace.calls[1]) == ["user", "assistant", "tool", "assistant", "tool"]


def test_other_tool_items(tmp_path):
    count = Counter()
    trace = read(
        tmp_path,
        [
            meta(),
            user("go"),
            context(),
            count(100),
            item(
                {
                    "type": "custom_tool_call",
                    "status": "completed",
                    "call_id": "p1",
                    "name": "apply_patch",
                    "input": "*** Begin Patch\n*** End Patch",
                }
            ),
            item(
                {
                    "type": "custom_tool_call_output",
                    "call_id": "p1",
                    "output": [
                        {"type": "input_text", "text": "Success."},
                        {"type": "input_image", "image_url": "data:"},
                    ],
                }
            ),
            count(120),
            item(
                {
                    "type": "local_shell_call",
                    "call_id": "s1",
                    "status": "completed",
                    "action": {"type": "exec", "command": ["ls"]},
                }
            ),
            result("s1", "a"),
            count(140),
            item({"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "codex"}}),
            item({"type": "ghost_snapshot", "ghost_commit": {"id": "abc"}}),
            item({"type": "tool_search_call", "call_id": "t1"}),  # unknown to this reader
            count(160),
            say("done"),
        ],
    )
    last = trace.calls[-1]
    calls = [c["function"] for m in last.messages for c in m.get("tool_calls") or []]
    assert [c["name"] for c in calls] == ["apply_patch", "local_shell", "web_search"]
    assert calls[0]["arguments"] == "*** Begin Patch\n*** End Patch"
    assert json.loads(calls[1]["arguments"]) == {"type": "exec", "command": ["ls"]}
    assert [m["content"] for m in last.messages if m["role"] == "tool"] == ["Success.", "a"]
    found = notes(trace)
    assert {"web-search", "content-not-text", "unknown-type"} <= set(found)
    assert found["unknown-type"].places == ["line 13 (tool_search_call)"]


# --- instructions and what is not recorded --------------------------------------------------------


def test_recorded_base_instructions_are_the_system_prompt(tmp_path):
    count = Counter()
    trace = read(
        tmp_path,
        [
            meta(base="You are Codex."),
            user("# AGENTS.md instructions for /w\n\nBe brief.", role="developer"),
            user("hi"),
            context(),
            count(50),
            say("hello"),
            context(base_instructions="Custom prompt."),
            user("again"),
            count(80),
            say("hi"),
        ],
    )
    assert trace.unrecorded == ("tools",)
    assert trace.calls[0].messages[0] == {"role": "system", "content": "You are Codex."}
    assert trace.calls[0].messages[1]["role"] == "developer"
    assert trace.calls[1].messages[0] == {"role": "system", "content": "Custom prompt."}


def test_user_instructions_not_in_any_message_go_with_the_system_prompt(tmp_path):
    count = Counter()
    trace = read(tmp_path, [meta(instructions="Always use tabs."), user("hi"), context(), count(50), say("x")])
    assert trace.calls[0].messages[0] == {"role": "system", "content": "Always use tabs."}
    assert trace.unrecorded == ("system", "tools")  # the built-in prompt before them is not recorded


def test_user_instructions_recorded_as_a_message_are_not_repeated(tmp_path):
    count = Counter()
    trace = read(
        tmp_path,
        [
            meta(instructions="Always use tabs."),
            user("<user_instructions>\n\nAlways use tabs.\n\n</user_instructions>"),
            user("hi"),
            context(),
            count(50),
        ],
    )
    assert roles(trace.calls[0]) == ["user", "user"]


# --- encrypted reasoning --------------------------------------------------------------------------


def test_encrypted_reasoning_is_attributed_by_usage_in_the_current_user_turn(tmp_path):
    count = Counter()
    trace = read(
        tmp_path,
        [
            meta(),
            user("first"),
            context(),
            count(100, reasoning=64),
            think("one", "enc-1"),
            call("c1"),
            result("c1"),
            count(200, reasoning=128),
            think("two", "enc-2"),
            say("answer"),
            user("second"),
            count(300, reasoning=0),
            think("", "enc-3"),
            call("c2"),
            result("c2"),
            count(400),
        ],
    )
    assert [c.unrendered for c in trace.calls] == [{}, {"conversation": 64}, {}, {}]
    note = notes(trace)["encrypted-reasoning"]
    assert "attributed by usage" in note.message and "64 tokens over 1 calls" in note.message
    assert trace.calls[1].messages[1]["reasoning_content"] == "one"


def test_raw_reasoning_text_is_rendered_not_attributed(tmp_path):
    count = Counter()
    trace = read(
        tmp_path,
        [
            meta(),
            user("q"),
            context(),
            count(100, reasoning=50),
            item(
                {
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": "short"}],
                    "content": [{"type": "reasoning_text", "text": "the whole thought"}],
                    "encrypted_content": "e",
                }
            ),
            item(
                {
                    "type": "local_shell_call",
                    "call_id": None,
                    "id": "ls_1",
                    "status": "completed",
                    "action": {"type": "exec", "command": ["pwd"]},
                }
            ),
            result("ls_1", "/w"),
            count(150),
        ],
    )
    assistant = trace.calls[1].messages[1]
    assert assistant["reasoning_content"] == "the whole thought"
    assert assistant["tool_calls"][0]["id"] == "ls_1"
    assert trace.calls[1].unrendered == {}


def test_calls_share_message_objects(tmp_path):
    """Codex resends the whole history on every call: the calls hold the same message objects."""
    count = Counter()
    trace = read(
        tmp_path,
        [
            meta(base="sys"),
            user("q"),
            context(),
            count(10),
            call("c1"),
            result("c1"),
            count(20),
            call("c2"),
            result("c2"),
            count(30),
        ],
    )
    second, third = trace.calls[1:]
    assert all(a is b for a, b in zip(second.messages, third.messages))
    assert len(third.messages) == len(second.messages) + 2


# --- compactions and rollbacks --------------------------------------------------------------------


def _compaction_rollout(count: Counter) -> list:
    return [
        meta(),
        user("<permissions instructions>", role="developer"),
        user("<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"),
        user("task one"),
        context(),
        count(100, reasoning=30),
        think("t1", "enc-1"),
        say("done one"),
        user("task two"),
        context(),
        count(200, reasoning=50),
        think("t2", "enc-2"),
        call("c1"),
        result("c1"),
        context(),
        count(300, output=40),  # the summarising call
        line("compacted", {"message": "SUMMARY of the work"}),
        line("event_msg", {"type": "context_compacted"}),
        count.repeat(
            {
                "input_tokens": 0,
                "cached_input_tokens": 0,
                "output_tokens": 0,
                "reasoning_output_tokens": 0,
                "total_tokens": 90,
            }
        ),  # re-estimate: same totals
        user("task three"),
        context(),
        count(120),
        say("done three"),
    ]


def test_compaction_call_and_history_rebuilt(tmp_path):
    trace = read(tmp_path, _compaction_rollout(Counter()))
    assert [c.kind for c in trace.calls] == ["call", "call", "compaction", "call"]
    summarising = trace.calls[2]
    assert roles(summarising) == ["developer", "user", "user", "assistant", "user", "assistant", "tool"]
    assert summarising.response == {"role": "assistant", "content": "SUMMARY of the work"}
    assert summarising.unrendered == {"conversation": 50}
    after = trace.calls[3]
    assert [m["content"] for m in after.messages] == [
        "<permissions instructions>",
        "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>",
        "task one",
        "task two",
        "SUMMARY of the work",
        "task three",
    ]
    assert after.unrendered == {}
    found = notes(trace)
    assert found["compaction-rebuilt"].places == ["line 17"]
    assert found["compaction-prompt"].places == ["line 16"]


def test_compaction_with_replacement_history_and_remote_compaction(tmp_path):
    count = Counter()
    replacement = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "kept"}]},
        {"type": "compaction", "encrypted_content": "xyz"},
    ]
    trace = read(
        tmp_path,
        [
            meta(),
            user("task"),
            context(),
            count(100),
            say("ok"),
            line("compacted", {"message": "", "replacement_history": replacement}),  # server side: no usage
            user("more"),
            count(60),
            say("ok"),
            count(70),
            line(
                "compacted",
                {
                    "message": "local summary",
                    "replacement_history": [
                        {
                            "type": "message",
                            "role": "user",
                            "content": [{"type": "input_text", "text": "local summary"}],
                        }
                    ],
                },
            ),
            user("last"),
            count(40),
        ],
    )
    assert [c.kind for c in trace.calls] == ["call", "call", "compaction", "call"]
    assert [m["content"] for m in trace.calls[1].messages] == ["kept", "more"]
    assert [m["content"] for m in trace.calls[3].messages] == ["local summary", "last"]
    found = notes(trace)
    assert found["remote-compaction"].places == ["line 6"]
    assert "compaction-encrypted" in found and "compaction-rebuilt" not in found


def test_rollback_drops_the_last_user_turns(tmp_path):
    count = Counter()
    trace = read(
        tmp_path,
        [
            meta(),
            user("a"),
            context(),
            count(10),
            say("A"),
            user("b"),
            count(20),
            say("B"),
            line("event_msg", {"type": "thread_rolled_back", "num_turns": 1}),
            user("c"),
            count(15),
        ],
    )
    assert [m["content"] for m in trace.calls[2].messages] == ["a", "A", "c"]


def test_orphan_tool_output_is_left_out(tmp_path):
    count = Counter()
    trace = read(tmp_path, [meta(), user("a"), result("ghost", "x"), context(), count(10)])
    assert roles(trace.calls[0]) == ["user"]
    assert notes(trace)["orphan-output"].places == ["line 3"]


# --- the legacy form ------------------------------------------------------------------------------


def test_legacy_form(tmp_path):
    trace = read(
        tmp_path,
        [
            {
                "id": "legacy-1",
                "timestamp": "2025-07-01T10:00:00Z",
                "instructions": "Prefer rg.",
                "git": {"branch": "main"},
            },
            {"record_type": "state"},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>x"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "find TODOs"}]},
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [{"type": "summary_text", "text": "searching"}],
                "encrypted_content": "enc",
            },
            {
                "type": "function_call",
                "id": "fc_1",
                "name": "shell",
                "arguments": '{"command": ["rg", "TODO"]}',
                "call_id": "call_1",
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "a.py:1: TODO"},
            {"record_type": "state"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "One TODO."}]},
        ],
    )
    assert trace.session == "legacy-1" and trace.model is None
    assert [c.reported for c in trace.calls] == [None, None]
    assert [c.where for c in trace.calls] == ["line 5", "line 9"]
    assert trace.calls[0].messages[0] == {"role": "system", "content": "Prefer rg."}
    assert roles(trace.calls[1]) == ["system", "user", "user", "assistant", "tool"]
    assert trace.calls[1].response["content"] == "One TODO."
    assert str(trace.calls[0].day) == "2025-07-01"
    assert "no-usage" in notes(trace)


# --- sniffing, sessions and odd input -------------------------------------------------------------


def test_sniff():
    assert codex.sniff(Document(lines=[(1, meta()), (2, user("x"))]))
    assert codex.sniff(Document(lines=[(1, {"id": "a", "timestamp": TS, "instructions": None})]))
    assert not codex.sniff(Document(value={"messages": []}))
    assert not codex.sniff(Document(lines=[(1, {"type": "user", "message": {"role": "user"}, "sessionId": "s"})]))
    assert not codex.sniff(Document(lines=[(1, {"model": "gpt-4o", "messages": [], "type": "response_item"})]))
    assert not codex.sniff(Document(lines=[(1, [1, 2]), (2, "x")]))
    assert not codex.sniff(Document(lines=[(1, {"id": "a", "timestamp": TS})]))
    assert not codex.sniff(Document(lines=[]))


def test_sessions_lists_rollouts_in_a_tree(tmp_path):
    for day, name in [
        ("2025/10/01", "rollout-2025-10-01T08-00-00-b.jsonl"),
        ("2025/09/25", "rollout-2025-09-25T09-00-00-a.jsonl"),
    ]:
        (tmp_path / day).mkdir(parents=True)
        (tmp_path / day / name).write_text("{}\n")
    (tmp_path / "2025" / "notes.jsonl").write_text("{}\n")
    (tmp_path / "2025" / "rollout-dir.jsonl").mkdir()
    found = codex.sessions(tmp_path)
    assert [p.name for p in found] == ["rollout-2025-09-25T09-00-00-a.jsonl", "rollout-2025-10-01T08-00-00-b.jsonl"]
    assert codex.sessions(tmp_path / "2025" / "09") == [found[0]]


@pytest.mark.parametrize(
    "bad, where, what",
    [
        ([1, 2], "line 2", "expected a JSON object"),
        ({"timestamp": TS, "type": "response_item", "payload": "x"}, "line 2: payload", "expected an object"),
        (item({"type": "message", "role": "robot", "content": []}), "line 2: payload.role", "unknown role"),
        (item({"type": "message", "role": "user", "content": 5}), "line 2: payload.content", "expected a list"),
        (item({"type": "message", "role": "user"}), "line 2: payload.content", "missing"),
        (
            item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": 3}]}),
            "line 2: payload.content[0].text",
            "expected a string",
        ),
        (item({"type": "message", "role": "user", "content": ["x"]}), "line 2: payload.content[0]", "content part"),
        (item({"type": "function_call", "call_id": "c", "arguments": "{}"}), "line 2: payload.name", "missing"),
        (item({"type": "function_call", "name": "shell", "arguments": "{}"}), "line 2: payload.call_id", "missing"),
        (
            item({"type": "function_call", "name": "shell", "call_id": "c", "arguments": 5}),
            "line 2: payload.arguments",
            "expected a string",
        ),
        (item({"type": "function_call_output", "output": "x"}), "line 2: payload.call_id", "missing"),
        (item({"type": "function_call_output", "call_id": "c"}), "line 2: payload.output", "missing"),
        (item({"type": "reasoning", "summary": "x"}), "line 2: payload.summary", "expected a list"),
        (
            item({"type": "reasoning", "summary": [], "encrypted_content": 1}),
            "line 2: payload.encrypted_content",
            "expected a string",
        ),
        (item({"role": "user", "content": []}), "line 2: payload.type", "missing"),
        (
            item({"type": "local_shell_call", "call_id": "s", "action": "ls"}),
            "line 2: payload.action",
            "expected an object",
        ),
        (line("event_msg", {"type": "token_count", "info": 3}), "line 2: payload.info", "expected an object"),
        (
            line("event_msg", {"type": "token_count", "info": {"total_token_usage": {}}}),
            "line 2: payload.info.last_token_usage",
            "expected an object, found null",
        ),
        (
            line("event_msg", {"type": "token_count", "info": {"last_token_usage": {"input_tokens": -1}}}),
            "line 2: payload.info.last_token_usage.input_tokens",
            "non-negative",
        ),
        (
            line("event_msg", {"type": "token_count", "info": {"last_token_usage": {}, "total_token_usage": []}}),
            "line 2: payload.info.total_token_usage",
            "expected an object",
        ),
        (
            line("event_msg", {"type": "thread_rolled_back", "num_turns": "one"}),
            "line 2: payload.num_turns",
            "non-negative",
        ),
        (
            line("compacted", {"message": "s", "replacement_history": {}}),
            "line 2: payload.replacement_history",
            "expected a list",
        ),
        (line("compacted", {"message": 3}), "line 2: payload.message", "expected a string"),
        (
            line("compacted", {"message": "s", "replacement_history": [5]}),
            "line 2: payload.replacement_history[0]",
            "expected an item",
        ),
        (line("turn_context", {"model": 5}), "line 2: payload.model", "expected a string"),
        (line("session_meta", {"id": 5}), "line 2: payload.id", "expected a string"),
        (
            line("session_meta", {"id": "s", "base_instructions": {"text": 1}}),
            "line 2: payload.base_instructions.text",
            "expected a string",
        ),
    ],
)
def test_odd_input_is_one_error_naming_line_and_field(tmp_path, bad, where, what):
    path = write(tmp_path, [meta(), bad, user("x"), Counter()(10)])
    with pytest.raises(InputError) as info:
        codex.read(str(path), load(str(path)))
    assert info.value.where == where
    assert what in info.value.what


def test_invalid_unicode_names_its_line(tmp_path):
    path = write(
        tmp_path,
        [
            json.dumps(meta()),
            '{"timestamp": "x", "type": "response_item", "payload": {"type": '
            '"message", "role": "user", "content": [{"type": "input_text", "text": "bad \\ud800"}]}}',
            json.dumps(Counter()(10)),
        ],
    )
    with pytest.raises(InputError) as info:
        codex.read(str(path), load(str(path)))
    assert info.value.where == "line 2: payload.content[0].text" and "invalid Unicode" in info.value.what


def test_no_call_and_not_jsonl(tmp_path):
    path = write(tmp_path, [meta(), user("hi"), Counter().repeat(null=True)])
    with pytest.raises(InputError, match="no model call"):
        codex.read(str(path), load(str(path)))
    with pytest.raises(InputError, match="expected JSONL"):
        codex.read("x.json", Document(value={"type": "session_meta"}))


def test_unknown_lines_and_events_are_skipped(tmp_path):
    count = Counter()
    trace = read(
        tmp_path,
        [
            meta(),
            {"timestamp": TS, "type": "future_thing", "payload": {}},
            {"no": "type"},
            line("event_msg", {"type": "future_event", "x": 1}),
            user("hi"),
            context(),
            count(10),
            say("x"),
        ],
    )
    assert len(trace.calls) == 1
    assert notes(trace)["unknown-type"].places == ["line 2 (future_thing)", "line 3 (no type)"]


def test_early_token_count_without_info(tmp_path):
    trace = read(
        tmp_path,
        [
            meta(),
            user("hi"),
            context(),
            line(
                "event_msg",
                {
                    "type": "token_count",
                    "input_tokens": 30,
                    "cached_input_tokens": 0,
                    "output_tokens": 4,
                    "reasoning_output_tokens": 0,
                    "total_tokens": 34,
                },
            ),
            say("hello"),
        ],
    )
    assert trace.calls[0].reported.prompt == 30


# --- the real rollout -----------------------------------------------------------------------------


def corpus_file() -> Path:
    root = (
        Path(os.environ["TOKPROF_CORPUS"])
        if os.environ.get("TOKPROF_CORPUS")
        else (Path(__file__).resolve().parents[2] / "shared" / "corpus")
    )
    path = root / CORPUS_NAME
    if not path.is_file():
        pytest.skip(f"the corpus rollout is not at {path}")
    return path


def last_usages(path: Path) -> list[dict]:
    """``last_token_usage`` of every token count whose totals changed, straight from the file."""
    out, previous = [], None
    for raw in path.read_text().splitlines():
        value = json.loads(raw)
        payload = value.get("payload") or {}
        if value.get("type") == "event_msg" and payload.get("type") == "token_count" and payload.get("info"):
            if payload["info"]["total_token_usage"] != previous:
                out.append(payload["info"]["last_token_usage"])
            previous = payload["info"]["total_token_usage"]
    return out


def test_corpus_rollout():
    path = corpus_file()
    doc = load(str(path))
    assert codex.sniff(doc)
    trace = codex.read(str(path), doc)
    usages = last_usages(path)
    assert len(trace.calls) == len(usages) == 85
    assert [c.reported.prompt for c in trace.calls] == [u["input_tokens"] for u in usages]
    assert trace.session == "01998190-fba6-7f40-9309-dc4e48c5844a" and trace.model == "gpt-5-codex"
    assert trace.unrecorded == ("system", "tools")
    assert all(c.tools is None and c.kind == "call" for c in trace.calls)
    # each prompt is the previous one plus the previous call's output and its tool result
    assert [len(c.messages) for c in trace.calls[:3]] == [2, 4, 6]
    assert sum(1 for c in trace.calls if c.response and c.response.get("tool_calls")) == 84
    # the reasoning of every earlier call of the (single) user turn is resent and attributed
    assert trace.calls[-1].unrendered == {"conversation": sum(u["reasoning_output_tokens"] for u in usages[:-1])}


# --- the CLI, end to end --------------------------------------------------------------------------


@pytest.fixture
def registered(monkeypatch):
    """Nothing to do: the reader is registered (kept for the tests that name the fixture)."""


def profile(capsys, args: list[str]) -> dict:
    from tokprof.frontends.cli import main

    code = main(["profile", *args, "-f", "json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    doc = json.loads(captured.out)
    for row in doc["calls"]:
        assert all(v >= 0 for v in row["buckets"].values())
        assert sum(row["buckets"].values()) == row["total"]
    return doc


@pytest.mark.parametrize("forced", [False, True])
def test_cli_tiny_model(tmp_path, capsys, registered, model_dir, forced):
    path = write(tmp_path, _compaction_rollout(Counter()))
    args = [str(path), "--model", str(model_dir)] + (["--input-format", "codex"] if forced else [])
    doc = profile(capsys, args)
    assert doc["source"]["format"] == "codex" and doc["source"]["session"] == "sess-1"
    assert [c["kind"] for c in doc["calls"]] == ["call", "call", "compaction", "call"]
    assert doc["summary"]["billed_input_reported"] == 100 + 200 + 300 + 120
    assert [c["unrendered"] for c in doc["calls"]] == [0, 0, 50, 0]


def test_cli_corpus_openai_proxy(capsys, registered):
    path = corpus_file()
    doc = profile(capsys, [str(path), "--model", "openai-proxy"])
    assert doc["source"]["format"] == "codex"
    assert doc["summary"]["calls"] == 85
    assert doc["summary"]["billed_input_reported"] == sum(u["input_tokens"] for u in last_usages(path))
    assert [w["code"] for w in doc["warnings"]] == ["encrypted-reasoning"]
    assert doc["summary"]["estimate"]["calls_anchored"] == 84 and doc["summary"]["estimate"]["unexplained_growth"] == 0


def test_calls_have_the_time_of_their_token_count(tmp_path):
    from datetime import datetime, timezone

    count = Counter()
    trace = read(
        tmp_path,
        [
            meta(),
            context(),
            user("fix it"),
            count(100, ts="2025-09-25T15:50:00.250Z"),
            call("c1"),
            result("c1"),
            count(150, ts="2025-09-25T17:50:01+02:00"),
            say("done"),
        ],
    )
    assert [c.time for c in trace.calls] == [
        datetime(2025, 9, 25, 15, 50, 0, 250000, tzinfo=timezone.utc),
        datetime(2025, 9, 25, 15, 50, 1, tzinfo=timezone.utc),
    ]
