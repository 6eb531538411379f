"""What a policy forgets: facts found verbatim in each policy's prompts, on small hand-made logs
(one per policy), regular expressions, facts split across messages, and the CLI's table and JSON."""

from __future__ import annotations

import json

import pytest

import tokprof
from conftest import CHATML, ROOT, WEATHER_TOOL, tiny_model
from test_whatif import make_trace, trace_of
from tokprof.analyses.retention import carries, first_calls, parse_fact, retention, suggest_facts
from tokprof.analyses.whatif import whatif
from tokprof.frontends.cli import main
from tokprof.base.errors import InputError
from tokprof.trace import Call
from tokprof.transforms import policies as P

SAMPLE = ROOT / "samples" / "incident_session.json"
SHARD = "pay-shard-7"


@pytest.fixture(scope="module")
def tiny():
    model = tiny_model(CHATML)
    model.context_window = 400
    return model


def session() -> list[dict]:
    """A standing rule in the first user message, a fact named once in a tool result of turn 2, then
    turns that do not repeat either."""
    messages: list[dict] = [
        {"role": "system", "content": "You are a test bot ."},
        {"role": "user", "content": "Always page the on-call before a rollback . define cat"},
    ]
    for turn in range(6):
        if turn:
            messages.append({"role": "user", "content": f"define cat {turn}"})
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"c{turn}", "type": "function", "function": {"name": "lookup", "arguments": {"word": "cat"}}}
                ],
            }
        )
        result = f"the affected shard is {SHARD} . " if turn == 2 else ""
        messages.append({"role": "tool", "tool_call_id": f"c{turn}", "content": result + "cat is an animal . " * 6})
        messages.append({"role": "assistant", "content": "A cat is an animal ."})
    return messages


def facts_under(spec: str, tiny, *texts: str):
    trace = make_trace(trace_of(session()))
    facts = [parse_fact(t) for t in texts]
    report = whatif(trace, tiny, [P.parse_policy(spec)] if spec != "full" else [], facts=facts)
    return report.policies[-1].facts, trace


def test_full_keeps_every_fact_from_where_it_appears(tiny):
    (shard,), trace = facts_under("full", tiny, SHARD)
    tool_turn = next(c.index for c in trace.calls if any(SHARD in str(m.get("content")) for m in c.messages))
    assert shard.first_call == tool_turn and shard.kept_in_final and shard.calls_missing == ()
    assert shard.last_call == trace.calls[-1].index


def test_a_window_drops_a_fact_named_once(tiny):
    (shard,), _ = facts_under("window:4", tiny, SHARD)
    assert shard.dropped and shard.kept_in_final is False and shard.calls_missing


def test_elide_keeps_user_text_and_drops_old_tool_results(tiny):
    rule, shard = facts_under("elide:1", tiny, "Always page the on-call", SHARD)[0]
    assert rule.kept_in_final and not rule.dropped  # the user's own words stay
    assert shard.dropped  # the tool result that named the shard is elided


def test_a_cap_that_cuts_inside_a_tool_result_loses_what_is_past_the_cut(tiny):
    (shard,), _ = facts_under("cap:3", tiny, SHARD)
    assert shard.dropped  # the shard is past the first three tokens of its result
    (kept,), _ = facts_under("cap:100000", tiny, SHARD)
    assert kept.kept_in_final


def test_user_verbatim_keeps_the_standing_rule(tiny):
    (rule,), _ = facts_under("user-verbatim:1", tiny, "Always page the on-call")
    assert rule.kept_in_final


def test_a_compaction_summary_carries_a_fact_only_if_it_says_it(tiny):
    messages = session()
    calls = trace_of(messages)
    for summary, kept in (("summary: the shard is pay-shard-7", True), ("summary: cats are animals", False)):
        compaction = Call(
            index=0,
            messages=messages[:-1] + [{"role": "user", "content": "summarise"}],
            tools=[WEATHER_TOOL],
            kind="compaction",
            response={"role": "assistant", "content": summary},
        )
        after = Call(
            index=0,
            messages=[{"role": "user", "content": summary}, {"role": "user", "content": "go on"}],
            tools=[WEATHER_TOOL],
        )
        trace = make_trace(calls + [compaction, after])
        fact = parse_fact(SHARD)
        (result,) = retention(trace, [fact], first_calls(trace, [fact]))
        assert result.kept_in_final is kept


