"""The command line: outputs, the JSON schema, and one-line errors with exit code 2 on bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import FIXTURES, ROOT, small_transcript, write_json
from tokprof.attribution.buckets import BUCKETS
from tokprof.frontends.cli import main


def run(args, capsys):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_json_schema(capsys):
    code, out, _ = run(["profile", str(FIXTURES / "good_records.jsonl"), "--format", "json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc["schema_version"] == 3
    assert set(doc) >= {"model", "calls", "summary", "warnings", "source"}
    assert doc["model"]["name"] == "qwen2.5" and doc["model"]["exact"] is True
    billed = 0
    for i, call in enumerate(doc["calls"]):
        assert call["index"] == i
        assert set(call["buckets"]) == set(BUCKETS)
        assert sum(call["buckets"].values()) == call["total"]
        billed += call["total"]
        assert call["cumulative"] == billed
        assert set(call["reported"]) == {"prompt", "cache_read", "cache_write", "output"}
        assert call["difference"] == call["total"] - call["reported"]["prompt"]
    summary = doc["summary"]
    assert summary["calls"] == len(doc["calls"])
    assert summary["billed_input"] == billed
    assert summary["final_prompt"] == doc["calls"][-1]["total"]
    assert sum(summary["buckets_billed"].values()) == billed
    assert set(summary["crossovers"]) == {
        "tool_results_exceed_tool_definitions",
        "conversation_exceeds_tool_definitions",
    }
    assert summary["billed_input_reported"] == 610 + 760 + 820


def test_table_and_csv(capsys, tmp_path):
    code, out, _ = run(["profile", str(FIXTURES / "good_transcript.json")], capsys)
    assert code == 0 and "billed input" in out and "\x1b[" not in out
    target = tmp_path / "out.csv"
    code, out, _ = run(["profile", str(FIXTURES / "good_transcript.json"), "-f", "csv", "-o", str(target)], capsys)
    assert code == 0 and out == ""
    lines = target.read_text().splitlines()
    assert lines[0].startswith("index,system,tool_definitions,tool_results,conversation,total")
    assert len(lines) == 4


def test_output_is_deterministic(capsys):
    first = run(["profile", str(FIXTURES / "good_transcript.json"), "-f", "json"], capsys)[1]
    second = run(["profile", str(FIXTURES / "good_transcript.json"), "-f", "json"], capsys)[1]
    assert first == second


def _bad_cases(tmp_path):
    good = small_transcript()

    def variant(**changes):
        doc = json.loads(json.dumps(good))
        for index, message in changes.items():
            doc["messages"][int(index[1:])] = message
        return doc

    cases = {
        "missing": (tmp_path / "nope.json", "no such file"),
        "empty": (tmp_path / "empty.json", "file is empty"),
        "truncated": (tmp_path / "truncated.json", "line 1, column"),
        "shape": (tmp_path / "shape.json", "not a log format tokprof reads (formats: otel, anthropic, "),
        "role": (tmp_path / "role.json", "messages[1].role: unknown role 'bot'"),
        "orphan": (tmp_path / "orphan.json", "messages[3].tool_call_id: 'zzz' matches no earlier assistant tool call"),
        "content": (tmp_path / "content.json", "messages[1].content: expected a string or a list of text parts"),
        "jsonl": (tmp_path / "bad.jsonl", "line 2, column"),
        "scalar": (tmp_path / "scalar.json", "not a log format tokprof reads"),
    }
    (tmp_path / "empty.json").write_text("  \n")
    (tmp_path / "truncated.json").write_text(json.dumps(good)[:80])
    write_json(tmp_path / "shape.json", {"conversation": []})
    write_json(tmp_path / "role.json", variant(m1={"role": "bot", "content": "hi"}))
    write_json(tmp_path / "orphan.json", variant(m3={"role": "tool", "tool_call_id": "zzz", "content": "x"}))
    write_json(tmp_path / "content.json", variant(m1={"role": "user", "content": 42}))
    (tmp_path / "bad.jsonl").write_text(
        json.dumps({"messages": good["messages"][:2]})
        + "\n"
        + '{"messages": [\n'
        + json.dumps({"messages": good["messages"][:2]})
    )
    (tmp_path / "scalar.json").write_text("42")
    return cases


@pytest.mark.parametrize(
    "case", ["missing", "empty", "truncated", "shape", "role", "orphan", "content", "jsonl", "scalar"]
)
def test_bad_input_one_line_exit_2(case, tmp_path, capsys):
    path, expected = _bad_cases(tmp_path)[case]
    target = tmp_path / "out.json"
    code, out, err = run(["profile", str(path), "-f", "json", "-o", str(target)], capsys)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"tokprof: error: {path}")
    assert expected in err
    assert not target.exists()


def test_unknown_model_is_a_clear_error(capsys, tmp_path):
    code, _, err = run(["profile", str(FIXTURES / "good_transcript.json"), "--model", "no-such-model"], capsys)
    assert code == 2 and "unknown model 'no-such-model'" in err


def test_hub_model_offline_is_a_clear_error(capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, _, err = run(["profile", str(FIXTURES / "good_transcript.json"), "--model", "someorg/some-model"], capsys)
    assert code == 2 and "HF_HUB_OFFLINE" in err and err.count("\n") == 1


def test_local_directory_model(tmp_path, capsys):
    from conftest import CHATML, train_tiny_tokenizer

    train_tiny_tokenizer().save(str(tmp_path / "tokenizer.json"))
    write_json(tmp_path / "tokenizer_config.json", {"chat_template": CHATML, "eos_token": "<|im_end|>"})
    log = write_json(tmp_path / "log.json", small_transcript())
    code, out, _ = run(["profile", str(log), "--model", str(tmp_path), "-f", "json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc["calls"][0]["buckets"] == {"system": 9, "tool_definitions": 9, "tool_results": 0, "conversation": 7}


def test_chat_template_override(tmp_path, capsys):
    from conftest import CHATML

    (tmp_path / "t.jinja").write_text(CHATML)
    code, out, _ = run(
        ["profile", str(FIXTURES / "good_transcript.json"), "--chat-template", str(tmp_path / "t.jinja"), "-f", "json"],
        capsys,
    )
    assert code == 0
    assert json.loads(out)["model"]["chat_template"]["origin"] == "file:t.jinja"


def test_console_script_runs():
    result = subprocess.run(
        [sys.executable, "-m", "tokprof", "profile", str(FIXTURES / "good_transcript.json"), "-f", "csv"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # no progress bar when stderr is not a terminal, no library noise


@pytest.mark.parametrize(
    "raw, expected",
    [
        (
            '{"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}], "n": '
            + "1" * 5000
            + "}",
            "invalid JSON: Exceeds the limit",
        ),
        ("[" * 100000 + "]" * 100000, "invalid JSON: nested too deeply"),
        (
            '{"messages": [{"role": "user", "content": "bad \\ud800 text"}, {"role": "assistant", "content": "y"}]}',
            "messages[0].content: invalid Unicode",
        ),
        (
            '{"tools": [{"type": "function", "function": {"name": "f", "description": 3}}], "messages": '
            '[{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]}',
            "tools[0].function.description: expected a string",
        ),
    ],
)
def test_more_bad_input(raw, expected, tmp_path, capsys):
    path = tmp_path / "log.json"
    path.write_text(raw)
    code, out, err = run(["profile", str(path)], capsys)
    assert code == 2 and expected in err and err.count("\n") == 1


@pytest.mark.parametrize(
    "content, expected",
    [
        (b"\xff\xfe", "not UTF-8 text"),
        (b"  ", "the chat template is empty"),
        (b"{{ x }", "syntax error at line 1"),
        (b"{{ x | frobnicate }}", "No filter named 'frobnicate'"),
    ],
)
def test_bad_chat_template_names_the_file(content, expected, tmp_path, capsys):
    template = tmp_path / "t.jinja"
    template.write_bytes(content)
    code, _, err = run(["profile", str(FIXTURES / "good_transcript.json"), "--chat-template", str(template)], capsys)
    assert code == 2 and err.startswith(f"tokprof: error: {template}: ") and expected in err


def test_output_through_symlink_and_missing_directory(tmp_path, capsys):
    real = tmp_path / "real.csv"
    real.write_text("old")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    code, _, _ = run(["profile", str(FIXTURES / "good_transcript.json"), "-f", "csv", "-o", str(link)], capsys)
    assert code == 0 and link.is_symlink() and real.read_text().startswith("index,")
    code, _, err = run(
        ["profile", str(FIXTURES / "good_transcript.json"), "-o", str(tmp_path / "new" / "deep" / "out.txt")], capsys
    )
    assert code == 0 and (tmp_path / "new" / "deep" / "out.txt").read_text().startswith("tokprof profile")


def test_output_folders_are_made_and_removed_again_when_the_outputs_fail(tmp_path, capsys):
    """An output's folder that does not exist is made, its parents too (#46 item 2); when any output
    fails, the folders made for them are removed again, and nothing is written."""
    log = str(FIXTURES / "good_transcript.json")
    (tmp_path / "a-file").write_text("not a folder")
    code, _, err = run(
        ["profile", log, "-o", str(tmp_path / "new" / "out.txt"), "--html", str(tmp_path / "a-file" / "r.html")],
        capsys,
    )
    assert code == 2 and err.startswith(f"tokprof: error: {tmp_path / 'a-file' / 'r.html'}: cannot write: ")
    assert "is not a folder" in err and sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]
    code, _, err = run(["profile", log, "-o", str(tmp_path / "a-file" / "deeper" / "out.txt")], capsys)
    assert code == 2 and "is not a folder" in err and (tmp_path / "a-file").read_text() == "not a folder"
    code, _, err = run(["profile", log, "-o", log], capsys)  # an output that is an input is still refused
    assert code == 2 and "would overwrite the input" in err


def test_bare_tokprof_prints_the_help_alone(capsys):
    """``tokprof`` alone: the help, no error line after it (#46 item 4)."""
    code, out, err = run([], capsys)
    assert code == 0 and "Usage: tokprof" in out and "profile" in out and err == ""


@pytest.mark.parametrize(
    "args",
    [
        ["profle", "x"],
        ["profile", "x", "--formt", "json"],
        ["profile", "x", "-f", "yaml"],
        ["profile", "x", "-i", "claude"],
    ],
)
def test_usage_error_is_one_line(args, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tokprof: error:") and "Traceback" not in err


def test_usage_errors_say_what_was_meant(capsys):
    main(["profle", "x"])
    assert "Did you mean 'profile'" in capsys.readouterr().err
    main(["profile", "x", "-f", "jsn"])
    assert "(did you mean json?)" in capsys.readouterr().err
    main(["profile", str(FIXTURES / "good_transcript.json"), "--model", "qwen3x"])
    assert "(did you mean qwen3?)" in capsys.readouterr().err


def test_version(capsys):
    from tokprof import __version__

    assert main(["-V"]) == 0 and capsys.readouterr().out == f"tokprof {__version__}\n"


def test_jsonl_with_line_separator_in_a_string(tmp_path, capsys):
    record = {"messages": [{"role": "user", "content": "a\u2028b\u2029c\u0085d"}]}
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    code, out, _ = run(["profile", str(path), "-f", "csv"], capsys)
    assert code == 0 and len(out.splitlines()) == 2


def test_log_of_another_format_says_what_is_expected(tmp_path, capsys):
    path = tmp_path / "session.jsonl"
    path.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": "hi"}}) + "\n")
    code, _, err = run(["profile", str(path)], capsys)
    assert code == 2 and err.count("\n") == 1
    from tokprof.formats import format_names

    assert err.rstrip().endswith(f": not a log format tokprof reads (formats: {format_names()}; -i FORMAT forces one)")
    assert {"claude-code", "codex", "openai-chat", "swe-agent"} <= set(format_names().split(", "))
    code, _, err = run(["profile", str(path), "--input-format", "openai-chat"], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "line 1: missing field 'messages': not an OpenAI Chat Completions request" in err


def test_a_json_file_cut_off_says_truncated(tmp_path, capsys):
    good = json.loads((FIXTURES / "good_transcript.json").read_text())
    path = tmp_path / "cut.json"
    path.write_text(json.dumps(good, indent=1)[:120])  # cut inside a string, or between values
    code, _, err = run(["profile", str(path)], capsys)
    assert code == 2 and err.count("\n") == 1 and err.rstrip().endswith("truncated JSON")


@pytest.mark.parametrize(
    "command",
    [
        ["profile", "{log}", "-f", "json", "-o", "{log}"],
        ["profile", "{log}", "-o", "out.txt", "--html", "{log}"],
        ["tools", "{log}", "-f", "csv", "-o", "{log}"],
        ["whatif", "{log}", "-p", "window:3", "-o", "{log}"],
        ["report", "{log}", "-o", "{log}"],
    ],
)
def test_an_output_never_replaces_the_input(command, tmp_path, capsys, monkeypatch):
    log = write_json(tmp_path / "log.json", small_transcript())
    before = log.read_bytes()
    monkeypatch.chdir(tmp_path)
    assert main([part.format(log=log) for part in command]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "would overwrite the input" in err
    assert log.read_bytes() == before and not (tmp_path / "out.txt").exists()


def test_csv_cells_from_the_log_never_read_as_formulas(tmp_path, capsys):
    from tokprof.render import csvsafe

    assert csvsafe.cell('=HYPERLINK("http://x","y")') == '\'=HYPERLINK("http://x","y")'
    assert [csvsafe.cell(v) for v in ("-5", "-0.25", "+3", "@x", "\tx", "plain", 7)] == [
        "-5",
        "-0.25",
        "+3",
        "'@x",
        "'\tx",
        "plain",
        7,
    ]
    log = json.loads(json.dumps(small_transcript()))  # a copy: its tools are shared with other tests
    log["tools"][0]["function"]["name"] = '=HYPERLINK("http://evil","x")'
    for m in log["messages"]:
        for call in m.get("tool_calls") or []:
            call["function"]["name"] = '=HYPERLINK("http://evil","x")'
    assert main(["tools", str(write_json(tmp_path / "log.json", log)), "-f", "csv"]) == 0
    out = capsys.readouterr().out
    assert "\"'=HYPERLINK(" in out and ',"=HYPERLINK' not in out


def test_a_bad_input_on_a_github_runner_is_an_annotation_too(tmp_path, capsys, monkeypatch):
    path = tmp_path / "bad%0A::set-output name=x::y.json"
    path.write_text('{"messages": [', encoding="utf-8")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert main(["check", str(path)]) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and out.count("\n") == 1
    assert out.startswith("::error title=tokprof::") and "%250A" in out and "\n::" not in out[2:]
    monkeypatch.delenv("GITHUB_ACTIONS")
    assert main(["check", str(path)]) == 2 and capsys.readouterr().out == ""
