"""The Claude Code reader as a fold (tokprof.formats.claude_code.fold): what a later line of a session
changes (a late line of a call, a parent or a tool result written later, a rewind across a compaction,
a reused requestId, subagent copies in progress lines) is read as the rules say, with no second read;
the lines before a compaction let go; hostile and half-written files (#45 items 2, 3 and 12; #46 item 8)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import tokprof
from tokprof.live import LiveSession
from test_format_claude_code import (
    SESSION,
    assistant,
    base,
    compacted_session,
    compaction_transcript,
    main_thread_with_task,
    progress_copies,
    redacted_session,
    result,
    subagent_lines,
    text,
    timed,
    tool_use,
    user,
    write_jsonl,
)
from tokprof.formats import open_log, read_trace
from tokprof.frontends.cli import main


def stretches(count: int, calls: int) -> list[dict]:
    """A session compacted ``count - 1`` times, each stretch ``calls`` tool round trips."""
    rows: list[dict] = []
    parent = None
    for s in range(count):
        if s:
            rows.append(base("system", f"b{s}", parent, subtype="compact_boundary", content="compacted"))
            rows.append(user(f"s{s}", f"b{s}", f"Summary of part {s}.", isCompactSummary=True))
            parent = f"s{s}"
        rows.append(user(f"u{s}", parent, f"part {s}: go"))
        parent = f"u{s}"
        for i in range(calls):
            a, r = f"a{s}.{i}", f"r{s}.{i}"
            rows.append(assistant(a, parent, f"req{s}.{i}", [text(f"step {i}"), tool_use(f"t{s}.{i}")]))
            rows.append(base("progress", f"p{s}.{i}", a, data={"type": "bash_progress", "output": "..."}))
            rows.append(user(r, f"p{s}.{i}", [result(f"t{s}.{i}", f"output {s}.{i} " * 5)]))
            parent = r
        rows.append(assistant(f"a{s}.end", parent, f"req{s}.end", [text("part done")], stop="end_turn"))
        parent = f"a{s}.end"
    return rows


def more_calls(parent: str, count: int = 6) -> list[dict]:
    rows: list[dict] = []
    for i in range(count):
        rows.append(user(f"q{i}", parent, f"more {i}"))
        rows.append(assistant(f"b{i}", f"q{i}", f"rb{i}", [text(f"answer {i}")]))
        parent = f"b{i}"
    return rows


def read(tmp_path: Path, rows: list[dict]):
    return read_trace(str(write_jsonl(tmp_path / "s.jsonl", rows)), "claude-code")


def notes(trace) -> dict[str, list[str]]:
    return {n.code: n.places for n in trace.notes}


# -- what a later line changes ---------------------------------------------------------------------
def test_a_late_line_of_a_call_is_in_its_call(tmp_path):
    rows = stretches(1, 6)
    rows.append(assistant("late", rows[-1]["uuid"], "req0.0", [text("a late block of the first call")]))
    trace = read(tmp_path, rows)
    assert len(trace.calls) == 7 and [c.request_id for c in trace.calls].count("req0.0") == 1
    assert "a late block of the first call" in trace.calls[0].response["content"]


def test_a_parent_written_after_its_child_is_in_the_prompt(tmp_path):
    rows = [user("u2", "u1", "second"), assistant("a2", "u2", "r2", [text("two")])]
    rows += more_calls("a2") + [user("u1", None, "first")]
    trace = read(tmp_path, rows)
    assert [m["content"] for m in trace.calls[0].messages] == ["first\nsecond"]
    assert "chain-broken" not in notes(trace)


def test_a_result_written_later_beside_the_chain_is_in_the_prompt(tmp_path):
    rows = [
        user("u1", None, "read both files"),
        assistant("a1", "u1", "r1", [tool_use("t1"), tool_use("t2")]),
        user("u2", "a1", [result("t1", "contents of a")]),
        assistant("a2", "u2", "r2", [text("one")]),
    ]
    rows += more_calls("a2") + [user("u3", "a1", [result("t2", "contents of b")])]
    trace = read(tmp_path, rows)
    assert [m.get("tool_call_id") for m in trace.calls[1].messages if m["role"] == "tool"] == ["t2", "t1"]
    assert "results-beside-chain" in notes(trace)


def test_a_rewind_across_compactions_keeps_the_lines_it_needs(tmp_path):
    rows = stretches(3, 5)
    rows.append(user("back", "a0.1", "a rewind to before the compactions"))
    rows.append(assistant("aback", "back", "reqback", [text("from there")]))
    trace = read(tmp_path, rows)
    rewound = trace.calls[-1]
    assert rewound.messages[0]["content"] == "part 0: go" and rewound.messages[-1]["content"].startswith("a rewind")


def test_a_line_repeating_one_let_go_is_a_repeat(tmp_path):
    rows = stretches(3, 5)
    rows.append(user("u0", rows[-1]["uuid"], "a line that repeats the uuid of one let go"))
    trace = read(tmp_path, rows)
    assert notes(trace)["duplicate-line"] == [f"line {len(rows)}"]


def test_a_reused_request_id_and_progress_copies_are_read_once(tmp_path):
    trace = read(tmp_path, redacted_session(False))
    assert "request-id-reused" in notes(trace)
    copied = read(tmp_path, main_thread_with_task(progress_copies(subagent_lines())))
    assert "subagent-from-progress" in notes(copied)
    assert len({c.request_id for c in copied.calls}) == len(copied.calls)


def test_lines_before_a_compaction_are_let_go(tmp_path):
    path = write_jsonl(tmp_path / "s.jsonl", stretches(12, 6))
    log = open_log(str(path), "claude-code")
    kept = []
    for _ in log.calls():
        kept.append(log.reader.lines_kept)  # type: ignore[attr-defined]
    per_stretch = 3 * 6 + 5
    assert len(kept) == 12 * 7 and max(kept) < 3 * per_stretch  # never more than about two stretches


def test_compaction_calls_are_made_before_their_lines_are_let_go(tmp_path):
    path = compacted_session(tmp_path)
    trace = read_trace(str(path), "claude-code")
    assert [c.kind for c in trace.calls] == ["call", "call", "compaction", "call"]


# -- hostile and half-written files ---------------------------------------------------------------
def test_a_parent_cycle_is_one_error_naming_the_line(tmp_path):
    rows = [user("u1", "u2", "one"), user("u2", "u1", "two"), assistant("a1", "u2", "r1", [text("hi")])]
    with pytest.raises(tokprof.InputError, match=r"line \d+: parentUuid.*loops"):
        read(tmp_path, rows)
    with pytest.raises(tokprof.InputError, match=r"line 1: parentUuid.*itself"):
        read(tmp_path, [user("u1", "u1", "me"), assistant("a1", "u1", "r1", [text("hi")])])


def test_a_long_parent_cycle_is_found_once(tmp_path):
    rows = [user(f"u{i}", f"u{(i + 1) % 3000}", f"m{i}") for i in range(3000)]
    rows.append(assistant("a1", "u0", "r1", [text("hi")]))
    with pytest.raises(tokprof.InputError, match="loops"):
        read(tmp_path, rows)


@pytest.mark.parametrize("content", ["", '{"type": "user", "mess'])
def test_an_empty_or_half_written_subagent_file_is_a_note(tmp_path, content):
    session = write_jsonl(tmp_path / f"{SESSION}.jsonl", timed(main_thread_with_task([])))
    side = tmp_path / SESSION / "subagents" / "agent-a1b2.jsonl"
    side.parent.mkdir(parents=True)
    side.write_text(content)
    trace = read_trace(str(session), "claude-code")
    assert trace.calls and notes(trace)["side-transcript-empty"] == [f"{SESSION}/subagents/agent-a1b2.jsonl"]


def test_a_compaction_call_recorded_is_never_warned_missing(tmp_path):
    """#46 item 8: a compaction transcript whose request names a line its boundary does not: its call
    is the boundary's, and no warning says the compaction is missing."""
    rows = compaction_transcript(request_parent="r1", hook_parent="r1")
    trace = read_trace(str(compacted_session(tmp_path, rows)), "claude-code")
    assert "compaction" in [c.kind for c in trace.calls]
    assert "compaction" not in notes(trace) and trace.compactions == 1


