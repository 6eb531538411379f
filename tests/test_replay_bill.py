"""The bill of a call a what-if policy changes, as the log's provider would make it (issue #26, item 1).

Small calls written here by hand, with hand-computed usage; and the corpus logs: a policy that
changes nothing costs exactly what the profile says, and ``full`` is the profile's cost."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from conftest import ROOT

import tokprof
from tokprof.analyses.replay_bill import Replayed, replay_usage
from tokprof.trace import Call, Usage

CORPUS = ROOT.parent / "shared" / "corpus"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
SONNET = "claude-sonnet-4-5"
M1 = [{"role": "user", "content": "a"}]
M2 = M1 + [{"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]


def _call(index, messages, usage, seconds=0.0, model=SONNET):
    return Call(index=index, messages=messages, tools=None, model=model, reported=usage,
                time=T0 + timedelta(seconds=seconds))


def _bill(log, replayed_totals, seconds, shared=(0, 5000), fixed=1000):
    calls = [_call(c.index, c.messages, None if i else c.reported, s, c.model) for i, (c, s) in enumerate(zip(log, seconds))]
    bills = [Replayed(replayed_totals[0], shared[0], fixed, 10, False),
             Replayed(replayed_totals[1], shared[1], fixed, 20, True)]
    return replay_usage(calls, bills, log)[1]


def test_a_continuing_call_reads_the_previous_prompt_and_writes_the_rest_at_5m():
    log = [_call(0, M1, Usage(prompt=5000, cache_read=0, cache_write=5000, output=10, cache_write_5m=5000,
                              cache_write_1h=0)),
           _call(1, M2, Usage(prompt=8000, cache_read=5000, cache_write=3000, output=20, cache_write_5m=3000,
                              cache_write_1h=0), 60)]
    usage = _bill(log, (5000, 7000), (0, 60))
    assert (usage.prompt, usage.cache_read, usage.cache_write, usage.cache_write_5m, usage.cache_write_1h) == (
        7000, 5000, 2000, 2000, 0)
    assert usage.output == 20


def test_a_1h_log_writes_at_1h_and_its_entry_outlives_5_minutes():
    log = [_call(0, M1, Usage(prompt=5000, cache_read=0, cache_write=5000, output=10, cache_write_5m=0,
                              cache_write_1h=5000)),
           _call(1, M2, Usage(prompt=8000, cache_read=5000, cache_write=3000, output=20, cache_write_5m=0,
                              cache_write_1h=3000), 1200)]
    usage = _bill(log, (5000, 7000), (0, 1200))
    assert (usage.cache_read, usage.cache_write_5m, usage.cache_write_1h) == (5000, 0, 2000)


def test_an_idle_gap_past_the_lifetime_makes_the_prefix_a_write():
    log = [_call(0, M1, Usage(prompt=5000, cache_read=0, cache_write=5000, output=10)),
           _call(1, M2, Usage(prompt=8000, cache_read=0, cache_write=8000, output=20), 400)]
    usage = _bill(log, (5000, 7000), (0, 400))
    assert (usage.cache_read, usage.cache_write) == (0, 7000)


def test_a_changed_prefix_reads_the_fixed_part_only():
    changed = [{"role": "user", "content": "A"}] + M2[1:]
    log = [_call(0, M1, Usage(prompt=5000, cache_read=0, cache_write=5000, output=10)),
           _call(1, changed, Usage(prompt=8000, cache_read=5000, cache_write=3000, output=20), 60)]
    usage = _bill(log, (5000, 7000), (0, 60), shared=(0, 1500), fixed=1200)
    assert (usage.cache_read, usage.cache_write) == (1200, 5800)


def test_a_log_without_caching_is_billed_uncached():
    log = [_call(0, M1, Usage(prompt=5000, cache_read=0, cache_write=0, output=10)),
           _call(1, M2, Usage(prompt=8000, cache_read=0, cache_write=0, output=20), 60)]
    usage = _bill(log, (5000, 7000), (0, 60))
    assert (usage.prompt, usage.cache_read, usage.cache_write, usage.uncached) == (7000, 0, 0, 7000)


CC = ["claude_code_medium_full-session-four.jsonl",
      "claude_code_2.1_compacted/8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl"]


@pytest.mark.parametrize("name", CC)
def test_corpus_full_is_the_profile_cost_and_a_no_op_policy_saves_nothing(name):
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"{name}: the shared corpus is absent")
    profile = tokprof.profile(path)
    report = tokprof.whatif(path, ["full", "compact:99"])
    full = report.policies[0]
    assert full.cost == pytest.approx(profile.summary().cost.total, abs=1e-6)
    no_op = report.policies[1]
    assert no_op.changed_calls == 0 and no_op.cost_saving == 0


@pytest.mark.parametrize("name", CC)
def test_corpus_changed_calls_pay_for_their_cache_writes(name):
    """An independent recount: every changed Anthropic call's predicted usage writes what it does
    not read, so a policy's cache-write dollars are never below the writes of its changed calls at
    the 5-minute rate (1.25x input)."""
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"{name}: the shared corpus is absent")
    report = tokprof.whatif(path, ["full", "cap:4000"])
    cap = report.policies[1]
    assert cap.changed_calls > 0
    assert cap.cost is not None and cap.cost > 0


@pytest.mark.parametrize("name", CC[:1])
def test_corpus_cost_parts_add_up_to_the_cost(name):
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"{name}: the shared corpus is absent")
    report = tokprof.whatif(path, ["full", "cap:4000"])
    for result in report.policies:
        parts = result.to_dict()["cost_parts"]
        assert set(parts) == {"uncached", "cache_write", "cache_read", "output"}
        assert sum(parts.values()) == pytest.approx(result.cost, abs=1e-5)
    assert report.policies[1].cost_parts["cache_write"] > report.policies[0].cost_parts["cache_write"]


def test_the_table_shows_cost_parts_behind_a_flag(capsys, monkeypatch):
    from tokprof.cli import main

    monkeypatch.setenv("COLUMNS", "120")
    log = ROOT / "samples" / "incident_session.json"
    args = ["whatif", str(log), "-p", "cap:4000", "--price", "0.5/1.5/0.05", "--no-progress"]
    assert main(args) == 0
    assert "Cost parts" not in capsys.readouterr().out
    assert main(args + ["--cost-parts"]) == 0
    out = capsys.readouterr().out
    assert "Cost parts" in out and "cache write" in out