def test_regular_expressions_and_facts_split_across_messages():
    fact = parse_fact(r"re:pay-shard-\d+")
    assert carries([{"role": "tool", "content": "shard pay-shard-12 is hot"}], fact)
    split = parse_fact("pay-shard-7")
    assert not carries([{"role": "user", "content": "pay-"}, {"role": "user", "content": "shard-7"}], split)
    assert carries([{"role": "assistant", "tool_calls": [{"function": {"arguments": '{"s": "pay-shard-7"}'}}]}], split)
    with pytest.raises(InputError, match="not a regular expression"):
        parse_fact("re:(")
    with pytest.raises(InputError, match="empty"):
        parse_fact("  ")


def test_a_fact_in_no_prompt_is_said_so(tiny):
    (missing,), _ = facts_under("window:4", tiny, "no such thing")
    assert missing.first_call is None and missing.kept_in_final is None and not missing.dropped


def test_suggestions_come_from_the_users_own_messages():
    trace = make_trace(trace_of(session()))
    found = suggest_facts(trace)
    assert any(s.startswith("Always page the on-call") for s in found)
    assert SHARD not in found  # it is in a tool result, not in the user's words


def test_the_cli_shows_what_each_policy_forgets(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("COLUMNS", "120")
    facts = tmp_path / "facts.txt"
    facts.write_text("# the incident\nr-88419\n", encoding="utf-8")
    assert (
        main(
            [
                "whatif",
                str(SAMPLE),
                "-p",
                "window:20",
                "-p",
                "elide:2",
                "--fact",
                "CheckoutHigh5xxRate",
                "--facts",
                str(facts),
                "--no-progress",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "facts kept" in out and "2/2 LOST" not in out
    row = next(line for line in out.splitlines() if line.startswith("window:20"))
    assert "LOST" in row
    assert "fact 'CheckoutHigh5xxRate': first in call 0" in out
    assert main(["whatif", str(SAMPLE), "-p", "window:20", "--fact", "r-88419", "-f", "json", "--no-progress"]) == 0
    doc = json.loads(capsys.readouterr().out)
    fact = doc["policies"][1]["facts"][0]
    assert set(fact) == {"text", "first_call", "last_call", "kept_in_final", "calls_missing", "note"}
    assert fact["text"] == "r-88419" and fact["first_call"] == 23
    assert main(["whatif", str(SAMPLE), "--suggest-facts", "-f", "json"]) == 0
    assert "r-88419" in json.loads(capsys.readouterr().out)["suggested_facts"]


def test_the_api_takes_facts():
    report = tokprof.whatif(SAMPLE, ["window:20"], facts=["CheckoutHigh5xxRate"])
    assert report.policies[1].facts[0].dropped and not report.policies[0].facts[0].dropped


RETENTION = ROOT / "samples" / "retention_session.json"


def test_the_retention_sample_is_its_generators_output(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "session.json"
    subprocess.run([sys.executable, str(ROOT / "samples" / "retention.py"), "-o", str(out)], check=True)
    assert out.read_bytes() == RETENTION.read_bytes()


def test_the_retention_sample_tells_the_seeds_story():
    facts = [
        line
        for line in (ROOT / "samples" / "retention_facts.txt").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    report = tokprof.whatif(RETENTION, ["window:20", "elide:2", "user-verbatim:4"], facts=facts)
    kept = {r.policy: [f.kept_in_final for f in r.facts] for r in report.policies}
    assert kept == {
        "full": [True, True],
        "window:20": [False, False],
        "elide:2": [True, False],
        "user-verbatim:4": [True, False],
    }
    assert report.policies[0].facts[1].first_call == 33


def test_a_fact_only_subagents_carry_says_so(tiny):
    main = trace_of(session())
    sub = trace_of(
        [{"role": "user", "content": "the secret is zebra-42"}, {"role": "assistant", "content": "ok"}], thread="sub"
    )
    trace = make_trace(main, sub)
    fact = parse_fact("zebra-42")
    (result,) = retention(trace, [fact], first_calls(trace, [fact]))
    assert result.first_call is None and result.note and "subagents" in result.note


def test_suggestions_see_each_user_message_once_however_often_it_is_copied():
    messages = session()
    calls = [
        Call(index=i, messages=[dict(m) for m in messages[:n]], tools=None)  # copies, as readers make
        for i, n in enumerate(range(3, len(messages), 4))
    ]
    found = suggest_facts(make_trace(calls))
    assert any(s.startswith("Always page the on-call") for s in found)
    assert len(found) == len(set(found))
