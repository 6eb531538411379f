"""The Cline / Roo Code / Kilo Code reader: task folders (#27, item 3).

The corpus holds no Cline-family task (SOURCES.md lists none), so the fixtures are written here, in
the shapes the agents' source writes: cline/cline before its SDK migration (commit 94f5a47's parent:
src/core/storage/disk.ts writes api_conversation_history.json, ui_messages.json and task_metadata.json
with JSON.stringify; src/core/task/index.ts says api_req_started with {request}, adds the user message
with ts, then updates the entry with tokensIn/tokensOut/cacheWrites/cacheReads/cost, and cancelReason
when cancelled; assistant messages carry modelInfo and ts; ContextTrackerTypes.ts gives model_usage and
environment_history) and RooCodeInc/Roo-Code (src/core/task/Task.ts: api_req_started {apiProtocol},
tokensIn = the whole prompt since #8954; src/core/task-persistence/apiMessages.ts: condenseId /
condenseParent, type "reasoning" items). Values are made up.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tokprof
from tokprof.runs.sessions import local_sessions
from tokprof.runs.sessions import session_in_folder
from tokprof.frontends.cli import main
from tokprof.formats import read_trace, session_files

T0 = 1767268800000  # 2026-01-01T12:00:00Z, in milliseconds
SONNET = "claude-sonnet-4-5-20250929"


def req(ts: int, tokens_in: int, tokens_out: int, writes: int, reads: int, cost: float | None, **extra) -> dict:
    info = {
        "request": "[read_file] ...",
        "tokensIn": tokens_in,
        "tokensOut": tokens_out,
        "cacheWrites": writes,
        "cacheReads": reads,
        **({"cost": cost} if cost is not None else {}),
        **extra,
    }
    return {
        "ts": T0 + ts,
        "type": "say",
        "say": "api_req_started",
        "text": json.dumps(info),
        "conversationHistoryIndex": -1,
    }


def env(text: str = "# Current Working Directory (/work/app) Files\ncat.txt") -> dict:
    return {"type": "text", "text": f"<environment_details>\n{text}\n</environment_details>"}


def cline_task() -> tuple[list, list, dict]:
    """(history, ui messages, metadata) of a Cline task with native tool calls: a billed request with a
    tool call, one cancelled before anything streamed (zero usage: not billed), a resumed one."""
    model_info = {"modelId": SONNET, "providerId": "anthropic", "mode": "act"}
    history = [
        {"role": "user", "content": [{"type": "text", "text": "<task>\nDefine cat.\n</task>"}, env()], "ts": T0 + 60},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "cat.txt"}},
            ],
            "modelInfo": model_info,
            "id": "req_1",
            "ts": T0 + 200,
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "text", "text": "a small feline"}],
                },
                env(),
            ],
            "ts": T0 + 260,
        },
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "\n\n[Response interrupted by user]"}],
            "modelInfo": model_info,
            "ts": T0 + 310,
        },
        {"role": "user", "content": [{"type": "text", "text": "[TASK RESUMPTION] Continue."}, env()], "ts": T0 + 410},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "A cat is a small feline."}],
            "modelInfo": model_info,
            "id": "req_3",
            "ts": T0 + 500,
        },
    ]
    ui = [
        {"ts": T0, "type": "say", "say": "task", "text": "Define cat."},
        req(50, 3, 60, 2000, 0, 0.0084),
        {"ts": T0 + 210, "type": "say", "say": "text", "text": "Let me look."},
        req(250, 0, 0, 0, 0, 0.0, cancelReason="user_cancelled"),
        {"ts": T0 + 320, "type": "ask", "ask": "resume_task"},
        req(400, 20, 40, 30, 2000, 0.0015),
        {"ts": T0 + 510, "type": "say", "say": "completion_result", "text": "A cat is a small feline."},
    ]
    metadata = {
        "files_in_context": [],
        "model_usage": [{"ts": T0 + 40, "model_id": SONNET, "model_provider_id": "anthropic", "mode": "act"}],
        "environment_history": [
            {
                "ts": T0,
                "os_name": "linux",
                "os_version": "6",
                "os_arch": "x64",
                "host_name": "VS Code",
                "host_version": "1.99",
                "cline_version": "3.35.0",
            }
        ],
    }
    return history, ui, metadata


def write_task(folder: Path, history: list, ui: list | None, metadata: dict | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "api_conversation_history.json").write_text(json.dumps(history))  # compact, as the agents write it
    if ui is not None:
        (folder / "ui_messages.json").write_text(json.dumps(ui))
    if metadata is not None:
        (folder / "task_metadata.json").write_text(json.dumps(metadata, indent=2))
    return folder / "api_conversation_history.json"


def independent_sums(ui: list, includes_cache: bool = False) -> tuple[int, int, float]:
    """Billed input, output and cost from the file's own fields, summed here."""
    prompt = output = 0
    cost = 0.0
    for entry in ui:
        if entry.get("say") != "api_req_started":
            continue
        info = json.loads(entry["text"])
        counts = [info.get(k, 0) for k in ("tokensIn", "cacheWrites", "cacheReads")]
        prompt += counts[0] if includes_cache else sum(counts)
        output += info.get("tokensOut", 0)
        cost += info.get("cost", 0.0)
    return prompt, output, cost


