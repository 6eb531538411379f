"""Usage-anchored estimates (tokprof.attribution.estimates): a call's buckets are its predecessor's plus what it
adds, and reported growth its new messages cannot explain goes to 'unrecorded'."""

from __future__ import annotations

import pytest

from tokprof.attribution import estimates
from tokprof.attribution.estimates import BAND, NOISE, UNRECORDED, Continuations, Counted


class Pending(Counted):
    """A call as counted, with its prompt: whether it extends the previous one is told in log order."""

    def __init__(self, counts, reported, key, unrecorded, messages):
        super().__init__(counts, reported, key, unrecorded)
        self.messages = messages


def linked(calls):
    """The calls with ``extends`` told as the pass tells it (Continuations), in order."""
    told = Continuations()
    for c in calls:
        c.extends = told.observe(c.key, c.reported, c.messages, None)
    return calls


def attribute(calls, exact):
    return estimates.attribute(linked(calls), exact)


def ratios(calls):
    return estimates.ratios(linked(calls))


def call(counts, reported, messages, key=("m", ""), unrecorded=False):
    return Pending(dict(counts), reported, key, unrecorded, messages)


def conversation(n):
    return [{"role": "user", "content": str(i)} for i in range(n)]


def steps(*rows, **options):
    """Calls whose prompts extend each other: rows of (estimate counts, reported prompt)."""
    history = conversation(len(rows) + 1)
    return [call(counts, reported, history[: i + 1], **options) for i, (counts, reported) in enumerate(rows)]


def sound(found, calls):
    for f, c in zip(found.calls, calls):
        assert min(f.buckets.values()) >= 0
        if c.reported is not None:
            assert sum(f.buckets.values()) == c.reported


def test_growth_in_the_band_is_the_content_scaled():
    calls = steps(
        ({"system": 100, "tool_results": 0, "conversation": 10}, 120),
        ({"system": 100, "tool_results": 100, "conversation": 20}, 250),
        ({"system": 100, "tool_results": 200, "conversation": 30}, 370),
    )
    found = attribute(calls, exact=False)
    sound(found, calls)
    first, second, third = found.calls
    assert not first.anchored and second.anchored and third.anchored
    assert second.buckets["system"] == first.buckets["system"]  # did not grow: unchanged
    assert UNRECORDED not in third.buckets and third.unexplained == 0
    assert found.ratios == {"m": pytest.approx((130 / 110 + 120 / 110) / 2)}


def test_growth_beyond_the_band_goes_to_unrecorded_not_to_the_buckets_that_did_not_grow():
    calls = steps(
        ({"system": 500, "tool_results": 0, "conversation": 50}, 550),
        ({"system": 500, "tool_results": 100, "conversation": 60}, 660),  # ratio 1.0
        ({"system": 500, "tool_results": 200, "conversation": 70}, 770),  # ratio 1.0
        ({"system": 500, "tool_results": 210, "conversation": 80}, 5000),
    )  # +20 estimated, +4,230 billed
    found = attribute(calls, exact=False)
    sound(found, calls)
    last, before = found.calls[-1], found.calls[-2]
    assert last.anchored and last.unexplained == 4230 - int(20 * 1.0 * BAND)
    assert last.buckets["system"] == before.buckets["system"] == 500
    assert last.buckets["tool_results"] - before.buckets["tool_results"] <= 20 * BAND
    assert last.buckets[UNRECORDED] == last.unexplained


def test_small_excess_is_noise():
    calls = steps(({"conversation": 100}, 100), ({"conversation": 110}, 110), ({"conversation": 120}, 120 + NOISE - 1))
    found = attribute(calls, exact=False)
    assert found.calls[-1].unexplained == 0 and UNRECORDED not in found.calls[-1].buckets


def test_a_call_that_does_not_extend_is_scaled_whole():
    history = conversation(4)
    calls = [call({"conversation": 100}, 100, history[:2]), call({"conversation": 50}, 200, history[2:])]
    found = attribute(calls, exact=False)
    assert not found.calls[1].anchored and found.calls[1].buckets == {"conversation": 200}
    shrank = [call({"conversation": 100}, 300, history[:1]), call({"conversation": 120}, 200, history[:2])]
    assert not attribute(shrank, exact=False).calls[1].anchored  # a smaller reported prompt is no extension


def test_a_model_switch_mid_thread_does_not_make_the_history_a_fixed_part():
    history = conversation(20)
    opus = [
        call({"conversation": 100 * k}, 100 * k + 1000, history[:k], key=("opus", ""), unrecorded=True)
        for k in range(1, 18)
    ]
    haiku = call({"conversation": 1800}, 1800 + 300, history[:18], key=("haiku", ""), unrecorded=True)
    found = attribute([*opus, haiku], exact=False)
    assert found.fixed[("opus", "")] == 1000 and found.fixed[("haiku", "")] == 300
    assert found.calls[-1].buckets == {"conversation": 1800, UNRECORDED: 300}


def test_exact_counts_are_never_scaled():
    calls = steps(({"conversation": 100}, 150), ({"conversation": 110}, 600))
    found = attribute(calls, exact=True)
    assert [f.buckets for f in found.calls] == [{"conversation": 100}, {"conversation": 110}]


def test_ratios_are_medians_per_model():
    calls = steps(
        ({"conversation": 100}, 100),
        ({"conversation": 200}, 220),
        ({"conversation": 300}, 340),
        ({"conversation": 400}, 2000),
    )
    assert ratios(calls) == {"m": pytest.approx(1.2)}
