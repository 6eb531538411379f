"""What-if: policies replay a log exactly. Every policy's per-call totals are a plain render of its
prompts with the same template; ``full`` is the profile; generous windows and caps change nothing;
the texts a policy writes are the documented ones."""

from __future__ import annotations

import json

import pytest

import tokprof
from conftest import CHATML, FIXTURES, ROOT, WEATHER_TOOL, tiny_model
from tokprof.analyses.whatif import PromptCounter, shared_tokens, whatif
from tokprof.frontends.cli import main
from tokprof.profiling import profile_trace
from tokprof.trace import Call, Trace
from tokprof.transforms import policies as P

SAMPLE = ROOT / "samples" / "incident_session.json"
ALL = [
    "window:3",
    "window-tokens:60",
    "elide:1",
    "elide:0",
    "cap:10",
    "user-verbatim:1",
    "user-verbatim:0",
    "compact:40:12",
    "compact:60",
    "clear-tool-uses:40:1",
    "clear-tool-uses:40:0",
]


def tool_call(i: int, name: str = "lookup") -> dict:
    return {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": {"word": "cat"}}}


def conversation(turns: int = 3, calls_per_turn: int = 3) -> list[dict]:
    """A system message, then user turns, each with tool calls and their (long-ish) results."""
    messages: list[dict] = [{"role": "system", "content": "You are a test bot ."}]
    n = 0
    for t in range(turns):
        messages.append({"role": "user", "content": f"define cat {t}"})
        for _ in range(calls_per_turn):
            n += 1
            messages.append({"role": "assistant", "content": None, "tool_calls": [tool_call(n)]})
            messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": "cat is an animal . " * (n + 2)})
        messages.append({"role": "assistant", "content": "A cat is an animal ."})
    return messages


def trace_of(messages: list[dict], thread: str = "", start: int = 0) -> list[Call]:
    """A call before each assistant message, its prompt the messages before it (one shared list)."""
    calls = []
    for i, m in enumerate(messages):
        if m["role"] == "assistant":
            calls.append(
                Call(
                    index=start + len(calls),
                    messages=messages[:i],
                    tools=[WEATHER_TOOL],
                    thread=thread,
                    where=f"messages[{i}]",
                    response=m,
                )
            )
    return calls


def make_trace(*threads: list[Call]) -> Trace:
    calls = [c for thread in threads for c in thread]
    for i, c in enumerate(calls):
        c.index = i
    return Trace(path="test.json", format="test", calls=calls)


@pytest.fixture(scope="module")
def tiny():
    model = tiny_model(CHATML)
    model.context_window = 400
    return model


def plain_count(model, call: Call) -> int:
    """A plain render of a call's prompt with the model's template (its first message shape), tokenized whole."""
    fmt = model.prompt_format
    for shape in fmt.shapes:
        try:
            text = fmt.render(fmt.prepare(call.messages, shape), call.tools, add_generation_prompt=True, day=call.day)
        except Exception:
            continue
        return model.counter.count(text)
    raise AssertionError("no shape renders")


def replays(report, spec):
    return report.policy(P.parse_policy(spec).spec)


# -- exactness ---------------------------------------------------------------------------------------
def test_every_policy_is_a_plain_render_of_its_prompts(tiny):
    trace = make_trace(trace_of(conversation()), trace_of(conversation(2, 2), thread="sub"))
    policies = P.parse_policies(ALL)
    report = whatif(trace, tiny, policies)
    assert [r.policy for r in report.policies] == [p.spec for p in policies]
    for policy in policies:
        replayed = P.apply(trace, policy, PromptCounter(tiny), report.context_window)
        result = report.policy(policy.spec)
        assert len(replayed.calls) == len(result.calls)
        for call, row in zip(replayed.calls, result.calls):
            assert row.total == plain_count(tiny, call), (policy.spec, row.index)
            assert sum(row.buckets.values()) == row.total
        assert result.billed_input == sum(c.total for c in result.calls)
        assert result.saving == report.policies[0].billed_input - result.billed_input


def test_every_default_policy_is_a_plain_render_on_the_sample(qwen25):
    trace = tokprof.read_log(SAMPLE)
    policies = P.parse_policies([*P.DEFAULT_POLICIES, "compact:30", "window-tokens:20000", "clear-tool-uses:30000:2"])
    report = whatif(trace, qwen25, policies)
    for policy in policies:
        replayed = P.apply(trace, policy, PromptCounter(qwen25), report.context_window)
        result = report.policy(policy.spec)
        assert len(result.calls) == len(replayed.calls), policy.spec
        # a fixed third of the calls rendered plainly, the last among them (the whole replay was made)
        picked = sorted({*range(0, len(replayed.calls), 3), len(replayed.calls) - 1})
        totals = [plain_count(qwen25, replayed.calls[i]) for i in picked]
        assert [result.calls[i].total for i in picked] == totals, policy.spec
    assert replays(report, "compact:30").summaries == 2
    assert replays(report, "window-tokens:20000").largest_prompt <= 20000


def test_full_is_the_profile(tiny):
    trace = make_trace(trace_of(conversation()), trace_of(conversation(2, 2), thread="sub"))
    profile = profile_trace(trace, tiny)
    full = whatif(trace, tiny, [P.Full()]).policies[0]
    assert full.billed_input == profile.summary().billed_input
    assert [(c.index, c.total, c.buckets) for c in full.calls] == [(r.index, r.total, r.buckets) for r in profile.calls]
    assert full.saving == 0 and full.changed_calls == 0


def test_a_call_whose_prompt_is_not_recorded_replays_as_nothing_rendered(tiny):
    """An OpenCode run's first call records usage but no prompt: it rendered nothing, shared nothing
    (it was the first thing what-if read of the attributor, and raised; later, it read the call before)."""
    from tokprof.trace import Usage

    calls = trace_of(conversation())
    blind = Call(index=0, messages=[], tools=None, reported=Usage(prompt=50), unrendered={"unrecorded": 50})
    for at in (0, 2):
        trace = make_trace([*calls[:at], blind, *calls[at:]])
        report = whatif(trace, tiny, [P.Full()])
        full = report.policies[0]
        assert full.calls[at].total == 50 and full.calls[at].buckets.get("unrecorded") == 50
        assert full.billed_input == profile_trace(trace, tiny).summary().billed_input


def test_full_is_the_profile_of_the_sample(sample_profile):
    profile = json.loads(sample_profile.read_text(encoding="utf-8"))
    report = tokprof.whatif(SAMPLE, ["full"])
    full = report.policies[0]
    assert full.billed_input == profile["summary"]["billed_input"]
    assert [c.total for c in full.calls] == [c["total"] for c in profile["calls"]]
    assert full.buckets_billed == profile["summary"]["buckets_billed"]


def test_generous_windows_and_caps_are_full(tiny):
    messages = conversation()
    trace = make_trace(trace_of(messages))
    longest = max(len(m["content"]) for m in messages if m["role"] == "tool")
    report = whatif(
        trace,
        tiny,
        P.parse_policies(
            [
                f"window:{len(messages)}",
                f"cap:{longest}",
                "elide:99",
                "user-verbatim:99",
                "window-tokens:100000",
                "compact:100",
                "clear-tool-uses:100000:0",
            ]
        ),
        window=100000,
    )
    full = report.policies[0]
    for result in report.policies[1:]:
        assert [c.total for c in result.calls] == [c.total for c in full.calls], result.policy
        assert result.saving == 0 and result.changed_calls == 0
    replayed = P.apply(trace, P.Cap(longest))
    assert all(a is b for a, b in zip(replayed.calls, trace.calls))  # the same calls, unchanged


def test_generous_window_and_cap_are_full_on_the_sample():
    trace = tokprof.read_log(SAMPLE)
    longest = max(len(m.get("content") or "") for c in trace.calls for m in c.messages if m["role"] == "tool")
    history = max(len(c.messages) for c in trace.calls)
    report = tokprof.whatif(trace, [f"window:{history}", f"cap:{longest}"])
    full = report.policies[0]
    for result in report.policies[1:]:
        assert [c.total for c in result.calls] == [c.total for c in full.calls]
        assert result.billed_input == full.billed_input and result.changed_calls == 0
    assert report.policies[1].policy == f"window:{history}"


# -- what each policy does -----------------------------------------------------------------------------
def prompts(trace: Trace, spec: str, model=None, window=None) -> list[list[dict]]:
    counter = PromptCounter(model) if model is not None else None
    return [c.messages for c in P.apply(trace, P.parse_policy(spec), counter, window).calls]


def test_every_call_keeps_its_new_messages(tiny):
    messages = conversation()
    trace = make_trace(trace_of(messages))
    for spec in ALL:
        out = P.apply(trace, P.parse_policy(spec), PromptCounter(tiny), 400).calls
        replayed = [c for c in out if not isinstance(c, P.AddedCall)]
        for before, call, log in zip([None, *trace.calls], replayed, trace.calls):
            new = log.messages[len(before.messages) :] if before is not None else log.messages
            assert call.messages[len(call.messages) - len(new) :] == new, spec
            assert all(a is b for a, b in zip(call.messages[len(call.messages) - len(new) :], new))


def test_window_keeps_the_system_message_and_drops_orphan_results():
    messages = conversation()
    trace = make_trace(trace_of(messages))
    last = prompts(trace, "window:3")[-1]
    assert last[0]["role"] == "system"
    assert last[1]["role"] != "tool"  # a result whose call was cut goes with it
    assert len([m for m in last if m["role"] != "system"]) <= 3
    assert last[-1] is trace.calls[-1].messages[-1]


def test_window_tokens_fit(tiny):
    trace = make_trace(trace_of(conversation()))
    limit = 60
    for call, kept in zip(trace.calls, prompts(trace, f"window-tokens:{limit}", tiny)):
        count = plain_count(tiny, Call(0, kept, call.tools))
        new_only = len(kept) == len(call.messages) - (len(call.messages) - len(kept))
        assert count <= limit or new_only


def test_elide_stubs_name_the_tool_and_the_size():
    messages = conversation()
    trace = make_trace(trace_of(messages))
    last = prompts(trace, "elide:1")[-1]
    stubbed = [m for m in last if m["role"] == "tool" and m["content"].startswith("[tool result elided")]
    original = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    assert stubbed
    for m in stubbed:
        assert (
            m["content"] == f"[tool result elided by tokprof: lookup, {len(original[m['tool_call_id']]):,} characters]"
        )
    # results of the last user turn stay
    users = [i for i, m in enumerate(last) if m["role"] == "user"]
    assert all(not m["content"].startswith("[tool result elided") for m in last[users[-1] :] if m["role"] == "tool")


def test_cap_cuts_with_a_note():
    messages = conversation()
    trace = make_trace(trace_of(messages))
    last = prompts(trace, "cap:10")[-1]
    originals = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    fresh = trace.calls[-1].messages[-1]
    for m in last:
        if m["role"] == "tool" and m is not fresh:
            full = originals[m["tool_call_id"]]
            assert m["content"] == full[:10] + f"\n[cut by tokprof: {len(full):,} characters, the first 10 kept]"


def test_user_verbatim_keeps_every_user_message():
    messages = conversation()
    trace = make_trace(trace_of(messages))
    last = prompts(trace, "user-verbatim:1")[-1]
    assert [m for m in last if m["role"] == "user"] == [m for m in trace.calls[-1].messages if m["role"] == "user"]
    users = [i for i, m in enumerate(last) if m["role"] == "user"]
    assert all(m["role"] in ("system", "user") for m in last[: users[-1]])


def test_compact_bills_a_summarising_call_and_goes_on_from_a_stand_in(tiny):
    trace = make_trace(trace_of(conversation()))
    out = P.apply(trace, P.parse_policy("compact:40:30"), PromptCounter(tiny), 400).calls
    added = [c for c in out if isinstance(c, P.AddedCall)]
    assert added and all(c.kind == "compaction" for c in added)
    first = added[0]
    assert first.messages[-1] == {"role": "user", "content": P.COMPACT_INSTRUCTION}
    after = out[out.index(first) + 1]
    summary = after.messages[1]
    assert summary["role"] == "user" and summary["content"].startswith(P.SUMMARY_HEADER)
    stand_in = summary["content"][len(P.SUMMARY_HEADER) :]
    assert stand_in.startswith("[a stand-in made by tokprof for a summary of 30 tokens]")
    assert tiny.count(stand_in) == 30
    assert first.response == {"role": "assistant", "content": stand_in}
    report = whatif(trace, tiny, [P.parse_policy("compact:40:30")])
    result = report.policies[1]
    assert result.summaries == len(added)
    assert sum(1 for c in result.calls if c.kind == "summary") == len(added)


def test_a_short_stand_in_is_filler_alone(tiny):
    trace = make_trace(trace_of(conversation()))
    out = P.apply(trace, P.parse_policy("compact:40:3"), PromptCounter(tiny), 400).calls
    added = next(c for c in out if isinstance(c, P.AddedCall))
    assert added.response["content"] == "summary summary summary" and tiny.count(added.response["content"]) == 3


def test_compact_uses_the_logs_own_compaction(tiny):
    """Where the policy would compact at the log's own compaction call, that call is the summarising
    call (nothing is added) and the log's summary goes on."""
    messages = conversation()
    calls = trace_of(messages)
    compaction = Call(
        index=0,
        messages=messages[:-1] + [{"role": "user", "content": "summarise"}],
        tools=[WEATHER_TOOL],
        kind="compaction",
        response={"role": "assistant", "content": "a summary"},
    )
    after = [{"role": "user", "content": "a summary"}]
    rest = [Call(index=0, messages=after, tools=[WEATHER_TOOL])]
    trace = make_trace(calls[:1] + [compaction] + rest)
    out = P.apply(trace, P.parse_policy("compact:1"), PromptCounter(tiny), 400).calls
    assert not any(isinstance(c, P.AddedCall) for c in out)
    assert out[-1].messages == after


def test_clear_tool_uses_keeps_the_most_recent(tiny):
    trace = make_trace(trace_of(conversation()))
    last = prompts(trace, "clear-tool-uses:40:2", tiny)[-1]
    results = [m for m in last if m["role"] == "tool"]
    assert [m["content"] for m in results[:-2]] == ["[cleared]"] * (len(results) - 2)
    assert all(m["content"] != "[cleared]" for m in results[-2:])
    first = prompts(trace, "clear-tool-uses:100000:2", tiny)
    assert all(m["content"] != "[cleared]" for p in first for m in p if m["role"] == "tool")


def test_threads_are_replayed_on_their_own(tiny):
    main_thread = trace_of(conversation())
    sub = trace_of(conversation(2, 2), thread="sub")
    mixed = [c for pair in zip(main_thread, sub) for c in pair] + main_thread[len(sub) :]
    alone = P.apply(make_trace(trace_of(conversation())), P.parse_policy("window:3"))
    together = P.apply(make_trace(mixed), P.parse_policy("window:3"))
    assert [c.messages for c in together.calls if not c.thread] == [c.messages for c in alone.calls]


def test_changed_calls_drop_reported_usage():
    from tokprof.trace import Usage

    calls = trace_of(conversation())
    for c in calls:
        c.reported = Usage(prompt=100)
    trace = make_trace(calls)
    out = P.apply(trace, P.parse_policy("window:3"))
    for log, call in zip(trace.calls, out.calls):
        assert (call is log) == (call.reported is not None)
    assert trace.calls[-1].reported is not None  # the trace given is not changed


# -- shared prefix -----------------------------------------------------------------------------------
def test_shared_prefix_is_the_common_token_prefix(tiny):
    trace = make_trace(trace_of(conversation()))
    report = whatif(trace, tiny, P.parse_policies(["window:3"]))
    tokenizer = tiny.counter.tokenizer
    for result in report.policies:
        replayed = P.apply(trace, P.parse_policy(result.policy))
        ids = []
        for call in replayed.calls:
            fmt = tiny.prompt_format
            text = fmt.render(fmt.prepare(call.messages, fmt.shapes[0]), call.tools, add_generation_prompt=True)
            ids.append(tokenizer.encode(text, add_special_tokens=False).ids)
        expected = [0]
        for a, b in zip(ids, ids[1:]):
            n = 0
            while n < min(len(a), len(b)) and a[n] == b[n]:
                n += 1
            expected.append(n)
        assert [c.shared for c in result.calls] == expected, result.policy
    full, window = report.policies
    assert window.shared_prefix < full.shared_prefix


def test_shared_tokens():
    """Tokens that cover the text one after the other (byte-level BPE): shared while the same."""
    import numpy as np

    a = ("ab cd", np.array([0, 2]))  # "ab", " cd"
    assert shared_tokens(a, ("ab cd", np.array([0, 2]))) == 2
    assert shared_tokens(a, ("ab cde", np.array([0, 2]))) == 1  # " cd" became " cde"
    assert shared_tokens(a, ("ab cd ef", np.array([0, 2, 5]))) == 2
    assert shared_tokens(a, ("xb cd", np.array([0, 2]))) == 0
    assert shared_tokens(a, ("ab", np.array([0]))) == 1


# -- parsing and the command line -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, spec",
    [
        ("full", "full"),
        ("window", "window:20"),
        ("window:5", "window:5"),
        ("window-tokens:1_000", "window-tokens:1000"),
        ("elide", "elide:2"),
        ("cap:4,000", "cap:4000"),
        ("user-verbatim", "user-verbatim:4"),
        ("compact", "compact:80"),
        ("compact:70:500", "compact:70:500"),
        ("compact:72.5", "compact:72.5"),
        ("clear-tool-uses", "clear-tool-uses:100000:3"),
        ("clear-tool-uses:50000:0", "clear-tool-uses:50000:0"),
    ],
)
def test_policies_parse(text, spec):
    assert P.parse_policy(text).spec == spec
    assert P.parse_policy(spec).spec == spec


