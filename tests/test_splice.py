"""Incremental rendering (tokprof.attribution.splice): every call's buckets are the same with splicing on and off.

Each shipped template that loads here is run over the sample logs, the fixtures and (when present)
the corpus's Claude Code and Codex sessions, with incremental rendering on and off, and every call's
buckets, warnings and spans are compared. Small templates written here check that a template which
breaks the splice falls back to the full render: one rewriting earlier turns (caught in the window),
one numbering its messages (the window cannot see it: caught by the first calls' check both ways).
"""

from __future__ import annotations

import json
import logging
import sys

import pytest

from conftest import CHATML, FIXTURES, ROOT, tiny_model
from tokprof.attribution.attributor import Attributor
from tokprof.formats import read_trace
from tokprof.profiling import profile_trace
from tokprof.transforms import fit

sys.path.insert(0, str(ROOT / "benchmarks"))
from generate_session import records, session  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus"
SAMPLES = [ROOT / "samples" / "incident_session.json", ROOT / "samples" / "retention_session.json"]
LOGS = SAMPLES[1:] + sorted(FIXTURES.glob("good_*"))
CORPUS_LOGS = [
    ("claude-proxy", "claude_code_2.1_compacted/8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl"),
    ("openai-proxy", "codex_rollout-2025-09-25T09-49-46-01998190-fba6-7f40-9309-dc4e48c5844a.jsonl"),
]
TEMPLATES = ["qwen2.5", "qwen3", "llama3.1", "deepseek-v4", "claude-proxy", "openai-proxy", "gpt-oss", "mistral"]
#: Templates checked on smaller inputs: mistral-common encodes a request many times slower than a Jinja
#: template renders it, and a Mistral prompt neither splices nor takes its starts from windows (it writes
#: the system prompt and tools before the last user message), so each of its calls is rendered the rule's
#: way, prefix by prefix, twice; gpt-oss (harmony) renders its long prompts several times slower than the
#: other Jinja templates. The fixtures hold the shapes the larger logs have (a system prompt, tools, tool
#: calls and results, several turns); their long prompts are the generated session's.
SMALL = {"mistral", "gpt-oss"}


def logs_for(name: str) -> list:
    """The logs a template's splices are checked on (:data:`SMALL`: the fixtures alone)."""
    return LOGS[1:] if name in SMALL else LOGS


# Each message header carries its index: a window renders other numbers than the whole prompt, which
# no check in the window can see (the render of the window still extends the render of its context).
NUMBERED = CHATML.replace(
    "{{- '<|im_start|>' + m.role + '\\n' }}", "{{- '<|im_start|>' + m.role + ' ' + (loop.index0 | string) + '\\n' }}"
)
# Tool results older than the last two messages are shown as "[old result]".
REWRITING = (
    "{%- for m in messages %}"
    "{{- '<|im_start|>' + m.role + '\\n' }}"
    "{%- if m.role == 'tool' and loop.index0 < (messages | length) - 2 %}{{- '[old result]' }}"
    "{%- else %}{{- m.content or '' }}{%- endif %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def _model(name):
    from tokprof.base.errors import TokprofError
    from tokprof.models import resolve_model

    try:
        return resolve_model(name)
    except (TokprofError, ImportError) as exc:  # a template whose files or package are not here
        pytest.skip(f"{name}: {exc}")


def both_ways(model, trace):
    """Every call attributed with splicing on and off: the two lists of results, and the spliced count."""
    on, off = Attributor(model, keep_json=True, incremental=True), Attributor(model, keep_json=True, incremental=False)
    spliced, whole = [], []
    for call in trace.calls:
        a, b = on.attribute(call), off.attribute(call)
        spliced.append((a.as_dict(), a.warnings, a.spans, on.last_prompt()[0]))
        whole.append((b.as_dict(), b.warnings, b.spans, off.last_prompt()[0]))
    return spliced, whole, on.spliced


def assert_same(model, trace):
    spliced, whole, count = both_ways(model, trace)
    for call, a, b in zip(trace.calls, spliced, whole):
        assert a == b, f"{trace.path} {call.where}: spliced {a[:3]} whole {b[:3]}"
    return count


#: Templates that write a longer prompt as the shorter one followed by the new messages: most calls splice.
EXTENDING = ("qwen2.5", "qwen3", "llama3.1", "claude-proxy", "openai-proxy")


@pytest.mark.parametrize("name", TEMPLATES)
def test_every_shipped_template_gives_the_same_buckets_spliced(name):
    """Splicing on and off give every call the same buckets, warnings, spans and prompt; the templates
    that extend their prompts splice most calls of the retention sample."""
    model = _model(name)
    for path in logs_for(name):
        trace = fit(read_trace(str(path)), model)
        spliced = assert_same(model, trace)
        if name in EXTENDING and path == SAMPLES[1]:
            assert spliced > len(trace.calls) // 2, name


@pytest.mark.parametrize("name,relative", CORPUS_LOGS, ids=[n for n, _ in CORPUS_LOGS])
def test_corpus_sessions_give_the_same_buckets_spliced(name, relative):
    path = CORPUS / relative
    if not path.is_file():
        pytest.skip("the corpus is not here")
    model = _model(name)
    trace = fit(read_trace(str(path)), model)
    assert assert_same(model, trace) > len(trace.calls) // 2  # most calls are spliced


def _session(tmp_path, calls=10):
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records(session(calls, 120, 2, 3))), encoding="utf-8")
    return read_trace(str(path))


