"""Logs that do not record every part of the prompt: the inferred 'unrecorded' bucket, tokens known
from usage only, compactions, and --tools / --system supplying what the log lacks."""

from __future__ import annotations

import json

import pytest

from conftest import WEATHER_TOOL, small_transcript, tiny_model, write_json
from tokprof.profiling import UNRECORDED, Profile, profile_trace
from tokprof.trace import Call, Trace, Usage
from tokprof.transforms import supply


def session_trace(reported=(500, 800, 1200), unrecorded=("system", "tools")) -> Trace:
    messages = small_transcript(system=False, tools=False)["messages"]
    prompts = [messages[:1], messages[:3], messages[:4]]
    calls = [
        Call(index=i, messages=list(p), tools=None, model="claude-x", reported=Usage(prompt=r), where=f"line {i}")
        for i, (p, r) in enumerate(zip(prompts, reported))
    ]
    return Trace(path="s.jsonl", format="test", calls=calls, model="claude-x", unrecorded=unrecorded, session="abc")


def sound(profile: Profile) -> None:
    for row in profile.calls:
        assert all(v >= 0 for v in row.buckets.values()) and sum(row.buckets.values()) == row.total


def test_exact_model_infers_the_fixed_part_from_the_first_call():
    model = tiny_model()
    profile = profile_trace(session_trace(), model)
    sound(profile)
    first = profile.calls[0]
    assert first.total == first.computed == 500  # the fixed part is inferred from the first call
    fixed = first.buckets[UNRECORDED]
    assert fixed > 0 and all(row.buckets[UNRECORDED] == fixed for row in profile.calls)
    assert [row.total for row in profile.calls] == [row.computed for row in profile.calls]
    summary = profile.summary()
    assert summary.exact is False and "system prompt and the tool definitions" in (summary.inferred or "")
    assert UNRECORDED in summary.shares and profile.buckets()[-1] == UNRECORDED
    assert not any(row.exact for row in profile.calls)
    doc = json.loads(profile.to_json())
    assert Profile.from_dict(doc).summary() == summary


def test_proxy_scales_the_rest_to_the_reported_prompt():
    from tokprof.models import resolve_model

    profile = profile_trace(session_trace(), resolve_model("claude-proxy"))
    sound(profile)
    assert [row.total for row in profile.calls] == [500, 800, 1200]
    fixed = profile.calls[0].buckets[UNRECORDED]
    assert fixed > 0 and profile.calls[0].computed == 500
    assert profile.summary().reconciliation.max_call != 0  # the first call agrees by construction
    # growth the few new messages cannot explain goes to 'unrecorded' (tokprof.attribution.estimates), on top of the fixed part
    for before, row in zip(profile.calls, profile.calls[1:]):
        assert row.anchored and row.buckets[UNRECORDED] == before.buckets[UNRECORDED] + row.unexplained


def test_a_fixed_part_larger_than_a_later_prompt_is_clamped():
    profile = profile_trace(session_trace(reported=(900, 40, 1000)), tiny_model())
    sound(profile)
    assert profile.calls[1].buckets[UNRECORDED] == 40


def test_unrendered_tokens_and_compactions_are_counted_and_labelled():
    trace = session_trace(unrecorded=())
    trace.calls[2].unrendered = {"conversation": 37}
    trace.calls[1].kind = "compaction"
    model = tiny_model()
    profile = profile_trace(trace, model)
    sound(profile)
    row = profile.calls[2]
    plain = profile_trace(session_trace(unrecorded=()), model).calls[2]
    assert row.total == row.computed == plain.total + 37 and row.unrendered == 37 and not row.exact
    summary = profile.summary()
    assert summary.unrendered == 37 and summary.compactions == 1 and summary.exact is False
    assert UNRECORDED not in summary.shares
    assert json.loads(profile.to_json())["calls"][1]["kind"] == "compaction"


def test_supply_fills_what_is_unrecorded():
    trace = supply(session_trace(), [WEATHER_TOOL], "You are a test bot.")
    assert trace.supplied == ("system", "tools")
    for call in trace.calls:
        assert call.tools == [WEATHER_TOOL] and call.messages[0] == {"role": "system", "content": "You are a test bot."}
    profile = profile_trace(trace, tiny_model())
    assert UNRECORDED not in profile.calls[0].buckets and profile.calls[0].buckets["tool_definitions"] > 0

    partly = supply(session_trace(), [WEATHER_TOOL], None)
    assert partly.supplied == ("tools",)
    assert UNRECORDED in profile_trace(partly, tiny_model()).calls[0].buckets  # the system prompt is still inferred


def test_supply_refuses_what_the_log_records():
    trace = session_trace(unrecorded=())
    for call in trace.calls:
        call.tools = [WEATHER_TOOL]
        call.messages = [{"role": "system", "content": "sys"}, *call.messages]
    with pytest.raises(ValueError, match="records its tool definitions"):
        supply(trace, [WEATHER_TOOL], None)
    with pytest.raises(ValueError, match="records its system prompt"):
        supply(trace, None, "other")


def test_cli_supplies_tools_and_system_to_a_log(tmp_path, capsys):
    from conftest import CHATML, train_tiny_tokenizer
    from tokprof.frontends.cli import main

    train_tiny_tokenizer().save(str(tmp_path / "tokenizer.json"))
    write_json(tmp_path / "tokenizer_config.json", {"chat_template": CHATML, "eos_token": "<|im_end|>"})
    log = write_json(tmp_path / "log.json", small_transcript(system=False, tools=False))
    tools = write_json(tmp_path / "tools.json", [WEATHER_TOOL])
    system = tmp_path / "system.txt"
    system.write_text("You are a test bot.")
    args = ["profile", str(log), "--model", str(tmp_path), "-f", "json"]
    assert main(args + ["--tools", str(tools), "--system", str(system)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["calls"][0]["buckets"]["tool_definitions"] > 0 and doc["calls"][0]["buckets"]["system"] > 0
    log2 = write_json(tmp_path / "log2.json", small_transcript())
    assert main(["profile", str(log2), "--model", str(tmp_path), "--tools", str(tools)]) == 2
    err = capsys.readouterr().err
    assert "records its tool definitions" in err and err.count("\n") == 1


def test_the_fixed_part_applies_to_calls_before_the_first_usage():
    trace = session_trace()
    trace.calls[0].reported = None
    profile = profile_trace(trace, tiny_model())
    fixed = profile.calls[1].buckets[UNRECORDED]
    assert fixed > 0 and profile.calls[0].buckets[UNRECORDED] == fixed


def test_without_any_usage_nothing_is_claimed_inferred():
    trace = session_trace()
    for call in trace.calls:
        call.reported = None
    profile = profile_trace(trace, tiny_model())
    assert UNRECORDED not in profile.calls[0].buckets and profile.inferred is None
    assert [w.code for w in profile.warnings] == ["not-inferred"]


def test_supplied_parts_go_to_the_main_thread_only():
    trace = session_trace()
    trace.calls[2].thread = "agent-1"
    supply(trace, [WEATHER_TOOL], "You are a test bot.")
    assert trace.calls[2].tools is None and trace.calls[2].messages[0]["role"] != "system"
    profile = profile_trace(trace, tiny_model())
    assert UNRECORDED not in profile.calls[0].buckets and UNRECORDED in profile.calls[2].buckets
