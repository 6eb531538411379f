"""A Claude Code session read as a stream of calls (tokprof.formats.claude_streamed): the same calls,
prompts and notes as the whole read; the lines before a compaction dropped; every log the stream
cannot get right given up on (Unstreamable), and then profiled whole by tokprof.profile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tokprof
import tokprof.api as tokprof_api
from test_format_claude_code import (
    SESSION,
    assistant,
    at,
    base,
    compacted,
    compacted_session,
    compaction_transcript,
    main_thread_with_task,
    progress_copies,
    redacted_session,
    result,
    split_response,
    subagent_lines,
    text,
    timed,
    tool_use,
    user,
    write_jsonl,
)
from tokprof.formats import read_trace, stream_calls
from tokprof.formats.claude_streamed import WINDOW, Unstreamable
from tokprof.trace import as_list


def call_fields(call) -> dict:
    fields = {name: getattr(call, name) for name in call.__dataclass_fields__ if name not in ("messages",)}
    fields["messages"] = as_list(call.messages)
    return fields


def trace_fields(trace) -> dict:
    return {
        "session": trace.session,
        "model": trace.model,
        "compactions": trace.compactions,
        "unrecorded": trace.unrecorded,
        "notes": [(n.code, n.message, n.places) for n in trace.notes],
    }


def streamed(path: Path):
    stream = stream_calls(str(path), "claude-code")
    assert stream is not None
    with stream:
        calls = list(stream)
    return calls, stream


def assert_same_as_whole_read(path: Path) -> None:
    calls, stream = streamed(path)
    whole = read_trace(str(path), "claude-code")
    assert [call_fields(c) for c in calls] == [call_fields(c) for c in whole.calls]
    assert trace_fields(stream.trace) == trace_fields(whole)


def assert_unstreamable(path: Path, match: str) -> None:
    with pytest.raises(Unstreamable, match=match):
        streamed(path)


def stretches(count: int, calls: int, tag: str = "") -> list[dict]:
    """A session compacted ``count - 1`` times, each stretch ``calls`` tool round trips."""
    rows: list[dict] = []
    parent = None
    for s in range(count):
        if s:
            rows.append(base("system", f"{tag}b{s}", parent, subtype="compact_boundary", content="compacted"))
            rows.append(user(f"{tag}s{s}", f"{tag}b{s}", f"Summary of part {s}.", isCompactSummary=True))
            parent = f"{tag}s{s}"
        rows.append(user(f"{tag}u{s}", parent, f"part {s}: go"))
        parent = f"{tag}u{s}"
        for i in range(calls):
            a, r = f"{tag}a{s}.{i}", f"{tag}r{s}.{i}"
            rows.append(assistant(a, parent, f"{tag}req{s}.{i}", [text(f"step {i}"), tool_use(f"{tag}t{s}.{i}")]))
            rows.append(base("progress", f"{tag}p{s}.{i}", a, data={"type": "bash_progress", "output": "..."}))
            rows.append(user(r, f"{tag}p{s}.{i}", [result(f"{tag}t{s}.{i}", f"output {s}.{i} " * 5)]))
            parent = r
        rows.append(assistant(f"{tag}a{s}.end", parent, f"{tag}req{s}.end", [text("part done")], stop="end_turn"))
        parent = f"{tag}a{s}.end"
    return rows


# -- the same as the whole read ------------------------------------------------------------------
SAME = {
    "split response": split_response(),
    "compacted": compacted(),
    "inline sidechain": main_thread_with_task(subagent_lines()),
    "many stretches": stretches(4, 2 * WINDOW),
    "branches": [
        user("u1", None, "start"),
        assistant("a1", "u1", "r1", [text("one")]),
        user("u2", "a1", "first try"),
        assistant("a2", "u2", "r2", [text("two")]),
        user("u3", "a1", "edited try"),
        assistant("a3", "u3", "r3", [text("three")]),
    ],
    "missing parent and orphan result": [
        user("r0", "gone", [result("t0", "late output")]),
        assistant("a1", "r0", "r1", [text("ok")]),
    ],
    "no uuids": [
        {"type": "user", "message": {"role": "user", "content": "a"}},
        {"type": "assistant", "requestId": "r1", "message": {"role": "assistant", "content": [text("b")]}},
        {"type": "user", "message": {"role": "user", "content": "c"}},
        {"type": "assistant", "message": {"role": "assistant", "id": "m2", "content": [text("d")]}},
    ],
    "parallel tools beside the chain": [
        user("u1", None, "read both files"),
        assistant("a1", "u1", "r1", [tool_use("t1", file_path="/a.py")]),
        assistant("a2", "a1", "r1", [tool_use("t2", name="Bash", command="make")]),
        user("u2", "a1", [result("t1", "contents of a")]),
        base("progress", "p1", "a2", data={"type": "bash_progress", "output": "..."}),
        user("u3", "p1", [result("t2", "make: ok")]),
        assistant("a3", "u3", "r2", [text("done")]),
    ],
    "synthetic, meta and unknown lines": [
        {"type": "queue-operation", "operation": "enqueue"},
        user("u1", None, "<command-name>/model</command-name>", isMeta=True),
        assistant("a1", "u1", "r1", [text("hi")]),
        assistant("x1", "a1", "rx", [text("No response requested.")], model="<synthetic>"),
        base("attachment", "at1", "x1", attachment={"type": "hook"}),
        base("brand-new-type", "n1", "at1"),
        user("u2", "n1", [{"type": "image", "source": {}}, text("look")]),
        assistant("a2", "u2", "r2", [text("seen")]),
        base("system", "m1", "a2", subtype="microcompact_boundary"),
        user("u3", "m1", "again"),
        assistant("a3", "u3", "r3", [text("ok")]),
    ],
}


@pytest.mark.parametrize("name", list(SAME))
def test_the_stream_gives_what_the_whole_read_gives(tmp_path, name):
    assert_same_as_whole_read(write_jsonl(tmp_path / "s.jsonl", SAME[name]))


def test_a_truncated_last_line_is_noted_last(tmp_path):
    path = write_jsonl(tmp_path / "s.jsonl", split_response())
    path.write_text(path.read_text() + '{"type": "user", "mess')
    assert_same_as_whole_read(path)
    assert streamed(path)[1].trace.notes[-1].code == "truncated-line"


def test_lines_before_a_compaction_are_dropped(tmp_path):
    path = write_jsonl(tmp_path / "s.jsonl", stretches(12, WINDOW + 2))
    stream = stream_calls(str(path))
    assert stream is not None
    kept = []
    with stream:
        for _ in stream:
            kept.append(stream.lines_kept)
    per_stretch = 3 * (WINDOW + 2) + 5
    assert max(kept) < 3 * per_stretch  # never more than the stretch read and the one before it
    assert_same_as_whole_read(path)


def test_other_logs_are_not_streamed(tmp_path):
    assert stream_calls(str(write_jsonl(tmp_path / "r.jsonl", [{"model": "m", "messages": []}]))) is None
    assert stream_calls(str(tmp_path / "missing.jsonl")) is None
    assert stream_calls(str(write_jsonl(tmp_path / "s.jsonl", split_response())), "openai-chat") is None
    renamed = write_jsonl(tmp_path / "s.txt", split_response())  # read whole: only a .jsonl is loaded twice
    assert stream_calls(str(renamed)) is None
    named = stream_calls(str(renamed), "claude-code")
    assert named is not None
    named.close()


# -- what only the whole read gets right ----------------------------------------------------------
def late_line() -> list[dict]:
    """A line of the first call written after more than WINDOW later calls started."""
    rows = stretches(1, WINDOW + 2)
    rows.append(assistant("late", rows[-1]["uuid"], "req0.0", [text("a late block of the first call")]))
    return rows


def more_calls(parent: str) -> list[dict]:
    """WINDOW + 1 short calls after ``parent``: enough that every call before them is given."""
    rows: list[dict] = []
    for i in range(WINDOW + 1):
        rows.append(user(f"q{i}", parent, f"more {i}"))
        rows.append(assistant(f"b{i}", f"q{i}", f"rb{i}", [text(f"answer {i}")]))
        parent = f"b{i}"
    return rows


def late_sibling() -> list[dict]:
    """A tool result beside a chain line, written after the call whose prompt passed that line."""
    rows = [
        user("u1", None, "read both files"),
        assistant("a1", "u1", "r1", [tool_use("t1"), tool_use("t2")]),
        user("u2", "a1", [result("t1", "contents of a")]),
        assistant("a2", "u2", "r2", [text("one")]),
    ]
    rows += more_calls(rows[-1]["uuid"])
    rows.append(user("u3", "a1", [result("t2", "contents of b")]))
    return rows


def late_parent() -> list[dict]:
    """A line whose parent comes later in the file."""
    rows = [user("u2", "u1", "second"), assistant("a2", "u2", "r2", [text("two")])]
    rows += more_calls(rows[-1]["uuid"])
    rows.append(user("u1", None, "first"))
    return rows


def branch_across_a_compaction() -> list[dict]:
    rows = stretches(3, WINDOW + 1)
    rows.append(user("back", "a0.1", "a rewind to before the compactions"))
    rows.append(assistant("aback", "back", "reqback", [text("from there")]))
    return rows


def repeated_dropped_line() -> list[dict]:
    rows = stretches(3, WINDOW + 1)
    rows.append(user("u0", rows[-1]["uuid"], "a line that repeats the uuid of one dropped"))
    return rows


def answered_after_a_compaction() -> list[dict]:
    """A result written after the lines before a compaction were dropped, beside a dropped line that an
    earlier call's prompt passed: the whole read puts it in that prompt."""
    rows = [
        user("u1", None, "read a"),
        assistant("a1", "u1", "r1", [tool_use("t1")]),
        user("u2", "a1", "go on"),
        assistant("a2", "u2", "r2", [text("ok")]),
        base("system", "cb", None, subtype="compact_boundary", content="c"),
        user("s1", "cb", "summary", isCompactSummary=True),
    ]
    rows += more_calls(rows[-1]["uuid"])
    rows.append(user("u3", "a1", [result("t1", "contents of a")]))
    return rows


