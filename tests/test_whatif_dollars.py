"""What-if in dollars (#47.1): where the log is priced the saving is in dollars, signed (a policy that
costs more says so), the policies ranked by it with the tokens beside; every replayed call carries
what it is billed (cache reads and writes, cost) and never reads more than the prefix it shares with
the previous replayed call where the policy parts the prompts earlier than the log. An unpriced log
shows tokens and says why there are no dollars. The log is made here: a conversation whose calls read
the previous prompt from the cache, priced at the user's rates."""

from __future__ import annotations

import json

import pytest

from conftest import CHATML, tiny_model
from test_whatif import conversation, make_trace, plain_count, trace_of
from tokprof.pricing.cost import UserPrice
from tokprof.analyses.whatif import whatif
from tokprof.pricing.billing import Rates
from tokprof.render import RenderOptions
from tokprof.render.whatif import WhatIfCsvRenderer, WhatIfTableRenderer, whatif_section
from tokprof.trace import Usage
from tokprof.transforms import policies as P

#: $ per million tokens: input 3, output 15, cache read 0.3 (a provider without cache writes)
PRICES = {"*": UserPrice(Rates(input=3, output=15, cache_read=0.3), "a test")}
POLICIES = ["cap:100000", "window:10", "elide:0"]


@pytest.fixture(scope="module")
def model():
    model = tiny_model(CHATML)
    model.context_window = 4000
    return model


@pytest.fixture(scope="module")
def cached_log(model):
    """Calls that read the previous call's prompt from the cache (all but its last 3 tokens)."""
    calls = trace_of(conversation(turns=6, calls_per_turn=3))
    previous = 0
    for call in calls:
        call.model = "a-test-model"
        prompt = plain_count(model, call)
        call.reported = Usage(prompt=prompt, cache_read=max(0, previous - 3), output=7)
        previous = prompt
    return make_trace(calls)


@pytest.fixture(scope="module")
def priced(model, cached_log):
    return whatif(cached_log, model, [P.parse_policy(p) for p in POLICIES], prices=PRICES)


def test_the_saving_is_in_dollars_signed_and_ranked(priced):
    full = priced.policies[0]
    assert priced.priced and full.cost is not None and full.cost_basis == "reported"
    window = priced.policy("window:10")
    # the window bills fewer tokens, but breaks the prefix every call: it costs more
    assert window.saving > 0 and window.cost_saving is not None and window.cost_saving < 0
    assert window.cost_saving == round(full.cost - window.cost, 6)
    ranked = priced.ranked()
    assert ranked[0] is full
    savings = [r.cost_saving for r in ranked[1:]]
    assert savings == sorted(savings, reverse=True)  # most saved first, whatever the tokens say
    assert priced.policy("cap:100000").cost_saving == 0 and ranked[-1] is window
    # the window saves the most tokens, and costs the most: ranked last, where by tokens it would be first
    assert window.saving == max(r.saving for r in priced.policies)
    assert [r.policy for r in ranked] == ["full", "elide:0", "cap:100000", "window:10"]
    out = WhatIfTableRenderer().render(priced, RenderOptions(width=140))
    table = out[: out.index("\n\n")].splitlines()[1:]  # the first table, under the title
    assert table[0].split()[:3] == ["policy", "saving", "saving"]  # the saving first, in dollars
    assert [line.split()[0] for line in table[1:5]] == [r.policy for r in ranked]  # in ranked order
    assert f"-${-window.cost_saving:.4f}* costs more" in table[4]
    assert f"{window.saving:,}" in table[4] and f"{window.billed_input:,}" in table[4]  # the tokens beside
    assert table[3].split()[1] == "$0"  # a policy that changes nothing saves exactly nothing
    assert "saving: against full, in dollars" in " ".join(out.split())
    assert "no dollars" not in out


def test_every_call_carries_its_bill(priced, cached_log):
    full = priced.policies[0]
    for result in priced.policies:
        assert sum(c.cost for c in result.calls) == pytest.approx(result.cost, abs=1e-6)
        for call in result.calls:
            assert call.cache_read is not None and call.cache_write == 0  # this provider writes nothing
            assert 0 <= call.cache_read <= call.shared <= call.total  # never past its shared prefix (#47.1)
    for call, logged in zip(full.calls, cached_log.calls):  # full: the log's usage
        assert call.cache_read == logged.reported.cache_read
    window = priced.policy("window:10")
    changed = [c for c in window.calls if c.changed]
    assert changed and all(c.cache_read <= c.shared for c in changed)  # a window parts every prompt early
    doc = json.loads(priced.to_json())
    entry = doc["policies"][0]["per_call"][1]
    assert {"cache_read", "cache_write", "cost"} <= set(entry)
    assert entry["cache_read"] == cached_log.calls[1].reported.cache_read
    csv = WhatIfCsvRenderer().render(priced).splitlines()
    assert csv[0].endswith(",cache_read,cache_write,cost")


def test_the_html_section_is_in_dollars(priced):
    parts, _ = whatif_section(priced)
    page = "".join(parts)
    window = priced.policy("window:10")
    assert "costs more" in page and f"-${-window.cost_saving:.4f}*" in page
    assert page.index("<code>cap:100000</code>") < page.index("<code>window:10</code>")  # ranked


def test_an_unpriced_log_shows_tokens_and_says_why(model, cached_log):
    report = whatif(cached_log, model, [P.parse_policy(p) for p in POLICIES])
    assert not report.priced and all(r.cost is None and r.cost_saving is None for r in report.policies)
    ranked = report.ranked()
    assert [r.policy for r in ranked] == ["full", "window:10", "elide:0", "cap:100000"]  # by the tokens saved
    out = " ".join(WhatIfTableRenderer().render(report, RenderOptions(width=140)).split())
    assert "saving in tokens, no dollars: " in out and "a-test-model" in out and "--price" in out
    assert "$" not in out
    # what it is billed is known without a price: the tokens
    assert all(c.cache_read is not None and c.cost is None for c in report.policies[0].calls)
    parts, _ = whatif_section(report)
    assert "no dollars" in "".join(parts)
