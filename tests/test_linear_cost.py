"""Checks and stages linear in their input (#33): the nesting check on JSON text, and a prompt of
many messages. Speed itself is measured in benchmarks/bench_linear.py; these check the answers."""

from __future__ import annotations

import json

import pytest
from conftest import tiny_model, write_json

import tokprof.attribution.attributor as attribution
from tokprof.attribution.attributor import Attributor
from tokprof.attribution.buckets import WARN_BOUNDARIES_ESTIMATED
from tokprof.formats import read_trace
from tokprof.formats.jsonfile import NESTING_LIMIT, too_deep, too_deep_at


@pytest.mark.parametrize(
    "text, deep",
    [
        ("[" * (NESTING_LIMIT + 1) + '"' + '\\"' * 5000, True),  # what took quadratic time: deep, then an open string
        ("[" * NESTING_LIMIT + '"' + '\\"' * 5000 + "[", False),  # the "[" is inside the unterminated string
        ("[" * NESTING_LIMIT + '"\\\\"' + "[", True),  # an escaped backslash closes nothing: the string ends
        ("[" * NESTING_LIMIT + '"\\\\' + "[", False),
        ("[" * NESTING_LIMIT + '"\\', False),  # a lone backslash at the very end
        ('"' + "[" * 500 + '"', False),
        ("[]" * 1000, False),
        ("{" * NESTING_LIMIT + "[" + "]" + "}" * NESTING_LIMIT, True),
    ],
)
def test_nesting_check(text, deep):
    assert too_deep(text) is deep
    assert (too_deep_at(text) is not None) is deep


def test_the_possessive_string_match_ends_where_the_greedy_one_did():
    """The string match keeps nothing to backtrack into (fast on a long run of escapes); on every
    short text of quotes, backslashes and letters it ends where the plain greedy pattern ends."""
    import itertools
    import re

    from tokprof.base.jsonparse import _STRING_REST

    greedy = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*(?:\\\Z)?', re.S)
    for n in range(8):
        for chars in itertools.product('a"\\\n', repeat=n):
            text = "".join(chars)
            assert _STRING_REST.match(text).end() == greedy.match(text).end(), repr(text)


def test_nesting_check_says_where():
    text = "[\n" * (NESTING_LIMIT - 1) + ' ["\\"[[[", [\n[ ]]'
    assert too_deep_at(text) == f"line {NESTING_LIMIT}, column 12"


def _many(tmp_path, n: int):
    messages = [{"role": "system", "content": "You are a test bot."}]
    messages += [{"role": "user" if i % 2 == 0 else "assistant", "content": f"word {i}"} for i in range(n)]
    messages.append({"role": "user", "content": "define cat"})
    record = {
        "request": {"model": "tiny", "messages": messages},
        "response": {"choices": [{"message": {"role": "assistant", "content": "ok"}}]},
    }
    path = tmp_path / "many.jsonl"
    path.write_text(json.dumps(record) + "\n")
    return read_trace(str(path))


def test_many_messages_estimated_past_the_budget(tmp_path, monkeypatch):
    """A call whose prefixes would render more messages than the budget finds where its messages
    start from the content markers (linear), says so, and on a template whose headers are plain
    (ChatML) gets the same buckets as rendering every prefix."""
    model = tiny_model()
    trace = _many(tmp_path, 60)
    exact = Attributor(model).attribute(trace.calls[0])
    monkeypatch.setattr(attribution, "PREFIX_BUDGET", 100)
    estimated = Attributor(model).attribute(trace.calls[0])
    assert WARN_BOUNDARIES_ESTIMATED not in exact.warnings
    assert WARN_BOUNDARIES_ESTIMATED in estimated.warnings
    assert estimated.as_dict() == exact.as_dict()
    assert estimated.total == model.count(
        model.prompt_format.render(
            model.prompt_format.prepare(trace.calls[0].messages, "parsed"), None, True, trace.calls[0].day
        )
    )


def test_default_budget_leaves_growing_conversations_exact(tmp_path):
    """A conversation that grows call by call renders only its new messages' prefixes: no estimate."""
    from conftest import small_transcript

    trace = read_trace(str(write_json(tmp_path / "t.json", small_transcript())))
    attributor = Attributor(tiny_model())
    assert not any(WARN_BOUNDARIES_ESTIMATED in attributor.attribute(call).warnings for call in trace.calls)
