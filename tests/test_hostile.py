"""Hostile templates, configurations and outputs: one line, exit code 2, no traceback, no file left."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES, small_transcript, write_json
from tokprof.cli import main

LOG = FIXTURES / "good_transcript.json"


def one_line_error(args, capsys) -> str:
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 2, err
    assert out == "" and err.count("\n") == 1 and err.startswith("tokprof: error: ") and "Traceback" not in err
    return err


@pytest.mark.parametrize(
    "source, expected",
    [
        ("{{ 'x' * 10**9 }}", "'*' made too long a string or list"),
        ("{{ [0] * 10**9 }}", "'*' made too long a string or list"),
        ("{{ 2 ** 100000000 }}", "too large a number"),
        ("{{ 10 ** (10 ** 10) }}", "too large a number"),
        ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "range() gave too many"),
        ("{{ lipsum(n=10000000) }}", "'lipsum' is undefined"),
        ("{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}", "nested too deeply"),
        ("{% if x %}" * 3000 + "y" + "{% endif %}" * 3000, "nested too deeply"),
    ],
)
def test_templates_run_under_limits(source, expected, tmp_path, capsys):
    template = tmp_path / "t.jinja"
    template.write_text(source)
    err = one_line_error(["profile", str(LOG), "--chat-template", str(template)], capsys)
    assert expected in err
    if "went over a limit" in err:
        assert "TOKPROF_TEMPLATE_" in err  # names how to raise it


def test_a_render_has_a_time_limit(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TOKPROF_TEMPLATE_TIMEOUT", "0.2")
    template = tmp_path / "t.jinja"
    template.write_text("{% for a in range(1000) %}{% for b in range(1000) %}{% for c in messages %}{% endfor %}"
                        "{% endfor %}{% endfor %}")
    monkeypatch.setenv("TOKPROF_TEMPLATE_MAX_RANGE", str(10**9))
    err = one_line_error(["profile", str(LOG), "--chat-template", str(template)], capsys)
    assert "a render took too long" in err and "TOKPROF_TEMPLATE_TIMEOUT" in err


def test_a_bad_limit_setting_is_one_line(monkeypatch, capsys):
    monkeypatch.setenv("TOKPROF_TEMPLATE_MAX_OUTPUT", "lots")
    assert "TOKPROF_TEMPLATE_MAX_OUTPUT: expected a number" in one_line_error(["profile", str(LOG)], capsys)


def test_limits_change_no_count(capsys):
    from tokprof.models import resolve_model
    from tokprof.models.template import _compile

    model = resolve_model("qwen2.5")
    assert _compile(model.prompt_format.select(True), False).environment.intercepted_binops == {"*", "**"}
    assert main(["profile", str(LOG), "-f", "json"]) == 0  # the embedded template renders as before
    assert json.loads(capsys.readouterr().out)["summary"]["billed_input"] > 0
