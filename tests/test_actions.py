"""What to change (#47.2): at most three actions, ranked by the dollars a replay of the log proves each
saves, in the profile's terminal table, JSON and HTML; an unpriced log gets tokens and the reason."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from conftest import ROOT
from tokprof.analyses.actions import MAX_ACTIONS, rank
from tokprof.frontends.cli import main
from tokprof.profiling import Action, Profile

SAMPLE = ROOT / "samples" / "incident_session.json"
MODEL = "claude-sonnet-4-5-20250929"
START = datetime(2025, 10, 26, 10, 0, tzinfo=timezone.utc)
#: A Read result of about 11,000 characters: a cap of 4,000 cuts it.
LISTING = "".join(f"    def step_{n}(self, value):\n        return value + {n}\n" for n in range(200))


def _at(seconds: float) -> str:
    return (START + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def _line(kind: str, uuid: str, parent: str | None, at: float, **extra) -> dict:
    return {
        "parentUuid": parent,
        "isSidechain": extra.pop("sidechain", False),
        "sessionId": "advice-1",
        "type": kind,
        "uuid": uuid,
        "timestamp": _at(at),
        **extra,
    }


def _assistant(uuid: str, parent: str, n: int, at: float, blocks: list, prompt: int, read: int, **extra) -> dict:
    usage = {"input_tokens": 3, "cache_creation_input_tokens": prompt - read - 3, "cache_read_input_tokens": read}
    message = {
        "model": MODEL,
        "id": f"msg_{n}",
        "type": "message",
        "role": "assistant",
        "content": blocks,
        "stop_reason": "tool_use",
        "usage": {**usage, "output_tokens": 400},
    }
    return _line("assistant", uuid, parent, at, message=message, requestId=f"req_{uuid}", **extra)


def claude_session(folder: Path, idle_before: int = 4, mcp: bool = False) -> Path:
    """A Claude Code session (priced: claude-sonnet-4-5) of six Read calls whose results run to about 11,000
    characters, the call ``idle_before`` coming back after ten idle minutes (its cache gone), and a
    subagent's two calls on a side chain. ``mcp``: the third call is an MCP server's tool
    (``mcp__github__get_issue``) instead."""
    rows = [_line("user", "u0", None, 0, message={"role": "user", "content": "Read the modules and fix the bug."})]
    parent, clock, prompt, previous = "u0", 0.0, 6000, 0
    for i in range(6):
        clock += 600 if i == idle_before else 20
        read = 0 if i in (0, idle_before) else previous
        name = "mcp__github__get_issue" if mcp and i == 2 else "Read"
        use = {"type": "tool_use", "id": f"t{i}", "name": name, "input": {"file_path": f"src/m{i}.py"}}
        rows.append(_assistant(f"a{i}", parent, i, clock, [{"type": "text", "text": "Reading."}, use], prompt, read))
        content = [{"type": "tool_result", "tool_use_id": f"t{i}", "content": LISTING}]
        rows.append(_line("user", f"r{i}", f"a{i}", clock + 1, message={"role": "user", "content": content}))
        parent, previous, prompt = f"r{i}", prompt, prompt + 3200
        if i == 1:  # a subagent: its own thread, two calls
            side = {"agentId": "feed1", "sidechain": True}
            rows.append(
                _line("user", "s0", None, clock + 2, message={"role": "user", "content": "Find the tests"}, **side)
            )
            glob = {"type": "tool_use", "id": "st0", "name": "Glob", "input": {"pattern": "tests/*.py"}}
            rows.append(_assistant("s1", "s0", 100, clock + 3, [glob], 3000, 0, **side))
            found = [{"type": "tool_result", "tool_use_id": "st0", "content": "tests/test_m.py"}]
            rows.append(_line("user", "s2", "s1", clock + 4, message={"role": "user", "content": found}, **side))
            rows.append(_assistant("s3", "s2", 101, clock + 5, [{"type": "text", "text": "One."}], 3050, 3000, **side))
    path = folder / "advice-1.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def run_json(args: list[str], capsys) -> dict:
    assert main(args) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def session(tmp_path_factory) -> Path:
    return claude_session(tmp_path_factory.mktemp("advice"))


@pytest.fixture(scope="module")
def advised(session) -> dict:
    """The session's profile JSON (made once for the module)."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["profile", str(session), "-f", "json", "--no-progress"]) == 0
    return json.loads(out.getvalue())