def dropped_result_of_a_later_parent() -> list[dict]:
    """A result written before a compaction whose parent, after it, is on a later call's chain: dropped,
    the stream would not see it beside that chain."""
    rows = [
        user("u0", None, "hi"),
        assistant("a0", "u0", "r0", [text("hello")]),
        user("e1", "p1", [result("t1", "contents of a")]),
        base("system", "cb", None, subtype="compact_boundary", content="c"),
        user("s1", "cb", "summary", isCompactSummary=True),
        assistant("a1", "s1", "r1", [tool_use("t1")]),
    ]
    for i in range(WINDOW):
        rows.append(user(f"q{i}", "s1" if i == 0 else f"b{i - 1}", f"more {i}"))
        rows.append(assistant(f"b{i}", f"q{i}", f"rb{i}", [text(f"answer {i}")]))
    rows += [user("p1", "a1", "and then"), user("u2", "p1", "go on"), assistant("a2", "u2", "r2", [text("ok")])]
    return rows


def sidechain_without_agent_id() -> list[dict]:
    lines = subagent_lines()
    for row in lines:
        row.pop("agentId")
    return main_thread_with_task(lines)


UNSTREAMABLE = {
    "a sidechain without an agentId": (sidechain_without_agent_id(), "without an agentId"),
    "a late result beside a dropped line": (answered_after_a_compaction(), "beside a line"),
    "a dropped result beside a later chain": (dropped_result_of_a_later_parent(), "looked for"),
    "a requestId reused": (redacted_session(False), "different responses"),
    "a late line of a call": (late_line(), "already given"),
    "a late result beside the chain": (late_sibling(), "beside a line"),
    "a parent after its child": (late_parent(), "looked for"),
    "a branch across a compaction": (branch_across_a_compaction(), "not in the lines kept"),
    "a line repeating one dropped": (repeated_dropped_line(), "repeats one dropped"),
    "subagent copies in progress lines": (
        main_thread_with_task(progress_copies(subagent_lines())),
        "progress lines",
    ),
}