def test_a_template_rewriting_earlier_turns_falls_back(tmp_path, caplog):
    model = tiny_model(REWRITING)
    with caplog.at_level(logging.DEBUG, logger="tokprof.attribution.splice"):
        assert assert_same(model, _session(tmp_path)) == 0
    assert "rewrites earlier messages" in caplog.text


def test_a_template_the_window_cannot_check_is_caught_both_ways(tmp_path, caplog):
    model = tiny_model(NUMBERED)
    with caplog.at_level(logging.DEBUG, logger="tokprof.attribution.splice"):
        assert assert_same(model, _session(tmp_path)) == 0
    assert "other buckets than the full render" in caplog.text


def test_a_plain_template_is_spliced_and_sampled(tmp_path):
    model = tiny_model(CHATML)
    trace = _session(tmp_path, calls=30)
    assert assert_same(model, trace) >= 20


def test_profiles_are_the_same_either_way(monkeypatch):
    model = _model("qwen2.5")
    trace = read_trace(str(SAMPLES[0]))
    on = profile_trace(trace, model, attributor=Attributor(model, keep_json=True, incremental=True))
    monkeypatch.setenv("TOKPROF_INCREMENTAL", "0")
    off = profile_trace(trace, model)
    assert on.to_dict() == off.to_dict()


def test_a_tokenizer_whose_added_tokens_nothing_normalises_is_split_exactly():
    """DeepSeek-V4's added tokens say ``normalized`` but its normaliser is empty: its prompts are
    tokenized segment by segment (so splicing reuses tokens), exactly as the whole text is."""
    import numpy as np

    model = _model("deepseek-v4")
    counter, fmt = model.counter, model.prompt_format
    assert counter.segmentable()
    for call in read_trace(str(SAMPLES[0])).calls[::6]:
        text = fmt.render(fmt.prepare(call.messages, fmt.shapes[0]), call.tools, True, call.day)
        assert np.array_equal(counter._segmented_starts(text), counter._encode_starts(text)), call.where


def fresh_both_ways(model, call):
    """One call attributed by fresh attributors, splicing on and off (nothing remembered before it)."""
    on, off = Attributor(model, keep_json=True, incremental=True), Attributor(model, keep_json=True, incremental=False)
    a, b = on.attribute(call), off.attribute(call)
    return (
        (a.as_dict(), a.warnings, a.spans, on.last_prompt()[0]),
        (b.as_dict(), b.warnings, b.spans, off.last_prompt()[0]),
        on,
    )


def _long_calls(model, paths, least=32):
    """The first and the last call of at least ``least`` messages of each log (the shortest and the longest
    such prompt); for a template of :data:`SMALL`, of the last log alone (the generated session)."""
    for path in paths[-1:] if model.name in SMALL else paths:
        trace = fit(read_trace(str(path)), model)
        calls = [c for c in trace.calls if len(c.messages) >= least]
        yield from calls[:1] + calls[1:][-1:]


