"""The budget check: pass, warn, fail on an absolute budget, fail on regression against a baseline,
a new tool in the diff, bad configuration, and byte-identical output."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import FIXTURES, ROOT, write_json
from tokprof.frontends.cli import main

TOOLS = json.loads((FIXTURES / "good_transcript.json").read_text())["tools"]
SAMPLE = ROOT / "samples" / "incident_session.json"


def run(args, capsys, monkeypatch=None):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def catalogue(tmp_path, monkeypatch):
    """A tools file and a tokprof.toml in a project directory, found from the working directory."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    write_json(tmp_path / "tools.json", TOOLS)
    (tmp_path / "system.txt").write_text("You are an on-call assistant.")
    return tmp_path


def config(path, text):
    (path / "tokprof.toml").write_text(text)


def test_pass_and_found_from_working_directory(catalogue, capsys):
    config(catalogue, "[budgets]\ntool_definitions = 5000\nlargest_tool = 1000\n")
    (catalogue / "sub").mkdir()
    import os

    os.chdir(catalogue / "sub")
    code, out, _ = run(["check", "--tools", "../tools.json", "--system", "../system.txt"], capsys)
    assert code == 0 and "passed" in out


def test_pyproject_section(catalogue, capsys):
    (catalogue / "pyproject.toml").write_text("[project]\nname='x'\n\n[tool.tokprof.budgets]\ntool_definitions = 10\n")
    code, out, _ = run(["check", "--tools", "tools.json"], capsys)
    assert code == 1 and "tool_definitions" in out and "FAIL" in out


def test_warn_only_exits_zero(catalogue, capsys):
    config(catalogue, '[budgets]\ntool_definitions = { max = 10, level = "warn" }\n')
    code, out, _ = run(["check", "--tools", "tools.json"], capsys)
    assert code == 0 and "WARN" in out and "passed with warnings: 1 metric exceeded its budget" in out


def test_fail_on_absolute_budget(catalogue, capsys):
    config(catalogue, "[budgets]\nlargest_tool = 50\n")
    code, out, _ = run(["check", "--tools", "tools.json", "-f", "json"], capsys)
    doc = json.loads(out)
    assert code == 1 and doc["status"] == "fail"
    [metric] = doc["metrics"]
    assert metric["metric"] == "largest_tool" and metric["status"] == "fail" and metric["value"] > 50


def test_regression_against_baseline_and_new_tool(catalogue, capsys):
    config(catalogue, 'baseline = "baseline.json"\nmax_increase = "5%"\n[budgets]\ntool_definitions = 100000\n')
    code, _, _ = run(["check", "--tools", "tools.json", "--update-baseline"], capsys)
    assert code == 0 and (catalogue / "baseline.json").exists()
    # unchanged: passes against the baseline
    code, out, _ = run(["check", "--tools", "tools.json"], capsys)
    assert code == 0
    # a new tool and a longer description: more than 5% more
    bigger = json.loads(json.dumps(TOOLS))
    bigger[0]["function"]["description"] += " Also returns the pod name, the container and the trace id of every line."
    bigger.append(
        {
            "type": "function",
            "function": {
                "name": "restart_pod",
                "description": "Restart one pod.",
                "parameters": {"type": "object", "properties": {"pod": {"type": "string"}}},
            },
        }
    )
    write_json(catalogue / "tools.json", bigger)
    code, out, _ = run(["check", "--tools", "tools.json", "-f", "json"], capsys)
    doc = json.loads(out)
    assert code == 1
    metric = next(m for m in doc["metrics"] if m["metric"] == "tool_definitions")
    assert metric["status"] == "fail" and metric["change"] > 0 and metric["baseline"] is not None
    assert [t["name"] for t in doc["tools"]["added"]] == ["restart_pod"]
    assert [t["name"] for t in doc["tools"]["changed"]] == ["get_logs"]
    assert doc["tools"]["removed"] == []
    code, out, _ = run(["check", "--tools", "tools.json", "-f", "markdown"], capsys)
    assert (
        "| restart\\_pod (added) | - |" in out
        and "❌ fail" in out
        and "2 metrics regressed against the baseline" in out
    )


@pytest.mark.parametrize(
    "text, key",
    [
        ("[budgets]\nbogus_metric = 3\n", "budgets.bogus_metric: unknown metric"),
        ('[budgets]\ntool_definitions = "lots"\n', "budgets.tool_definitions: expected a number of tokens"),
        ('[budgets]\ntool_definitions = { max = 3, level = "fatal" }\n', "budgets.tool_definitions.level"),
        ('max_increase = "five%"\n[budgets]\ntool_definitions = 3\n', "max_increase: cannot read 'five%'"),
        ("colour = true\n", "colour: unknown setting"),
        ("[budgets\n", "invalid TOML"),
    ],
)
def test_bad_configuration(catalogue, capsys, text, key):
    config(catalogue, text)
    code, out, err = run(["check", "--tools", "tools.json"], capsys)
    assert code == 2 and out == ""
    assert key in err and err.count("\n") == 1 and "tokprof.toml" in err


def test_baseline_from_another_model(catalogue, capsys):
    config(catalogue, 'baseline = "baseline.json"\n[budgets]\ntool_definitions = 100000\n')
    write_json(catalogue / "baseline.json", {"schema_version": 1, "model": "qwen3", "metrics": {}, "tools": {}})
    code, _, err = run(["check", "--tools", "tools.json"], capsys)
    assert code == 2 and "model: baseline made with 'qwen3'" in err