@pytest.mark.parametrize("name", list(UNSTREAMABLE))
def test_what_the_stream_cannot_get_right_stops_it(tmp_path, name):
    rows, match = UNSTREAMABLE[name]
    assert_unstreamable(write_jsonl(tmp_path / "s.jsonl", rows), match)


# -- transcripts beside the session -------------------------------------------------------------
def with_subagent(tmp_path: Path, between: list[dict] = (), sub: list[dict] | None = None, name: str = "") -> Path:
    """A session whose Task ran the subagent of ``sub`` (in its own file), its lines timed so that
    the subagent's calls fall between the session's."""
    rows = [
        dict(row, timestamp=at(t))
        for row, t in zip(main_thread_with_task(list(between)), [0, 5, *[6] * len(between), 60, 65])
    ]
    session = write_jsonl(tmp_path / f"{SESSION}.jsonl", rows)
    where = tmp_path / (name or f"{SESSION}/subagents/agent-a1b2.jsonl")
    write_jsonl(where, timed(subagent_lines(), start=10) if sub is None else sub)
    return session


def noisy_subagent() -> list[dict]:
    """A subagent transcript with lines the reader notes once per type, a synthetic response and a
    line cut off at the end."""
    rows = timed(subagent_lines(), start=10)
    extra = {"agentId": "a1b2"}
    return [
        base("brand-new-type", "s-n0", None, sidechain=True, **extra),
        *rows[:2],
        base("attachment", "s-at", "s-a1", sidechain=True, attachment={"type": "hook"}, **extra),
        assistant("s-x", "s-at", "rx", [text("No response requested.")], model="<synthetic>", sidechain=True),
        *rows[2:],
    ]