def check_buckets(profile) -> None:
    for row in profile.calls:
        assert row.total == sum(row.buckets.values()) and min(row.buckets.values()) >= 0


def test_cline_task_calls_prompts_and_usage(tmp_path):
    history, ui, metadata = cline_task()
    path = write_task(tmp_path / "tasks" / "1767268800000", history, ui, metadata)
    trace = read_trace(str(path))
    assert trace.format == "cline" and trace.session == "1767268800000"
    assert trace.unrecorded == ("system", "tools") and trace.model == SONNET
    assert len(trace.calls) == 2  # the cancelled request had no usage
    first, last = trace.calls
    assert [m["role"] for m in first.messages] == ["user"] and first.request_id == "req_1"
    assert first.response["tool_calls"][0]["function"]["name"] == "read_file"
    assert [m["role"] for m in last.messages] == ["user", "assistant", "tool", "user", "assistant", "user"]
    assert last.messages[2] == {"role": "tool", "tool_call_id": "toolu_1", "content": "a small feline"}
    assert first.reported.prompt == 2003 and first.reported.cache_write == 2000
    assert last.reported.prompt == 2050 and last.reported.cache_read == 2000 and last.reported.output == 40
    assert first.time.isoformat() == "2026-01-01T12:00:00.050000+00:00" and first.cwd == "/work/app"
    codes = {note.code for note in trace.notes}
    assert {"not-billed", "log-cost"} <= codes and "usage-includes-cache" not in codes
    assert trace.tool_calls()[0]["id"] == "toolu_1"


def test_billed_input_and_cost_equal_the_files_own_sums(tmp_path):
    history, ui, metadata = cline_task()
    path = write_task(tmp_path / "task", history, ui, metadata)
    profile = tokprof.profile(str(path), model="qwen2.5", prices=["1/2/0.1/1.25"])
    prompt, output, logged = independent_sums(ui)
    assert sum(row.reported.prompt for row in profile.calls) == prompt == 4053
    assert sum(row.reported.output for row in profile.calls) == output == 100
    reads, writes = 2000, 2030
    expected = ((prompt - reads - writes) * 1 + reads * 0.1 + writes * 1.25 + output * 2) / 1e6
    assert profile.summary().cost.total == pytest.approx(expected, abs=1e-12)
    note = next(n for n in read_trace(str(path)).notes if n.code == "log-cost")
    assert note.places == [f"{logged:.6f} USD in all"]
    check_buckets(profile)


