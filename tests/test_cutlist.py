"""The cut list (#47.3): per tool and per MCP server, what its definitions and its results' carry cost in
dollars, the cut, and the configuration change for the agent that wrote the log, from its documentation."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT
from tokprof.analyses import agent_config
from tokprof.frontends.cli import main
from test_actions import claude_session

TOOLS = [
    {"name": name, "description": f"{name} does one thing.", "input_schema": {"type": "object", "properties": {}}}
    for name in ("Read", "Glob", "mcp__github__get_issue", "mcp__github__create_issue", "mcp__jira__search")
]


@pytest.fixture(scope="module")
def cut(tmp_path_factory) -> dict:
    import contextlib
    import io

    folder = tmp_path_factory.mktemp("cut")
    log = claude_session(folder, mcp=True)
    tools = folder / "tools.json"
    tools.write_text(json.dumps(TOOLS), encoding="utf-8")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["tools", str(log), "--tools", str(tools), "-f", "json", "--no-progress"]) == 0
    return json.loads(out.getvalue())["cut_list"]


def rows(cut: dict) -> dict:
    return {r["name"]: r for r in cut["rows"]}


def test_every_tool_and_server_has_a_row_priced_at_the_runs_input_price(cut):
    assert cut["agent"] == "Claude Code" and cut["estimate"] is True and cut["definitions_recorded"] is True
    price = cut["price_per_input_token"]
    assert price and price > 0 and cut["unpriced"] is None
    found = rows(cut)
    assert {"Read", "Glob", "mcp__github__get_issue", "mcp__github__create_issue", "mcp__jira__search"} <= set(found)
    assert {"mcp__github", "mcp__jira"} <= set(found)  # the servers, rolled up from the tool names
    for r in cut["rows"]:
        assert r["definition_dollars"] == pytest.approx(r["definition_tokens"] * price, abs=1e-6)
        # the carry at the rate each call paid (the profile's carry_dollars): none without a carry
        assert (r["carry_dollars"] > 0) == (r["carry_tokens"] > 0)
        assert r["cost_dollars"] == pytest.approx(r["definition_dollars"] + r["carry_dollars"], abs=2e-6)
    github = found["mcp__github"]
    tools = [found["mcp__github__get_issue"], found["mcp__github__create_issue"]]
    assert github["definition_tokens"] == sum(t["definition_tokens"] for t in tools)
    assert github["carry_tokens"] == sum(t["carry_tokens"] for t in tools) and github["calls"] == 1
    assert github["carry_dollars"] == pytest.approx(sum(t["carry_dollars"] for t in tools), abs=1e-6)


def test_the_cuts_and_claude_codes_settings(cut):
    found = rows(cut)
    never = found["mcp__github__create_issue"]
    assert never["cut"] == "drop" and never["calls"] == 0
    assert '"mcp__github__create_issue"' in never["how"] and '"permissions.deny"' in never["how"]
    jira = found["mcp__jira"]  # a server none of whose tools was called: drop the server
    assert jira["cut"] == "drop" and '"mcp__jira"' in jira["how"] and ".mcp.json" in jira["how"]
    read = found["Read"]
    assert read["cut"] == "cap" and read["carry_tokens"] > 0
    assert "Claude Code's documentation gives no setting that caps Read" in read["how"]
    issue = found["mcp__github__get_issue"]
    assert issue["cut"] == "cap" and "MAX_MCP_OUTPUT_TOKENS" in issue["how"]
    for r in cut["rows"]:  # a cost is never shown as a saving: only a replay gives one
        assert r["saving_dollars"] is None or r["replay"] is not None
        assert (r["cut"] == "none") == (r["not_replayed"] is None and r["replay"] is None)


def test_the_table_shows_the_cut_list(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")  # whatever the terminal's width
    log = claude_session(tmp_path, mcp=True)
    assert main(["tools", str(log), "--no-progress"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # lines folded at the width read as one text
    assert "Cut list" in out and "for Claude Code" in out
    assert "n/r: the log does not record the tool definitions" in out  # no --tools: definitions not recorded
    assert "mcp__github (server)" in out and "never a saving" in out


def test_price_without_a_log_is_refused(capsys):
    assert main(["tools", "--tools", "samples/tools_anthropic.json", "--price", "1/2"]) == 2
    assert "--price" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("fmt", "drop", "server", "cap"),
    [
        ("codex", "disabled_tools", "enabled = false", "tool_output_token_limit"),
        ("gemini-cli", '"excludeTools"', '"mcp"."excluded"', "truncateToolOutputThreshold"),
        ("claude-code", "--disallowedTools", "disabledMcpjsonServers", "MAX_MCP_OUTPUT_TOKENS"),
    ],
)
def test_each_agents_documented_setting(fmt, drop, server, cap):
    """Each setting printed is one the agent's documentation gives (docs/advice.md cites the pages)."""
    assert drop in agent_config.drop_tools(fmt, ["mcp__github__create_issue"])
    assert server in agent_config.drop_server(fmt, "github")
    assert cap in agent_config.cap_results(fmt, ["mcp__github__get_issue"] if fmt != "gemini-cli" else ["read_file"])
    advice = (ROOT / "docs" / "advice.md").read_text(encoding="utf-8")
    for setting in (drop, server, cap):
        assert setting.strip('"').split('"."')[-1] in advice, setting