def with_lines_after(session: Path, rows: list[dict]) -> Path:
    with session.open("a") as f:
        f.writelines(json.dumps(row) + "\n" for row in rows)
    return session


SIDES = {
    "a subagent file": lambda tmp: with_subagent(tmp),
    "a subagent file without times": lambda tmp: with_subagent(tmp, sub=subagent_lines()),
    "an agent file beside it (2.0)": lambda tmp: with_subagent(tmp, name="agent-a1b2.jsonl"),
    "a subagent copied in progress lines too": lambda tmp: with_subagent(tmp, progress_copies(subagent_lines())),
    "a subagent's notes by line type": lambda tmp: with_subagent(
        tmp,
        [base("brand-new-type", "n1", "a1"), base("attachment", "at1", "a1", attachment={"type": "hook"})],
        noisy_subagent(),
    ),
    "line types the session has after the subagent ran": lambda tmp: with_lines_after(
        with_subagent(tmp, sub=noisy_subagent()),
        [
            *more_calls("a2"),  # the subagent's calls are made before these lines are read
            base("attachment", "at9", f"b{WINDOW}", attachment={"type": "hook"}),
            base("brand-new-type", "n9", "at9"),
        ],
    ),
    "a compaction transcript": lambda tmp: compacted_session(tmp),
    "a compaction transcript with no call": lambda tmp: compacted_session(tmp, compaction_transcript()[:2]),
}


@pytest.mark.parametrize("name", list(SIDES))
def test_a_session_with_transcripts_beside_it_is_streamed(tmp_path, name):
    assert_same_as_whole_read(SIDES[name](tmp_path))


