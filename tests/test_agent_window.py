"""The context window an agent runs a model with (#46 item 6): Claude Code runs Claude models at
200,000 tokens unless its 1M option shows (a ``[1m]`` model id, a prompt above 200,000, or its own
statusLine input), though the price data gives Claude Opus 4.6 a 1M window; other agents, the
price data's window. One rule for profile's fill, whatif's 'over window', watch and statusline
(test_watch and test_statusline check the last two)."""

from __future__ import annotations

import json

import pytest

from test_watch import lines
from tokprof.frontends.cli import main
from tokprof.models.agent_window import agent_window


def session(tmp_path, turns):
    f = tmp_path / "s.jsonl"
    f.write_text(lines(turns).replace("claude-sonnet-4-5", "claude-opus-4-6"))
    return str(f)


@pytest.mark.parametrize(
    "log_format,names,largest,given,expected",
    [
        ("claude-code", ["claude-opus-4-6"], 169_000, None, (200_000, "Claude Code", 167_000)),
        ("claude-code", ["claude-opus-4-6[1m]"], 20_000, None, (1_000_000, "a [1m] model id", 967_000)),
        ("claude-code", ["claude-opus-4-6"], 230_000, None, (1_000_000, "a prompt above 200,000", 967_000)),
        ("claude-code", ["claude-opus-4-6"], 20_000, 400_000, (400_000, "the agent", 367_000)),
        ("claude-stream-json", ["claude-opus-4-6"], None, None, (200_000, "Claude Code", 167_000)),
        ("anthropic", ["claude-opus-4-6"], 169_000, None, (1_000_000, "genai-prices", None)),
        ("codex", ["no-such-model"], None, None, (None, "genai-prices", None)),
    ],
)
def test_the_rule(log_format, names, largest, given, expected):
    found = agent_window(log_format, names, largest, given)
    assert (found.window, found.source, found.compacts_at) == expected


def test_profile_and_whatif_measure_against_it(tmp_path, capsys):
    log = session(tmp_path, [(20_000, 0), (169_000, 19_000)])
    assert main(["profile", log, "-f", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["model"]["context_window"] == 200_000  # not the price data's 1M
    assert main(["whatif", log, "-f", "json", "--no-progress", "--policy", "window:1"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["context_window"] == 200_000
    larger = session(tmp_path, [(20_000, 0), (169_000, 19_000), (230_000, 160_000)])
    assert main(["profile", larger, "-f", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["model"]["context_window"] == 1_000_000
