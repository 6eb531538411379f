"""Budget and cache rules: a global max_increase in tokens and the metrics in dollars or shares, absolute share
allowances in percentage points, the 5-minute note at the user's rates, the check's closing count,
and the shared prefix of a prompt that differs from its first message."""

from __future__ import annotations

import json
from datetime import date

import pytest

import tokprof
from tokprof.analyses import budgets
from tokprof.analyses.prefix_cache import estimate_shared
from tokprof.attribution.facts import pair_facts
from tokprof.transforms.config import load_file
from tokprof.pricing.billing import WRITES_AT_5M
from tokprof.attribution.estimates import UNRECORDED
from tokprof.profiling import CallRow
from tokprof.render.check import CheckMarkdownRenderer, CheckTableRenderer
from tokprof.trace import Call, Trace, Usage

SONNET = "claude-sonnet-4-5-20250929"
DAY = date(2025, 10, 26)


def conversation(turns: int) -> list[dict]:
    messages = [{"role": "user", "content": "define cat " * 30}]
    for i in range(turns):
        messages += [
            {"role": "assistant", "content": f"step {i} " + "word " * 60},
            {"role": "user", "content": f"go on {i} " + "more " * 60},
        ]
    return messages


def trace_of(*usages: Usage, messages: list[list[dict]] | None = None, unrecorded: tuple[str, ...] = ()) -> Trace:
    calls = [
        Call(
            index=i,
            messages=messages[i] if messages else conversation(i),
            tools=None,
            model=SONNET,
            reported=usage,
            day=DAY,
            where=f"call {i}",
        )
        for i, usage in enumerate(usages)
    ]
    return Trace(path="test.json", format="test", calls=calls, model=SONNET, unrecorded=unrecorded)


GOOD = (
    Usage(prompt=10_000, cache_read=0, cache_write=9000, output=1),
    Usage(prompt=11_000, cache_read=9000, cache_write=2000, output=1),
)
# a little worse: a few more uncached tokens, a slightly lower hit rate and a higher cost
WORSE = (
    Usage(prompt=10_000, cache_read=0, cache_write=9000, output=1),
    Usage(prompt=11_000, cache_read=8990, cache_write=2000, output=1),
)


def check(tmp_path, toml: str, baseline_usages=GOOD, usages=WORSE) -> budgets.CheckResult:
    config = tmp_path / "tokprof.toml"
    config.write_text(toml)
    baseline = tmp_path / "tokprof-baseline.json"
    before = budgets.measure_profile(tokprof.profile(trace_of(*baseline_usages), model="qwen2.5"))
    baseline.write_text(json.dumps(before.baseline_dict()))
    now = budgets.measure_profile(tokprof.profile(trace_of(*usages), model="qwen2.5"))
    return budgets.judge(now, load_file(config), str(baseline))


def by_name(result: budgets.CheckResult) -> dict[str, budgets.MetricResult]:
    return {m.name: m for m in result.metrics}


# -- A: a global max_increase in tokens ---------------------------------------------------------------------
def test_a_global_number_of_tokens_does_not_apply_to_dollars_and_shares_and_says_so(tmp_path, qwen25):
    result = check(tmp_path, 'max_increase = 1000\n[budgets]\ncost = "$5"\ncache_hit_rate = { min = "1%" }\n')
    metrics = by_name(result)
    assert metrics["billed_input"].allowed_increase == "1000" and metrics["billed_input"].status == budgets.PASS
    # compared as with no global max_increase: any change for the worse fails ...
    for name in ("cost", "cache_hit_rate"):
        assert metrics[name].status == budgets.FAIL and metrics[name].allowed_increase == "0%"
    # ... and the report says why, naming them
    note = next(n for n in result.notes if n.startswith("the global max_increase (1000)"))
    assert "does not apply to unused_tool_waste, cost, largest_call_cost, cache_hit_rate" in note
    assert "fail on any increase" in note and "note: the global max_increase (1000)" in CheckTableRenderer().render(
        result
    )
    # a relative global value applies to every metric, with no such note
    relative = check(tmp_path, 'max_increase = "5%"\n[budgets]\ncost = "$5"\n')
    assert by_name(relative)["cost"].status == budgets.PASS and not any("number of tokens" in n for n in relative.notes)
    # a metric's own allowance is kept, and not named in the note
    own = check(tmp_path, 'max_increase = 1000\n[budgets]\ncost = { max = "$5", max_increase = "5%" }\n')
    assert by_name(own)["cost"].status == budgets.PASS
    assert not any("apply to cost," in n for n in own.notes)


# -- B: an absolute share allowance in percentage points ----------------------------------------------------
def test_b_absolute_share_allowance_is_shown_in_percentage_points(tmp_path, qwen25):
    result = check(tmp_path, '[budgets]\ncache_hit_rate = { min = "1%", max_increase = 0.00005 }\n')
    metric = by_name(result)["cache_hit_rate"]
    assert metric.status == budgets.FAIL
    assert metric.reasons[-1].endswith("more than the allowed 0.005 percentage points")
    assert "5e-05" not in " ".join(metric.reasons)
    markdown = CheckMarkdownRenderer().render(result)
    assert "| min 1.00%, +0.005 pt |" in markdown and "5e-05" not in markdown
    assert metric.to_dict()["max_increase"] == "5e-05"  # the JSON keeps it as written
    # a relative one, and one in tokens, read as before
    tokens = check(tmp_path, "[budgets]\nuncached_input = { max = 5000, max_increase = 5 }\n")
    assert (
        by_name(tokens)["uncached_input"]
        .reasons[-1]
        .endswith("1,010 is up 10 from the baseline's 1,000, more than the allowed 5")
    )
    assert "| max 5,000, +5 |" in CheckMarkdownRenderer().render(tokens)