def test_an_empty_compaction_file_is_a_note_and_its_boundary_unrecorded(tmp_path):
    trace = read_trace(str(compacted_session(tmp_path, [])), "claude-code")
    assert "compaction" not in [c.kind for c in trace.calls]
    assert "side-transcript-empty" in notes(trace) and "compaction" in notes(trace)


def test_a_2x_session_followed_is_read_incrementally(tmp_path):
    """#45 item 12: a session whose first line is a file-history-snapshot (no session id) is read as
    Claude Code line by line, not read again whole on each change."""
    path = tmp_path / "s.jsonl"
    snapshot = {"type": "file-history-snapshot", "messageId": "m0", "snapshot": {}, "isSnapshotUpdate": False}
    rows = [snapshot, *timed(main_thread_with_task([]))]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows[:3]))
    live = LiveSession(str(path), count=False, price=False)
    first = live.update()
    assert live.format == "claude-code"
    with path.open("a") as f:
        f.writelines(json.dumps(row) + "\n" for row in rows[3:])
    later = live.update()
    assert len(first) + len(later) == len(read_trace(str(path), "claude-code").calls)


# -- a small fixed-seed fuzz: parent links and side files ----------------------------------------------
def _fuzzed(rng: random.Random, tmp_path: Path, n: int) -> Path:
    rows = stretches(3, 3)
    uuids = [row["uuid"] for row in rows if "uuid" in row]
    for _ in range(rng.randrange(1, 4)):
        row = rng.choice(rows)
        if "parentUuid" in row:
            row["parentUuid"] = rng.choice([*uuids, row.get("uuid"), "gone", None])  # cycles, self links, gaps
    if rng.random() < 0.3:
        rows.insert(rng.randrange(len(rows)), dict(rng.choice(rows)))  # a repeated uuid
    folder = tmp_path / f"f{n}"
    session = write_jsonl(folder / f"{SESSION}.jsonl", rows)
    side = folder / SESSION / "subagents" / f"agent-{rng.choice(['a1b2', 'acompact-f00d'])}.jsonl"
    side.parent.mkdir(parents=True)
    lines = [json.dumps(row) for row in timed(subagent_lines())]
    side.write_text(rng.choice(["", lines[0][: rng.randrange(1, len(lines[0]))], "\n".join(lines) + "\n"]))
    return session


def test_fuzzed_parent_links_and_side_files_are_read_or_one_error(tmp_path, capsys):
    rng = random.Random(45)
    for n in range(25):
        path = _fuzzed(rng, tmp_path, n)
        code = main(["profile", str(path), "--model", "claude-proxy", "--no-progress", "-f", "json"])
        out, err = capsys.readouterr()
        assert code in (0, 2) and "Traceback" not in err, (n, err)
        if code == 2:
            assert err.startswith("tokprof: error: ") and err.count("\n") == 1, (n, err)
        else:
            for call in json.loads(out)["calls"]:
                assert sum(call["buckets"].values()) == call["total"]
