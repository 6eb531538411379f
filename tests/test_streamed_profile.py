"""A stream of calls profiled keeping no prompt after its pass (#33 item 7): the same profile, every
analysis included, as the trace held whole, and light calls that hold no messages."""

from __future__ import annotations

import copy
import json
from collections import Counter
from datetime import datetime, timedelta, timezone

import pytest

from tokprof.analyses.standard import attach_analyses
from tokprof.profiling import profile_calls, profile_trace
from tokprof.trace import Call, Note, Trace, Usage

MODEL = "claude-sonnet-4-5-20250929"
START = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)


def _tools(extra: bool) -> list[dict]:
    names = ["read_file", "run_command"] + (["search"] * extra)
    return [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": f"The {name} tool. It does one thing well.",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            },
        }
        for name in names
    ]


def generated(n: int, *, fresh: bool = True, anonymous: bool = True):
    """A log of ``n`` calls, each yielded once, made as it is asked for: a main conversation that grows
    by a tool call and its result per call, a subagent's beside it, a tool catalogue that changes
    once, a system prompt edit, a cut, a compaction, an idle gap, reported usage with cache reads and
    an id-less tool call (unless not ``anonymous``). ``fresh``: each prompt a copy of its own (as a capture log gives), else the
    conversation's list shared."""
    main = [{"role": "system", "content": "You are a test bot."}, {"role": "user", "content": "look up cat"}]
    sub = [{"role": "user", "content": "define dog"}]
    catalogue, changed = _tools(False), _tools(True)
    time = START
    prompt = 0
    for i in range(n):
        time += timedelta(seconds=20 if i != n // 2 else 900)
        thread = "agent-1" if i % 4 == 3 else ""
        messages = sub if thread else main
        kind = "call"
        if not thread:
            if i == n // 3:
                messages[0] = {"role": "system", "content": "You are a test bot. Be brief."}
            if i == 2 * n // 3:
                del messages[2:-3]  # a cut
                kind = "compaction"
        ident = None if i == 5 and anonymous else f"call_{i}"
        tool_call = {"type": "function", "function": {"name": "read_file", "arguments": json.dumps({"path": f"{i}"})}}
        if ident:
            tool_call["id"] = ident
        response = {"role": "assistant", "content": f"step {i}", "tool_calls": [tool_call]}
        tools = changed if i > n // 2 else catalogue
        prompt = 400 + 40 * len(messages) + (7 if i % 5 else 0)
        usage = Usage(prompt=prompt, cache_read=prompt // 2 if i % 3 else 0, cache_write=30, output=12)
        yield Call(
            index=i,
            messages=copy.deepcopy(messages) if fresh else list(messages),
            tools=copy.deepcopy(tools) if fresh else tools,
            model=MODEL,
            reported=usage if i % 7 else None,
            day=time.date(),
            where=f"line {i + 1}",
            response=response,
            kind=kind,
            thread=thread,
            time=time,
        )
        messages.append(response)
        messages.append({"role": "tool", "tool_call_id": ident, "content": f"the file {i} says cat is an animal " * 3})
        messages.append({"role": "user", "content": f"and then {i}"})


def header() -> Trace:
    return Trace(path="generated.jsonl", format="neutral", model=MODEL, notes=[Note("a-note", "from the reader")])


def _whole(n: int, fresh: bool, anonymous: bool = True) -> Trace:
    trace = header()
    trace.calls = list(generated(n, fresh=fresh, anonymous=anonymous))
    return trace


# each kind of prompt (a copy of its own, a view of one list) with one kind of model (exact, an estimate)
@pytest.mark.parametrize("fresh, estimate", [(True, False), (False, True)], ids=["copies-exact", "views-estimate"])
def test_a_streamed_profile_is_the_batch_profile(qwen25, fresh, estimate):
    from tokprof.models import resolve_model

    chat = resolve_model("claude-proxy") if estimate else qwen25
    trace = _whole(40, fresh)
    batch = attach_analyses(profile_trace(trace, chat), trace, chat, {})
    profile, light = profile_calls(generated(40, fresh=fresh), header(), chat)
    streamed = attach_analyses(profile, light, chat, {})
    assert json.dumps(streamed.to_dict(), indent=1) == json.dumps(batch.to_dict(), indent=1)
    assert streamed.catalogue is not None and streamed.summary().cache is not None  # the analyses ran
    assert any(c.cache and c.cache.miss == "prefix-changed" for c in streamed.calls)


def test_after_the_streamed_pass_no_light_call_holds_a_prompt(qwen25):
    given = header()
    profile, light = profile_calls(generated(30), given, qwen25)
    assert len(light.calls) == len(profile.calls) == 30
    assert all(c.messages == () and c.response is None for c in light.calls)
    assert not given.calls  # the caller's header is not changed
    assert light.notes == given.notes and light.notes is not given.notes
    # what the light calls keep of their tools: one copy per distinct catalogue
    assert len({id(c.tools) for c in light.calls}) == 2
    facts = profile.facts
    assert facts is not None and len(facts.calls) == 30
    # each tool call once, as Trace.tool_calls() counts them (an id-less one: per message object)
    assert facts.tools.called == Counter(tc["function"]["name"] for tc in _whole(30, fresh=True).tool_calls())


def test_the_batch_path_leaves_the_callers_trace_as_it_was(qwen25):
    trace = _whole(12, fresh=False)
    before = copy.deepcopy(trace)
    attach_analyses(profile_trace(trace, qwen25), trace, qwen25, {})
    assert trace == before


def test_facts_taken_anew_for_a_profile_without_them_are_the_passs(qwen25):
    from tokprof.analyses.prefix_cache import attach_cache

    trace = _whole(20, fresh=True)
    made = profile_trace(trace, qwen25)
    kept = attach_cache(profile_trace(trace, qwen25), trace)
    made.facts = None  # as a profile made otherwise: the facts are taken from the trace's calls
    anew = attach_cache(made, trace)
    assert [c.cache for c in anew.calls] == [c.cache for c in kept.calls]


@pytest.mark.parametrize("model", ["mistral-nemo", "qwen2.5"])
def test_the_facades_stream_fits_tool_call_ids_call_by_call_as_fit_does_the_trace(model):
    from tokprof.transforms import fit
    from tokprof.models import resolve_model
    from tokprof.runs.model import Model
    from tokprof.runs.profile import run_profile
    from tokprof.transforms.stream import HeldCalls

    chat = resolve_model(model)
    trace = _whole(24, fresh=True, anonymous=False)  # Mistral's template takes no call without an id
    before = copy.deepcopy(trace)
    streamed = run_profile(HeldCalls(trace), Model(chat), None)  # the one path: each call fitted as it comes
    fitted = run_profile(HeldCalls(fit(trace, chat)), Model(chat), None)  # the ids fitted beforehand
    assert json.dumps(streamed.to_dict(), indent=1) == json.dumps(fitted.to_dict(), indent=1)
    mapped = "tool-call-ids-mapped" in {w.code for w in streamed.warnings}
    assert mapped == (model == "mistral-nemo")
    assert trace == before  # the trace was not changed


def test_a_per_call_fit_is_fit_of_the_trace():
    from tokprof.transforms import fit_tool_call_ids
    from tokprof.transforms.tool_ids import ToolIdFitter

    trace = _whole(16, fresh=False)
    whole = fit_tool_call_ids(trace)
    fitter = ToolIdFitter(9)
    calls = [fitter.fit(c) for c in generated(16, fresh=False)]
    assert [c.messages for c in calls] == [c.messages for c in whole.calls]
    assert [c.response for c in calls] == [c.response for c in whole.calls]
    fitted = header()
    fitter.note(fitted)
    assert fitted.notes == whole.notes
