"""What the reports say is true of each call it is said of (#26 item 4): the usage-at-stream-start
warning names only the calls whose output count looks like a placeholder; an estimate's tool-results
table adds up to its bucket (or says why not); `tools` and `profile` report the same billed input or
label the difference; a subagent is named by its agent id and kind, never by its file's path."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

import tokprof

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
CC21 = CORPUS / "claude_code_2.1_compacted" / "8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl"
CC20 = CORPUS / "claude_code_medium_full-session-four.jsonl"
ESTIMATED = (
    CC21,
    CC20,
    CORPUS / "codex_rollout-2025-09-25T09-49-46-01998190-fba6-7f40-9309-dc4e48c5844a.jsonl",
    CORPUS / "pi" / "pi_large-session.jsonl",
)


def needs(path: Path) -> Path:
    if not path.exists():
        pytest.skip("the shared corpus is absent")
    return path


@cache
def _profile(path: Path) -> tokprof.Profile:
    return tokprof.profile(path)


def profiled(path: Path) -> tokprof.Profile:
    """The log's profile, made once for the tests here (none of them changes it)."""
    return _profile(needs(path))


@pytest.mark.parametrize("log", ESTIMATED, ids=lambda p: p.name[:24])
def test_an_estimates_tool_results_add_up_to_their_bucket(log):
    """Each result's tokens and each resend are in the units of the call they are in, as that call's
    tool-results bucket was scaled: so they add up to the bucket, up to rounding per result."""
    found = profiled(log)
    summary = found.summary()
    costs = summary.tool_result_costs
    assert abs(costs.tokens + costs.carry_cost - summary.buckets_billed["tool_results"]) <= costs.results
    assert sum(t.tokens + t.carry_cost for t in costs.tools) == costs.tokens + costs.carry_cost


def test_the_21_session_adds_up_exactly_and_the_table_says_nothing_more():
    found = profiled(CC21)
    costs = found.summary().tool_result_costs
    assert (costs.tokens, costs.carry_cost) == (160610, 7171016)  # 7,331,626: the bucket
    assert "up to rounding" not in tokprof.render_report(found, "table")


def test_stream_start_names_only_calls_with_placeholder_output():
    """Claude Code 2.1.39 writes final output counts on most calls without a stop_reason: only 34 of the
    session's 157 calls (21 of the main conversation, the subagent's 13) have one under a token per 10
    characters of their output. Claude Code 2.0.27: 25 of 30."""
    for log, flagged, calls in ((CC21, 34, 157), (CC20, 25, 30)):
        found = profiled(log)
        note = next(w for w in found.warnings if w.code == "usage-at-stream-start")
        assert len(note.places) == flagged and len(found.calls) == calls
        under = [c.index for c in found.calls if c.cost and any("under-reported" in n for n in c.cost.notes)]
        assert len(under) == flagged


def test_tools_and_profile_report_the_same_billed_input_or_label_the_difference():
    sample = ROOT / "samples" / "incident_session.json"  # exact counts: one billed input
    report = tokprof.tools_report(sample)
    assert report.billed_input == report.billed_input_profile == tokprof.profile(sample).summary().billed_input
    assert "tokprof profile reports" not in tokprof.render_report(report, "table")
    found = profiled(CC21)
    estimate = tokprof.tools_report(CC21, tools=ROOT / "samples" / "tools_anthropic.json")
    assert estimate.billed_input == found.computed_billed_input() == 11665153  # the catalogue's (proxy) units
    assert estimate.billed_input_profile == found.summary().billed_input == 16486538
    text = tokprof.render_report(estimate, "table", width=200)
    assert (
        "(11,665,153 as the proxy counts it; tokprof profile reports 16,486,538, scaled to the reported usage)" in text
    )
    assert estimate.to_dict()["billed_input_profile"] == 16486538


def test_a_subagent_is_named_by_its_agent_id_and_kind_never_by_a_path(tmp_path):
    """Hand-made Claude Code sessions (the reader's test helpers): a sidechain of the session file without
    an agentId (Claude Code 1.0), a subagent rebuilt from the progress lines' copies, a subagent file."""
    import test_format_claude_code as cc

    rows = cc.main_thread_with_task(cc.subagent_lines())
    for row in rows:
        row.pop("agentId", None)
    inline = cc.read(cc.write_jsonl(tmp_path / "inline.jsonl", rows))
    assert [c.thread for c in inline.calls] == ["", "sidechain s-u1", "sidechain s-u1", ""]
    session = cc.write_jsonl(
        tmp_path / f"{cc.SESSION}.jsonl", cc.main_thread_with_task(cc.progress_copies(cc.subagent_lines()))
    )
    rebuilt = tokprof.profile(session)
    assert {c.thread for c in rebuilt.calls} == {None, "a1b2"}
    text = tokprof.render_report(rebuilt, "table", width=200)
    assert "subagent a1b2 (rebuilt from progress lines)" in text and str(tmp_path) not in text.split("\n", 1)[1]
    subagent = cc.write_jsonl(
        tmp_path / "f" / cc.SESSION / "subagents" / "agent-c3d4.jsonl",
        [{k: v for k, v in row.items() if k != "agentId"} for row in cc.subagent_lines()],
    )
    main = cc.write_jsonl(tmp_path / "f" / f"{cc.SESSION}.jsonl", cc.main_thread_with_task([]))
    assert subagent.exists()
    assert {c.thread for c in cc.read(main).calls} == {"", "c3d4"}
