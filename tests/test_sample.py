"""The bundled sample: reproducible from its generator, and profiled exactly."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

from conftest import ROOT
from tokprof.formats import read_trace
from tokprof.profiling import profile_trace

SAMPLE = ROOT / "samples" / "incident_session.json"


def test_generator_reproduces_sample(tmp_path):
    out = tmp_path / "incident_session.json"
    subprocess.run([sys.executable, str(ROOT / "samples" / "generate.py"), "-o", str(out)], check=True, timeout=120)
    for name in ("incident_session.json", "tools_anthropic.json", "system_prompt.txt"):
        assert (tmp_path / name).read_bytes() == (ROOT / "samples" / name).read_bytes(), name


def test_sample_shape():
    doc = json.loads(SAMPLE.read_text(encoding="utf-8"))
    roles = [m["role"] for m in doc["messages"]]
    assert len(doc["tools"]) == 12
    assert 35 <= roles.count("user") <= 45
    assert 50 <= roles.count("assistant") <= 60
    called = {c["function"]["name"] for m in doc["messages"] for c in m.get("tool_calls") or []}
    assert len({t["function"]["name"] for t in doc["tools"]} - called) >= 3


def test_sample_profile(qwen25):
    trace = read_trace(str(SAMPLE))
    profile = profile_trace(trace, qwen25)
    summary = profile.summary()
    assert summary.calls == len(trace.calls)
    for row in profile.calls:
        assert min(row.buckets.values()) >= 0
        assert sum(row.buckets.values()) == row.total
    # tool definitions are the same on every call: the catalogue does not change
    assert len({row.buckets["tool_definitions"] for row in profile.calls}) == 1
    assert summary.crossovers.tool_results_exceed_tool_definitions is not None
    assert not profile.warnings


def test_segment_cache_matches_whole_encode(qwen25, qwen3):
    """Tokenizing text between added tokens separately gives exactly the tokens of the whole text."""

    from tokprof.models.counters import HFCounter

    trace = read_trace(str(SAMPLE))
    for model in (qwen25, qwen3):
        counter = HFCounter(model.counter.fallback.tokenizer, "converted")  # the Hugging Face counter
        for call in trace.calls[::7]:
            text = model.prompt_format.render(
                model.prompt_format.prepare(call.messages, model.prompt_format.shapes[0]), call.tools, True, call.day
            )
            assert counter.segmentable()
            whole = counter._encode_starts(text)
            assert np.array_equal(counter._segmented_starts(text), whole)
            assert np.array_equal(model.counter.token_starts(text), whole)  # and the fast counter agrees