def test_a_task_folder_is_one_session(tmp_path, capsys):
    history, ui, metadata = cline_task()
    folder = tmp_path / "tasks" / "1767268800000"
    write_task(folder, history, ui, metadata)
    assert session_in_folder(folder) == str(folder / "api_conversation_history.json")
    assert session_in_folder(tmp_path / "tasks") is None
    assert read_trace(str(folder)).session == "1767268800000"
    assert main(["profile", str(folder), "--model", "qwen2.5", "-f", "json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["calls"]) == 2
    assert len(tokprof.profile(str(folder), model="qwen2.5").calls) == 2
    assert main(["whatif", str(folder), "--model", "qwen2.5", "-p", "window:2", "-f", "json", "--no-progress"]) == 0
    assert json.loads(capsys.readouterr().out)["policies"]
    # a folder of task folders is a directory of sessions; the companions are not listed as skipped
    other = [{k: v for k, v in m.items() if k != "id"} for m in history]  # request ids are counted once per directory
    write_task(tmp_path / "tasks" / "1767268900000", other, ui)
    found = tokprof.formats.scan_directory(str(tmp_path / "tasks"))
    assert [kind for kind, _ in found.sessions] == ["cline", "cline"] and found.skipped == []
    assert main(["profile", str(tmp_path / "tasks"), "--model", "qwen2.5", "-f", "json", "--jobs", "1"]) == 0
    assert len(json.loads(capsys.readouterr().out)["sessions"]) == 2


def roo_task() -> tuple[list, list]:
    """A Roo Code task: tool results as user text (the XML protocol), no ts in the history, tokensIn the
    whole prompt (cache included), a condensed history, a stored reasoning item."""
    history = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "<task>\nDefine cat.\n</task>"}, env()],
            "condenseParent": "c1",
        },
        {
            "role": "assistant",
            "content": "Let me look.\n<read_file>\n<path>cat.txt</path>\n</read_file>",
            "condenseParent": "c1",
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "[read_file for 'cat.txt'] Result:"},
                {"type": "text", "text": "a small feline"},
                env(),
            ],
        },
        {"type": "reasoning", "encrypted_content": "gAAAA", "summary": []},
        {
            "role": "user",
            "content": [{"type": "text", "text": "Summary: the user asked to define cat."}],
            "isSummary": True,
            "condenseId": "c1",
        },
        {"role": "assistant", "content": [{"type": "text", "text": "A cat is a small feline."}]},
    ]
    ui = [
        {"ts": T0, "type": "say", "say": "text", "text": "Define cat."},
        req(50, 1500, 30, 1500, 0, 0.006, apiProtocol="openai"),
        req(300, 0, 0, 0, 0, None, apiProtocol="openai"),  # failed first chunk, never retried
        {"ts": T0 + 310, "type": "say", "say": "error_retry", "text": json.dumps({"attempt": 1, "maxAttempts": 3})},
        {"ts": T0 + 320, "type": "ask", "ask": "api_req_failed", "text": "500"},
        req(400, 1700, 20, 100, 1500, 0.001, apiProtocol="openai"),
    ]
    return history, ui


def test_roo_task_text_tools_condense_and_inclusive_usage(tmp_path):
    history, ui = roo_task()
    path = write_task(tmp_path / "rooveterinaryinc.roo-cline" / "tasks" / "t1", history, ui)
    trace = read_trace(str(path))
    codes = {note.code for note in trace.notes}
    assert {"usage-includes-cache", "text-tool-results", "reasoning-items", "not-billed"} <= codes
    assert [c.reported.prompt for c in trace.calls] == [1500, 1700]
    first, last = trace.calls  # the failed request left no message: the assistants answer the billed two
    assert (
        first.response["content"].startswith("Let me look.") and last.response["content"] == "A cat is a small feline."
    )
    assert [m["content"] for m in last.messages] == ["Summary: the user asked to define cat."]
    prompt, output, _ = independent_sums(ui, includes_cache=True)
    assert (
        sum(c.reported.prompt for c in trace.calls) == prompt and sum(c.reported.output for c in trace.calls) == output
    )
    check_buckets(tokprof.profile(trace, model="qwen2.5"))


def test_condensed_messages_leave_later_prompts(tmp_path):
    history, _ = roo_task()
    ui = [req(50, 1500, 30, 0, 0, None), req(400, 1700, 20, 0, 0, None)]
    history = history[:2] + [{"role": "user", "content": "Go on."}] + history[4:]  # summary then answer
    trace = read_trace(str(write_task(tmp_path / "t", history, ui)))
    first, last = trace.calls
    assert [m["content"] for m in last.messages][-1] == "Summary: the user asked to define cat."
    assert len(last.messages) == 1  # Roo Code's fresh start: the prompt starts at the summary
    assert first.messages[0]["content"].startswith("<task>")


def test_cline_truncation_range_leaves_messages_out(tmp_path):
    history, ui, _ = cline_task()
    ui[5]["conversationHistoryDeletedRange"] = [2, 3]  # Cline keeps messages 0-1 and those after 3
    trace = read_trace(str(write_task(tmp_path / "t", history, ui)))
    last = trace.calls[-1]
    assert [m["role"] for m in last.messages] == ["user", "assistant", "user"]


