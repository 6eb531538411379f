"""A directory of agent sessions: a summary row per session and the totals; --session picks one."""

from __future__ import annotations

import json
from pathlib import Path


import test_format_claude_code as cc
import test_format_codex as cx
from conftest import write_json
from tokprof.frontends.cli import main


def claude_project(root: Path) -> Path:
    project = root / "projects" / "-home-me-app"
    cc.write_jsonl(project / "sess-compacted.jsonl", [dict(row, sessionId="sess-compacted") for row in cc.compacted()])
    simple = [cc.user("u1", None, "hello"), cc.assistant("a1", "u1", "r9", [cc.text("hi")], stop="end_turn")]
    cc.write_jsonl(project / "sess-simple.jsonl", [dict(row, sessionId="sess-simple") for row in simple])
    (project / "notes.jsonl").write_text('{"not": "a session"}\n')  # another file: listed as skipped, with why
    return project


def codex_tree(root: Path) -> Path:
    day = root / "sessions" / "2025" / "09" / "25"
    day.mkdir(parents=True)
    count = cx.Counter()
    cx.write(
        day,
        [
            cx.meta(session="codex-1"),
            cx.user("fix it"),
            cx.context(),
            count(100),
            cx.call("c1"),
            cx.result("c1"),
            count(150),
            cx.say("done"),
        ],
        name="rollout-2025-09-25T09-00-00-codex-1.jsonl",
    )
    return root / "sessions"