def compacted_stretches(tmp_path: Path, count: int, calls: int) -> Path:
    """A session compacted ``count - 1`` times as Claude Code 2.1 writes it: each boundary names the
    line it follows, and its compaction call is in a transcript of its own."""
    rows = stretches(count, calls)
    for row in rows:
        if row.get("subtype") == "compact_boundary":
            s = int(row["uuid"][1:])
            row["logicalParentUuid"] = f"a{s - 1}.end"
            extra = {"agentId": f"acompact-{s}"}
            compaction = [
                user(
                    f"c{s}-m",
                    f"r{s - 1}.0",
                    "<system-reminder>hook</system-reminder>",
                    sidechain=True,
                    isMeta=True,
                    **extra,
                ),
                user(f"c{s}-u", f"a{s - 1}.end", "Summarise.", sidechain=True, **extra),
                assistant(
                    f"c{s}-a", f"c{s}-u", f"req-c{s}", [text(f"summary {s}")], sidechain=True, stop="end_turn", **extra
                ),
            ]
            write_jsonl(tmp_path / SESSION / "subagents" / f"agent-acompact-{s}.jsonl", compaction)
    return write_jsonl(tmp_path / f"{SESSION}.jsonl", rows)


def test_compaction_calls_are_made_before_the_lines_before_their_boundary_are_dropped(tmp_path):
    path = compacted_stretches(tmp_path, 6, 2 * WINDOW)
    assert_same_as_whole_read(path)
    calls, stream = streamed(path)
    assert [c.kind for c in calls].count("compaction") == 5
    whole_lines = len(path.read_text().splitlines())
    assert stream.lines_kept < whole_lines / 3


def test_a_subagent_is_held_only_while_its_calls_are_made(tmp_path):
    path = with_subagent(tmp_path)
    stream = stream_calls(str(path), "claude-code")
    assert stream is not None
    with stream:
        held = [stream.lines_kept for _ in stream]
    assert held[1] > held[-1]  # the subagent's calls are made while its transcript is held


def test_a_truncated_subagent_line_is_noted_where_the_whole_read_notes_it(tmp_path):
    path = with_subagent(tmp_path)
    sub = tmp_path / SESSION / "subagents" / "agent-a1b2.jsonl"
    sub.write_text(sub.read_text() + '{"type": "user", "mess')
    assert_same_as_whole_read(path)


def other_requests(rows: list[dict]) -> list[dict]:
    return [dict(row, requestId=row["requestId"] + "-other") if "requestId" in row else row for row in rows]


SIDES_UNSTREAMABLE = {
    "a compaction call found by time": (
        lambda tmp: compacted_session(tmp, compaction_transcript(request_parent="gone", hook_parent="gone")),
        "matched to no boundary",
    ),
    "a subagent known from progress lines only": (
        lambda tmp: with_subagent(tmp, progress_copies(subagent_lines()), sub=other_requests(subagent_lines())),
        "progress lines",
    ),
    "a call in the session and in a subagent file": (
        lambda tmp: with_subagent(tmp, [assistant("dup", "a1", "req_s1", [text("copy")], timestamp=at(6))]),
        "also in a subagent",
    ),
    "a compaction in a subagent file": (
        lambda tmp: with_subagent(
            tmp, sub=[*subagent_lines(), base("system", "s-b", "s-a2", subtype="compact_boundary")]
        ),
        "compact boundary",
    ),
}


@pytest.mark.parametrize("name", list(SIDES_UNSTREAMABLE))
def test_what_a_transcript_beside_it_needs_whole_stops_it(tmp_path, name):
    build, match = SIDES_UNSTREAMABLE[name]
    path = build(tmp_path)
    assert_unstreamable(path, match)
    whole = read_trace(str(path), "claude-code")  # and the whole read reads it
    assert whole.calls


# -- the facade ---------------------------------------------------------------------------------
def profiles(path: Path, model: str | None, monkeypatch=None) -> tuple[str, str]:
    if monkeypatch is not None:  # the log must not be read whole
        with monkeypatch.context() as patched:
            patched.setattr(tokprof_api, "read_log", lambda *a, **k: pytest.fail("read whole"))
            streamed_profile = tokprof.profile(path, model)
    else:
        streamed_profile = tokprof.profile(path, model)
    whole = tokprof.profile(tokprof.read_log(path), model)
    return streamed_profile.to_json(), whole.to_json()