# -- C: user rates and writes of unknown lifetime -----------------------------------------------------------
def test_c_user_rates_with_a_one_hour_rate_note_writes_priced_at_the_five_minute_rate(qwen25):
    unsplit = Usage(prompt=10_003, cache_read=0, cache_write=10_000, output=0)
    split = Usage(prompt=10_003, cache_read=0, cache_write=10_000, output=0, cache_write_5m=0, cache_write_1h=10_000)
    plain = tokprof.profile(trace_of(unsplit), model="qwen2.5", prices=["1/2/0.1/1.25/3"]).calls[0].cost
    assert plain.cache_write == pytest.approx(10_000 * 1.25 / 1e6) and WRITES_AT_5M in plain.notes
    long = tokprof.profile(trace_of(split), model="qwen2.5", prices=["1/2/0.1/1.25/3"]).calls[0].cost
    assert long.cache_write == pytest.approx(10_000 * 3 / 1e6) and WRITES_AT_5M not in long.notes
    # no 1-hour rate of its own (or the same as the 5-minute one): the lifetime does not matter, no note
    for rates in ("1/2/0.1/1.25", "1/2/0.1/1.25/1.25", "1/2"):
        cost = tokprof.profile(trace_of(unsplit), model="qwen2.5", prices=[rates]).calls[0].cost
        assert WRITES_AT_5M not in cost.notes, rates


# -- D: the closing line counts metrics --------------------------------------------------------------------
def test_d_closing_line_counts_each_failing_metric_once(tmp_path, qwen25):
    result = check(tmp_path, 'max_increase = "0%"\n[budgets]\ncost = 0.000001\ncache_hit_rate = { min = "1%" }\n')
    failed = [m for m in result.metrics if m.status == budgets.FAIL]
    assert {m.name for m in failed} >= {"cost", "cache_hit_rate"}
    assert by_name(result)["cost"].failed == ("budget", "baseline")  # both: counted once
    regressed = sum(m.failed[0] == "baseline" for m in failed)
    line = (
        f"FAILED: 1 metric exceeded its budget, {regressed} metric{'s' if regressed != 1 else ''} regressed "
        "against the baseline"
    )
    assert 1 + regressed == len(failed)
    assert CheckTableRenderer().render(result).rstrip().endswith(line)
    assert CheckMarkdownRenderer().render(result).startswith(f"### tokprof check: {line}\n")


# -- E: the shared prefix when the first message differs -----------------------------------------------------
def _row(buckets: dict[str, int]) -> CallRow:
    return CallRow(index=0, buckets=buckets, total=sum(buckets.values()), cumulative=0, messages=2, where="call 0")


def test_e_a_changed_first_message_still_shares_what_comes_before_it():
    buckets = {"system": 0, "tool_definitions": 0, "tool_results": 500, "conversation": 1500, UNRECORDED: 20_000}
    user = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    before = Call(index=0, messages=user, tools=None)
    after = Call(index=1, messages=[{"role": "user", "content": "a summary"}], tools=None)
    parted = pair_facts(before, after, tools_changed=False)
    assert parted.changed_at == 0
    assert estimate_shared(_row(buckets), parted) == 20_000  # the unrecorded fixed part
    with_tools = dict(buckets, tool_definitions=700)
    assert estimate_shared(_row(with_tools), parted) == 20_700
    # a system prompt that changed: only the tool definitions come before it
    system = [{"role": "system", "content": "old"}, *user]
    changed = Call(index=1, messages=[{"role": "system", "content": "new"}, *user], tools=None)
    new_system = pair_facts(Call(index=0, messages=system, tools=None), changed, tools_changed=False)
    assert estimate_shared(_row(with_tools), new_system) == 700
    tools_changed = pair_facts(before, after, tools_changed=True)
    assert estimate_shared(_row(with_tools), tools_changed) == 0  # the tools changed: nothing shared


def test_e_compaction_like_rewrite_predicts_the_unrecorded_part_read(qwen25):
    first = conversation(3)
    rewritten = [{"role": "user", "content": "summary " * 50}]
    usages = (
        Usage(prompt=21_000, cache_read=0, cache_write=20_990, output=5),
        Usage(prompt=25_000, cache_read=20_000, cache_write=4990, output=5),
    )
    trace = trace_of(*usages, messages=[first, rewritten], unrecorded=("system", "tools"))
    profile = tokprof.profile(trace, model="qwen2.5")
    before = profile.calls[0]
    assert 20_000 < before.buckets[UNRECORDED] < 21_000 and before.buckets["tool_definitions"] == 0
    cache = profile.calls[1].cache
    assert cache.miss == "prefix-changed" and cache.changed_at == 0
    # not 0: the fixed part before message 0 is read (the unrecorded part, and qwen2.5's default system prompt)
    fixed = before.buckets[UNRECORDED] + before.buckets["system"]
    assert cache.predicted == cache.shared == fixed