@pytest.mark.parametrize(
    "text",
    [
        "nope",
        "window:0",
        "window:x",
        "window:1:2",
        "cap:-3",
        "compact:101",
        "compact:0",
        "clear-tool-uses:5",
        "elide:1.5",
        "",
        "window:",
        "full:1",
    ],
)
def test_bad_policies_are_one_line_naming_the_policies(text, capsys):
    with pytest.raises(P.PolicyError) as caught:
        P.parse_policy(text)
    message = str(caught.value)
    assert "\n" not in message and "the policies are full, window:N" in message
    assert main(["whatif", str(FIXTURES / "good_transcript.json"), "-p", text]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the policies are" in err


def test_the_command(capsys, tmp_path):
    log = FIXTURES / "good_transcript.json"
    assert main(["whatif", str(log), "--no-progress"]) == 0
    out = capsys.readouterr().out
    for spec in ("full", "window:20", "elide:2", "cap:4000", "user-verbatim:4", "compact:80"):
        assert spec in out
    assert main(["whatif", str(log), "-p", "cap:5", "-f", "csv"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].startswith("policy,index,kind,thread,system,tool_definitions,tool_results,conversation,total")
    assert {r.split(",")[0] for r in rows[1:]} == {"full", "cap:5"}
    target = tmp_path / "w.json"
    html = tmp_path / "w.html"
    assert main(["whatif", str(log), "-p", "cap:5", "-f", "json", "-o", str(target), "--html", str(html)]) == 0
    doc = json.loads(target.read_text())
    assert doc["kind"] == "whatif" and doc["schema_version"] == 1
    page = html.read_text()
    assert 'id="chart-whatif-billed"' in page and 'id="chart-whatif-prompts"' in page and 'id="tokprof-whatif"' in page


def test_the_command_refuses_what_it_cannot_replay(tmp_path, capsys):
    saved = tmp_path / "run.json"
    assert main(["profile", str(FIXTURES / "good_transcript.json"), "-f", "json", "-o", str(saved)]) == 0
    assert main(["whatif", str(saved)]) == 2
    assert "saved profile" in capsys.readouterr().err
    assert main(["whatif", str(tmp_path)]) == 2
    assert main(["whatif", str(FIXTURES / "good_transcript.json"), "--window", "0"]) == 2


def test_policies_from_the_configuration(tmp_path, monkeypatch, capsys):
    log = FIXTURES / "good_transcript.json"
    (tmp_path / "tokprof.toml").write_text('whatif = ["cap:7", "elide:0"]\n')
    monkeypatch.chdir(tmp_path)
    assert main(["whatif", str(log), "-f", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [p["policy"] for p in doc["policies"]] == ["full", "cap:7", "elide:0"]
    assert main(["whatif", str(log), "-f", "json", "-p", "window:2"]) == 0  # --policy wins
    assert [p["policy"] for p in json.loads(capsys.readouterr().out)["policies"]] == ["full", "window:2"]
    (tmp_path / "tokprof.toml").write_text('whatif = ["cap:x"]\n')
    assert main(["whatif", str(log)]) == 2
    err = capsys.readouterr().err
    assert "whatif" in err and "the policies are" in err


def test_the_api(tmp_path):
    report = tokprof.whatif(FIXTURES / "good_transcript.json", "cap:5")
    assert isinstance(report, tokprof.WhatIfReport)
    assert [p.policy for p in report.policies] == ["full", "cap:5"]
    with pytest.raises(tokprof.TokprofError):
        tokprof.whatif(FIXTURES / "good_transcript.json", ["bogus"])


# -- which tool results cost most ----------------------------------------------------------------------
def test_carry_cost_adds_up_to_the_tool_results_billed(tiny):
    trace = make_trace(trace_of(conversation()), trace_of(conversation(2, 2), thread="sub"))
    profile = profile_trace(trace, tiny)
    costs = profile.summary().tool_result_costs
    assert costs is not None
    assert costs.tokens + costs.carry_cost == profile.summary().buckets_billed["tool_results"]
    assert costs.results == 9 + 4
    assert [t.tool for t in costs.tools] == ["lookup"]
    top = costs.top
    assert len(top) == 10 and [r.carry_cost for r in top] == sorted((r.carry_cost for r in top), reverse=True)
    for r in top:
        assert r.carry_cost == r.tokens * r.carried_by
    # the result added by the first call with a result is resent by every later call of its thread
    first = next(r for r in top if r.call == 1)
    assert first.carried_by == len([c for c in trace.calls if not c.thread]) - 2


def test_carry_cost_in_the_sample_profile(sample_profile, capsys):
    doc = json.loads(sample_profile.read_text(encoding="utf-8"))
    costs = doc["summary"]["tool_result_costs"]
    assert costs["tokens"] + costs["carry_cost"] == doc["summary"]["buckets_billed"]["tool_results"]
    assert len(costs["top"]) == 10 and costs["top"][0]["tool"] == "get_logs"
    assert main(["profile", str(sample_profile), "--no-progress"]) == 0  # its table, as the log's (saved)
    out = capsys.readouterr().out
    assert "carry cost" in out and "get_logs" in out


def test_carry_cost_survives_a_saved_profile(tmp_path):
    profile = tokprof.profile(SAMPLE)
    path = tmp_path / "run.json"
    profile.save(path)
    again = tokprof.Profile.load(path)
    assert again.summary().tool_result_costs == profile.summary().tool_result_costs
    old = json.loads(path.read_text())
    old["schema_version"] = 2
    del old["summary"]["tool_result_costs"]
    path.write_text(json.dumps(old))
    assert tokprof.Profile.load(path).summary().tool_result_costs is None


def test_carry_cost_in_the_html_report(tmp_path):
    target = tmp_path / "r.html"
    assert main(["report", str(SAMPLE), "-o", str(target), "--no-progress"]) == 0
    page = target.read_text()
    assert "Which tool results cost most" in page and 'id="chart-results"' in page


def test_without_a_context_window(model_dir, capsys):
    log = FIXTURES / "good_transcript.json"
    assert main(["whatif", str(log), "--model", str(model_dir), "-f", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "compact:80" not in [p["policy"] for p in doc["policies"]]
    assert doc["context_window"] is None and doc["policies"][0]["calls_over_window"] is None
    assert any(w["code"] == "window-unknown" for w in doc["warnings"])
    assert main(["whatif", str(log), "--model", str(model_dir), "-p", "compact:50"]) == 2
    assert "--window N" in capsys.readouterr().err
    assert (
        main(["whatif", str(log), "--model", str(model_dir), "-p", "compact:50", "--window", "50", "-f", "json"]) == 0
    )
    assert json.loads(capsys.readouterr().out)["context_window"] == 50


def test_the_docs_show_the_real_output_on_the_sample(monkeypatch, capsys):
    """docs/whatif.md (the README's section) shows `tokprof whatif` on the sample as it is, at 100 columns."""
    text = (ROOT / "docs" / "whatif.md").read_text(encoding="utf-8")
    command = "$ tokprof whatif samples/incident_session.json\n"
    start = text.index(command) + len(command)
    shown = text[start : text.index("```", start)]
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.chdir(ROOT)
    assert main(["whatif", "samples/incident_session.json", "--no-progress"]) == 0
    assert capsys.readouterr().out == shown


def test_cost_per_policy():
    """full costs what the profile costs; a changed call is priced on its prompt as its provider would bill
    it (here the log shows no caching: all uncached) and the log's output (basis "predicted"); a cap no
    result reaches costs what full does."""
    log = ROOT / "samples" / "incident_session.json"
    prices = ["0.5/1.5/0.05"]  # $ per million tokens: input, output, cache read (Qwen is priced by the user)
    profile = tokprof.profile(log, prices=prices)
    report = tokprof.whatif(log, ["cap:4000", "cap:10000000"], prices=prices)
    full, cap, generous = report.policies
    assert full.cost == profile.summary().cost.total and full.cost_basis == "computed"
    assert cap.cost_basis == "mixed" and cap.cost < full.cost and cap.cost_saving == round(full.cost - cap.cost, 6)
    assert generous.cost == full.cost and generous.changed_calls == 0


def test_an_estimates_changed_calls_are_counted_in_the_logs_units():
    """For an estimate (counts scaled to reported usage), a call a policy changes is counted like the
    log's call it replays (the proxy's tokens times that call's scaling): a cap that cuts one
    character saves next to nothing, not the difference between the proxy's units and the provider's."""
    import dataclasses

    from tokprof.trace import Usage

    model = dataclasses.replace(tiny_model(CHATML), exact=False, method="a test proxy")
    model.context_window = 100_000
    calls = trace_of(conversation(turns=3, calls_per_turn=3))
    for call in calls:
        call.reported = Usage(prompt=2 * plain_count(model, call) + 40)
    trace = make_trace(calls)
    sizes = sorted(len(m["content"]) for m in calls[-1].messages if m["role"] == "tool")
    cut = sizes[-2] - 1  # the second longest result, the longest an earlier call's history holds, loses one character
    report = whatif(trace, model, [P.parse_policy(f"cap:{cut}"), P.parse_policy("window:3")])
    full, cap, window = report.policies
    assert full.billed_input == sum(c.reported.prompt for c in calls)
    note = model.counter.count(P.CUT.format(size=cut + 1, kept=cut))
    assert cap.changed_calls > 0 and abs(cap.saving) <= (3 * note + 2) * cap.changed_calls  # the note, less a character
    assert abs(cap.saving) < 0.02 * full.billed_input
    replayed = P.apply(trace, P.parse_policy("window:3")).calls
    for call, log, counted in zip(replayed, trace.calls, window.calls):  # scaled as the log's call is
        if counted.changed:
            ratio = log.reported.prompt / plain_count(model, log)
            assert abs(counted.total - plain_count(model, call) * ratio) <= 1
