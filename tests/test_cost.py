"""What it cost (#15): cache writes by lifetime, prices from genai-prices, the user's rates, unpriced
models, the computed cache (lifetimes, prefix changes, the providers' rules), and cost budgets."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal

import pytest

import tokprof
from conftest import ROOT
from tokprof.analyses import budgets
from tokprof.pricing.cost import parse_price
from tokprof.analyses.prefix_cache import attach_cache, openai_cached_read, rules_for
from tokprof.frontends.cli import main
from tokprof.transforms.config import ConfigError, load_file
from tokprof.pricing.billing import WRITES_AT_5M, PriceError
from tokprof.formats import read_trace
from tokprof.formats.neutral import anthropic_usage
from tokprof.profiling import Profile
from tokprof.trace import Call, Trace, Usage

CORPUS = ROOT.parent / "shared" / "corpus"
SONNET = "claude-sonnet-4-5-20250929"
DAY = date(2025, 10, 26)
SYSTEM = {"role": "system", "content": "You are a careful assistant. " * 40}


def genai(model: str, usage: Usage, day: date | None = DAY, provider: str | None = None) -> Decimal:
    """genai-prices' own price for a reported usage (input_tokens is the whole prompt)."""
    from genai_prices import Usage as GenaiUsage, calc_price

    values = {
        "input_tokens": usage.prompt,
        "cache_read_tokens": usage.cache_read or 0,
        "cache_write_tokens": usage.cache_write or 0,
        "output_tokens": usage.output or 0,
    }
    if usage.cache_write_1h:
        values["cache_write_1h_tokens"] = usage.cache_write_1h
    when = datetime.combine(day, datetime.min.time(), tzinfo=timezone.utc) if day else None
    return calc_price(GenaiUsage(**values), model, provider_id=provider, genai_request_timestamp=when).total_price


def conversation(turns: int) -> list[dict]:
    messages = [SYSTEM, {"role": "user", "content": "define cat " * 30}]
    for i in range(turns):
        messages += [
            {"role": "assistant", "content": f"step {i} " + "word " * 60},
            {"role": "user", "content": f"go on {i} " + "more " * 60},
        ]
    return messages


def trace_of(
    *usages: Usage | None,
    model: str | None = SONNET,
    tools: list | None = None,
    day: date | None = DAY,
    messages: list[list[dict]] | None = None,
) -> Trace:
    calls = []
    for i, usage in enumerate(usages):
        prompt = messages[i] if messages else conversation(i)
        calls.append(
            Call(index=i, messages=prompt, tools=tools, model=model, reported=usage, day=day, where=f"call {i}")
        )
    return Trace(path="test.json", format="test", calls=calls, model=model)


# -- usage: the cache writes by lifetime ------------------------------------------------------------
def test_anthropic_usage_splits_the_cache_writes_by_lifetime():
    usage = anthropic_usage(
        {
            "input_tokens": 3,
            "cache_creation_input_tokens": 8052,
            "cache_read_input_tokens": 17842,
            "ephemeral_5m_input_tokens": 52,
            "ephemeral_1h_input_tokens": 8000,
            "output_tokens": 10,
        }
    )
    assert (usage.prompt, usage.cache_write, usage.cache_write_5m, usage.cache_write_1h) == (25897, 8052, 52, 8000)
    assert usage.uncached == 3
    assert usage.to_dict()["cache_write_1h"] == 8000
    one = anthropic_usage({"input_tokens": 1, "cache_creation_input_tokens": 100, "ephemeral_1h_input_tokens": 100})
    assert (one.cache_write_5m, one.cache_write_1h) == (0, 100)
    plain = anthropic_usage({"input_tokens": 1, "cache_creation_input_tokens": 100})
    assert (plain.cache_write_5m, plain.cache_write_1h) == (None, None)  # not known: not assumed 5 minutes
    assert "cache_write_5m" not in plain.to_dict()


