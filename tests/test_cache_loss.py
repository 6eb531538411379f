"""cache_miss_cost: the dollars a log's calls paid for the prefix they shared with the previous call but
did not read from the cache, a CI metric (a max) beside cache_hit_rate (a min)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tokprof
from tokprof.analyses import budgets
from tokprof.analyses.cache_loss import miss_cost
from tokprof.frontends.cli import main

ROOT = Path(__file__).resolve().parent.parent
MEDIUM = ROOT.parent / "shared" / "corpus" / "claude_code_medium_full-session-four.jsonl"


@pytest.fixture(scope="module")
def medium():
    if not MEDIUM.exists():
        pytest.skip("the shared corpus is absent")
    return tokprof.profile(MEDIUM)


def test_an_idle_gap_is_priced_as_the_writes_it_caused(medium):
    """The one miss of a real Claude Code 2.0 session (claude-sonnet-4-5: $3.75 a 5-minute write, $0.30 a
    read, per million): call 14, 5.5 minutes after call 13, read 13,168 tokens of the 41,813 that call 13
    left in the cache (its 41,247 read and 566 written; its 2 uncached input tokens were not cached)."""
    row = medium.calls[14]
    assert row.cache.miss == "idle-gap" and row.cache.reported == 13168
    lost = 41247 + 566 - 13168
    assert row.cache.lost == lost == 28645
    found = miss_cost(medium)
    assert found.by_reason == {"idle-gap": pytest.approx(lost * (3.75 - 0.30) / 1e6, abs=1e-8)}
    assert found.total == pytest.approx(found.by_reason["idle-gap"])


def test_cache_miss_cost_fails_a_build(tmp_path, medium, capsys):
    config = tmp_path / "tokprof.toml"
    config.write_text('[budgets]\ncache_miss_cost = "$0.05"\ncache_hit_rate = { min = "90%" }\n')
    assert main(["check", str(MEDIUM), "--config", str(config), "-f", "json", "--no-progress"]) == 1
    metrics = {m["metric"]: m for m in json.loads(capsys.readouterr().out)["metrics"]}
    miss = metrics["cache_miss_cost"]
    assert miss["status"] == "fail" and miss["max"] == 0.05 and miss["unit"] == "usd"
    assert miss["value"] == miss_cost(medium).total
    assert any("most of it idle-gap, $0.0988 on 1 call; the costliest break: call 14" in r for r in miss["reasons"])
    assert metrics["cache_hit_rate"]["status"] == "pass"  # 94.6% of the prompts read from the cache
    config.write_text('[budgets]\ncache_miss_cost = "$0.50"\n')
    assert main(["check", str(MEDIUM), "--config", str(config), "--no-progress"]) == 0


def test_a_log_without_cache_usage_does_not_measure_it(tmp_path):
    measurement = budgets.measure_profile(tokprof.profile(ROOT / "samples" / "incident_session.json"))
    assert measurement.metrics["cache_miss_cost"] is None
    assert measurement.unknown["cache_miss_cost"].startswith("not recorded")
