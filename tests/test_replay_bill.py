"""What-if bills: a call a policy changes is billed as the log's provider would bill it (the shared
prefix read, the rest written at the log's tier, an expired prefix or a model switch written again,
no caching where the log shows none). The logs are made by hand here; the bills are computed by hand
at the rates below ($ per million tokens: input 3, output 15, cache read 0.3, 5-minute write 3.75,
1-hour write 6: Anthropic's Sonnet rates)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from tokprof.pricing.cost import priced_tokens, user_cost
from tokprof.analyses.replay_bill import Replayed, billed_usage
from tokprof.pricing.billing import Rates, money
from tokprof.trace import Call, Trace, Usage
from tokprof.transforms.policies import AddedCall

RATES = Rates(input=3, output=15, cache_read=0.3, cache_write=3.75, cache_write_1h=6)
T0 = datetime(2025, 10, 1, 12, 0, tzinfo=timezone.utc)
SONNET = "claude-sonnet-4-5"  # Anthropic's rules, a minimum of 1,024 tokens to cache


def usage(prompt: int, read: int, write: int, output: int, long: bool = False) -> Usage:
    return Usage(
        prompt=prompt,
        cache_read=read,
        cache_write=write,
        output=output,
        cache_write_5m=0 if long else write,
        cache_write_1h=write if long else 0,
    )


def log(usages: list[Usage], minutes: list[float], models: list[str] | None = None) -> list[Call]:
    models = models or [SONNET] * len(usages)
    return [
        Call(
            index=i,
            messages=[{"role": "user", "content": f"turn {i}"}],
            tools=None,
            model=models[i],
            reported=u,
            time=T0 + timedelta(minutes=m),
            where=f"line {i}",
        )
        for i, (u, m) in enumerate(zip(usages, minutes))
    ]


def replay(calls: list[Call], changed: dict[int, tuple[int, int]]) -> tuple[Trace, list[Replayed]]:
    """The policy's trace: the calls in ``changed`` (index -> (prompt, shared)) rewritten, with no usage."""
    out, counted = [], []
    for call in calls:
        if call.index in changed:
            total, shared = changed[call.index]
            out.append(
                Call(
                    index=call.index,
                    messages=[{"role": "user", "content": "cut"}],
                    tools=None,
                    model=call.model,
                    reported=None,
                    time=call.time,
                    where=call.where,
                )
            )
            counted.append(Replayed(total=total, shared=shared, changed=True))
        else:
            out.append(call)
            counted.append(Replayed(total=call.reported.prompt, shared=0, changed=False))
    return Trace(path="t.json", format="test", calls=out), counted


def dollars(u: Usage) -> float:
    return round(user_cost(RATES, priced_tokens(u, u.prompt or 0)[0])["total"], 9)


def three_calls(long: bool = False, minutes=(0, 1, 2), models=None) -> list[Call]:
    return log(
        [usage(2000, 0, 2000, 50, long), usage(3000, 2000, 1000, 60, long), usage(4000, 3000, 1000, 70, long)],
        list(minutes),
        models,
    )


def test_five_minute_writes():
    calls = three_calls()
    trace, counted = replay(calls, {1: (2800, 2000), 2: (3700, 2800)})
    bill = billed_usage(trace, counted, calls)
    assert 0 not in bill  # kept as logged: its reported usage
    assert bill[1] == Usage(
        prompt=2800, cache_read=2000, cache_write=800, output=60, cache_write_5m=800, cache_write_1h=0
    )
    assert bill[2] == Usage(
        prompt=3700, cache_read=2800, cache_write=900, output=70, cache_write_5m=900, cache_write_1h=0
    )
    # 2,000 read at 0.3 + 800 written at 3.75 + 60 out at 15; 2,800 x 0.3 + 900 x 3.75 + 70 x 15
    assert dollars(bill[1]) == pytest.approx(0.0045) and dollars(bill[2]) == pytest.approx(0.005265)


def test_one_hour_writes_and_their_lifetime():
    calls = three_calls(long=True, minutes=(0, 20, 40))  # 20 minutes apart: inside the 1-hour lifetime
    trace, counted = replay(calls, {1: (2800, 2000), 2: (3700, 2800)})
    bill = billed_usage(trace, counted, calls)
    assert bill[1].cache_read == 2000 and bill[1].cache_write_1h == 800 and bill[1].cache_write_5m == 0
    assert bill[2].cache_read == 2800 and bill[2].cache_write_1h == 900
    assert dollars(bill[1]) == pytest.approx((2000 * 0.3 + 800 * 6 + 60 * 15) / 1e6)