def test_truncation_range_starting_at_1_leaves_message_1_out(tmp_path):
    """Older Cline truncated from index 1 (keeping only the task): its getTruncatedMessages keeps
    history[:start] and history[end + 1:], whatever the start."""
    history, ui, _ = cline_task()
    ui[5]["conversationHistoryDeletedRange"] = [1, 2]
    last = read_trace(str(write_task(tmp_path / "t", history, ui))).calls[-1]
    assert [m["content"][:6] for m in last.messages] == ["<task>", "\n\n[Res", "[TASK "]


def test_absent_counts_are_not_recorded_not_zero(tmp_path):
    """An OpenAI-compatible provider's request records tokensIn alone: its cache and output are unknown."""
    history, ui, _ = cline_task()
    ui[1]["text"] = json.dumps({"request": "x", "tokensIn": 2050})
    first = read_trace(str(write_task(tmp_path / "t", history, ui))).calls[0].reported
    assert (first.prompt, first.cache_read, first.cache_write, first.output) == (2050, None, None, None)


def test_old_api_req_finished_counts(tmp_path):
    history, _, _ = cline_task()
    finished = {
        "ts": T0 + 100,
        "type": "say",
        "say": "api_req_finished",
        "text": json.dumps({"tokensIn": 5, "tokensOut": 7, "cacheWrites": 0, "cacheReads": 0, "cost": 0.01}),
    }
    ui = [{"ts": T0 + 50, "type": "say", "say": "api_req_started", "text": json.dumps({"request": "x"})}, finished]
    trace = read_trace(str(write_task(tmp_path / "t", history[:2], ui)))
    assert [(c.reported.prompt, c.reported.output) for c in trace.calls] == [(5, 7)]


def test_without_ui_messages_calls_report_no_usage(tmp_path):
    history, _, metadata = cline_task()
    trace = read_trace(str(write_task(tmp_path / "t", history, None, metadata)))
    assert len(trace.calls) == 3 and all(c.reported is None for c in trace.calls)
    assert "no-usage" in {n.code for n in trace.notes}


@pytest.mark.parametrize(
    "target, change, named",
    [
        ("ui", lambda ui: ui[1].update(text=json.dumps({"tokensIn": "many"})), "[1].text.tokensIn"),
        ("ui", lambda ui: ui[1].update(text="{not json"), "[1].text"),
        ("ui", lambda ui: ui[5].update(conversationHistoryDeletedRange=[2]), "[5].conversationHistoryDeletedRange"),
        ("history", lambda h: h[1]["content"][1].update(input=[1]), "[1].content[1].input"),
        ("history", lambda h: h[2].update(role="system"), "[2].role"),
        ("history", lambda h: h[1]["content"][1].update(name=""), "[1].content[1].name: empty"),
        ("metadata", lambda m: m["model_usage"][0].update(model_id=7), "model_usage[0].model_id"),
        (
            "metadata",
            lambda m: m["model_usage"].__setitem__(0, "x"),
            "model_usage[0]: expected an object, found a string",
        ),
        ("metadata", lambda m: m.__setitem__("model_usage", 3), "model_usage: expected a list, found a number"),
    ],
)
def test_malformed_is_one_line_naming_the_file_and_field(tmp_path, capsys, target, change, named):
    history, ui, metadata = cline_task()
    change({"ui": ui, "history": history, "metadata": metadata}[target])
    folder = tmp_path / "t"
    write_task(folder, history, ui, metadata)
    assert main(["profile", str(folder), "--model", "qwen2.5"]) == 2
    err = capsys.readouterr().err.strip()
    file = {"ui": "ui_messages.json", "history": "api_conversation_history.json", "metadata": "task_metadata.json"}
    assert len(err.splitlines()) == 1 and str(folder / file[target]) in err and named in err, err


def test_task_metadata_that_is_not_an_object_says_so(tmp_path, capsys):
    history, ui, _ = cline_task()
    folder = tmp_path / "t"
    write_task(folder, history, ui)
    (folder / "task_metadata.json").write_text("[]")
    assert main(["profile", str(folder), "--model", "qwen2.5"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("task_metadata.json: expected an object, found a list"), err


def test_not_a_history_is_not_claimed(tmp_path):
    other = tmp_path / "messages.json"
    other.write_text(json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]))
    assert not tokprof.formats.log_format("cline").sniff(tokprof.formats.load(str(other)))
    assert session_files(str(tmp_path)) == []