def run(args, capsys):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_claude_project_directory(tmp_path, model_dir, capsys):
    project = claude_project(tmp_path)
    code, out, _ = run(["profile", str(project), "--model", str(model_dir), "-f", "json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc["kind"] == "sessions"
    assert doc["skipped"] == [
        {
            "path": str(project / "notes.jsonl"),
            "error": f"{project / 'notes.jsonl'}: not a session of an agent tokprof reads: "
            "looks like JSON lines of no format tokprof reads",
        }
    ]
    rows = {row["session"]: row for row in doc["sessions"]}
    assert set(rows) == {"sess-compacted", "sess-simple"}
    assert rows["sess-compacted"]["compactions"] == 1 and rows["sess-compacted"]["calls"] == 3
    assert rows["sess-simple"]["calls"] == 1 and rows["sess-simple"]["format"] == "claude-code"
    for row in rows.values():
        assert sum(row["buckets_billed"].values()) == row["billed_input"]
        assert "unrecorded" in row["buckets_billed"] and row["exact"] is False
        assert row["billed_input_reported"] == row["billed_input"] or row["billed_input_reported"] is not None
    totals = doc["totals"]
    assert totals["sessions"] == 2 and totals["calls"] == 4 and totals["compactions"] == 1
    assert totals["billed_input"] == sum(r["billed_input"] for r in rows.values())

    code, out, _ = run(["profile", str(project), "--model", str(model_dir)], capsys)
    assert code == 0 and "sess-com " in out and "total" in out and "INFERRED" in out
    code, out, _ = run(["profile", str(project), "--model", str(model_dir), "-f", "csv"], capsys)
    assert code == 0 and out.splitlines()[0].startswith("session,path,format,model,calls")


def test_session_picks_one(tmp_path, model_dir, capsys):
    project = claude_project(tmp_path)
    code, out, _ = run(
        ["profile", str(project), "--model", str(model_dir), "--session", "simple", "-f", "json"], capsys
    )
    assert code == 0
    doc = json.loads(out)
    assert doc["source"]["session"] == "sess-simple" and len(doc["calls"]) == 1
    code, _, err = run(["profile", str(project), "--model", str(model_dir), "--session", "sess"], capsys)
    assert code == 2 and "2 sessions" in err and err.count("\n") == 1
    code, _, err = run(["profile", str(project), "--model", str(model_dir), "--session", "nope"], capsys)
    assert code == 2 and "no session matches (the folder has " in err


def test_codex_tree_and_mixed_directory(tmp_path, model_dir, capsys):
    claude_project(tmp_path)
    codex_tree(tmp_path)
    code, out, _ = run(["profile", str(tmp_path), "--model", str(model_dir), "-f", "json"], capsys)
    assert code == 0
    doc = json.loads(out)
    formats = sorted(row["format"] for row in doc["sessions"])
    assert formats == ["claude-code", "claude-code", "codex"]
    codex_row = next(row for row in doc["sessions"] if row["format"] == "codex")
    assert codex_row["session"] == "codex-1" and codex_row["billed_input_reported"] == 250
    assert codex_row["path"].startswith("sessions/2025/09/25/rollout-")


def test_a_broken_session_is_skipped_not_fatal(tmp_path, model_dir, capsys):
    project = claude_project(tmp_path)
    broken = [cc.user("u1", None, "hello"), cc.assistant("a1", "u1", "r1", [cc.text("hi")], use={"input_tokens": -4})]
    cc.write_jsonl(project / "sess-broken.jsonl", [dict(row, sessionId="sess-broken") for row in broken])
    code, out, _ = run(["profile", str(project), "--model", str(model_dir), "-f", "json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert len(doc["sessions"]) == 2 and len(doc["skipped"]) == 2  # the broken session first, then notes.jsonl
    assert "sess-broken.jsonl" in doc["skipped"][0]["error"] and "input_tokens" in doc["skipped"][0]["error"]
    assert doc["skipped"][1]["path"].endswith("notes.jsonl")


def test_directory_errors(tmp_path, model_dir, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, err = run(["profile", str(empty), "--model", str(model_dir)], capsys)
    assert code == 2 and out == "" and "no agent session files" in err and err.count("\n") == 1
    project = claude_project(tmp_path)
    code, _, err = run(["profile", str(project), "--model", str(model_dir), "--html", str(tmp_path / "r.html")], capsys)
    assert code == 2 and "--session" in err and not (tmp_path / "r.html").exists()
    log = write_json(
        tmp_path / "log.json", {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "x"}]}
    )
    code, _, err = run(["profile", str(log), "--session", "x"], capsys)
    assert code == 2 and "directory" in err


def test_a_session_model_tokprof_does_not_have_is_a_labelled_stand_in(tmp_path, capsys):
    day = tmp_path / "sessions"
    day.mkdir()
    count = cx.Counter()
    cx.write(
        day,
        [cx.meta(session="g-1"), cx.user("fix it"), cx.context(model="grok-4-fast"), count(100), cx.say("done")],
        name="rollout-2025-09-25T09-00-00-g-1.jsonl",
    )
    code, out, _ = run(["profile", str(day), "-f", "json"], capsys)
    row = json.loads(out)["sessions"][0]
    assert code == 0 and row["exact"] is False and "stand-in" in row["estimate"] and row["profiled_with"] == "qwen2.5"
    assert row["billed_input"] == row["billed_input_reported"] == 100  # scaled like any estimate


def test_copies_and_links_are_counted_once(tmp_path, model_dir, capsys):
    project = claude_project(tmp_path)
    (project / "linked.jsonl").symlink_to(project / "sess-simple.jsonl")
    (project / "loop").symlink_to(project, target_is_directory=True)
    resumed = [
        cc.user("u1", None, "hello"),
        cc.assistant("a1", "u1", "r9", [cc.text("hi")], stop="end_turn"),
        cc.user("u2", "a1", "more"),
        cc.assistant("a2", "u2", "r10", [cc.text("ok")], stop="end_turn"),
    ]
    cc.write_jsonl(project / "sess-resumed.jsonl", [dict(row, sessionId="sess-resumed") for row in resumed])
    code, out, _ = run(["profile", str(project), "--model", str(model_dir), "-f", "json"], capsys)
    doc = json.loads(out)
    rows = {row["session"]: row for row in doc["sessions"]}
    assert code == 0 and sorted(rows) == ["sess-compacted", "sess-resumed", "sess-simple"]
    assert rows["sess-resumed"]["calls"] == 1 and "duplicate-call" in rows["sess-resumed"]["warnings"]
    assert doc["totals"]["calls"] == 5


def test_odd_lines_never_crash_detection(tmp_path, capsys):
    odd = tmp_path / "odd"
    odd.mkdir()
    (odd / "a.jsonl").write_text('{"type": ["user"], "sessionId": "x"}\n')
    code, _, err = run(["profile", str(odd / "a.jsonl")], capsys)
    assert code == 2 and "not a log format tokprof reads" in err and "Traceback" not in err
    (odd / "deep.jsonl").write_text("[" * 50000 + "]" * 50000 + "\n")
    code, _, err = run(["profile", str(odd)], capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err


def test_tools_on_a_log_without_tool_definitions_says_so(tmp_path, model_dir, capsys):
    project = claude_project(tmp_path)
    code, out, _ = run(
        ["tools", str(project / "sess-compacted.jsonl"), "--model", str(model_dir), "-f", "json"], capsys
    )
    doc = json.loads(out)
    assert code == 0 and doc["unknown_tool_calls"] == []
    assert [w["code"] for w in doc["warnings"]] == ["tools-unrecorded"] and "Bash" in doc["warnings"][0]["message"]


def test_input_format_filters_a_directory(tmp_path, model_dir, capsys):
    claude_project(tmp_path)
    codex_tree(tmp_path)
    code, out, _ = run(["profile", str(tmp_path), "--model", str(model_dir), "-i", "codex", "-f", "json"], capsys)
    assert code == 0 and [row["format"] for row in json.loads(out)["sessions"]] == ["codex"]
    code, _, err = run(["profile", str(tmp_path), "--model", str(model_dir), "-i", "anthropic"], capsys)
    assert code == 2 and "not anthropic" in err


# -- sessions found by content --------------------------------------------------------------------------
def mixed_tree(root: Path) -> Path:
    """Sessions under names their tools never use, and files that are not sessions."""
    import test_format_claude_print as cs

    tree = root / "artifacts"
    (tree / "ci").mkdir(parents=True)
    count = cx.Counter()
    cx.write(
        tree / "ci",
        [cx.meta(session="codex-9"), cx.user("fix it"), cx.context(), count(100), cx.say("done")],
        name="codex-run.jsonl",
    )  # a rollout not named rollout-*
    cc.write_jsonl(
        tree / "claude" / "main.jsonl",
        [cc.user("u1", None, "hello"), cc.assistant("a1", "u1", "r9", [cc.text("hi")], stop="end_turn")],
    )
    cc.write_jsonl(tree / "claude" / "main" / "subagents" / "agent-x.jsonl", cc.subagent_lines())  # read with main
    cs.write_jsonl(tree / "ci" / "claude-output.json", cs.run_lines())  # stream-json saved by a CI job
    write_json(tree / "tools.json", [{"name": "lookup", "input_schema": {"type": "object"}}])
    (tree / "ci" / "summary.json").write_text('{"passed": 3}')
    (tree / "ci" / "notes.txt").write_text("not json, and not .json: not looked at")
    (tree / "ci" / "report.jsonl").write_text("plain words\n")
    (tree / "empty.json").write_text("")
    write_json(tree / "chat.json", cc_free_chat())
    return tree


def cc_free_chat() -> dict:
    return {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "x"}]}


def test_sessions_are_found_by_content_and_every_other_file_is_listed(tmp_path, model_dir, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")  # the table's lines, unwrapped whatever the temporary path's length
    tree = mixed_tree(tmp_path)
    code, out, _ = run(["profile", str(tree), "--model", str(model_dir), "-f", "json"], capsys)
    assert code == 0
    doc = json.loads(out)
    rows = {row["path"]: row for row in doc["sessions"]}
    assert sorted(rows) == ["ci/claude-output.json", "ci/codex-run.jsonl", "claude/main.jsonl"]
    assert rows["ci/codex-run.jsonl"]["format"] == "codex" and rows["ci/codex-run.jsonl"]["session"] == "codex-9"
    assert rows["ci/claude-output.json"]["format"] == "claude-stream-json"
    assert rows["claude/main.jsonl"]["calls"] == 3  # its subagent's two calls included
    reasons = {Path(s["path"]).name: s["error"].split(": ", 1)[1] for s in doc["skipped"]}
    not_session = "not a session of an agent tokprof reads: "
    assert reasons == {
        "chat.json": not_session
        + f"a log of format openai-chat (profile it on its own: tokprof profile {tree / 'chat.json'})",
        "empty.json": not_session + "the file is empty",
        "report.jsonl": not_session + "looks like plain text",
        "summary.json": not_session + "looks like JSON of no format tokprof reads",
        "tools.json": not_session + f"looks like a tools file (a list of tool definitions): use tokprof tools --tools "
        f"{tree / 'tools.json'}",
    }
    assert all(s["error"].startswith(s["path"] + ": ") for s in doc["skipped"])
    code, out, _ = run(["profile", str(tree), "--model", str(model_dir)], capsys)
    assert code == 0 and f"skipped: {tree / 'tools.json'}: {not_session}looks like a tools file" in out


def test_an_unreadable_file_is_listed(tmp_path, model_dir, capsys, monkeypatch):

    from tokprof.formats import discovery

    project = claude_project(tmp_path)
    locked = project / "locked.jsonl"
    locked.write_text("{}\n")

    from tokprof.base import bounded

    opened = bounded.open_input

    def guarded(path, *args, **kwargs):
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return opened(path, *args, **kwargs)

    monkeypatch.setattr(bounded, "open_input", guarded)  # discovery opens a user's files through it
    found = discovery.scan(project)
    assert (locked, "unreadable: Permission denied") in found.skipped
    assert [path.name for _, path in found.sessions] == ["sess-compacted.jsonl", "sess-simple.jsonl"]


def test_a_large_json_document_is_not_parsed_to_say_what_it_is(tmp_path):
    from tokprof.formats import discovery

    big = {"events": [{"id": 1, "source": "agent", "action": "run " * 50, "observation": "x" * 500}] * 300}
    path = tmp_path / "events.json"
    path.write_text(json.dumps(big, indent=2))
    assert path.stat().st_size > 64 * 1024
    found = discovery.scan(tmp_path)
    assert found.skipped == [
        (
            path,
            "not a session of an agent tokprof reads: looks like an OpenHands trajectory (a list of events)",
        )
    ]
    (tmp_path / "events.json").write_text(json.dumps({"data": ["x" * 100] * 1000}, indent=2))
    assert discovery.scan(tmp_path).skipped[0][1] == (
        "not a session of an agent tokprof reads: looks like a JSON document (only its start was read)"
    )


def test_no_session_says_what_else_was_found(tmp_path, model_dir, capsys):
    folder = tmp_path / "nothing"
    folder.mkdir()
    write_json(folder / "tools.json", [{"name": "lookup", "input_schema": {"type": "object"}}])
    code, out, err = run(["profile", str(folder), "--model", str(model_dir)], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "no agent session files in this directory (1 other files: " in err
    assert "looks like a tools file" in err


def test_jobs_give_the_same_report(tmp_path, model_dir, capsys):
    project = claude_project(tmp_path)
    resumed = [
        cc.user("u1", None, "hello"),
        cc.assistant("a1", "u1", "r9", [cc.text("hi")], stop="end_turn"),
        cc.user("u2", "a1", "more"),
        cc.assistant("a2", "u2", "r10", [cc.text("ok")], stop="end_turn"),
    ]
    cc.write_jsonl(project / "sess-resumed.jsonl", [dict(row, sessionId="sess-resumed") for row in resumed])
    (project / "broken.jsonl").write_text('{"type": "user", "sessionId": "x", "message": {"role": "user"}}\n' * 2)
    outs = [
        run(["profile", str(project), "--model", str(model_dir), "-f", "json", "--jobs", str(n)], capsys)
        for n in (1, 2, 3)
    ]
    assert outs[0][0] == 0 and outs[0] == outs[1] == outs[2]
    assert json.loads(outs[0][1])["totals"]["calls"] == 5  # copies counted once whatever the number of jobs