def test_no_budgets_is_a_configuration_error(catalogue, capsys):
    code, _, err = run(["check", "--tools", "tools.json"], capsys)
    assert code == 2 and "no budgets to check" in err


def test_github_outputs(catalogue, capsys, monkeypatch):
    config(catalogue, "[budgets]\nlargest_tool = 50\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(catalogue / "summary.md"))
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    code, out, _ = run(["check", "--tools", "tools.json"], capsys)
    assert code == 1
    assert "::error title=tokprof largest_tool::" in out
    assert "### tokprof check: FAILED" in (catalogue / "summary.md").read_text()


def test_sample_passes_example_config_and_tightened_copy_fails(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    example = ROOT / "samples" / "tokprof.toml"
    code, first, _ = run(["check", str(SAMPLE), "--config", str(example)], capsys)
    assert code == 0, first
    code, second, _ = run(["check", str(SAMPLE), "--config", str(example)], capsys)
    assert first == second  # deterministic
    tight = tmp_path / "tokprof.toml"
    shutil.copy(ROOT / "samples" / "tokprof-baseline.json", tmp_path / "tokprof-baseline.json")
    tight.write_text(example.read_text().replace("tool_definitions = 3000", "tool_definitions = 2000"))
    code, out, _ = run(["check", str(SAMPLE), "--config", str(tight)], capsys)
    assert code == 1 and "tool_definitions" in out and "FAILED" in out


@pytest.mark.parametrize(
    "metrics, tools, key",
    [
        ({"tool_definitions": "abc"}, {}, "metrics.tool_definitions: expected a non-negative number"),
        ({"tool_definitions": None}, {}, "metrics.tool_definitions"),
        ({}, {"get_logs": "x"}, "tools.get_logs: expected a number of tokens"),
        ({"nonsense": 1}, {}, "metrics.nonsense: unknown metric"),
    ],
)
def test_bad_baseline_values(catalogue, capsys, metrics, tools, key):
    write_json(catalogue / "b.json", {"schema_version": 1, "model": "qwen2.5", "metrics": metrics, "tools": tools})
    code, _, err = run(["check", "--tools", "tools.json", "--baseline", "b.json"], capsys)
    assert code == 2 and key in err and err.count("\n") == 1


def test_per_metric_increase_keeps_other_metrics_checked(catalogue, capsys):
    config(catalogue, '[budgets]\nlargest_tool = { max = 100000, max_increase = "50%" }\n')
    write_json(
        catalogue / "b.json",
        {
            "schema_version": 1,
            "model": "qwen2.5",
            "metrics": {"tool_definitions": 10, "largest_tool": 10000},
            "tools": {},
        },
    )
    code, out, _ = run(["check", "--tools", "tools.json", "--baseline", "b.json", "-f", "json"], capsys)
    doc = json.loads(out)
    by = {m["metric"]: m for m in doc["metrics"]}
    assert code == 1 and by["tool_definitions"]["status"] == "fail" and by["largest_tool"]["status"] == "pass"


def test_json_report_stays_json_under_github_actions(catalogue, capsys, monkeypatch):
    config(catalogue, "[budgets]\nlargest_tool = 50\n")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    code, out, err = run(["check", "--tools", "tools.json", "-f", "json"], capsys)
    assert code == 1 and json.loads(out)["status"] == "fail" and "::error" in err


def test_update_baseline_without_config_is_found_next_time(catalogue, capsys):
    code, _, _ = run(["check", "--tools", "tools.json", "--update-baseline"], capsys)
    assert code == 0 and (catalogue / "tokprof-baseline.json").exists()
    code, out, _ = run(["check", "--tools", "tools.json"], capsys)
    assert code == 0 and "passed" in out


def test_nan_budget_rejected(catalogue, capsys):
    config(catalogue, "[budgets]\ntool_definitions = nan\n")
    code, _, err = run(["check", "--tools", "tools.json"], capsys)
    assert code == 2 and "budgets.tool_definitions" in err


@pytest.mark.parametrize(
    "toml, said",
    [
        (
            'model = "qwen25"\n[budgets]\ntool_definitions = 100000\n',
            "tokprof.toml: model: unknown model 'qwen25' (did you mean qwen2.5?",
        ),
        (
            "[budgets]\ntool_definitions = { min = 100, max = 10 }\n",
            "tokprof.toml: budgets.tool_definitions: min is above max",
        ),
    ],
)
def test_configuration_errors_name_the_file_and_key(toml, said, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tokprof.toml").write_text(toml, encoding="utf-8")
    write_json(tmp_path / "tools.json", TOOLS)
    code, _, err = run(["check", "--tools", "tools.json"], capsys)
    assert code == 2 and err.count("\n") == 1 and said in err, err


def test_a_saved_profile_is_checked_without_the_configured_model(tmp_path, capsys, monkeypatch):
    """A saved profile needs no model: a configuration naming one this machine does not have still
    checks it (the CI job that checks a profile made elsewhere)."""
    monkeypatch.chdir(tmp_path)
    saved = tmp_path / "run.json"
    assert main(["profile", str(SAMPLE), "-f", "json", "-o", str(saved), "--no-progress"]) == 0
    (tmp_path / "tokprof.toml").write_text(
        'model = "./no-such-model-dir"\n[budgets]\ntool_definitions = 100000\n', encoding="utf-8"
    )
    capsys.readouterr()
    code, out, err = run(["check", str(saved)], capsys)
    assert code == 0, err