@pytest.fixture
def build_up_from_32(monkeypatch):
    """Prompts of 32 messages and more are built up (200 in use): the fixtures' prompts are short.
    (Their message starts are not taken from windows, which would come first.)"""
    from tokprof.attribution import attributor

    monkeypatch.setattr(attributor, "BUILD_MIN", 32)
    monkeypatch.setattr(attributor, "FRESH_MIN", 1 << 30)


@pytest.mark.parametrize("name", TEMPLATES)
def test_a_long_fresh_prompt_is_built_up_with_the_same_buckets(name, tmp_path, build_up_from_32):
    """A long prompt that extends nothing (a fresh request to serve) is attributed by splicing its
    growing prefixes (Attributor._built_up): the same buckets, warnings, spans and prompt as whole."""
    model = _model(name)
    generated = tmp_path / "g.jsonl"  # its long calls: 33 to 41 messages
    generated.write_text("".join(json.dumps(r) + "\n" for r in records(session(20, 120, 3, 5))), encoding="utf-8")
    for call in _long_calls(model, [SAMPLES[1], generated]):
        a, b, _ = fresh_both_ways(model, call)
        assert a == b, f"{name} {call.where}: built up {a[:3]} whole {b[:3]}"


def test_a_long_fresh_prompt_is_spliced_onto_its_prefixes(tmp_path, build_up_from_32):
    model = _model("qwen2.5")
    trace = _session(tmp_path, calls=30)
    call = trace.calls[-1]
    assert len(call.messages) >= 32
    a, b, on = fresh_both_ways(model, call)
    assert a == b and on.spliced == 1  # the prompt itself spliced (its prefixes are not counted)


@pytest.mark.parametrize("template", [NUMBERED, REWRITING], ids=["numbered", "rewriting"])
def test_a_long_fresh_prompt_falls_back_where_splicing_does_not_hold(template, tmp_path, build_up_from_32):
    model = tiny_model(template)
    call = _session(tmp_path, calls=30).calls[-1]
    a, b, on = fresh_both_ways(model, call)
    assert a == b  # the prompt as rendered whole, whether its last step could be spliced or not
    if template is NUMBERED:
        assert on.spliced == 0  # caught by the first calls' check both ways


@pytest.mark.parametrize("name,relative", CORPUS_LOGS, ids=[n for n, _ in CORPUS_LOGS])
def test_corpus_long_fresh_prompts_are_built_up_with_the_same_buckets(name, relative, build_up_from_32):
    path = CORPUS / relative
    if not path.is_file():
        pytest.skip("the corpus is not here")
    model = _model(name)
    for call in _long_calls(model, [path]):
        a, b, _ = fresh_both_ways(model, call)
        assert a == b, f"{name} {call.where}"


def test_prompts_that_rewind_fork_and_interleave_keep_their_own_prefixes():
    """The prepared messages of a call that extends the last one grow in place (Attributor._prepare):
    a call that goes back to an earlier prompt, forks from it, repeats the same list or alternates
    with another conversation still gets its own prefixes, with slices of one list and equal copies."""
    from tokprof.trace import Call, Trace

    model = _model("qwen2.5")
    system = {"role": "system", "content": "You are terse."}
    turns = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} " * (i + 1)} for i in range(40)]
    other = [{"role": "user", "content": "another conversation"}] + turns[1:12]
    forked = turns[:20] + [{"role": "user", "content": "a different question"}, turns[21]]
    prompts = [
        turns[:10],
        turns[:12],
        turns[:12],  # the same prompt again
        turns[:8],  # back to an earlier point
        forked,  # a fork of it
        [system] + turns[:14],  # another first message: another conversation
        other,
        turns[:30],
        [dict(m) for m in turns[:34]],  # equal copies, not the same objects
        other + turns[12:16],
        turns[:40],
    ]
    calls = [Call(index=i, messages=list(p), tools=None, where=f"call {i}") for i, p in enumerate(prompts)]
    assert_same(model, Trace(path="hand-made", format="test", calls=calls))
    on = Attributor(model, keep_json=True)
    for call in calls:  # against attributors that remember nothing (both ways above share _prepare)
        alone = Attributor(model, keep_json=True, incremental=False)
        a, b = on.attribute(call), alone.attribute(call)
        assert (a.as_dict(), a.warnings, on.last_prompt()[0]) == (b.as_dict(), b.warnings, alone.last_prompt()[0])