def unlogged(calls: list[Call], index: int) -> list[Call]:
    """The calls with one reporting no usage: its read is the rules' (lifetime, model)."""
    calls[index].reported = None
    return calls


def test_an_idle_gap_is_a_write():
    # as logged: 10 minutes before the third call, past the 5-minute lifetime, the log's call read nothing
    calls = log([usage(2000, 0, 2000, 50), usage(3000, 2000, 1000, 60), usage(4000, 0, 4000, 70)], [0, 1, 11])
    trace, counted = replay(calls, {1: (2800, 2000), 2: (3700, 2800)})
    bill = billed_usage(trace, counted, calls)
    assert bill[1].cache_read == 2000
    assert bill[2] == Usage(
        prompt=3700, cache_read=0, cache_write=3700, output=70, cache_write_5m=3700, cache_write_1h=0
    )
    assert dollars(bill[2]) == pytest.approx((3700 * 3.75 + 70 * 15) / 1e6)
    # by the rules, for a call whose usage the log does not report
    for long, minutes, read in ((False, 11, 0), (False, 4, 2800), (True, 40, 2800), (True, 70, 0)):
        calls = unlogged(three_calls(long=long, minutes=(0, 1, minutes)), 2)
        trace, counted = replay(calls, {1: (2800, 2000), 2: (3700, 2800)})
        assert billed_usage(trace, counted, calls)[2].cache_read == read, (long, minutes)


def test_a_part_the_log_read_past_the_lifetime_is_read():
    """A prefix kept longer than the rules say (Claude Code's system prompt, warm from other sessions):
    the log's call read it after an idle gap, so the replayed call reads as much of it as it shares."""
    calls = log([usage(2000, 0, 2000, 50), usage(3000, 2000, 1000, 60), usage(4000, 1500, 2500, 70)], [0, 1, 11])
    trace, counted = replay(calls, {1: (2800, 2000), 2: (3700, 2800)})
    bill = billed_usage(trace, counted, calls)[2]
    assert bill.cache_read == 1500 and bill.cache_write == 2200


def test_a_model_switch_reads_nothing():
    calls = log(
        [usage(2000, 0, 2000, 50), usage(3000, 2000, 1000, 60), usage(4000, 0, 4000, 70)],
        [0, 1, 2],
        [SONNET, SONNET, "claude-opus-4-1"],
    )
    trace, counted = replay(calls, {1: (2800, 2000), 2: (3700, 2800)})
    bill = billed_usage(trace, counted, calls)
    assert bill[2].cache_read == 0 and bill[2].cache_write == 3700
    calls = unlogged(three_calls(models=[SONNET, SONNET, "claude-opus-4-1"]), 2)  # by the rules
    trace, counted = replay(calls, {1: (2800, 2000), 2: (3700, 2800)})
    assert billed_usage(trace, counted, calls)[2].cache_read == 0


def test_below_the_minimum_nothing_is_read_or_written():
    calls = three_calls()
    trace, counted = replay(calls, {1: (2800, 900), 2: (1000, 0)})
    bill = billed_usage(trace, counted, calls)
    assert bill[1].cache_read == 0 and bill[1].cache_write == 2800  # a prefix of 900 is not cached
    assert bill[2] == Usage(prompt=1000, cache_read=0, cache_write=0, output=70, cache_write_5m=0, cache_write_1h=0)


def test_the_read_is_at_most_what_the_previous_call_cached():
    calls = log([usage(2000, 0, 1500, 50), usage(3000, 1500, 1500, 60)], [0, 1])  # call 0 cached 1,500 of 2,000
    trace, counted = replay(calls, {1: (2900, 2000)})
    assert billed_usage(trace, counted, calls)[1].cache_read == 1500


