"""The carry cost in dollars (#47.4): each tool result's tokens in every later call that resent it, at
the rate that call paid for them, wherever the carry cost is shown (the profile's table, JSON and HTML
report, the MCP servers of `tokprof tools`); none where the log is not priced, never 0 for unknown."""

from __future__ import annotations

import json

import pytest

import tokprof
from conftest import CHATML, tiny_model
from test_whatif import conversation, make_trace, plain_count, trace_of
from tokprof.pricing.cost import UserPrice
from tokprof.analyses.standard import attach_analyses
from tokprof.mcp.rollup import rollup_from_results
from tokprof.pricing.billing import Rates
from tokprof.profiling import profile_trace
from tokprof.render import RenderOptions
from tokprof.pricing.render import dollars
from tokprof.render.table import TableRenderer
from tokprof.trace import Usage

#: $ per million tokens: input 3, output 15, cache read 0.3, cache write 3.75
RATES = Rates(input=3, output=15, cache_read=0.3, cache_write=3.75)


def _profile(usage: bool, prices: dict):
    """A conversation priced at ``prices``; with ``usage``, every call reads the previous prompt from the
    cache and writes the rest, else the calls report no usage (priced on the computed prompt, no cache)."""
    model = tiny_model(CHATML)
    calls = trace_of(conversation(turns=3, calls_per_turn=3))
    previous = 0
    for call in calls:
        call.model = "a-test-model"
        prompt = plain_count(model, call)
        if usage:
            call.reported = Usage(prompt=prompt, cache_read=previous, cache_write=prompt - previous, output=5)
        previous = prompt
    trace = make_trace(calls)
    return attach_analyses(profile_trace(trace, model), trace, None, prices)


@pytest.fixture(scope="module")
def cached():
    return _profile(True, {"*": UserPrice(RATES, "a test")})


@pytest.fixture(scope="module")
def uncached():
    return _profile(False, {"*": UserPrice(Rates(input=0.5, output=1.5), "a test")})


def test_a_resent_result_is_priced_at_the_rate_its_call_paid(cached):
    """Every call reads what the previous one sent: a resent result is a cache read, $0.30 a million."""
    costs = cached.summary().tool_result_costs
    assert costs is not None and costs.carry_cost > 0
    assert costs.carry_dollars == pytest.approx(costs.carry_cost * 0.3 / 1e6, rel=1e-6)
    for tool in costs.tools:
        assert tool.carry_dollars == pytest.approx(tool.carry_cost * 0.3 / 1e6, rel=1e-6)
    for result in costs.top:
        assert result.carry_dollars == pytest.approx(result.carry_cost * 0.3 / 1e6, rel=1e-6)
    # the carry is the part of the tool results' dollars that is not their first sending (written at $3.75)
    billed = cached.summary().cost.buckets["tool_results"]
    assert billed == pytest.approx(costs.carry_dollars + costs.tokens * 3.75 / 1e6, rel=1e-6)
    assert not costs.tools[0].carried  # the per-call tokens it was priced from are let go


def test_without_a_cache_every_resent_token_is_at_the_input_rate(uncached):
    costs = uncached.summary().tool_result_costs
    assert costs.carry_dollars == pytest.approx(costs.carry_cost * 0.5 / 1e6, abs=1e-8)
    for tool in costs.tools:
        assert tool.carry_dollars == pytest.approx(tool.carry_cost * 0.5 / 1e6, abs=1e-8)
    out = TableRenderer().render(uncached, RenderOptions(width=120))
    assert f"{costs.carry_cost:,} more (carry cost, {dollars(costs.carry_dollars)})" in out
    assert "carry $" in out and dollars(costs.top[0].carry_dollars) in out
    doc = json.loads(uncached.to_json())
    assert doc["summary"]["tool_result_costs"]["carry_dollars"] == costs.carry_dollars
    assert doc["summary"]["tool_result_costs"]["top"][0]["carry_dollars"] == costs.top[0].carry_dollars


def test_an_unpriced_log_has_no_carry_dollars():
    profile = _profile(False, {})  # genai-prices has no price for a-test-model
    costs = profile.summary().tool_result_costs
    assert costs.carry_dollars is None and all(t.carry_dollars is None for t in costs.tools)
    assert all(r.carry_dollars is None for r in costs.top)
    out = TableRenderer().render(profile, RenderOptions(width=120))
    assert "carry $" not in out and "(carry cost)" in out
    assert json.loads(profile.to_json())["summary"]["tool_result_costs"]["carry_dollars"] is None


def test_carry_dollars_survive_a_saved_profile_and_show_in_the_report(uncached, tmp_path):
    path = tmp_path / "run.json"
    uncached.save(path)
    again = tokprof.Profile.load(path)
    costs = uncached.summary().tool_result_costs
    assert (
        again.summary().tool_result_costs == costs
        and again.summary().tool_result_costs.carry_dollars == costs.carry_dollars
    )
    old = json.loads(path.read_text())  # saved before the dollars: they read as not priced
    for entry in [old["summary"]["tool_result_costs"], *old["summary"]["tool_result_costs"]["tools"]]:
        del entry["carry_dollars"]
    path.write_text(json.dumps(old))
    assert tokprof.Profile.load(path).summary().tool_result_costs.carry_dollars is None
    from tokprof.render.html import HtmlRenderer

    page = HtmlRenderer().render(again)
    assert "<th>carry $</th>" in page and dollars(costs.carry_dollars) in page


def test_mcp_servers_carry_dollars(cached):
    """Per MCP server (`tokprof tools` on a log, the profile's servers): its tools' carry dollars added up,
    None when one of them is not priced."""
    import dataclasses

    costs = cached.summary().tool_result_costs
    tool = dataclasses.replace(costs.tools[0], tool="mcp__docs__lookup")
    other = dataclasses.replace(costs.tools[0], tool="mcp__docs__search", carry_dollars=0.5)
    [row] = rollup_from_results(dataclasses.replace(costs, tools=(tool, other)))
    assert row.server == "docs" and row.carry_dollars == pytest.approx(tool.carry_dollars + 0.5)
    unpriced = dataclasses.replace(other, carry_dollars=None)
    [row] = rollup_from_results(dataclasses.replace(costs, tools=(tool, unpriced)))
    assert row.carry_dollars is None and row.to_dict()["carry_dollars"] is None