@pytest.fixture
def windows_from_8(monkeypatch):
    """Prompts of 8 messages and more have their message starts found from windows (48 in use)."""
    from tokprof.attribution import attributor

    monkeypatch.setattr(attributor, "FRESH_MIN", 8)


def _windowed_same(model, calls):
    """Each call by a fresh attributor both ways; how many took their message starts from windows."""
    used = 0
    for call in calls:
        a, b, on = fresh_both_ways(model, call)
        assert a == b, f"{call.where}: windows {a[:3]} whole {b[:3]}"
        used += on.windowed
    return used


@pytest.mark.parametrize("name", TEMPLATES)
def test_a_long_fresh_prompt_takes_its_message_starts_from_windows(name, tmp_path, windows_from_8):
    """A long prompt that extends nothing (a fresh request to serve): where its messages start is
    found from windows of its messages (tokprof.attribution.window_starts) where the checks allow it; the
    same buckets, warnings, spans and prompt as the rule's prefix renders, on every shipped template."""
    model = _model(name)
    generated = tmp_path / "g.jsonl"  # its longest call: 41 messages, several windows
    generated.write_text("".join(json.dumps(r) + "\n" for r in records(session(20, 120, 3, 5))), encoding="utf-8")
    calls = list(_long_calls(model, [SAMPLES[0], SAMPLES[1], *sorted(FIXTURES.glob("good_*")), generated], least=8))
    used = _windowed_same(model, calls)
    if name != "mistral":  # mistral-common writes the system prompt and tools before the last user message
        assert used == len(calls), f"{name}: {used} of {len(calls)} from windows"


@pytest.mark.parametrize("name,relative", CORPUS_LOGS, ids=[n for n, _ in CORPUS_LOGS])
def test_corpus_long_fresh_prompts_take_their_message_starts_from_windows(name, relative, windows_from_8):
    path = CORPUS / relative
    if not path.is_file():
        pytest.skip("the corpus is not here")
    model = _model(name)
    calls = list(_long_calls(model, [path], least=8))
    assert _windowed_same(model, calls) == len(calls)


def test_a_fresh_serve_conversation_of_600_messages_takes_its_starts_from_windows():
    """What bench_serve.py's target measures (a generated agent session of 601 messages, 16 tools,
    at the default threshold): from windows, the same as the rule's prefix renders."""
    from tokprof.formats.prompts import read_prompt
    from tokprof.trace import Call

    model = _model("qwen2.5")
    doc = session(320, 720, 16, 3000)
    prompt = read_prompt(doc["messages"][:601], doc["tools"])
    call = Call(index=0, messages=prompt.messages, tools=prompt.tools, where="request")
    a, b, on = fresh_both_ways(model, call)
    assert a == b and on.windowed == 1 and on.spliced == 0


def _with_reasoning(call, every: int):
    """The call with reasoning on every assistant message and a new user turn after every ``every``
    messages (templates that drop earlier reasoning write the earlier turns by what comes later)."""
    from tokprof.trace import Call

    messages: list[dict] = []
    for i, m in enumerate(call.messages):
        if m["role"] == "assistant":
            m = {**m, "reasoning_content": f"thinking {i} over"}
        messages.append(m)
        if i > 2 and i % every == 0 and m["role"] == "tool":
            messages.append({"role": "user", "content": f"and now step {i}"})
    return Call(index=call.index, messages=messages, tools=call.tools, day=call.day, where=call.where)


@pytest.mark.parametrize("name", ["qwen3", "gpt-oss", "deepseek-v4", "qwen2.5"])
@pytest.mark.parametrize("every", [3, 7, 40])
def test_reasoning_dropped_by_later_turns_is_windowed_exactly_or_falls_back(name, every, tmp_path, windows_from_8):
    """Qwen3 and gpt-oss drop an assistant's reasoning once a later user turn comes: a prefix render
    then parts from the whole prompt before its last messages. Windows must give the rule's starts
    or give up, whether the user turns come more or less often than a window's span."""
    model = _model(name)
    trace = _session(tmp_path, calls=30)  # calls of 29 and 62 messages, before the user turns added
    calls = [_with_reasoning(trace.calls[i], every) for i in (14, -1)]
    used = _windowed_same(model, calls)
    if name in ("qwen2.5", "qwen3", "deepseek-v4"):  # gpt-oss: harmony's last turn is written otherwise
        assert used == len(calls)


