"""Model names as a user types them: a Hub id of a model tokprof embeds is the embedded model (no Hub,
offline), and a misspelt closed model's name is an error that names the closest one."""

from __future__ import annotations

import pytest

from conftest import FIXTURES
from tokprof.frontends.cli import main
from tokprof.base.errors import ModelError
from tokprof.models import resolve_model


@pytest.mark.parametrize(
    "hub_id,embedded", [("Qwen/Qwen2.5-7B-Instruct", "qwen2.5"), ("meta-llama/Llama-3.1-8B-Instruct", "llama3.1")]
)
def test_a_hub_id_of_an_embedded_model_needs_no_hub(hub_id, embedded, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr("tokprof.models.local.load_hub", lambda name: pytest.fail("the Hub was tried"))
    model = resolve_model(hub_id)
    assert model.name == embedded and model.exact


@pytest.mark.parametrize("name,meant", [("claude-sonet-4-5", "claude-sonnet-4-5"), ("gpt4o", "gpt-4o")])
def test_a_misspelt_closed_model_says_what_was_meant(name, meant, capsys):
    with pytest.raises(ModelError, match=rf"did you mean {meant}\?"):
        resolve_model(name)
    assert main(["profile", str(FIXTURES / "good_transcript.json"), "--model", name]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"did you mean {meant}?" in err


def test_an_unknown_closed_model_points_to_the_proxy():
    with pytest.raises(ModelError, match="--model claude-proxy"):
        resolve_model("claude-banana")


@pytest.mark.parametrize(
    "name",
    [
        "claude-sonnet-4-5",
        "anthropic/claude-sonnet-4-5",
        "gpt-4o",
        "claude-proxy",
        "us.anthropic.claude-sonnet-4-20250514-v1:0",
        "anthropic.claude-3-5-sonnet-20240620-v1:0",
        "claude-3-5-sonnet@20240620",
        "chatgpt-4o-latest",
    ],
)
def test_known_closed_models_are_their_proxies(name):
    assert not resolve_model(name).exact


def test_a_log_that_names_no_model_says_the_default_under_the_heading(tmp_path, capsys, monkeypatch):
    """The counts are exact for the default model, not necessarily the log's: said beside them."""
    monkeypatch.setenv("COLUMNS", "200")  # whatever the terminal running the tests (the heading may still wrap)
    import json

    log = tmp_path / "nomodel.json"
    log.write_text(
        json.dumps({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]})
    )
    for command in ("profile", "tools"):
        assert main([command, str(log)]) == 0
        lines = [line.strip() for line in capsys.readouterr().out.splitlines()]
        at = lines.index("model qwen2.5 is the default: the log names no model (--model sets it)")
        table = next((i for i, line in enumerate(lines) if line.startswith(("call ", "tool ", "no call"))), len(lines))
        assert at < table and "model qwen2.5" in " ".join(lines[:at])  # under the heading (which may wrap)
    assert main(["profile", str(FIXTURES / "good_transcript.json"), "--model", "qwen2.5"]) == 0
    assert "is the default" not in capsys.readouterr().out