def test_actions_are_ranked_by_dollars_and_at_most_three(advised):
    actions = advised["actions"]
    assert 1 <= len(actions) <= MAX_ACTIONS
    priced = [a["dollars"] for a in actions if a["dollars"] is not None]
    assert priced == sorted(priced, reverse=True) and all(d > 0 for d in priced)
    for a in actions:
        assert set(a) == {"what", "why", "dollars", "tokens", "how", "basis", "estimate", "unpriced"}
        assert a["estimate"] is True  # Claude's tokenizer is not public: the counts are a proxy's
        assert (a["dollars"] is None) == (a["unpriced"] is not None)


def test_the_idle_gap_action_is_what_cache_forensics_prices(advised):
    """The cache fix's dollars are the profile's own loss to idle gaps, its tokens the tokens lost."""
    action = next(a for a in advised["actions"] if a["basis"] == "cache")
    assert action["what"] == "resume within the cache's lifetime"
    lost = next(r for r in advised["summary"]["cache"]["lost"]["by_reason"] if r["reason"] == "idle-gap")
    assert action["dollars"] == pytest.approx(lost["cost"]) and action["tokens"] == lost["tokens"]
    assert "5 minutes" in action["how"]


def test_the_results_action_is_the_replays_saving(session, advised, capsys):
    """The tool-results action saves what whatif's replay of the same policy saves, to the cent, and names
    the tool whose results it cuts, with Claude Code's documented settings."""
    action = next(a for a in advised["actions"] if a["basis"].startswith("replay:"))
    policy = action["basis"].split(":", 1)[1]
    replay = run_json(["whatif", str(session), "-p", policy, "-f", "json", "--no-progress"], capsys)
    result = next(p for p in replay["policies"] if p["policy"] == policy)
    assert action["dollars"] == pytest.approx(result["cost_saving"], abs=1e-6) and action["dollars"] > 0
    assert action["tokens"] == result["saving"]
    assert "Read" in action["what"]
    assert "Claude Code" in action["how"]


