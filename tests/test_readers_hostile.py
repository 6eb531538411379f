"""The readers against hostile and long input (#45 items 3, 4, 8, 9) and four readers made right
(#48.2: OpenCode's run stream, Cline 3.51's text results, Gemini CLI's all-zero tokens).

Every input is written here by hand in its agent's record shapes (the builders of the
``test_format_*`` files and ``benchmarks/long_sessions.py``); the shared corpus is read when present.
No test times anything: linear cost is checked by its structure (every prompt of a session is a view
of one list), speed itself in ``benchmarks/bench_readers.py``.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
from pathlib import Path

import pytest
from conftest import ROOT

import test_format_cline as cline_log
import test_format_gemini_cli as gemini_log
import test_format_opencode as opencode_log
import test_format_pi as pi_log
import test_format_qwen_code as qwen_log
from tokprof.formats import read_trace
from tokprof.frontends.cli import main
from tokprof.trace import PromptView

sys.path.insert(0, str(ROOT / "benchmarks"))
from long_sessions import WRITERS  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus"


def jsonl(path: Path, rows: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def one_line(args: list[str], capsys) -> str:
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert err.startswith("tokprof: error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- #45.3: parent cycles and repeated ids ------------------------------------------------------------
def pi_entries() -> list[dict]:
    header = {"type": "session", "version": 3, "id": "s1", "timestamp": pi_log.T, "cwd": "/w"}
    return [
        header,
        pi_log.entry("a", None, pi_log.say("hi")),
        pi_log.entry("b", "a", pi_log.answer("claude-sonnet-4-5", pi_log.usage(10, 2))),
        pi_log.entry("c", "b", pi_log.say("more")),
        pi_log.entry("d", "c", pi_log.answer("claude-sonnet-4-5", pi_log.usage(20, 2))),
    ]


@pytest.mark.parametrize(
    "change, named",
    [
        (lambda rows: rows[3].update(id="a"), "line 4: id: repeats the id of line 2"),  # a repeated id
        (lambda rows: rows[3].update(parentId="c"), "line 4: parentId: names the entry itself"),  # its own parent
        (lambda rows: rows[1].update(parentId="d"), "line 2: parentId: its parentId chain comes back to it"),
    ],
    ids=["repeated-id", "self-parent", "cycle"],
)
def test_pi_cycles_and_repeated_ids_are_one_line(tmp_path, capsys, change, named):
    rows = pi_entries()
    change(rows)
    path = jsonl(tmp_path / "s.jsonl", rows)
    assert named in one_line(["profile", str(path)], capsys)


def test_pi_repeated_ids_in_a_long_chain_end_at_once(tmp_path):
    """The reproduction of #45.3 (an entry whose parentId is itself, after a repeat: 54 s, 2.7 GB):
    the error comes from the file's own lines, before any prompt is built."""
    rows = pi_entries()
    rows += [pi_log.entry(f"x{k}", rows[-1]["id"] if k == 0 else f"x{k - 1}", pi_log.say("x")) for k in range(2000)]
    rows.append({**pi_log.entry("x5", "x5", pi_log.say("loop"))})
    path = jsonl(tmp_path / "s.jsonl", rows)
    with pytest.raises(Exception, match="repeats the id of line"):
        read_trace(str(path))


def test_claude_code_cycle_is_one_line(tmp_path, capsys):
    path = WRITERS["claude-code"](tmp_path, 3)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[0]["parentUuid"] = rows[-1]["uuid"]  # the first line's parent is the last: a cycle
    jsonl(path, rows)
    assert "parentUuid" in one_line(["profile", str(path)], capsys)


def test_qwen_code_self_parent_and_repeated_uuid_are_notes(tmp_path):
    rows = qwen_log.lines()
    rows.insert(1, {**rows[0]})  # the user record again, same uuid
    rows[0]["parentUuid"] = rows[0]["uuid"]
    trace = read_trace(str(jsonl(tmp_path / "q.jsonl", rows)))
    notes = {note.code: note.places for note in trace.notes}
    assert notes["parent-cycle"] == ["line 1"] and notes["repeated-uuid"] == ["line 2"]