def test_an_agent_no_documentation_covers_gets_no_guess():
    for text in (
        agent_config.drop_tools("openai-chat/jsonl", ["x"]),
        agent_config.drop_server("pi", "github"),
        agent_config.cap_results("swe-agent", ["x"]),
    ):
        assert text.startswith("tokprof knows no documented setting")


def test_mcp_log_has_the_cut_list(tmp_path, capsys):
    """``tokprof mcp --log``: the live servers' tools against the log, each with its cut and the setting
    of the agent whose configuration lists the server (here a hand-written Claude Code log's)."""
    import shlex
    import sys

    from jsonschema import Draft202012Validator

    from conftest import ROOT
    from test_mcp import SERVER, claude_code_log

    server = tmp_path / "server.py"
    server.write_text(SERVER, encoding="utf-8")
    log = claude_code_log(tmp_path / "session.jsonl")
    spec = f"notes={shlex.quote(sys.executable)} {shlex.quote(str(server))} 3 0"
    assert main(["mcp", "--server", spec, "--log", str(log), "-f", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    schema = json.loads((ROOT / "docs" / "schema" / "mcp.schema.json").read_text(encoding="utf-8"))
    assert not list(Draft202012Validator(schema).iter_errors(doc))
    found = rows(doc["cut_list"])
    assert found["mcp__notes__tool_1"]["cut"] == "drop" and found["mcp__notes__tool_1"]["calls"] == 0
    assert '"permissions.deny"' in found["mcp__notes__tool_1"]["how"]  # the log is Claude Code's
    assert found["mcp__notes"]["definition_tokens"] == sum(t["run_cost"] for t in doc["tools"])
    assert doc["cut_list"]["price_per_input_token"] > 0  # the log's model, priced: dollars beside the tokens
    # the server's drop replayed on the log with the listed tools supplied (the log records none)
    server = found["mcp__notes"]
    assert (
        server["replay"] and server["replay"].startswith("drop-tools:mcp__notes__") and server["not_replayed"] is None
    )
    assert server["saving_tokens"] > 0 and server["saving_dollars"] is not None


def test_the_costliest_caps_are_replayed(tmp_path, capsys):
    """A cap in the cut list is replayed as a policy of its own: with Read the only tool whose results pass
    4,000 characters, capping Read saves what whatif's cap:4000 (every tool) saves, to the cent."""
    from test_actions import run_json

    log = claude_session(tmp_path)
    doc = run_json(["tools", str(log), "-f", "json", "--no-progress"], capsys)
    read = rows(doc["cut_list"])["Read"]
    assert read["replay"] == "cap:4000 of Read" and read["not_replayed"] is None
    assert read["saving_dollars"] is not None and read["saving_dollars"] > 0
    whole = run_json(["whatif", str(log), "-p", "cap:4000", "-f", "json", "--no-progress"], capsys)
    cap = next(p for p in whole["policies"] if p["policy"] == "cap:4000")
    assert read["saving_tokens"] == cap["saving"]
    assert read["saving_dollars"] == pytest.approx(cap["cost_saving"], abs=1e-6)
    # its carry in dollars is the profile's own (each resent token at the rate its call paid)
    profile = run_json(["profile", str(log), "-f", "json", "--no-progress"], capsys)
    paid = {t["tool"]: t["carry_dollars"] for t in profile["summary"]["tool_result_costs"]["tools"]}
    assert read["carry_dollars"] == pytest.approx(paid["Read"], abs=1e-6) and paid["Read"] > 0


def test_dropping_tools_is_replayed_with_the_cache_rates(tmp_path, capsys):
    """``drop-tools`` on a Claude Code session given its tool definitions: every main call loses the never-called
    tools' tokens; a call that read the cache reads that much less and writes what the log wrote; the first call
    and the one back after an idle gap write that much less; the saving is those tokens at the cache read and
    write rates (claude-sonnet-4-5: $0.30 and $3.75 per million), the subagent's calls (no tools) unchanged."""
    from test_actions import run_json

    log = claude_session(tmp_path, mcp=True)
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS), encoding="utf-8")
    args = ["whatif", str(log), "--tools", str(tools), "-p", "drop-tools", "-f", "json", "--no-progress"]
    doc = run_json(args, capsys)
    full, drop = doc["policies"]
    assert drop["description"].startswith("the tools the log never calls")
    expected = 0.0

    def bill(c: dict) -> float:  # the input's bill from the counts at the model's published rates
        uncached = c["total"] - c["cache_read"] - c["cache_write"]
        return (c["cache_read"] * 0.30 + c["cache_write"] * 3.75 + uncached * 3.00) / 1e6

    for a, b in zip(full["per_call"], drop["per_call"]):
        if a["thread"]:  # the subagent: tools not supplied, nothing dropped
            assert b == a
            continue
        dropped = a["total"] - b["total"]
        assert dropped > 0 and b["changed"]
        if a["cache_read"]:  # reads the dropped tokens less, writes what the log wrote (to the proxy's rounding)
            assert (
                abs(b["cache_read"] - (a["cache_read"] - dropped)) <= 5
                and abs(b["cache_write"] - a["cache_write"]) <= 5
            )
        else:  # the first call, and the one back after the idle gap: its prompt written (the log's 3 uncached too)
            assert (b["cache_read"], b["cache_write"]) == (0, b["total"])
        expected += bill(a) - bill(b)
    assert drop["cost_saving"] == pytest.approx(expected, abs=2e-6) and drop["cost_saving"] > 0
    cut = run_json(["tools", str(log), "--tools", str(tools), "-f", "json", "--no-progress"], capsys)["cut_list"]
    found = rows(cut)
    jira, never = found["mcp__jira"], found["mcp__github__create_issue"]  # replayed, each on its own
    assert jira["replay"] == "drop-tools:mcp__jira__search" and jira["not_replayed"] is None
    assert never["replay"] == "drop-tools:mcp__github__create_issue" and never["saving_dollars"] > 0
    assert found["mcp__jira__search"]["saving_dollars"] == jira["saving_dollars"] > 0
    profile = run_json(["profile", str(log), "--tools", str(tools), "-f", "json", "--no-progress"], capsys)
    action = next(a for a in profile["actions"] if a["basis"] == "replay:drop-tools")
    assert action["dollars"] == pytest.approx(drop["cost_saving"], abs=1e-6) and action["tokens"] == drop["saving"]
    assert action["how"].endswith("(whole servers: jira)")  # github's get_issue was called: not a whole server
    both = jira["saving_dollars"] + never["saving_dollars"]
    assert both == pytest.approx(drop["cost_saving"], rel=0.05)  # the two drops apart, near the two together


def test_a_replay_drops_only_tools_never_called(tmp_path, capsys):
    log = claude_session(tmp_path)
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS), encoding="utf-8")
    args = ["whatif", str(log), "--tools", str(tools), "-p", "drop-tools:Read", "--no-progress"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "the log calls Read" in err