def test_found_where_each_agent_keeps_its_tasks(tmp_path):
    """VS Code and its forks on Linux, macOS and Windows paths; Cline's own data folder and its variables."""
    home = tmp_path / "home"
    history, ui, metadata = cline_task()
    places = {
        "cline": [
            ".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/1",
            "Library/Application Support/Cursor/User/globalStorage/saoudrizwan.claude-dev/tasks/2",
            ".cline/data/tasks/3",
        ],
        "roo": [
            "AppData/Roaming/Code - Insiders/User/globalStorage/rooveterinaryinc.roo-cline/tasks/4",
            ".config/VSCodium/User/globalStorage/rooveterinaryinc.roo-cline/tasks/5",
        ],
        "kilo": [".config/Windsurf/User/globalStorage/kilocode.kilo-code/tasks/6"],
    }
    for folders in places.values():
        for folder in folders:
            write_task(home / folder, history, ui, metadata)
    (home / ".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/7").mkdir()  # a task with no history yet
    rows = local_sessions(home=home, environ={})
    assert sorted((row.agent, Path(row.path).parent.name) for row in rows) == sorted(
        (agent, folder.rsplit("/", 1)[1]) for agent, folders in places.items() for folder in folders
    )
    assert all(row.format == "cline" and row.calls == 2 and row.cost is not None for row in rows)
    assert [row.agent for row in local_sessions("kilo", home=home, environ={})] == ["kilo"]
    moved = tmp_path / "cline-data"
    write_task(moved / "tasks" / "8", history, ui)
    found = {
        Path(row.path).parent.name for row in local_sessions("cline", home=home, environ={"CLINE_DATA_DIR": str(moved)})
    }
    assert "8" in found
    cline_dir = tmp_path / "cline-dir"
    write_task(cline_dir / "data" / "tasks" / "9", history, ui)
    found = {
        Path(row.path).parent.name for row in local_sessions("cline", home=home, environ={"CLINE_DIR": str(cline_dir)})
    }
    assert "9" in found


def test_sessions_command_lists_them(tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    for name in ("CLINE_DATA_DIR", "CLINE_DIR"):
        monkeypatch.delenv(name, raising=False)
    history, ui, metadata = cline_task()
    write_task(home / ".config/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks/1", history, ui, metadata)
    assert main(["sessions", "--agent", "roo", "-f", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)["sessions"]
    assert [(row["agent"], row["calls"]) for row in listed] == [("roo", 2)]
    assert listed[0]["start"] == "2026-01-01T12:00:00.050000+00:00"


def test_an_open_model_through_openrouter_is_counted_exactly(tmp_path):
    history, ui, _ = cline_task()
    for message in history:
        if "modelInfo" in message:
            message["modelInfo"] = {"modelId": "qwen/qwen-2.5-coder-32b-instruct", "providerId": "openrouter"}
    profile = tokprof.profile(str(write_task(tmp_path / "t", history, ui)))
    model = json.loads(tokprof.render_report(profile, "json"))["model"]
    assert model["name"] == "qwen2.5" and model["exact"] is True
    check_buckets(profile)


def test_text_from_the_log_is_escaped(tmp_path, capsys):
    history, ui, _ = cline_task()
    history[0]["content"][1] = env("# Current Working Directory (/work/\x1b[2Japp) Files")
    for message in history:
        if "modelInfo" in message:
            message["modelInfo"] = {"modelId": "evil\x1b]0;title\x07", "providerId": "x"}
    trace = read_trace(str(write_task(tmp_path / "t", history, ui)))
    assert "\x1b" not in (trace.model or "") and all("\x1b" not in (c.cwd or "") for c in trace.calls)


def test_corpus_tasks():
    """The shared corpus holds no Cline-family task today (SOURCES.md); any it gains is read here."""
    corpus = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
    found = sorted(corpus.rglob("api_conversation_history.json")) if corpus.is_dir() else []
    if not found:
        pytest.skip("no Cline-family task in the shared corpus")
    for path in found:
        trace = read_trace(str(path))
        ui = path.parent / "ui_messages.json"
        if ui.is_file():
            entries = json.loads(ui.read_text(encoding="utf-8"))
            includes = "usage-includes-cache" in {n.code for n in trace.notes}
            prompt, output, _ = independent_sums(entries, includes_cache=includes)
            assert sum(c.reported.prompt for c in trace.calls if c.reported) == prompt