def test_sessions_lists_the_others_and_the_bad_one_as_a_skipped_row(tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    folder = home / ".pi/agent/sessions/--w--"
    jsonl(folder / "good.jsonl", pi_entries())
    bad = pi_entries()
    bad[3]["id"] = "a"
    jsonl(folder / "bad.jsonl", bad)
    assert main(["sessions", "--agent", "pi", "-f", "json"]) == 0
    rows = {Path(row["path"]).name: row for row in json.loads(capsys.readouterr().out)["sessions"]}
    assert rows["good.jsonl"]["calls"] == 2 and rows["good.jsonl"]["error"] is None
    assert rows["bad.jsonl"]["calls"] is None and "line 4: id: repeats the id of line 2" in rows["bad.jsonl"]["error"]


# -- #45.4: history shared, linear in the session ------------------------------------------------------
@pytest.mark.parametrize("name", ["pi", "qwen-code", "cline", "gemini-cli", "opencode"])
def test_every_prompt_of_a_long_session_is_a_view_of_one_list(tmp_path, name):
    """Each reader holds a session's history once: n calls' prompts are views of one list (n
    references each, not n² between them), and reading them gives the prompts a list per call would."""
    path = WRITERS[name](tmp_path, 300)
    calls = read_trace(str(path)).calls
    assert len(calls) == 300
    assert all(isinstance(call.messages, PromptView) for call in calls)
    assert len({id(call.messages.base) for call in calls}) == 1
    lengths = [len(call.messages) for call in calls]
    assert lengths == sorted(lengths) and lengths[-1] - lengths[0] == 2 * 299  # a tool call and its result each


def test_a_pi_branch_keeps_its_own_prompt(tmp_path):
    """A branch (an entry whose parent is not the last one) does not see the entries of the other
    branch, though both extend one list where they can."""
    rows = pi_entries()
    rows.append(pi_log.entry("e", "b", pi_log.say("other way")))  # back to b: a second branch
    rows.append(pi_log.entry("f", "e", pi_log.answer("claude-sonnet-4-5", pi_log.usage(30, 2))))
    calls = read_trace(str(jsonl(tmp_path / "s.jsonl", rows))).calls
    assert [m["content"] for m in calls[2].messages] == ["hi", "", "other way"]
    assert [m["content"] for m in calls[1].messages] == ["hi", "", "more"]


# -- #45.8: OpenCode storage ids ---------------------------------------------------------------------
def storage(tmp_path: Path, message_id: str) -> tuple[Path, Path]:
    root = tmp_path / "storage"
    session = {"id": "ses_1", "projectID": "p", "time": {"created": 1}}
    path = root / "session" / "p" / "ses_1.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(session))
    folder = root / "message" / "ses_1"
    folder.mkdir(parents=True)
    info = {"id": message_id, "sessionID": "ses_1", "role": "assistant", "time": {"created": 2}}
    info["tokens"] = opencode_log.tokens(10, 2)
    (folder / "msg_1.json").write_text(json.dumps(info))
    outside = tmp_path / "outside" / "parts"  # what ../../outside/parts would read
    outside.mkdir(parents=True)
    (outside / "p.json").write_text(json.dumps({"type": "text", "text": "secret " * 50}))
    return path, outside


@pytest.mark.parametrize("message_id", ["../../outside/parts", "m" * 300, "", ".."])
def test_opencode_storage_ids_are_checked_before_they_are_paths(tmp_path, capsys, message_id):
    path, _ = storage(tmp_path, message_id)
    err = one_line(["profile", str(path)], capsys)
    assert "msg_1.json: id" in err and ("not an OpenCode id" in err or "empty" in err or "expected" in err)
    assert "m" * 100 not in err  # a long id is cut in the message


def test_opencode_storage_link_out_of_the_store_is_not_read(tmp_path, capsys):
    path, outside = storage(tmp_path, "msg_1")
    (tmp_path / "storage" / "part").mkdir()
    (tmp_path / "storage" / "part" / "msg_1").symlink_to(outside)
    assert "a link out of the OpenCode storage folder" in one_line(["profile", str(path)], capsys)


def test_opencode_storage_repeated_message_id_is_one_line(tmp_path, capsys):
    path, _ = storage(tmp_path, "msg_1")
    folder = tmp_path / "storage" / "message" / "ses_1"
    (folder / "msg_2.json").write_text((folder / "msg_1.json").read_text())
    assert "repeats the message id of" in one_line(["profile", str(path)], capsys)


# -- #45.9: opencode.db listed, read consistently, a locked store one line ----------------------------
def opencode_home(tmp_path: Path, monkeypatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    db = home / ".local/share/opencode/opencode.db"
    db.parent.mkdir(parents=True)
    opencode_log.write_db(db)
    return db


def test_sessions_lists_opencode_db(tmp_path, monkeypatch, capsys):
    opencode_home(tmp_path, monkeypatch)
    assert main(["sessions", "--agent", "opencode", "-f", "json"]) == 0
    [row] = json.loads(capsys.readouterr().out)["sessions"]
    assert row["format"] == "opencode" and Path(row["path"]).name == "opencode.db" and row["calls"] == 2


def test_a_locked_store_is_read_from_a_copy_and_never_changed(tmp_path, monkeypatch, capsys):
    db = opencode_home(tmp_path, monkeypatch)
    before = digest(db)
    agent = sqlite3.connect(db, isolation_level=None)  # the running agent, holding the store locked
    try:
        agent.execute("BEGIN EXCLUSIVE")
        assert main(["profile", str(db), "--model", "qwen2.5", "-f", "json", "-o", str(tmp_path / "out.json")]) == 0
        assert len(json.loads((tmp_path / "out.json").read_text())["calls"]) == 2
        capsys.readouterr()
        assert main(["sessions", "--agent", "opencode", "-f", "json"]) == 0
        [row] = json.loads(capsys.readouterr().out)["sessions"]
        assert row["calls"] == 2 and row["error"] is None
    finally:
        agent.execute("ROLLBACK")
        agent.close()
    assert digest(db) == before and sorted(p.name for p in db.parent.iterdir()) == ["opencode.db"]


def test_a_store_the_agent_writes_in_wal_mode_is_read_as_it_was(tmp_path, monkeypatch, capsys):
    db = opencode_home(tmp_path, monkeypatch)
    agent = sqlite3.connect(db, isolation_level=None)
    try:
        agent.execute("PRAGMA journal_mode=WAL")
        agent.execute("BEGIN IMMEDIATE")
        agent.execute("DELETE FROM part")  # not committed: the reader sees the store as it was
        trace = read_trace(str(db))
        opencode_log.check_calls(trace)
    finally:
        agent.execute("ROLLBACK")
        agent.close()


# -- #48.2: OpenCode run stream: billed input as reported, no stand-in system prompt -------------------
def test_opencode_run_billed_input_is_reported_and_no_system_prompt_counted(tmp_path, capsys):
    events = opencode_log.run_events()
    path = jsonl(tmp_path / "run.jsonl", events)
    finishes = [e["part"]["tokens"] for e in events if e["type"] == "step_finish"]
    billed = sum(t["input"] + t["cache"]["read"] + t["cache"]["write"] for t in finishes)
    assert main(["profile", str(path), "-f", "json"]) == 0  # no model named: the default, as a stand-in
    doc = json.loads(capsys.readouterr().out)
    assert doc["model"]["exact"] is False and doc["model"]["name"] == "qwen2.5"
    assert doc["summary"]["billed_input"] == doc["summary"]["billed_input_reported"] == billed
    assert all(call["buckets"]["system"] == 0 for call in doc["calls"])  # Qwen's "You are Qwen..." not counted
    assert [call["total"] for call in doc["calls"]] == [
        t["input"] + t["cache"]["read"] + t["cache"]["write"] for t in finishes
    ]
    assert main(["profile", str(path)]) == 0
    out = capsys.readouterr().out
    assert "billed input, reported" not in out
    assert f"billed input              {billed:,} tokens (as reported: 2 calls with usage)" in out


def test_corpus_opencode_run_billed_input(capsys):
    path = CORPUS / "opencode" / "opencode_run_json_analysis_20260117_125610.jsonl"
    if not path.exists():
        pytest.skip("the shared corpus is absent")
    events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    finishes = [e["part"]["tokens"] for e in events if e["type"] == "step_finish"]
    billed = sum(t["input"] + t["cache"]["read"] + t["cache"]["write"] for t in finishes)
    assert billed == 1_119_547
    assert main(["profile", str(path), "-f", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["billed_input"] == billed and doc["summary"]["buckets_billed"]["system"] == 0
    for call in doc["calls"]:
        assert sum(call["buckets"].values()) == call["total"] and min(call["buckets"].values()) >= 0


# -- #48.2: Cline 3.51's tool results in user text -------------------------------------------------------
def cline_351() -> tuple[list, list]:
    """Cline 3.51: native tool_use blocks, their results sent back as user text blocks."""
    t0 = cline_log.T0
    history = [
        {
            "role": "user",
            "ts": t0,
            "content": [{"type": "text", "text": "<task>\nRead a.py\n</task>"}, cline_log.env()],
        },
        {
            "role": "assistant",
            "ts": t0 + 100,
            "content": [
                {"type": "text", "text": "Reading both."},
                {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.py"}},
                {"type": "tool_use", "id": "toolu_2", "name": "execute_command", "input": {"command": "ls"}},
            ],
        },
        {
            "role": "user",
            "ts": t0 + 150,
            "content": [
                {"type": "text", "text": "[read_file for 'a.py'] Result:"},
                {"type": "text", "text": "print('a')\n" * 40},
                {"type": "text", "text": "[execute_command for 'ls'] Result:\na.py\nb.py"},
                cline_log.env(),
            ],
        },
        {"role": "assistant", "ts": t0 + 200, "content": [{"type": "text", "text": "a.py prints a."}]},
    ]
    ui = [cline_log.req(50, 900, 20, 0, 800, 0.002), cline_log.req(180, 1300, 10, 0, 900, 0.003)]
    return history, ui


def test_cline_351_text_results_are_tool_results(tmp_path, capsys):
    history, ui = cline_351()
    path = cline_log.write_task(tmp_path / "tasks" / "t1", history, ui)
    trace = read_trace(str(path))
    assert "text-tool-results" not in {note.code for note in trace.notes}
    last = trace.calls[-1].messages
    tools = [m for m in last if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tools] == ["toolu_1", "toolu_2"]
    assert tools[0]["content"].startswith("[read_file for 'a.py'] Result:\nprint('a')")
    assert tools[1]["content"] == "[execute_command for 'ls'] Result:\na.py\nb.py"
    assert last[-1]["role"] == "user" and "<environment_details>" in last[-1]["content"]
    assert main(["profile", str(path), "--model", "qwen2.5", "-f", "json"]) == 0
    row = json.loads(capsys.readouterr().out)["calls"][-1]
    assert row["buckets"]["tool_results"] > 0


def test_cline_xml_protocol_results_stay_user_text(tmp_path):
    history, ui = cline_log.roo_task()
    trace = read_trace(str(cline_log.write_task(tmp_path / "t", history, ui)))
    assert "text-tool-results" in {note.code for note in trace.notes}  # no native call to answer: the text it was


# -- #48.2: Gemini CLI's all-zero tokens: one rule in profile and sessions -------------------------------
def test_gemini_zero_tokens_cost_the_same_in_profile_and_sessions(tmp_path, monkeypatch, capsys):
    messages = gemini_log.messages()
    first = next(m for m in messages if m["type"] == "gemini")
    first["tokens"] = {key: 0 for key in first["tokens"]}  # a real call whose usage was not recorded
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    path = home / ".gemini/tmp/p1/chats/session-2026-03-26T04-33-z.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(gemini_log.session(messages)))
    assert main(["profile", str(path), "-f", "json"]) == 0
    cost = json.loads(capsys.readouterr().out)["summary"]["cost"]
    assert cost["calls_unpriced"] == 1 and "usage not recorded" in cost["unpriced"][0]["reason"]
    assert main(["sessions", "--agent", "gemini-cli", "-f", "json"]) == 0
    [row] = json.loads(capsys.readouterr().out)["sessions"]
    assert row["cost"] == pytest.approx(cost["total"], abs=1e-8) and row["usage_not_recorded"] == 1
    assert main(["sessions", "--agent", "gemini-cli"]) == 0
    assert "usage not recorded for 1 call of" in capsys.readouterr().out


def test_corpus_gemini_zero_tokens_same_cost_in_profile_and_sessions(tmp_path, monkeypatch, capsys):
    source = CORPUS / "gemini_cli" / "gemini-2.5-pro_pomodoro-timer.json"
    if not source.exists():
        pytest.skip("the shared corpus is absent")
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    path = home / ".gemini/tmp/p1/chats/session-2025-10-21T20-04-pomodoro.json"
    path.parent.mkdir(parents=True)
    path.symlink_to(source)  # the corpus file where Gemini CLI keeps its sessions (a link, not a copy)
    assert main(["profile", str(path), "-f", "json"]) == 0
    cost = json.loads(capsys.readouterr().out)["summary"]["cost"]
    assert main(["sessions", "--agent", "gemini-cli", "-f", "json"]) == 0
    [row] = json.loads(capsys.readouterr().out)["sessions"]
    assert round(cost["total"], 4) == round(row["cost"], 4) == 0.1156  # profile priced it $0.1231 before
    assert cost["calls_unpriced"] == row["usage_not_recorded"] == 1