def test_the_read_is_at_most_the_prefix_the_replayed_call_shares():
    """#47.1: the log's call read more than it shared with its previous call as counted (the provider kept
    a longer prefix); a replayed call that parts from its previous call earlier than the log's does reads
    the log's read less the part it no longer shares, never more than the prefix it shares with the
    previous replayed call: the rest is written (Anthropic) ..."""
    calls = log([usage(2000, 0, 2000, 50), usage(3000, 2000, 1000, 60), usage(4000, 3000, 1000, 70)], [0, 1, 2])
    trace, counted = replay(calls, {2: (3900, 2700)})
    bill = billed_usage(trace, counted, calls, log_shared={1: 2000, 2: 2800})
    # 3,000 read less the 100 of the log's shared 2,800 it lost is 2,900: capped at the 2,700 it shares
    assert bill[2].cache_read == 2700 and bill[2].cache_write == 1200 and bill[2].prompt == 3900
    assert dollars(bill[2]) == pytest.approx((2700 * 0.3 + 1200 * 3.75 + 70 * 15) / 1e6)
    # where it parts where the log's call parts (the policy rewrote nothing the two prompts share), the log's
    # read (a measurement of what the provider read; a count can under-count the prefix) less what it lost
    counted[2] = Replayed(total=3900, shared=2700, changed=True, parts_as_logged=True)
    bill = billed_usage(trace, counted, calls, log_shared={1: 2000, 2: 2800})
    assert bill[2].cache_read == 2900 and bill[2].cache_write == 1000
    # ... or uncached where the provider writes nothing (OpenAI)
    openai = log(
        [Usage(prompt=3000, cache_read=0, output=5), Usage(prompt=4000, cache_read=3968, output=6)],
        [0, 1],
        ["gpt-4o", "gpt-4o"],
    )
    trace, counted = replay(openai, {1: (3900, 2100)})
    bill = billed_usage(trace, counted, openai, log_shared={1: 2900})[1]
    assert bill.cache_read == 1024 + (2100 - 1024) // 128 * 128 and bill.cache_write == 0  # 2,048 of 2,100
    assert bill.prompt == 3900


def test_a_log_with_no_caching_is_billed_uncached():
    calls = log([Usage(prompt=2000, output=5), Usage(prompt=3000, output=6)], [0, 1])
    trace, counted = replay(calls, {1: (2900, 2000)})
    assert billed_usage(trace, counted, calls)[1] == Usage(
        prompt=2900, cache_read=0, cache_write=0, output=6, cache_write_5m=0, cache_write_1h=0
    )


def test_openai_reads_in_steps_and_writes_nothing():
    calls = log(
        [Usage(prompt=3000, cache_read=0, output=5), Usage(prompt=4000, cache_read=2944, output=6)],
        [0, 1],
        ["gpt-4o", "gpt-4o"],
    )
    trace, counted = replay(calls, {1: (3900, 2999)})
    bill = billed_usage(trace, counted, calls)[1]
    assert bill.cache_read == 1024 + (2999 - 1024) // 128 * 128 and bill.cache_write == 0


def test_openai_rounds_the_replayed_prefix_anew():
    """The log's call read 1,536 of the 1,568 tokens it shared: its whole shared prefix in OpenAI's steps. A
    replayed call sharing 61 fewer tokens (1,507) reads 1,408, its own prefix in steps, not the log's rounded
    read less the 61 (1,475, rounded again to 1,408; for a log read of 1,024 it would be 963 and none)."""
    calls = log(
        [Usage(prompt=1568, cache_read=0, output=5), Usage(prompt=2732, cache_read=1536, output=6)],
        [0, 1],
        ["gpt-4o", "gpt-4o"],
    )
    trace, counted = replay(calls, {1: (2670, 1507)})
    counted[1] = Replayed(total=2670, shared=1507, changed=True, parts_as_logged=True)
    assert billed_usage(trace, counted, calls, log_shared={1: 1568})[1].cache_read == 1408
    small = log(
        [Usage(prompt=1124, cache_read=0, output=5), Usage(prompt=1568, cache_read=1024, output=6)],
        [0, 1],
        ["gpt-4o", "gpt-4o"],
    )
    trace, counted = replay(small, {1: (1507, 1063)})
    counted[1] = Replayed(total=1507, shared=1063, changed=True, parts_as_logged=True)
    assert billed_usage(trace, counted, small, log_shared={1: 1124})[1].cache_read == 1024


