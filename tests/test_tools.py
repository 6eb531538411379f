"""Per-tool marginal cost: the sum invariant, templates where tools=None and tools=[] differ,
static mode with OpenAI, Anthropic and MCP tool files, and bad tool files."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES, ROOT, small_transcript, tiny_model, write_json
from tokprof.analyses.tools import catalogue_cost, first_sentence, tools_report
from tokprof.frontends.cli import main
from tokprof.formats import read_trace

TOOLS = json.loads((FIXTURES / "good_transcript.json").read_text())["tools"]


def assert_sums(catalogue):
    assert catalogue.scaffolding + sum(t.marginal for t in catalogue.tools) == catalogue.total
    for t in catalogue.tools:
        assert t.description_tokens + t.parameter_tokens == t.marginal


def test_tiny_exact_costs():
    model = tiny_model()
    tools = small_transcript()["tools"] + [
        {"type": "function", "function": {"name": "cat", "description": "A cat.", "parameters": {}}}
    ]
    catalogue = catalogue_cost(model, tools, "You are a test bot.")
    # with tools the template adds "Tools :" (2) and one line per tool; "lookup : Look up a word ." is 7
    # tokens and "cat : A cat ." 5
    assert [t.marginal for t in catalogue.tools] == [7, 5]
    assert catalogue.scaffolding == 2
    assert catalogue.total == 14
    assert [t.description_tokens for t in catalogue.tools] == [5, 3]
    assert_sums(catalogue)


def test_none_and_empty_list_render_differently():
    # This template prints a tools header whenever tools is not None, even for an empty list.
    template = (
        "{%- if tools is not none %}{{- 'Tools:\\n' }}"
        "{%- for t in tools %}{{- t.function.name + ': ' + t.function.description + '\\n' }}{%- endfor %}{%- endif %}"
        "{%- for m in messages %}{{- '<|im_start|>' + m.role + '\\n' + (m.content or '') + '<|im_end|>\\n' }}{%- endfor %}"
    )
    model = tiny_model(template)
    tools = small_transcript()["tools"]
    assert model.prompt_format.render([{"role": "user", "content": ""}], None, True) != model.prompt_format.render(
        [{"role": "user", "content": ""}], [], True
    )
    catalogue = catalogue_cost(model, tools)
    # catalogue = all minus None: "Tools :" (2) plus "lookup : Look up a word ." (7); the header
    # survives removing the only tool (tools=[]), so it is scaffolding, not the tool's cost
    assert catalogue.total == 9
    assert catalogue.tools[0].marginal == 7
    assert catalogue.scaffolding == 2
    assert_sums(catalogue)


def test_qwen25_sum_invariant(qwen25):
    catalogue = catalogue_cost(qwen25, TOOLS, "You are an on-call assistant.")
    assert catalogue.total > 0 and catalogue.scaffolding > 0
    assert all(t.marginal > 0 for t in catalogue.tools)
    assert_sums(catalogue)


def test_log_report_counts_calls_and_unknown_tools(qwen25, tmp_path):
    log = json.loads((FIXTURES / "good_transcript.json").read_text())
    # the model calls a tool that does not exist, once
    log["messages"] += [
        {"role": "user", "content": "Show me the metrics again."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_x", "type": "function", "function": {"name": "get_metrics", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_x", "content": "error: unknown tool get_metrics"},
        {"role": "assistant", "content": "Sorry, wrong tool."},
    ]
    trace = read_trace(str(write_json(tmp_path / "log.json", log)))
    report = tools_report(trace, qwen25, billed_input=100_000)
    [catalogue] = report.catalogues
    by_name = {t.name: t for t in catalogue.tools}
    assert by_name["get_logs"].calls == 1 and by_name["query_metrics"].calls == 1
    assert by_name["never_used"].calls == 0
    assert by_name["never_used"].requests == len(trace.calls)
    assert by_name["never_used"].run_cost == by_name["never_used"].marginal * len(trace.calls)
    assert report.unused_waste() == by_name["never_used"].run_cost
    assert [u.to_dict() for u in report.unknown_calls] == [
        {"name": "get_metrics", "calls": 1, "closest": "query_metrics"}
    ]
    assert_sums(catalogue)


def test_catalogue_change_is_reported(qwen25, tmp_path):
    records = [json.loads(line) for line in (FIXTURES / "good_records.jsonl").read_text().splitlines()]
    records[2]["tools"] = records[2]["tools"][:2]
    path = tmp_path / "changed.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    report = tools_report(read_trace(str(path)), qwen25)
    assert len(report.catalogues) == 2
    assert [c.requests for c in report.catalogues] == [2, 1]
    assert report.warnings and report.warnings[0].code == "catalogue-changed"
    assert report.main is report.catalogues[0]


def test_first_sentence():
    assert first_sentence("Fetch logs. Returns at most 200 lines.") == "Fetch logs."
    assert first_sentence("No full stop here") == "No full stop here"


def _anthropic(tools):
    return [
        {
            "name": t["function"]["name"],
            "description": t["function"]["description"],
            "input_schema": t["function"]["parameters"],
        }
        for t in tools
    ]


def _mcp(tools):
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
            "tools": [
                {
                    "name": t["function"]["name"],
                    "description": t["function"]["description"],
                    "inputSchema": t["function"]["parameters"],
                }
                for t in tools
            ]
        },
    }


@pytest.mark.parametrize("shape", ["openai", "anthropic", "mcp"])
def test_static_mode_formats_agree(shape, tmp_path, capsys):
    doc = {"openai": TOOLS, "anthropic": _anthropic(TOOLS), "mcp": _mcp(TOOLS)}[shape]
    path = write_json(tmp_path / "tools.json", doc)
    (tmp_path / "system.txt").write_text("You are an on-call assistant.")
    code = main(["tools", "--tools", str(path), "--system", str(tmp_path / "system.txt"), "-f", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    catalogue = out["catalogue"]
    assert catalogue["scaffolding"] + sum(t["marginal"] for t in catalogue["tools"]) == catalogue["total"]
    assert [t["name"] for t in catalogue["tools"]] == ["get_logs", "query_metrics", "never_used"]
    assert catalogue["tools"][0]["requests"] is None
    # every shape prices the same catalogue
    openai = main(
        [
            "tools",
            "--tools",
            str(write_json(tmp_path / "o.json", TOOLS)),
            "--system",
            str(tmp_path / "system.txt"),
            "-f",
            "json",
        ]
    )
    assert openai == 0
    assert json.loads(capsys.readouterr().out)["catalogue"]["total"] == catalogue["total"]


@pytest.mark.parametrize(
    "doc, expected",
    [
        ({"not": "tools"}, "expected a list of tool definitions"),
        ([{"description": "no name"}], "tools[0].name: missing"),
        ([TOOLS[0], TOOLS[0]], "tools[1].name: duplicate tool name 'get_logs'"),
        ([{"name": "x", "input_schema": "string"}], "tools[0] (x).input_schema: expected a JSON schema object"),
        ([], "empty"),
        ([3], "tools[0]: expected a tool object"),
    ],
)
def test_bad_tools_files(doc, expected, tmp_path, capsys):
    path = write_json(tmp_path / "tools.json", doc)
    code = main(["tools", "--tools", str(path), "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and expected in err and err.count("\n") == 1 and str(path) in err
    assert not (tmp_path / "out").exists()


def test_tools_needs_log_or_file(capsys):
    assert main(["tools"]) == 2
    assert "give a LOG or --tools FILE" in capsys.readouterr().err


def test_profile_json_has_catalogue(sample_profile):
    summary = json.loads(sample_profile.read_text(encoding="utf-8"))["summary"]
    catalogue = summary["catalogue"]
    assert catalogue["total"] == summary["buckets_billed"]["tool_definitions"] // summary["calls"]
    assert len(catalogue["tools"]) == 12
    assert sum(t["unused"] for t in catalogue["tools"]) >= 3
    assert catalogue["unused_waste"] == sum(t["run_cost"] for t in catalogue["tools"] if t["unused"])
    assert catalogue["scaffolding"] + sum(t["marginal"] for t in catalogue["tools"]) == catalogue["total"]


def test_tools_table_and_csv(capsys):
    assert main(["tools", str(ROOT / "samples" / "incident_session.json")]) == 0
    out = capsys.readouterr().out
    assert "catalogue per request" in out and "(unused)" in out
    assert main(["tools", str(ROOT / "samples" / "incident_session.json"), "-f", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("catalogue,name,marginal") and len(lines) == 13


def test_single_tool_keeps_scaffolding_apart(qwen25):
    one = catalogue_cost(qwen25, TOOLS[:1], "You are an on-call assistant.")
    many = catalogue_cost(qwen25, TOOLS, "You are an on-call assistant.")
    assert one.scaffolding == many.scaffolding
    assert abs(one.tools[0].marginal - many.tools[0].marginal) <= 2
    assert_sums(one)