def test_the_block_comes_first_in_the_terminal_and_the_html(session, advised, tmp_path, capsys):
    assert main(["profile", str(session), "--no-progress"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    heading = next(i for i, line in enumerate(lines) if line.startswith("What to change"))
    assert all(line.startswith(("tokprof profile", "  ")) for line in lines[:heading])  # right under the heading
    first = advised["actions"][0]
    assert out.index(first["what"][:30]) < out.index("call ")  # before the table of calls
    assert "$" in out.split("\n  2.")[0]  # the first action says its dollars
    page = tmp_path / "r.html"
    assert main(["report", str(session), "-o", str(page), "--no-progress"]) == 0
    text = page.read_text(encoding="utf-8")
    assert text.index('<section class="actions">') < text.index('<div class="cards">')


def test_an_unpriced_log_gets_tokens_and_why_no_dollars(capsys):
    doc = run_json(["profile", str(SAMPLE), "-f", "json", "--no-progress"], capsys)
    actions = doc["actions"]
    assert actions and all(a["dollars"] is None for a in actions)
    for a in actions:
        assert a["tokens"] > 0 and a["unpriced"]
    replayed = next(a for a in actions if a["basis"].startswith("replay:"))
    assert "no price" in replayed["unpriced"]
    unused = next(a for a in actions if a["basis"] == "replay:drop-tools")  # replayed; unpriced: said so
    assert "never called" in unused["what"] and "no price" in unused["unpriced"]
    assert unused["tokens"] == 42244  # the four unused tools' definitions over the 59 calls (tokprof tools)


def test_dropping_tools_never_called_is_replayed_and_priced(capsys):
    """The tools-never-called action carries the dollars its replay (whatif -p drop-tools) proves: on the
    sample, which caches nothing, each dropped definition token at the input price, to the cent."""
    price = ["--price", "1/2/0.1/1.25"]
    doc = run_json(["profile", str(SAMPLE), "-f", "json", "--no-progress", *price], capsys)
    unused = next(a for a in doc["actions"] if a["basis"] == "replay:drop-tools")
    assert unused["what"].startswith("drop 4 tools never called") and unused["unpriced"] is None
    whole = run_json(["whatif", str(SAMPLE), "-p", "drop-tools", "-f", "json", "--no-progress", *price], capsys)
    drop = next(p for p in whole["policies"] if p["policy"] == "drop-tools")
    assert unused["dollars"] == pytest.approx(drop["cost_saving"], abs=1e-6)
    assert unused["tokens"] == drop["saving"] == 42244
    assert drop["cost_saving"] == pytest.approx(42244 / 1e6, abs=1e-6)  # uncached: $1 per million input tokens
    assert drop["buckets_billed"]["tool_definitions"] == 147323 - 42244
    assert all(c["changed"] for c in drop["per_call"]) and drop["changed_calls"] == 59


def test_a_priced_sample_ranks_its_replay_by_dollars(capsys):
    """With prices the same sample's replayed action has dollars, equal to whatif's for its policy."""
    doc = run_json(["profile", str(SAMPLE), "-f", "json", "--no-progress", "--price", "0.5/2/0.05"], capsys)
    replayed = next(a for a in doc["actions"] if a["basis"].startswith("replay:"))
    assert replayed["dollars"] is not None and replayed["dollars"] > 0
    assert doc["actions"][0] == replayed  # dollars before the unpriced


def test_a_saved_profile_keeps_its_actions(advised, tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(advised), encoding="utf-8")
    loaded = Profile.load(path)
    assert loaded.actions is not None and [a.to_dict() for a in loaded.actions] == advised["actions"]


def test_rank_never_lists_more_than_three_and_puts_dollars_first():
    def action(what: str, dollars: float | None, tokens: int) -> Action:
        return Action(what, "w", dollars, tokens, "h", "cache", unpriced=None if dollars is not None else "x")

    ranked = rank([action("a", None, 10**9), action("b", 0.5, 10), action("c", 2.0, 5), action("d", 1.0, 1)])
    assert [a.what for a in ranked] == ["c", "d", "b"]


def test_a_directory_view_adds_the_cache_fixes_up(tmp_path, capsys, monkeypatch):
    """``tokprof profile DIR``: each session's cache fixes (no replay per session), the same fix added up."""
    monkeypatch.setenv("COLUMNS", "200")  # the heading's long temporary path on one line, whatever the terminal
    folder = tmp_path / "all"
    folder.mkdir()
    first = claude_session(folder)
    second = folder / "advice-2.jsonl"
    text = first.read_text(encoding="utf-8")
    for old, new in (("advice-1", "advice-2"), ('"msg_', '"msg2_'), ('"req_', '"req2_')):  # another session's calls
        text = text.replace(old, new)
    second.write_text(text, encoding="utf-8")
    doc = run_json(["profile", str(folder), "-f", "json", "--no-progress", "--jobs", "1"], capsys)
    (action,) = doc["actions"]
    assert action["what"] == "resume within the cache's lifetime" and action["why"].startswith("in 2 sessions")
    lost = sum(s["cache_lost_cost"] for s in doc["sessions"])
    assert action["dollars"] == pytest.approx(lost, abs=1e-6)
    assert main(["profile", str(folder), "--no-progress", "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].startswith("What to change") and "tokprof profile DIR --session ID" in out


def test_a_directory_view_without_a_cache_fix_says_only_that(tmp_path, capsys, monkeypatch):
    """A directory view prices the cache fixes alone: with none it says so, never that no change saves anything
    (its sessions' replays were not run), and how to have them."""
    monkeypatch.setenv("COLUMNS", "200")
    folder = tmp_path / "calm"
    folder.mkdir()
    claude_session(folder, idle_before=99)  # no idle gap: no cache miss to fix
    assert main(["profile", str(folder), "--no-progress", "--jobs", "1"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "no cache fix saves anything over these sessions" in out and "none of the changes" not in out
    assert "tools never called dropped): tokprof profile DIR --session ID" in out