def test_a_prompt_equal_to_the_logs_keeps_its_usage():
    calls = three_calls()
    copy = Call(index=1, messages=[dict(m) for m in calls[1].messages], tools=None, model=SONNET, time=calls[1].time)
    trace = Trace(path="t.json", format="test", calls=[calls[0], copy, calls[2]])
    # the replay's pass says the prompt is the log's (its calls are let go after their pass)
    assert copy.messages == calls[1].messages
    counted = [Replayed(2000, 0, False), Replayed(2990, 1990, True, same_prompt=True), Replayed(4000, 3000, False)]
    assert billed_usage(trace, counted, calls)[1] == calls[1].reported


def test_a_summarising_call_bills_its_summary():
    calls = three_calls()
    summary = AddedCall(
        index=2, messages=[{"role": "user", "content": "summarise"}], tools=None, model=SONNET, time=calls[2].time
    )
    after = Call(
        index=2, messages=[{"role": "user", "content": "summary"}], tools=None, model=SONNET, time=calls[2].time
    )
    trace = Trace(path="t.json", format="test", calls=[calls[0], calls[1], summary, after])
    counted = [
        Replayed(2000, 0, False),
        Replayed(3000, 2000, False),
        Replayed(3050, 3000, True, output=500),
        Replayed(2600, 1500, True),
    ]
    bill = billed_usage(trace, counted, calls)
    assert bill[2] == Usage(
        prompt=3050, cache_read=3000, cache_write=50, output=500, cache_write_5m=50, cache_write_1h=0
    )
    assert bill[3].cache_read == 1500 and bill[3].cache_write == 1100 and bill[3].output == 70


# -- the invariants, on the shared corpus of real logs -------------------------------------------------
CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"
NO_OPS = ["cap:100000000", "window:1000000", "elide:1000000"]  # policies that change no prompt


def corpus_logs() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    logs = [p for p in sorted(CORPUS.iterdir()) if p.is_file() and p.suffix in (".jsonl", ".json", ".traj")]
    return logs + sorted((CORPUS / "claude_code_2.1_compacted").glob("*.jsonl"))


LOGS = corpus_logs()
CLAUDE = [p for p in LOGS if p.name.startswith("claude_code") or p.parent.name.startswith("claude_code")]


@pytest.mark.parametrize(
    "log",
    LOGS or [pytest.param(None, marks=pytest.mark.skip(reason="the shared corpus is absent"))],
    ids=[p.name[:40] for p in LOGS] or ["absent"],
)
def test_a_policy_that_changes_nothing_costs_what_the_profile_does(log):
    import tokprof
    from tokprof.base.errors import InputError

    try:
        profile = tokprof.profile(log)
    except InputError as exc:
        pytest.skip(f"{log.name}: {exc}")
    report = tokprof.whatif(log, NO_OPS)
    cost = profile.summary().cost
    full = report.policies[0]
    assert full.cost == (money(cost.total) if cost is not None and cost.priced else None)  # the full row is the profile
    for result in report.policies[1:]:
        assert result.changed_calls == 0, result.policy
        assert result.cost == full.cost and result.cost_saving in (0.0, None) and result.cost_parts == full.cost_parts


@pytest.mark.parametrize(
    "log",
    CLAUDE or [pytest.param(None, marks=pytest.mark.skip(reason="the shared corpus is absent"))],
    ids=[p.name[:40] for p in CLAUDE] or ["absent"],
)
def test_removing_a_few_tokens_changes_the_cost_by_about_their_share(log):
    """A cap just under the longest tool result (66 characters cut, a note added) changes a few tokens
    of a real Claude Code session: its cost changes by about their share, not by the cache's discount."""
    import tokprof

    trace = tokprof.read_log(log)
    longest = max(
        len(m["content"])
        for c in trace.calls
        for m in c.messages
        if m["role"] == "tool" and isinstance(m.get("content"), str)
    )
    full, cap = tokprof.whatif(log, [f"cap:{longest - 66}"]).policies
    assert cap.changed_calls > 0 and abs(cap.saving_share) < 0.001
    assert abs(cap.cost_saving / full.cost - cap.saving_share) < 0.001
    # per call: what it is billed; a changed call that parts from its previous call earlier than the log's
    # call does (the call after the cut result came) reads no more than it shares; the others as logged
    full_calls = {c.index: c for c in full.calls}
    for call in (*full.calls, *cap.calls):  # no call reads past the prefix it shares (#47.1)
        assert call.cache_read is not None and call.cache_read <= call.shared
    for call in cap.calls:
        assert call.cache_read is not None and call.cache_write is not None and call.cost is not None
        if call.changed:
            assert call.cache_read + call.cache_write <= call.total
        else:
            logged = full_calls[call.index]
            assert (call.cache_read, call.cache_write, call.cost) == (
                logged.cache_read,
                logged.cache_write,
                logged.cost,
            )
    assert sum(c.cost for c in cap.calls) == pytest.approx(cap.cost, abs=1e-5)
    assert sum(c.cost for c in full.calls) == pytest.approx(full.cost, abs=1e-5)