def test_anthropic_reader_reads_cache_creation(tmp_path):
    usage = {
        "input_tokens": 5,
        "cache_creation_input_tokens": 20,
        "cache_read_input_tokens": 100,
        "output_tokens": 7,
        "cache_creation": {"ephemeral_5m_input_tokens": 5, "ephemeral_1h_input_tokens": 15},
    }
    body = {"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    response = {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "yo"}], "usage": usage}
    path = tmp_path / "log.jsonl"
    path.write_text(json.dumps({"request": body, "response": response}) + "\n")
    reported = read_trace(str(path), "anthropic").calls[0].reported
    assert (reported.prompt, reported.cache_write, reported.cache_write_5m, reported.cache_write_1h) == (125, 20, 5, 15)
    path.write_text(
        json.dumps({"request": body, "response": dict(response, usage=dict(usage, cache_creation=3))}) + "\n"
    )
    with pytest.raises(tokprof.InputError, match="cache_creation"):
        read_trace(str(path), "anthropic")


def test_openai_chat_reads_cache_write_tokens(tmp_path):
    record = {
        "request": {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
        "response": {
            "choices": [{"message": {"role": "assistant", "content": "yo"}}],
            "usage": {
                "prompt_tokens": 2000,
                "completion_tokens": 5,
                "prompt_tokens_details": {"cached_tokens": 1024, "cache_write_tokens": 900},
            },
        },
    }
    path = tmp_path / "log.jsonl"
    path.write_text(json.dumps(record) + "\n")
    reported = read_trace(str(path), "openai-chat").calls[0].reported
    assert (reported.prompt, reported.cache_read, reported.cache_write) == (2000, 1024, 900)


# -- prices ----------------------------------------------------------------------------------------------
def test_cost_is_genai_prices_own_price_split_into_parts(qwen25):
    usages = [
        Usage(prompt=20_000, cache_read=0, cache_write=19_990, output=300),
        Usage(prompt=21_000, cache_read=19_990, cache_write=1000, output=200),
    ]
    profile = tokprof.profile(trace_of(*usages), model="qwen2.5")
    for row, usage in zip(profile.calls, usages):
        cost = row.cost
        assert cost.priced and cost.basis == "reported" and cost.source == "genai-prices"
        assert (cost.model, cost.provider, cost.date) == ("claude-sonnet-4-5", "anthropic", "2025-10-26")
        assert Decimal(str(cost.total)) == genai(SONNET, usage)
        assert cost.input + cost.cache_write + cost.cache_read + cost.output == pytest.approx(cost.total, abs=1e-12)
        assert cost.tokens.input == usage.prompt - usage.cache_read - usage.cache_write
        # the prompt's cost over the buckets: input, cache writes and reads, nothing lost
        assert sum(cost.buckets.values()) == pytest.approx(cost.input + cost.cache_write + cost.cache_read)
    assert profile.calls[1].cost.cache_read == pytest.approx(19_990 * 0.3 / 1e6)
    summary = profile.summary().cost
    assert summary.priced and summary.total == pytest.approx(sum(r.cost.total for r in profile.calls))
    assert summary.without_cache > summary.total


def test_one_hour_cache_writes_cost_more_than_five_minute_ones(qwen25):
    split = Usage(prompt=10_003, cache_read=0, cache_write=10_000, output=0, cache_write_5m=0, cache_write_1h=10_000)
    unsplit = Usage(prompt=10_003, cache_read=0, cache_write=10_000, output=0)
    long, plain = (tokprof.profile(trace_of(u), model="qwen2.5").calls[0].cost for u in (split, unsplit))
    assert long.cache_write == pytest.approx(10_000 * 6 / 1e6)  # Sonnet 4.5: $6 per million 1-hour writes
    assert plain.cache_write == pytest.approx(10_000 * 3.75 / 1e6)  # the 5-minute rate
    assert Decimal(str(long.total)) == genai(SONNET, split)
    assert (long.tokens.cache_write_5m, long.tokens.cache_write_1h) == (0, 10_000)
    assert WRITES_AT_5M in plain.notes and WRITES_AT_5M not in long.notes  # labelled, not silent


def test_long_context_tier_and_price_history(qwen25):
    big = Usage(prompt=250_000, cache_read=0, cache_write=0, output=1000)
    cost = tokprof.profile(trace_of(big), model="qwen2.5").calls[0].cost
    assert cost.input == pytest.approx(250_000 * 6 / 1e6)  # past 200k tokens Sonnet 4.5's input is $6
    assert Decimal(str(cost.total)) == genai(SONNET, big)


def test_unpriced_model_says_why_and_is_never_zero(tmp_path, capsys):
    trace = trace_of(Usage(prompt=5000, cache_read=0, cache_write=0, output=10), model="acme-private-llm-7")
    profile = tokprof.profile(trace, model="qwen2.5")
    cost = profile.calls[0].cost
    assert not cost.priced and cost.total is None and "acme-private-llm-7" in cost.reason and "--price" in cost.reason
    summary = profile.summary().cost
    assert not summary.priced and summary.total is None and summary.unpriced[0].calls == 1
    doc = json.loads(profile.to_json())
    assert doc["calls"][0]["cost"]["priced"] is False and doc["calls"][0]["cost"]["total"] is None
    from tokprof.render import render

    table = render("profile", "table", profile)
    assert "unpriced (genai-prices" in table and "$0 " not in table
    measurement = budgets.measure_profile(profile)
    assert measurement.metrics["cost"] is None and measurement.unknown["cost"].startswith("unpriced")
    config = tmp_path / "tokprof.toml"
    config.write_text('[budgets]\ncost = "$5"\n')
    result = budgets.judge(measurement, load_file(config), None)
    assert result.status == budgets.FAIL  # a gate must not pass on no price


def test_price_override_for_a_private_model(tmp_path, capsys):
    usage = Usage(prompt=2_000_000, cache_read=1_000_000, cache_write=0, output=500_000)
    trace = trace_of(usage, model="acme-private-llm-7")
    profile = tokprof.profile(trace, model="qwen2.5", prices=["acme-private-llm-7=0.2/0.6/0.02"])
    cost = profile.calls[0].cost
    assert cost.priced and cost.source == "--price" and cost.source_version is None
    assert (cost.input, cost.cache_read, cost.output) == pytest.approx((0.2, 0.02, 0.3))
    assert cost.total == pytest.approx(0.52)
    # rates for every model, and a cache rate left out is the input rate
    every = tokprof.profile(trace, model="qwen2.5", prices=["1/2"]).calls[0].cost
    assert every.cache_read == pytest.approx(1.0) and every.total == pytest.approx(1 + 1 + 1)
    # an override takes precedence over genai-prices
    known = tokprof.profile(trace_of(usage), model="qwen2.5", prices=[f"{SONNET}=1/1"]).calls[0].cost
    assert known.source == "--price" and known.total == pytest.approx(2.5)
    with pytest.raises(PriceError):
        parse_price("cheap")
    with pytest.raises(PriceError):
        parse_price("m=1/x")


def test_price_override_from_the_configuration(tmp_path, monkeypatch, capsys):
    log = tmp_path / "log.json"
    log.write_text(
        json.dumps(
            {
                "model": "acme-private-llm-7",
                "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}],
            }
        )
    )
    (tmp_path / "tokprof.toml").write_text('[prices]\n"acme-private-llm-7" = { input = 1.5, output = 2 }\n')
    monkeypatch.chdir(tmp_path)
    assert main(["profile", str(log), "-f", "json", "--model", "qwen2.5"]) == 0
    doc = json.loads(capsys.readouterr().out)
    cost = doc["calls"][0]["cost"]
    assert cost["priced"] and cost["basis"] == "computed" and "tokprof.toml" in cost["source"]
    assert cost["total"] == pytest.approx(doc["calls"][0]["total"] * 1.5 / 1e6)
    assert cost["output"] is None  # no usage: the output is not priced, and the notes say so
    assert any("no usage" in note for note in cost["notes"])
    # --price wins over the configuration
    assert main(["profile", str(log), "-f", "json", "--model", "qwen2.5", "--price", "acme-private-llm-7=3/3"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["calls"][0]["cost"]["source"] == "--price"
    (tmp_path / "tokprof.toml").write_text('[prices]\n"x" = { input = "cheap", output = 2 }\n')
    with pytest.raises(ConfigError, match="prices.x.input"):
        load_file(tmp_path / "tokprof.toml")


def test_saved_profile_keeps_the_cost(tmp_path, qwen25):
    profile = tokprof.profile(
        trace_of(
            Usage(prompt=3000, cache_read=0, cache_write=2990, output=5),
            Usage(prompt=3200, cache_read=2990, cache_write=200, output=5),
        ),
        model="qwen2.5",
    )
    again = Profile.from_dict(json.loads(profile.to_json()))
    assert again.to_dict() == profile.to_dict()


# -- the computed cache -------------------------------------------------------------------------------------
def _cached(trace: Trace, times=None, shared=None):
    profile = tokprof.profile(trace, model="qwen2.5")
    return attach_cache(profile, trace, shared=shared, times=times)


def test_ttl_miss_against_the_calls_times(qwen25):
    """A 5-minute entry is gone after 10 idle minutes; a 1-hour one is not."""
    start = datetime(2025, 10, 26, 10, 0, tzinfo=timezone.utc)
    times = [start, start + timedelta(minutes=10)]
    short = trace_of(
        Usage(prompt=3000, cache_read=0, cache_write=2997, output=5),
        Usage(prompt=3300, cache_read=0, cache_write=3297, output=5),
    )
    calls = _cached(short, times).calls
    assert calls[1].cache.miss == "idle-gap" and calls[1].cache.predicted == 0
    assert "5-minute lifetime" in calls[1].cache.detail and calls[1].cache.gap == 600
    long = trace_of(
        Usage(prompt=3000, cache_read=0, cache_write=2997, output=5, cache_write_5m=0, cache_write_1h=2997),
        Usage(prompt=3300, cache_read=2997, cache_write=300, output=5, cache_write_5m=0, cache_write_1h=300),
    )
    calls = _cached(long, times).calls
    assert calls[1].cache.miss is None and calls[1].cache.predicted == 2997 == calls[1].cache.reported
    # without times, lifetimes are not checked, and the profile says so
    profile = _cached(short)
    assert profile.calls[1].cache.miss == "below-prediction" and "no times" in profile.calls[1].cache.detail
    assert any("not checked" in note for note in profile.summary().cache.notes)


def test_prefix_change_is_explained(qwen25):
    first = conversation(1)
    edited = [{"role": "system", "content": "You are a different assistant. " * 40}] + conversation(2)[1:]
    usages = [
        Usage(prompt=3000, cache_read=0, cache_write=2997, output=5),
        Usage(prompt=3300, cache_read=0, cache_write=3297, output=5),
    ]
    calls = _cached(trace_of(*usages, messages=[first, edited])).calls
    cache = calls[1].cache
    assert cache.miss == "prefix-changed" and cache.changed_at == 0 and "system prompt changed" in cache.detail
    assert cache.predicted == 0 == cache.reported
    # a message in the middle changed (a compaction or an edit): the fixed part can still be read
    cut = conversation(2)
    cut[2] = {"role": "assistant", "content": "summary of the earlier turns"}
    calls = _cached(trace_of(*usages, messages=[conversation(1), cut])).calls
    assert calls[1].cache.miss == "prefix-changed" and calls[1].cache.changed_at == 2
    # a tool catalogue change
    tools_a = [{"type": "function", "function": {"name": "a", "description": "A.", "parameters": {}}}]
    tools_b = [{"type": "function", "function": {"name": "b", "description": "B.", "parameters": {}}}]
    trace = trace_of(*usages, messages=[conversation(0), conversation(1)])
    trace.calls[0].tools, trace.calls[1].tools = tools_a, tools_b
    calls = _cached(trace).calls
    assert calls[1].cache.miss == "prefix-changed" and "tool catalogue changed" in calls[1].cache.detail


def test_below_the_minimum_and_openai_steps(qwen25):
    tiny = trace_of(
        Usage(prompt=300, cache_read=0, cache_write=0, output=5),
        Usage(prompt=400, cache_read=0, cache_write=0, output=5),
        messages=[
            [{"role": "user", "content": "hi"}],
            [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "yo"},
                {"role": "user", "content": "and?"},
            ],
        ],
    )
    assert _cached(tiny).calls[1].cache.miss == "below-minimum"
    assert rules_for("gpt-4o") == "openai" and rules_for(SONNET) == "anthropic" and rules_for("acme-llm") is None
    openai = trace_of(
        Usage(prompt=1600, cache_read=0, output=5), Usage(prompt=2000, cache_read=1536, output=5), model="gpt-4o"
    )
    calls = _cached(openai, shared=lambda position: 300 if position else None).calls
    assert calls[1].cache.shared_basis == "tokens"  # from the hook, in the provider's units
    assert calls[1].cache.predicted == openai_cached_read(calls[1].cache.shared)
    read = openai_cached_read
    assert (read(1023), read(1024), read(1500)) == (0, 1024, 1408)  # 1,024 and 128-token steps


def test_claude_cache_prediction_follows_the_previous_prompt(qwen25):
    usages = [
        Usage(prompt=17748, cache_read=0, cache_write=17745, output=3),
        Usage(prompt=17902, cache_read=17745, cache_write=154, output=24),
    ]
    calls = _cached(trace_of(*usages)).calls
    assert calls[0].cache.miss == "first-call"
    assert calls[1].cache.predicted == 17745 == calls[1].cache.reported
    assert calls[1].cache.shared_basis == "messages"


# -- budgets -----------------------------------------------------------------------------------------------
def test_cost_and_cache_budgets(tmp_path, qwen25):
    usages = [
        Usage(prompt=100_000, cache_read=0, cache_write=99_000, output=1000),
        Usage(prompt=101_000, cache_read=99_000, cache_write=2000, output=1000),
    ]
    profile = tokprof.profile(trace_of(*usages), model="qwen2.5")
    measurement = budgets.measure_profile(profile)
    total = profile.summary().cost.total
    assert measurement.metrics["cost"] == pytest.approx(total)
    assert measurement.metrics["cache_hit_rate"] == pytest.approx(99_000 / 201_000, abs=1e-6)
    config = tmp_path / "tokprof.toml"
    config.write_text('[budgets]\ncost = "$5"\ncache_hit_rate = { min = "80%" }\nlargest_call_cost = 0.01\n')
    result = budgets.judge(measurement, load_file(config), None)
    by_name = {m.name: m for m in result.metrics}
    assert by_name["cost"].status == budgets.PASS
    assert (
        by_name["cache_hit_rate"].status == budgets.FAIL
        and "under the min of 80.00%" in by_name["cache_hit_rate"].reasons[0]
    )
    assert by_name["largest_call_cost"].status == budgets.FAIL
    config.write_text('[budgets]\ncost = "$0.10"\ncache_hit_rate = "40%"\n')
    by_name = {m.name: m for m in budgets.judge(measurement, load_file(config), None).metrics}
    assert by_name["cost"].status == budgets.FAIL and "$0.10" in by_name["cost"].reasons[0]
    assert by_name["cache_hit_rate"].status == budgets.PASS and by_name["cache_hit_rate"].min == 0.4
    config.write_text('[budgets]\ncost = "five dollars"\n')
    with pytest.raises(ConfigError, match="US dollars"):
        load_file(config)


def test_cache_hit_rate_baseline_fails_on_a_fall(tmp_path, qwen25):
    good = tokprof.profile(
        trace_of(
            Usage(prompt=10_000, cache_read=0, cache_write=9000, output=1),
            Usage(prompt=11_000, cache_read=9000, cache_write=2000, output=1),
        ),
        model="qwen2.5",
    )
    bad = tokprof.profile(
        trace_of(
            Usage(prompt=10_000, cache_read=0, cache_write=9000, output=1),
            Usage(prompt=11_000, cache_read=0, cache_write=11_000, output=1),
        ),
        model="qwen2.5",
    )
    config = tmp_path / "tokprof.toml"
    config.write_text('max_increase = "5%"\n[budgets]\ncache_hit_rate = { min = "1%" }\n')
    settings = load_file(config)
    baseline = tmp_path / "tokprof-baseline.json"
    baseline.write_text(json.dumps(budgets.measure_profile(good).baseline_dict()))
    assert budgets.judge(budgets.measure_profile(good), settings, str(baseline)).status == budgets.PASS
    result = budgets.judge(budgets.measure_profile(bad), settings, str(baseline))
    metric = next(m for m in result.metrics if m.name == "cache_hit_rate")
    assert metric.status == budgets.FAIL and any("down" in r for r in metric.reasons)


# -- the corpus ----------------------------------------------------------------------------------------------
SESSIONS = {
    "claude_code_medium_full-session-four.jsonl": 0.59906355,
    "codex_rollout-2025-09-25T09-49-46-01998190-fba6-7f40-9309-dc4e48c5844a.jsonl": 0.75231825,
}


@pytest.mark.parametrize("name", sorted(SESSIONS))
def test_corpus_cost_is_genai_prices_own_price(name):
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"{name}: the shared corpus is absent")
    trace = read_trace(str(path))
    profile = tokprof.profile(trace)
    assert len(profile.calls) == len(trace.calls) > 0
    for row, call in zip(profile.calls, trace.calls):
        assert row.cost.priced and row.cost.basis == "reported"
        assert Decimal(str(row.cost.total)) == genai(call.model, call.reported, call.day)
        parts = row.cost.input + row.cost.cache_write + row.cost.cache_read + row.cost.output + (row.cost.other or 0)
        assert parts == pytest.approx(row.cost.total, abs=1e-12)
    assert profile.summary().cost.total == pytest.approx(SESSIONS[name], abs=1e-8)


def test_corpus_idle_gap_explains_claude_codes_cache_miss():
    """Session four's call 14 read 13,168 tokens where the previous prompt offered 41,813: it came 330
    seconds after call 13, past the 5-minute lifetime. The times come from the log's lines here, as
    a reader that sets ``Call.time`` would give them."""
    path = CORPUS / "claude_code_medium_full-session-four.jsonl"
    if not path.exists():
        pytest.skip("the shared corpus is absent")
    times, reads, seen = [], [], set()
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record.get("type") != "assistant" or (record.get("requestId") or record["message"]["id"]) in seen:
            continue
        seen.add(record.get("requestId") or record["message"]["id"])
        times.append(datetime.fromisoformat(record["timestamp"].replace("Z", "+00:00")))
        reads.append(record["message"]["usage"]["cache_read_input_tokens"])
    trace = read_trace(str(path))
    assert [c.reported.cache_read for c in trace.calls] == reads  # the same calls, in the same order
    profile = attach_cache(tokprof.profile(trace), trace, times=times)
    cache = profile.calls[14].cache
    assert cache.miss == "idle-gap" and cache.gap == pytest.approx(330.248) and cache.predicted == 0
    assert [c.index for c in profile.calls if c.cache.miss == "idle-gap"] == [14]