def test_conversations_of_one_agent_each_take_their_starts_from_windows():
    """A long-lived attributor (a serve worker) counting fresh conversations that share only their
    system prompt: each takes its message starts from windows (what it shares with the one before
    is one message), with the buckets of a fresh attributor's rule."""
    from tokprof.formats.prompts import read_prompt
    from tokprof.trace import Call

    model = _model("qwen2.5")
    worker = Attributor(model, keep_json=False, incremental=True)
    first = session(40, 240, 4, 11)
    for seed in (11, 12):
        doc = session(40, 240, 4, seed)
        prompt = read_prompt(first["messages"][:1] + doc["messages"][1:60], first["tools"])
        call = Call(index=seed, messages=prompt.messages, tools=prompt.tools, where=f"conversation {seed}")
        got = worker.attribute(call)
        alone = Attributor(model, keep_json=False, incremental=False)
        want = alone.attribute(call)
        assert (got.as_dict(), got.warnings, worker.last_prompt()[0]) == (
            want.as_dict(),
            want.warnings,
            alone.last_prompt()[0],
        )
    assert worker.windowed == 2 and worker._threads  # the second shared a thread with the first


def test_a_time_limit_in_the_windows_walk_leaves_no_failed_header_remembered(monkeypatch):
    """held_limits' one time limit covers the whole walk of a prompt's windows and may stop any
    render in it. A role header's stand-in, rendered alone, whose render is stopped so must not be
    remembered as the template's failure (a None header: the next probes' starts moved, for this
    call's fallback and every later call): headers are found after the walk, under their own limits."""
    import time

    from tokprof.formats.prompts import read_prompt
    from tokprof.attribution import attributor
    from tokprof.models import template
    from tokprof.trace import Call

    model = _model("qwen3")
    doc = session(320, 720, 16, 3000)
    prompt = read_prompt(doc["messages"][:201], doc["tools"])
    call = Call(index=0, messages=prompt.messages, tools=prompt.tools, where="request")
    monkeypatch.setenv("TOKPROF_TEMPLATE_TIMEOUT", "0.3")
    original, slowed = attributor._render, []

    def render(model, messages, *args, **kwargs):
        if template._HELD.capped is not None and len(messages) == 1 and not slowed:
            slowed.append(1)  # the held limit runs out here (a slow template, or the renders before)
            started = time.monotonic()
            while time.monotonic() - started < 0.5:
                pass
        return original(model, messages, *args, **kwargs)

    monkeypatch.setattr(attributor, "_render", render)
    on = Attributor(model, keep_json=True, incremental=True)
    a = on.attribute(call)
    monkeypatch.setattr(attributor, "_render", original)
    b = Attributor(model, keep_json=True, incremental=False).attribute(call)
    assert None not in list(on._headers.values())
    assert (a.as_dict(), a.warnings) == (b.as_dict(), b.warnings)


def test_a_user_turn_that_drops_earlier_reasoning_takes_its_probes_from_windows(tmp_path):
    """#43.3: a call that adds a user turn makes Qwen3 drop the reasoning of the turns before it, so
    the call is not spliced and each message since the last user turn needs a probe: taken from
    windows (tokprof.attribution.window_probes), with the same buckets, warnings, spans and prompt as
    the rule's whole renders, call by call (gpt-oss's are checked by the tests above)."""
    model = _model("qwen3")
    trace = _session(tmp_path, calls=24)
    calls = [_with_reasoning(call, 1000) for call in trace.calls]  # reasoning, user turns as generated
    on = Attributor(model, keep_json=True, incremental=True)
    off = Attributor(model, keep_json=True, incremental=False)
    for call in calls:
        a, b = on.attribute(call), off.attribute(call)
        assert (a.as_dict(), a.warnings, a.spans, on.last_prompt()[0]) == (
            b.as_dict(),
            b.warnings,
            b.spans,
            off.last_prompt()[0],
        ), call.where
    assert on._probe_checks.made > 10 and not on._probe_checks.off