# -- the output ---------------------------------------------------------------------------------------
def test_cost_parts_in_the_json_and_behind_a_flag_in_the_table(capsys, monkeypatch):
    import json

    from tokprof.frontends.cli import main

    sample = Path(__file__).resolve().parent.parent / "samples" / "incident_session.json"
    monkeypatch.setenv("COLUMNS", "120")
    prices = ["--price", "0.5/1.5/0.05"]
    assert main(["whatif", str(sample), "--no-progress", "-p", "cap:4000", "-f", "json", *prices]) == 0
    doc = json.loads(capsys.readouterr().out)
    for policy in doc["policies"]:
        parts = policy["cost_parts"]
        assert set(parts) == {"uncached", "cache_write", "cache_read", "output"}
        assert sum(v or 0 for v in parts.values()) == pytest.approx(policy["cost"], abs=1e-5)
    assert main(["whatif", str(sample), "--no-progress", "-p", "cap:4000", *prices]) == 0
    assert "Cost parts" not in capsys.readouterr().out
    assert main(["whatif", str(sample), "--no-progress", "-p", "cap:4000", "--cost-parts", *prices]) == 0
    out = capsys.readouterr().out
    assert "Cost parts" in out and "cache write" in out


# -- compact: on time, and paid for -----------------------------------------------------------------------
def test_a_summarising_call_is_billed_input_and_output():
    """compact's summarising calls are in the policy's billed tokens (their prompts) and its cost (their
    prompts and their summaries' tokens as output)."""
    from conftest import CHATML, tiny_model
    from test_whatif import conversation, make_trace, plain_count, trace_of

    from tokprof.pricing.cost import UserPrice
    from tokprof.analyses.whatif import whatif
    from tokprof.transforms import policies as P

    model = tiny_model(CHATML)
    model.context_window = 400
    calls = trace_of(conversation())
    for call in calls:
        call.reported = Usage(prompt=plain_count(model, call), output=5)
    trace = make_trace(calls)
    prices = {"*": UserPrice(Rates(input=1, output=10), "test")}
    full, compact = whatif(trace, model, [P.parse_policy("compact:40:30")], prices=prices).policies
    assert compact.summaries >= 1
    assert compact.billed_input == sum(c.total for c in compact.calls)
    summaries = [c for c in compact.calls if c.kind == "summary"]
    assert sum(c.total for c in summaries) > 0
    outputs = 5 * len(calls) + 30 * len(summaries)
    assert compact.cost_parts["output"] == pytest.approx(outputs * 10 / 1e6)
    assert compact.cost_parts["uncached"] == pytest.approx(compact.billed_input * 1 / 1e6)  # the log shows no cache
    assert compact.cost == pytest.approx((compact.billed_input + outputs * 10) / 1e6)


@pytest.mark.skipif(not (CORPUS / "claude_code_2.1_compacted").is_dir(), reason="the shared corpus is absent")
def test_compact_fires_before_a_prompt_goes_over_its_threshold():
    """On a real Claude Code session whose prompts reach 167,094 tokens (the log compacts itself at 169,910):
    compact:80 compacts before a prompt goes over 160,000, counting what the estimate bills (the part of
    the prompt the log does not record included), and the summary is paid for."""
    import tokprof

    log = next((CORPUS / "claude_code_2.1_compacted").glob("*.jsonl"))
    report = tokprof.whatif(log, ["compact:80"])
    full, compact = report.policies
    threshold = 0.8 * report.context_window
    assert any(c.total > threshold for c in full.calls if c.kind == "call")
    assert compact.summaries >= 1
    assert all(c.total <= threshold for c in compact.calls if c.kind == "call")
    assert compact.cost_parts["output"] > full.cost_parts["output"]  # the summaries' tokens
