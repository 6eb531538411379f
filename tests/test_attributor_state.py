"""What an attributor keeps between calls changes no count: the memory branch's two-generation caches
(Recent, JsonMemo.retain), conversation cap (_evict) and copy-on-write arrays (Grow), together with
the speed branch's prepared lists extended in place, build-up of long fresh prompts (_built_up) and
splicing, give every call the buckets, warnings, spans and prompt of an attributor that remembers
nothing. The limits are set small so that every one of them acts within a few dozen hand-made calls."""

from __future__ import annotations

import copy

import pytest

from conftest import tiny_model
from tokprof.attribution import attributor
from tokprof.attribution.attributor import Attributor
from tokprof.trace import Call

TOOLS = [
    {"type": "function", "function": {"name": "ls", "description": "list files", "parameters": {}}},
    {"type": "function", "function": {"name": "cat", "description": "show a file", "parameters": {}}},
]


@pytest.fixture
def small_limits(monkeypatch):
    """Generations of 6 entries, 2 conversations of 300 characters, build-up from 8 messages in steps
    of 3, messages over 80 characters not remembered marked, everything forgotten past 150 entries."""
    for name, value in (
        ("_GENERATION", 6),
        ("_THREAD_CHARS", 300),
        ("_THREADS", 2),
        ("BUILD_MIN", 8),
        ("BUILD_STEP", 3),
        ("_MARK_CACHED", 80),
        ("_REMEMBERED", 150),
    ):
        monkeypatch.setattr(attributor, name, value)


def _turn(t: int, i: int, role: str) -> dict:
    message: dict = {"role": role, "content": f"{role} {t}.{i} " + "word " * (i % 7)}
    if role == "assistant" and i % 2:
        message["tool_calls"] = [
            {"id": f"c{t}.{i}", "type": "function", "function": {"name": "ls", "arguments": {"path": f"/p{i}"}}}
        ]
    if role == "tool":
        message["tool_call_id"] = f"c{t}.{i - 1}"
    return message


def _grow(messages: list[dict], t: int, count: int) -> None:
    for _ in range(count):
        role = (
            "assistant"
            if messages[-1]["role"] in ("system", "user", "tool")
            else ("tool" if len(messages) % 3 else "user")
        )
        messages.append(_turn(t, len(messages), role))


def _calls() -> list[Call]:
    """Three conversations interleaved (one with tools, the same list object each time or a copy of
    it), each call given as a slice of its conversation's one list, a copy of it or equal copies of
    its messages; rewinds and forks (of the last call and of an earlier one), a long first prompt (built up), a huge message."""
    talks: list[list[dict]] = [
        [{"role": "system", "content": f"You are bot {t} ."}, {"role": "user", "content": f"task {t}"}]
        for t in range(3)
    ]
    _grow(talks[2], 2, 14)  # its first call is long: built up from its prefixes
    plan = [0, 1, 0, 0, 2, 1, 0, 2, 2, 1, 0, 0, 2, 1, 1, 0, 2, 0, 1, 2, 2, 0, 1, 0, 0, 2, 1, 0]
    calls = []
    for c, t in enumerate(plan):
        messages = talks[t]
        if c in (11, 12):
            # a rewind: the conversation goes on from an earlier point (c 11: right after its last call)
            del messages[5:]
        if c in (17, 24):  # (c 24: right after its last call)
            talks[t] = messages = messages[:6] + [{"role": "user", "content": "a different question"}]  # a fork
        if c == 21:
            messages.append({"role": "user", "content": "row " * 60})  # past _MARK_CACHED: not remembered marked
        _grow(messages, t, 1 + c % 4)
        given = messages[:] if c % 3 == 0 else (list(messages) if c % 3 == 1 else copy.deepcopy(messages))
        tools = None if t == 1 else (TOOLS if c % 5 else copy.deepcopy(TOOLS))
        calls.append(Call(index=c, messages=given, tools=tools, where=f"call {c}"))
    return calls


def _seen(att: Attributor, call: Call) -> tuple:
    result = att.attribute(call)
    return result.as_dict(), result.warnings, result.spans, att.last_prompt()[0]


@pytest.mark.parametrize("keep_json", [True, False])
def test_kept_state_counts_as_an_attributor_that_remembers_nothing(small_limits, keep_json):
    model = tiny_model()
    on = Attributor(model, keep_json=keep_json)
    built, aged, evicted = [], [], []
    real_built_up, real_evict = on._built_up, on._evict

    def built_up(call: Call) -> bool:
        done = real_built_up(call)
        built.append(done)
        return done

    def evict() -> None:
        before = len(on._threads)
        real_evict()
        evicted.append(before - len(on._threads))

    on._built_up, on._evict = built_up, evict  # type: ignore[method-assign]
    for call in _calls():
        olds = len(on._messages.old)
        seen = _seen(on, call)
        aged.append(len(on._messages.old) != olds)
        alone = Attributor(model, keep_json=keep_json, incremental=False)
        assert seen == _seen(alone, call), call.where
    assert on.spliced > 5 and any(built) and any(aged) and sum(evicted) > 3  # each of them acted