@pytest.mark.parametrize("name", ["many stretches", "parallel tools beside the chain", "inline sidechain"])
def test_profile_of_a_streamed_log_is_the_whole_logs(tmp_path, model_dir, monkeypatch, name):
    path = write_jsonl(tmp_path / "s.jsonl", SAME[name])
    streamed_json, whole_json = profiles(path, str(model_dir), monkeypatch)
    assert streamed_json == whole_json
    doc = json.loads(streamed_json)
    for call in doc["calls"]:
        assert all(value >= 0 for value in call["buckets"].values())
        assert sum(call["buckets"].values()) == call["total"]


@pytest.mark.parametrize("name", ["a subagent copied in progress lines too", "a compaction transcript"])
def test_profile_of_a_streamed_session_with_side_transcripts_is_the_whole_sessions(
    tmp_path, model_dir, monkeypatch, name
):
    streamed_json, whole_json = profiles(SIDES[name](tmp_path), str(model_dir), monkeypatch)
    assert streamed_json == whole_json
    kinds = [call["kind"] for call in json.loads(streamed_json)["calls"]]
    assert ("compaction" in kinds) == (name == "a compaction transcript")


@pytest.mark.parametrize("name", ["a late line of a call", "a branch across a compaction", "a requestId reused"])
def test_profile_reads_whole_what_the_stream_gives_up_on(tmp_path, model_dir, name):
    path = write_jsonl(tmp_path / "s.jsonl", UNSTREAMABLE[name][0])
    streamed_json, whole_json = profiles(path, str(model_dir))
    assert streamed_json == whole_json


def test_the_model_chosen_from_the_first_call_is_the_logs(tmp_path, monkeypatch):
    rows = SAME["inline sidechain"]  # a main-thread model and a subagent's: claude-proxy for both
    path = write_jsonl(tmp_path / "s.jsonl", rows)
    streamed_json, whole_json = profiles(path, None, monkeypatch)
    assert streamed_json == whole_json
    assert json.loads(streamed_json)["model"]["name"] == "claude-proxy"


def test_a_model_other_than_the_first_calls_reads_it_whole(tmp_path):
    rows = split_response()
    rows[-1]["message"]["model"] = "qwen2.5-7b-instruct"  # the first call's is Claude's
    path = write_jsonl(tmp_path / "s.jsonl", rows)
    streamed_json, whole_json = profiles(path, None)
    assert streamed_json == whole_json


def test_profile_steps_are_the_logs_bytes(tmp_path, model_dir):
    path = write_jsonl(tmp_path / "s.jsonl", stretches(2, WINDOW + 1))
    steps: list[tuple[int, int]] = []
    tokprof.profile(path, str(model_dir), progress=lambda done, total: steps.append((done, total)))
    assert steps and steps[-1] == (path.stat().st_size, path.stat().st_size)
    assert all(a[0] <= b[0] for a, b in zip(steps, steps[1:]))


def test_a_bad_line_after_calls_is_the_whole_reads_error(tmp_path, model_dir):
    rows = stretches(1, WINDOW + 2)
    rows.insert(len(rows) - 1, {"type": "assistant", "uuid": "bad", "message": "not an object"})
    path = write_jsonl(tmp_path / "s.jsonl", rows)
    with pytest.raises(tokprof.InputError) as streamed_error:
        tokprof.profile(path, str(model_dir))
    with pytest.raises(tokprof.InputError) as whole_error:
        read_trace(str(path))
    assert str(streamed_error.value) == str(whole_error.value)


def test_the_trace_model_counts_the_names_as_written(tmp_path):
    """Two names that read the same once shown safely are two models, as the whole read counts them."""
    names = ["m\n", "m\n", "m\\n", "m\\n", "b", "b", "b"]
    rows: list[dict] = []
    for i, name in enumerate(names):
        rows.append(user(f"u{i}", rows[-1]["uuid"] if rows else None, f"q{i}"))
        rows.append(assistant(f"a{i}", f"u{i}", f"r{i}", [text(f"a{i}")], model=name))
    path = write_jsonl(tmp_path / "s.jsonl", rows)
    assert_same_as_whole_read(path)
    assert streamed(path)[1].trace.model == "b"
