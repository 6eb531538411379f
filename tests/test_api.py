"""The public API, used as a library user would: the names ``tokprof`` exports (a few tests also call the
internal jobs the command line calls, to hold them to what the library gives)."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

import tokprof
from conftest import FIXTURES, ROOT, WEATHER_TOOL, small_transcript, write_json

SAMPLE = ROOT / "samples" / "incident_session.json"
EXPORTED = {
    "__version__",
    "Options",
    "get_model",
    "Model",
    "Buckets",
    "read_log",
    "profile",
    "tools_report",
    "whatif",
    "check",
    "diff",
    "render_report",
    "Trace",
    "Profile",
    "SessionsReport",
    "ToolsReport",
    "WhatIfReport",
    "CheckResult",
    "RunDiff",
    "TokprofError",
    "InputError",
    "ModelError",
    "ConfigError",
}


def test_exported_names():
    assert set(tokprof.__all__) == EXPORTED and len(tokprof.__all__) <= 25
    for name in tokprof.__all__:
        assert getattr(tokprof, name) is not None
    assert set(dir(tokprof)) >= EXPORTED
    with pytest.raises(AttributeError):
        tokprof.no_such_name  # noqa: B018


def test_import_is_cheap():
    import subprocess
    import sys

    code = "import sys, tokprof; print(sorted(m for m in ('numpy', 'tokenizers', 'jinja2') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.fixture(scope="module")
def model():
    return tokprof.get_model("qwen2.5")


def test_count_buckets_add_up(model):
    log = small_transcript()
    buckets = model.count(log["messages"][:-1], log["tools"])
    assert buckets.exact and buckets.total == sum(buckets.as_dict().values())
    assert min(buckets.as_dict().values()) > 0
    assert model.count_text("hello world") == 2
    assert model.name == "qwen2.5" and model.context_window == 131072


def test_count_agrees_with_profile(model, tmp_path):
    log = small_transcript()
    profiled = tokprof.profile(write_json(tmp_path / "log.json", log), model=model)
    last = profiled.calls[-1]
    assert model.count(log["messages"][:-1], log["tools"]).as_dict() == last.buckets


def test_count_sees_objects_changed_in_place_between_calls(model):
    """Templates' JSON of tool calls and tools is remembered from call to call only for traces; the
    objects a caller gives count() may change between calls."""
    import copy

    log = small_transcript()
    messages, tools = copy.deepcopy(log["messages"][:-1]), copy.deepcopy(log["tools"])
    before = model.count(messages, tools).as_dict()
    tools[0]["function"]["parameters"]["properties"]["extra"] = {"type": "string", "description": "x " * 50}
    calls = [m for m in messages if m.get("tool_calls")]
    calls[0]["tool_calls"][0]["function"]["arguments"] = json.dumps({"query": "a much longer query " * 20})
    after = model.count(messages, tools).as_dict()
    fresh = tokprof.get_model("qwen2.5").count(copy.deepcopy(messages), copy.deepcopy(tools)).as_dict()
    assert after == fresh and after != before
    assert after["tool_definitions"] > before["tool_definitions"]


def test_count_takes_the_anthropic_shape(model):
    anthropic = [
        {"role": "user", "content": "define cat"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "c1", "name": "lookup", "input": {"word": "cat"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "cat is an animal"}]},
    ]
    tools = [
        {"name": "lookup", "description": "Look up a word.", "input_schema": WEATHER_TOOL["function"]["parameters"]}
    ]
    chat = small_transcript()["messages"][:4]
    assert model.count(anthropic, tools, system="You are a test bot.") == model.count(chat, [WEATHER_TOOL])


@pytest.mark.parametrize(
    "messages, tools, where",
    [
        ([{"role": "robot", "content": "hi"}], None, "request: messages[0].role: unknown role 'robot'"),
        ([{"role": "user"}], None, "request: messages[0].content: missing"),
        ("hello", None, "request: messages: expected a list of messages"),
        ([], None, "request: messages: empty"),
        ([{"role": "user", "content": "x"}], [{"description": "no name"}], "request: tools[0].name: missing"),
        ([{"role": "tool", "tool_call_id": "z", "content": "x"}], None, "matches no earlier assistant tool call"),
    ],
)
def test_bad_prompts_raise_input_error_with_the_place(model, messages, tools, where):
    with pytest.raises(tokprof.InputError) as exc:
        model.count(messages, tools)
    assert isinstance(exc.value, ValueError) and where in str(exc.value)


def test_unknown_model_names_the_closest():
    with pytest.raises(tokprof.ModelError, match=r"did you mean qwen2\.5\?"):
        tokprof.get_model("qwen2.5x")


def test_profile_save_load_and_pickle(tmp_path):
    profile = tokprof.profile(FIXTURES / "good_records.jsonl")
    assert isinstance(profile, tokprof.Profile) and profile.summary().calls == 3
    path = tmp_path / "run.json"
    profile.save(path)
    again = tokprof.Profile.load(path)
    assert again.to_dict() == profile.to_dict()
    assert pickle.loads(pickle.dumps(profile)).to_dict() == profile.to_dict()
    options = pickle.loads(pickle.dumps(tokprof.Options(prices=["1/2"])))  # a map task's arguments
    assert options == tokprof.Options(prices=["1/2"])
    priced = tokprof.profile(FIXTURES / "good_records.jsonl", prices=["1/2"]).to_dict()
    assert tokprof.profile(FIXTURES / "good_records.jsonl", options).to_dict() == priced


def test_loading_what_is_not_a_profile(tmp_path):
    path = write_json(tmp_path / "x.json", {"kind": "profile", "schema_version": 1})
    with pytest.raises(ValueError, match="model: missing"):
        tokprof.Profile.load(path)
    path = write_json(tmp_path / "y.json", {"kind": "profile", "schema_version": 99})
    with pytest.raises(ValueError, match="schema version 99"):
        tokprof.Profile.load(path)


def test_read_log_supplies_what_the_log_lacks(tmp_path):
    log = small_transcript(system=False, tools=False)
    path = write_json(tmp_path / "log.json", log)
    trace = tokprof.read_log(path, tools=[WEATHER_TOOL])
    assert isinstance(trace, tokprof.Trace) and all(call.tools for call in trace.calls)
    with pytest.raises(tokprof.InputError, match="records its tool definitions"):
        tokprof.read_log(write_json(tmp_path / "with.json", small_transcript()), tools=[WEATHER_TOOL])


def test_tools_report_and_check(tmp_path):
    report = tokprof.tools_report(tools=[WEATHER_TOOL], system="You are a test bot.")
    assert isinstance(report, tokprof.ToolsReport) and report.main is not None
    assert report.main.total == report.main.scaffolding + sum(t.marginal for t in report.main.tools)
    config = tmp_path / "tokprof.toml"
    config.write_text("[budgets]\ntool_definitions = 10\nsystem_prompt = 1000\n")
    result = tokprof.check(report, config)
    assert isinstance(result, tokprof.CheckResult)
    assert result.status == "fail" and result.exit_code == 1
    assert [m.name for m in result.metrics if m.status == "fail"] == ["tool_definitions"]
    from tokprof.runs.check import load_config

    assert tokprof.check(report, load_config(config)).status == "fail"


def test_check_a_profile_against_the_sample_config():
    profile = tokprof.profile(SAMPLE)
    result = tokprof.check(profile, ROOT / "samples" / "tokprof.toml")
    assert result.status == "pass", [(m.name, m.reasons) for m in result.metrics]
    assert json.loads(json.dumps(result.to_dict()))["kind"] == "check"


def test_render_report_writes_what_the_command_line_writes(capsys, monkeypatch):
    """A library user gets every output the CLI writes: the same text for the same result."""
    from tokprof.frontends.cli import main
    from tokprof.names import report_formats

    monkeypatch.setenv("COLUMNS", "100")
    result = tokprof.profile(SAMPLE, advice=True)  # the command line's what to change too
    assert report_formats(result) == ["table", "json", "csv", "html"]
    assert main(["profile", str(SAMPLE), "-f", "json"]) == 0
    assert tokprof.render_report(result, "json") == capsys.readouterr().out
    assert main(["profile", str(SAMPLE), "--calls", "6"]) == 0
    assert tokprof.render_report(result, "table", width=100, calls=6) == capsys.readouterr().out
    with pytest.raises(tokprof.InputError, match="markdown"):
        tokprof.render_report(result, "markdown")
    with pytest.raises(TypeError):
        tokprof.render_report({"not": "a result"})


def test_a_check_run_writes_its_baseline(tmp_path):
    config = tmp_path / "tokprof.toml"
    config.write_text('baseline = "base.json"\n[budgets]\ntool_definitions = 3000\n', encoding="utf-8")
    from tokprof.runs.check import run_check

    run = run_check(SAMPLE, config=config, update_baseline=True)
    assert run.write_baseline() == str(tmp_path / "base.json")
    assert json.loads((tmp_path / "base.json").read_text())["metrics"]["tool_definitions"] == 2497
    assert run_check(SAMPLE, config=config).result.exit_code == 0


def test_the_names_a_command_offers_are_cheap():
    """Formats by kind, log formats, models and policies: what --help and "did you mean" list
    (:mod:`tokprof.names`, which the front ends import)."""
    import subprocess
    import sys

    from tokprof import names

    assert names.report_formats("sessions") == ["table", "json", "csv"]
    assert names.report_formats("check") == ["table", "markdown", "json"]
    with pytest.raises(TypeError, match="no kind of result"):
        names.report_formats("nothing")
    assert "claude-code" in names.log_formats() and "qwen2.5" in [m.name for m in names.registered_models()]
    assert "window:N" in names.policy_names() and names.policy_names(default=True)[0] == "full"
    code = (
        "import sys, tokprof.names as names; names.report_formats('profile'); names.registered_models(); "
        "names.log_formats(); names.policy_names(); print('tokprof.runs.profile' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"  # none of them loads the pipeline


def test_model_name_is_the_registered_model_that_counts(tmp_path):
    """model_name: the default, a name or alias, a closed model's proxy; a Hub id or a path is a
    ModelError naming the registered model that would serve it (as a name to give, nothing else)."""
    from tokprof.base.errors import ModelError
    from tokprof.names import model_name

    assert model_name() == model_name("") == "qwen2.5"
    assert model_name("qwen2.5") == "qwen2.5"
    assert model_name("gpt-4o") == "openai-proxy" and model_name("claude-sonnet-4-5") == "claude-proxy"
    with pytest.raises(ModelError) as raised:
        model_name("Qwen/Qwen3-8B")
    assert "name qwen3 " in str(raised.value) and "leave the model out" not in str(raised.value)
    with pytest.raises(ModelError, match="unknown model"):
        model_name(str(tmp_path))  # a directory is not read


def test_a_directory_run_renders_and_tables_as_the_command_line_writes(tmp_path, model_dir, capsys, monkeypatch):
    """The team options, the warehouse tables, the incremental state and the export texts of
    ``tokprof profile DIR`` and ``tokprof export``, from the jobs the command line calls."""
    from test_sessions import claude_project

    from tokprof.frontends.cli import main
    from tokprof.render.tables import TeamOptions
    from tokprof.runs.reports import incremental_state, prometheus_text, report_tables

    monkeypatch.setenv("COLUMNS", "100")
    logs = tmp_path / "logs"
    claude_project(logs)
    report = tokprof.profile(logs, model=str(model_dir), records=True, jobs=1)
    team = TeamOptions.parse(["project"], since="2000-01-01")
    assert (
        main(
            ["profile", str(logs), "--model", str(model_dir), "--jobs", "1", "--by", "project", "--since", "2000-01-01"]
        )
        == 0
    )
    assert tokprof.render_report(report, "table", width=100, team=team) == capsys.readouterr().out
    assert "By project:" in tokprof.render_report(report, "table", team=team)
    assert json.loads(tokprof.render_report(report, "json", team=team))["rollups"]
    with pytest.raises(tokprof.TokprofError, match="rollups"):
        tokprof.render_report(report, "csv", team=team)
    with pytest.raises(TypeError):
        tokprof.render_report(tokprof.profile(SAMPLE), "table", team=team)
    state = incremental_state(tmp_path)
    assert state == {}
    again = tokprof.profile(logs, model=str(model_dir), records=True, jobs=1, state=state)
    files = dict(report_tables(again, "csv", tmp_path, team=team, state=state))
    names = sorted(Path(path).name for path in files)
    assert names == [".tokprof-state.json", "calls.csv", "rollup_project.csv", "sessions.csv"]
    (tmp_path / ".tokprof-state.json").write_bytes(files[str(tmp_path / ".tokprof-state.json")])
    assert incremental_state(tmp_path).keys() == state.keys() and state
    with pytest.raises(tokprof.TokprofError, match="parquet or csv"):
        report_tables(report, "json", tmp_path)
    text = prometheus_text(report)
    out = tmp_path / "metrics.prom"
    assert main(["export", str(logs), "--model", str(model_dir), "--jobs", "1", "--prometheus", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == text and "# TYPE" in text


def test_whatif_reads_a_facts_file(tmp_path):
    facts = tmp_path / "facts.txt"
    facts.write_text("# the incident\n\nINC-4412\n", encoding="utf-8")
    report = tokprof.whatif(SAMPLE, ["full"], facts=["re:nothing-like-this"], facts_file=facts)
    assert report.to_dict() == tokprof.whatif(SAMPLE, ["full"], facts=["re:nothing-like-this", "INC-4412"]).to_dict()


def test_one_profile_takes_a_file_a_folder_or_a_list_and_one_options(tmp_path, model_dir):
    """``profile(source, options)``: a file gives a Profile, a folder or a list of session files a
    SessionsReport; keywords are the Options' fields, and a field that is none is a TypeError."""
    from test_sessions import claude_project

    logs = tmp_path / "logs"
    claude_project(logs)
    options = tokprof.Options(model=str(model_dir), jobs=1)
    folder = tokprof.profile(logs, options)
    assert isinstance(folder, tokprof.SessionsReport) and folder.sessions
    files = sorted(str(p) for p in logs.rglob("sess-*.jsonl"))
    listed = tokprof.profile(files, options, root=str(logs))
    assert [r.to_dict() for r in listed.sessions] == [r.to_dict() for r in folder.sessions]
    one = tokprof.profile(files[0], options)
    assert isinstance(one, tokprof.Profile) and one.summary().calls == folder.sessions[0].calls
    assert tokprof.profile(files[0], model=str(model_dir)).to_dict() == one.to_dict()
    with pytest.raises(TypeError, match="unknown option 'modle'.*model"):
        tokprof.profile(files[0], modle="qwen2.5")
    with pytest.raises(TypeError, match="expected a tokprof.Options"):
        tokprof.profile(files[0], "qwen2.5")
    with pytest.raises(TypeError, match="a list of paths"):
        tokprof.profile({"a": 1})
