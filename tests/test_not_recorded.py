"""Numbers a user can trust: 'not recorded' is never 0, reconciliation is weighted by tokens, and the
final prompt is the main conversation's."""

from __future__ import annotations

from conftest import small_transcript, tiny_model
from tokprof.analyses.budgets import evaluate, measure_profile
from tokprof.transforms.config import parse_config
from tokprof.profiling import profile_trace
from tokprof.render import RenderOptions
from tokprof.render.table import TableRenderer
from tokprof.trace import Call, Trace, Usage


def agent_trace(thread_of=lambda i: "", reported=None, unrecorded=("system", "tools")) -> Trace:
    messages = small_transcript(system=False, tools=False)["messages"]
    prompts = [messages[:1], messages[:3], messages[:4]]
    calls = []
    for i, prompt in enumerate(prompts):
        usage = Usage(prompt=reported[i]) if reported else None
        calls.append(
            Call(
                index=i,
                messages=list(prompt),
                tools=None,
                model="m",
                reported=usage,
                where=f"line {i}",
                thread=thread_of(i),
            )
        )
    return Trace(path="s.jsonl", format="test", calls=calls, model="m", unrecorded=unrecorded)


def test_a_log_without_tool_definitions_says_not_recorded():
    profile = profile_trace(agent_trace(reported=(500, 800, 1200)), tiny_model())
    assert profile.summary().not_recorded == ("system_prompt", "tool_definitions")
    text = TableRenderer().render(profile, RenderOptions(width=120))
    assert "tool results > tool defs  not recorded" in text and "never" not in text
    assert "tool catalogue" in text and "not recorded (give it with --tools" in text


def test_check_fails_on_what_is_not_recorded_unless_told_to_skip():
    profile = profile_trace(agent_trace(reported=(500, 800, 1200)), tiny_model())
    measurement = measure_profile(profile)
    assert measurement.metrics["tool_definitions"] is None and measurement.metrics["system_prompt"] is None
    config = parse_config(
        {
            "budgets": {
                "tool_definitions": 100,
                "system_prompt": {"max": 100, "not_recorded": "skip"},
                "unused_tool_waste": {"max": "5%", "level": "warn"},
            }
        },
        "t.toml",
        "",
    )
    result = evaluate(config, measurement, None, None)
    status = {m.name: m.status for m in result.metrics}
    assert status == {"tool_definitions": "fail", "system_prompt": "n/a", "unused_tool_waste": "warn"}
    assert result.exit_code == 1
    assert all(m.reasons[0].startswith("not recorded") for m in result.metrics)


def test_a_log_that_records_no_tools_is_not_unrecorded():
    profile = profile_trace(agent_trace(reported=(500, 800, 1200), unrecorded=()), tiny_model())
    assert profile.summary().not_recorded == ()
    assert "no tool definitions in the log" in TableRenderer().render(profile, RenderOptions(width=120))
    assert measure_profile(profile).metrics["tool_definitions"] == 0


def test_final_prompt_is_the_main_conversations():
    trace = agent_trace(thread_of=lambda i: "sub" if i == 2 else "", unrecorded=())
    trace.calls[2].messages = trace.calls[2].messages[:1]
    profile = profile_trace(trace, tiny_model())
    summary = profile.summary()
    assert summary.final_prompt == profile.calls[1].total != profile.calls[2].total
    assert [(t.thread, t.calls) for t in summary.threads] == [(None, 2), ("sub", 1)]
    assert summary.to_dict()["threads"][1]["thread"] == "sub"
    assert profile.calls[2].to_dict()["thread"] == "sub" and profile.calls[0].to_dict()["thread"] is None


def test_reconciliation_is_weighted_by_tokens():
    from tokprof.profiling import CallRow, Profile, Source

    rows = [
        CallRow(
            index=i,
            buckets={"conversation": 11},
            total=11,
            cumulative=0,
            messages=1,
            where="",
            reported=Usage(prompt=8),
            computed=11,
        )
        for i in range(18)
    ]
    rows.append(
        CallRow(
            index=18,
            buckets={"conversation": 40000},
            total=40000,
            cumulative=0,
            messages=1,
            where="",
            reported=Usage(prompt=40000),
            computed=40000,
        )
    )
    profile = Profile(model=tiny_model().describe(), source=Source("x", "t"), calls=rows)
    check = profile.reconciliation()
    assert check is not None and check.mean_relative_difference > 0.3
    assert check.weighted_relative_difference == round(18 * 3 / (18 * 8 + 40000), 6) < 0.01
