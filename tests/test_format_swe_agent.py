"""SWE-agent trajectories (``.traj``): the 0.x history and the 1.x per-step ``query``.

The fixtures are written here by hand in the shapes of SWE-agent/SWE-agent's ``sweagent/types.py``
(``HistoryItem``, ``TrajectoryStep``, ``AgentInfo``), ``sweagent/agent/agents.py``
(``get_trajectory_data``: ``trajectory``, ``history``, ``info``, ``replay_config`` as JSON text) and
``tests/test_data/trajectories/`` (0.x: ``environment``, ``history`` items with ``agent``,
``thought``, ``action``, ``is_demo``; ``info.model_stats``). No text comes from a real trajectory.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from conftest import ROOT

import tokprof
from tokprof.formats import read_trace, scan_directory
from tokprof.frontends.cli import main

CORPUS = ROOT.parent / "shared" / "corpus" / "swe_agent_v0_gpt4_pydicom__pydicom-1458.traj"
SYSTEM = "SETTING: You are a test bot. COMMANDS: open FILE, edit N:M, submit."


def stats(sent: int = 300, received: int = 20, calls: int = 2) -> dict:
    return {
        "total_cost": 0.1,
        "instance_cost": 0.1,
        "tokens_sent": sent,
        "tokens_received": received,
        "api_calls": calls,
    }


def v0_traj() -> dict:
    """A 0.x trajectory: commands documented in the system prompt, a demonstration, two responses."""
    agent = "primary"
    return {
        "environment": "swe_main",
        "trajectory": [
            {"action": "ls\n", "observation": "cat.py", "response": "Look first.", "thought": "Look.", "state": "{}"},
            {"action": "submit\n", "observation": "diff", "response": "Done.", "thought": "Done.", "state": "{}"},
        ],
        "history": [
            {"role": "system", "content": SYSTEM, "agent": agent},
            {"role": "user", "content": "Here is a demonstration: define dog", "agent": agent, "is_demo": True},
            {"role": "user", "content": "ISSUE: define cat", "agent": agent},
            {
                "role": "assistant",
                "content": "Look first.\nls",
                "thought": "Look first.",
                "action": "ls\n",
                "agent": agent,
            },
            {"role": "user", "content": "cat.py\n(Open file: n/a)", "agent": agent},
            {"role": "assistant", "content": "Done.\nsubmit", "thought": "Done.", "action": "submit\n", "agent": agent},
        ],
        "info": {"exit_status": "submitted", "submission": "diff", "model_stats": stats()},
    }


def bash(call_id: str, command: str) -> dict:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "bash", "arguments": json.dumps({"command": command})},
    }


def v1_history() -> list[dict]:
    agent = "main"
    return [
        {"role": "system", "content": "You are a test bot.", "agent": agent, "message_type": "system_prompt"},
        {"role": "user", "content": "define cat", "agent": agent, "message_type": "observation"},
        {
            "role": "assistant",
            "content": "Look first.",
            "thought": "Look first.",
            "action": "ls",
            "agent": agent,
            "tool_calls": [bash("call_1", "ls")],
            "message_type": "action",
        },
        {
            "role": "tool",
            "content": "cat.py",
            "agent": agent,
            "message_type": "observation",
            "tool_call_ids": ["call_1"],
        },
        {
            "role": "assistant",
            "content": "Done.",
            "thought": "Done.",
            "action": "submit",
            "agent": agent,
            "tool_calls": [bash("call_2", "submit")],
            "message_type": "action",
        },
    ]


def v1_config(processors: list | None = None, **model: object) -> str:
    config = {
        "agent": {
            "model": {"name": "gpt-4o", "per_instance_cost_limit": 3.0, **model},
            "history_processors": processors if processors is not None else [{"type": "cache_control"}],
            "tools": {"parse_function": {"type": "function_calling"}},
        }
    }
    return json.dumps(config)


def v1_traj(query: bool = True) -> dict:
    """A 1.x function-calling trajectory; with ``query`` (1.1 and later) each step records its prompt,
    and a last step without a query (an autosubmission)."""
    history = v1_history()
    steps = [
        {"action": "ls", "observation": "cat.py", "response": "Look first.", "thought": "Look first.", "state": {}},
        {"action": "submit", "observation": "", "response": "Done.", "thought": "Done.", "state": {}},
        {"action": "", "observation": "", "response": "Exit due to cost limit", "thought": "", "state": {}},
    ]
    if query:
        steps[0]["query"] = copy.deepcopy(history[:2])
        steps[1]["query"] = copy.deepcopy(history[:4])
        steps[2]["query"] = [{}]
    return {
        "trajectory": steps if query else steps[:2],
        "history": history,
        "info": {"exit_status": "submitted", "model_stats": stats(calls=2)},
        "replay_config": v1_config(),
        "environment": "main",
    }


def write(tmp_path: Path, doc: dict, name: str = "inst-1.traj") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return path


def roles(call) -> list[str]:
    return [m["role"] for m in call.messages]


def notes(trace) -> dict[str, list[str]]:
    return {note.code: note.places for note in trace.notes}


# -- 0.x --------------------------------------------------------------------------------------------
def test_a_0x_trajectory_is_read_from_its_history(tmp_path):
    trace = read_trace(str(write(tmp_path, v0_traj())))
    assert trace.format == "swe-agent" and trace.model is None and trace.unrecorded == ()
    assert [roles(call) for call in trace.calls] == [
        ["system", "user", "user"],
        ["system", "user", "user", "assistant", "user"],
    ]
    first = trace.calls[0]
    assert first.messages[0]["content"] == SYSTEM and first.tools is None and first.reported is None
    assert first.response == {"role": "assistant", "content": "Look first.\nls"}
    assert [call.where for call in trace.calls] == ["history[3]", "history[5]"]
    found = notes(trace)
    assert found["run-totals"] == [
        "info.model_stats: tokens_sent 300, tokens_received 20, api_calls 2, instance_cost 0.1000"
    ]
    assert "raw-history" in found and "no-model" in found and "api-calls-differ" not in found


def test_buckets_add_up_and_billed_input_is_every_prompt_counted(tmp_path, model_dir):
    path = write(tmp_path, v0_traj())
    profile = tokprof.profile(path, model=str(model_dir))
    model = tokprof.get_model(str(model_dir))
    trace = read_trace(str(path))
    expected = [model.count(call.messages).total for call in trace.calls]
    assert [row.total for row in profile.calls] == expected
    for row in profile.calls:
        assert all(count >= 0 for count in row.buckets.values()) and sum(row.buckets.values()) == row.total
        assert row.buckets["system"] > 0 and row.buckets["tool_definitions"] == 0
    assert profile.summary().billed_input == sum(expected)


def test_a_trajectory_that_made_no_call_reads_as_none(tmp_path):
    doc = {"environment": "swe_main", "trajectory": [], "history": [], "info": {"exit_status": "early_exit"}}
    trace = read_trace(str(write(tmp_path, doc)))
    assert trace.calls == [] and "raw-history" not in notes(trace)


def test_calls_not_kept_in_the_history_are_said(tmp_path):
    doc = v0_traj()
    doc["info"]["model_stats"]["api_calls"] = 3  # a requery after a format error
    assert notes(read_trace(str(write(tmp_path, doc))))["api-calls-differ"] == ["api_calls 3 vs 2 calls"]


def test_a_second_agent_is_a_thread_of_its_own(tmp_path):
    doc = v0_traj()
    doc["history"] += [
        {"role": "system", "content": "You edit files.", "agent": "editor"},
        {"role": "user", "content": "edit cat.py", "agent": "editor"},
        {"role": "assistant", "content": "edited", "agent": "editor"},
    ]
    trace = read_trace(str(write(tmp_path, doc)))
    assert [call.thread for call in trace.calls] == ["", "", "editor"]
    assert [m["content"] for m in trace.calls[2].messages] == ["You edit files.", "edit cat.py"]


# -- 1.x --------------------------------------------------------------------------------------------
def test_a_1x_trajectory_is_read_from_each_steps_query(tmp_path):
    trace = read_trace(str(write(tmp_path, v1_traj())))
    assert trace.model == "gpt-4o" and trace.unrecorded == ("tools",)
    assert [roles(call) for call in trace.calls] == [["system", "user"], ["system", "user", "assistant", "tool"]]
    second = trace.calls[1].messages
    assert second[2]["tool_calls"][0]["id"] == "call_1" and second[3]["tool_call_id"] == "call_1"
    assert trace.calls[1].response == {"role": "assistant", "content": "Done."}
    assert [call.where for call in trace.calls] == ["trajectory[0]", "trajectory[1]"]
    found = notes(trace)
    assert found["no-query"] == ["trajectory[2]"]
    assert "raw-history" not in found and "no-model" not in found  # cache_control changes no text


def test_a_query_holds_requeries_the_history_does_not(tmp_path):
    doc = v1_traj()
    requery = copy.deepcopy(doc["trajectory"][0])
    requery["query"] += [
        {"role": "assistant", "content": "no tool call", "agent": "main"},
        {"role": "user", "content": "Your output was not formatted correctly.", "agent": "main"},
    ]
    doc["trajectory"].insert(1, requery)
    doc["info"]["model_stats"]["api_calls"] = 3
    trace = read_trace(str(write(tmp_path, doc)))
    assert len(trace.calls) == 3 and "api-calls-differ" not in notes(trace)
    assert roles(trace.calls[1]) == ["system", "user", "assistant", "user"]


def test_a_1_0_trajectory_without_queries_is_read_from_its_raw_history(tmp_path):
    doc = v1_traj(query=False)
    doc["replay_config"] = json.loads(v1_config([{"type": "last_n_observations", "n": 5}]))  # 1.0: an object
    trace = read_trace(str(write(tmp_path, doc)))
    assert [roles(call) for call in trace.calls] == [["system", "user"], ["system", "user", "assistant", "tool"]]
    assert "raw-history" in notes(trace) and trace.model == "gpt-4o"


def test_convert_system_to_user_is_followed(tmp_path):
    doc = v1_traj()
    doc["replay_config"] = v1_config(convert_system_to_user=True)
    trace = read_trace(str(write(tmp_path, doc)))
    assert roles(trace.calls[0]) == ["user", "user"]


def test_images_are_left_out_and_said(tmp_path):
    doc = v1_traj()
    doc["trajectory"][0]["query"][1]["content"] = [
        {"type": "text", "text": "define cat"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
    ]
    trace = read_trace(str(write(tmp_path, doc)))
    assert trace.calls[0].messages[1]["content"] == "define cat"
    assert notes(trace)["content-not-text"] == ["trajectory[0].query[1].content[1]"]


def test_every_attempt_of_a_retry_loop_is_read_once(tmp_path):
    first, second = v1_traj(), v1_traj()
    second["trajectory"] = second["trajectory"][:1]
    doc = {**copy.deepcopy(second), "attempts": [first, second]}  # the top level copies the chosen attempt
    doc["info"] = {**second["info"], "best_attempt_idx": 1, "model_stats": stats(calls=3)}
    trace = read_trace(str(write(tmp_path, doc)))
    assert [call.where for call in trace.calls] == [
        "attempts[0].trajectory[0]",
        "attempts[0].trajectory[1]",
        "attempts[1].trajectory[0]",
    ]
    found = notes(trace)
    assert found["attempts"] == ["attempts: 2"] and "api-calls-differ" not in found


# -- bad input ----------------------------------------------------------------------------------------
def _set(doc: dict, keys: list, value: object) -> dict:
    target = doc
    for key in keys[:-1]:
        target = target[key]
    target[keys[-1]] = value
    return doc


@pytest.mark.parametrize(
    "make, place, message",
    [
        (lambda: _set(v0_traj(), ["history", 3, "role"], "robot"), "history[3].role", "expected one of"),
        (lambda: _set(v0_traj(), ["history", 2, "content"], 7), "history[2].content", "expected a string"),
        (lambda: _set(v0_traj(), ["history", 4, "agent"], 1), "history[4].agent", "expected a string"),
        (lambda: _set(v0_traj(), ["history"], {}), "history", "expected a list"),
        (
            lambda: _set(v0_traj(), ["info", "model_stats", "tokens_sent"], -1),
            "info.model_stats.tokens_sent",
            "non-neg",
        ),
        (
            lambda: _set(v1_traj(), ["trajectory", 1, "query", 3, "tool_call_ids"], None),
            "trajectory[1].query[3].tool_call_ids",
            "expected a list",
        ),
        (
            lambda: _set(v1_traj(), ["trajectory", 1, "query", 2, "tool_calls"], "ls"),
            "trajectory[1].query[2].tool_calls",
            "expected a list",
        ),
        (lambda: _set(v1_traj(), ["trajectory", 0, "query"], "ls"), "trajectory[0].query", "expected a list"),
        (lambda: _set(v1_traj(), ["trajectory", 0, "response"], 3), "trajectory[0].response", "expected a string"),
        (lambda: _set(v1_traj(), ["replay_config"], "{not json"), "replay_config", "not valid JSON"),
    ],
)
def test_a_bad_field_is_one_line_naming_the_file_and_place(tmp_path, capsys, make, place, message):
    path = write(tmp_path, make())
    assert main(["profile", str(path), "-i", "swe-agent", "--no-progress"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"tokprof: error: {path}: {place}: ") and message in err


# -- detection and directories ------------------------------------------------------------------------
def test_a_demonstration_is_not_a_run_and_says_so(tmp_path, capsys):
    path = write(tmp_path, {"history": v1_history()}, "demo.traj")
    assert main(["profile", str(path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.strip().endswith("looks like an SWE-agent demonstration (a history without trajectory steps: not a run)")


def test_a_trajectory_is_recognised_whatever_its_name(tmp_path):
    assert read_trace(str(write(tmp_path, v0_traj(), "run.json"))).format == "swe-agent"


def test_a_run_folder_finds_every_trajectory_even_one_larger_than_the_peek(tmp_path):
    run = tmp_path / "trajectories" / "me" / "gpt4__dev__default"
    (run / "inst-2").mkdir(parents=True)
    small = write(run, v0_traj(), "inst-1.traj")
    big_doc = v1_traj()
    big_doc["trajectory"][1]["query"][3]["content"] = "line of a file\n" * 6000
    big = write(run / "inst-2", big_doc, "inst-2.traj")
    assert big.stat().st_size > 64 * 1024
    (run / "run_batch_exit_statuses.yaml").write_text("submitted: [inst-1]\n")
    found = scan_directory(str(tmp_path))
    assert found.sessions == [("swe-agent", small), ("swe-agent", big)] and found.skipped == []


def test_a_trajectory_larger_than_a_whole_parse_is_found_by_its_name_and_start(tmp_path, monkeypatch):
    from tokprof.formats import discovery

    monkeypatch.setattr(discovery, "PEEK_BYTES", 70 * 1024)  # 1.x trajectories record every query whole
    doc = v1_traj()
    doc["trajectory"][1]["query"][3]["content"] = "line of a file\n" * 6000
    traj, json_file = write(tmp_path, doc, "inst-1.traj"), write(tmp_path, doc, "inst-1.json")
    assert traj.stat().st_size > 70 * 1024
    found = scan_directory(str(tmp_path))
    assert found.sessions == [("swe-agent", traj)]
    assert [path for path, _ in found.skipped] == [json_file]  # a .json one is parsed whole, up to the limit


# -- the corpus -------------------------------------------------------------------------------------------
def test_the_corpus_trajectory(qwen25):
    """Every call's prompt is the history before its response, counted with the same model; tokens_sent
    (0.x: the OpenAI API's prompt tokens, summed: GPT-4's tokenizer) is only a sanity figure."""
    if not CORPUS.exists():
        pytest.skip("the shared corpus is absent")
    raw = json.loads(CORPUS.read_text(encoding="utf-8"))
    history = [{"role": item["role"], "content": item["content"]} for item in raw["history"]]
    answers = [i for i, item in enumerate(history) if item["role"] == "assistant"]
    model = tokprof.get_model("qwen2.5")
    expected = sum(model.count(history[:i]).total for i in answers)
    trace = read_trace(str(CORPUS))
    assert trace.format == "swe-agent" and len(trace.calls) == len(answers) == raw["info"]["model_stats"]["api_calls"]
    profile = tokprof.profile(trace)
    assert profile.summary().billed_input == expected
    for row in profile.calls:
        assert all(count >= 0 for count in row.buckets.values()) and sum(row.buckets.values()) == row.total
    sent = raw["info"]["model_stats"]["tokens_sent"]
    assert 0.8 < expected / sent < 1.25  # another tokenizer, same text
    # With GPT-4's tokenizer (OpenAI's estimate of its chat format) the raw history is what was billed:
    # the run used no history processor, so nothing the model saw was elided.
    estimate = tokprof.profile(trace, model="gpt-4").summary().billed_input
    assert abs(estimate / sent - 1) < 0.01
