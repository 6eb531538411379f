"""Hostile templates, configurations and outputs: one line, exit code 2, no traceback, no file left."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT, small_transcript, write_json
from tokprof.frontends.cli import main

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
    # 10^8 steps whatever the log holds: over 0.2 s on any machine (one that depended on the number of
    # messages rendered short prompts in under 0.2 s on a fast interpreter, and the profile succeeded)
    template.write_text("{% for a in range(10000) %}{% for b in range(10000) %}{% endfor %}{% endfor %}")
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
    assert _compile(model.prompt_format.select(True), False).environment.intercepted_binops == {"*", "**", "+", "%"}
    assert main(["profile", str(LOG), "-f", "json"]) == 0  # the embedded template renders as before
    assert json.loads(capsys.readouterr().out)["summary"]["billed_input"] > 0


@pytest.mark.parametrize(
    "content, expected",
    [
        (b"\xff\xfe[budgets]\n", "byte 0: not UTF-8 text"),
        (b"[budgets]\ntool_definitions = " + b"9" * 400 + b"\n", "found a 400-digit number"),
        (b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n", "nested too deeply"),
        (b"max_increase = " + b"9" * 400 + b"\n", "a non-negative number up to"),
    ],
)
def test_hostile_configurations(content, expected, tmp_path, capsys):
    config = tmp_path / "tokprof.toml"
    config.write_bytes(content)
    assert expected in one_line_error(["check", str(LOG), "--config", str(config)], capsys)


def test_an_unrelated_broken_pyproject_does_not_stop_the_walk(tmp_path, capsys, monkeypatch):
    (tmp_path / "tokprof.toml").write_text("[budgets]\nbilled_input = 100000\n")
    inner = tmp_path / "project"
    inner.mkdir()
    (inner / "pyproject.toml").write_bytes(b"[project\nname = \xff")
    monkeypatch.chdir(inner)
    assert main(["check", str(LOG)]) == 0
    capsys.readouterr()


@pytest.mark.parametrize(
    "baseline, expected",
    [
        (
            '{"schema_version": 1, "model": "qwen2.5", "metrics": {"billed_input": 1' + "0" * 400 + '}, "tools": {}}',
            "metrics.billed_input: expected a non-negative number, found a 401-digit number",
        ),
        (
            '{"schema_version": 1, "model": "qwen2.5", "metrics": {}, "tools": {"\\ud800x": 3}}',
            "a tool name is not valid Unicode",
        ),
        (
            '{"schema_version": 1, "model": "qwen2.5", "metrics": ' + "[" * 100000 + "]" * 100000 + "}",
            "baseline is not valid JSON",
        ),
    ],
)
def test_hostile_baselines(baseline, expected, tmp_path, capsys):
    (tmp_path / "b.json").write_text(baseline)
    (tmp_path / "tokprof.toml").write_text("[budgets]\nbilled_input = 100000\n")
    err = one_line_error(
        ["check", str(LOG), "--config", str(tmp_path / "tokprof.toml"), "--baseline", str(tmp_path / "b.json")], capsys
    )
    assert expected in err


def test_outputs_are_all_or_nothing(tmp_path, capsys):
    html = tmp_path / "out.html"
    (tmp_path / "a-file").write_text("not a folder")  # an output's folder that cannot be made
    one_line_error(["profile", str(LOG), "--html", str(html), "-o", str(tmp_path / "a-file" / "x.txt")], capsys)
    assert not html.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]
    loop = tmp_path / "loop"
    loop.symlink_to(tmp_path / "loop")
    assert "cannot write" in one_line_error(["profile", str(LOG), "-o", str(loop)], capsys)
    assert "output file name is empty" in one_line_error(["profile", str(LOG), "-o", ""], capsys)
    assert "--html: expected a file name" in one_line_error(["profile", str(LOG), "--html", ""], capsys)


def test_update_baseline_writes_nothing_when_a_later_output_fails(tmp_path, capsys):
    (tmp_path / "tokprof.toml").write_text("[budgets]\nbilled_input = 100000\n")
    (tmp_path / "a-file").write_text("not a folder")  # a report whose folder cannot be made
    one_line_error(
        [
            "check",
            str(LOG),
            "--config",
            str(tmp_path / "tokprof.toml"),
            "--update-baseline",
            "-o",
            str(tmp_path / "a-file" / "report.txt"),
        ],
        capsys,
    )
    assert not (tmp_path / "tokprof-baseline.json").exists()


def test_standard_input_and_long_values(tmp_path, capsys):
    assert "standard input is not supported" in one_line_error(["profile", "-"], capsys)
    log = small_transcript()
    log["messages"][0]["role"] = "x" * 3_000_000 + "\x1b[31m"
    err = one_line_error(["profile", str(write_json(tmp_path / "log.json", log))], capsys)
    assert len(err) < 1500 and "characters)" in err and "\x1b" not in err


@pytest.mark.parametrize(
    "args",
    [
        ["profile", str(LOG)],
        ["profile", str(ROOT / "samples" / "incident_session.json"), "--calls", "all"],
        ["--version"],
    ],
    ids=["small", "large", "version"],
)
@pytest.mark.parametrize("unbuffered", ["", "1"], ids=["buffered", "unbuffered"])
def test_standard_output_on_a_full_device(args, unbuffered):
    """One line and exit code 2, whether the write fails while the command runs (a large output) or only
    when the process flushes it at the end (a small one, or any output when Python buffers it)."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = unbuffered
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [sys.executable, "-m", "tokprof", *args],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            env=env,
        )
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "No space left" in result.stderr, result.stderr


def _tiny_vocabulary(folder: Path) -> Path:
    """A gzipped tiktoken vocabulary (every byte, and "hi"), converted as Qwen's and o200k's are (the same
    cache, checksums and unpacking), in a fraction of a second instead of seconds."""
    import base64
    import gzip

    ranks = [bytes([i]) for i in range(256)] + [b"hi"]
    path = folder / "tiny.tiktoken.gz"
    path.write_bytes(
        gzip.compress("".join(f"{base64.b64encode(r).decode()} {i}\n" for i, r in enumerate(ranks)).encode())
    )
    return path


TINY_PATTERN = r"[^\s]+|\s+"
TINY_ADDED = [("<|im_start|>", True, 257)]


def test_a_replaced_cache_entry_is_rebuilt(tmp_path, monkeypatch):
    from tokenizers import Tokenizer

    from tokprof.models import tiktoken_vocab

    monkeypatch.setenv("TOKPROF_CACHE_DIR", str(tmp_path / "cache"))
    vocab = _tiny_vocabulary(tmp_path)
    first = tiktoken_vocab.cached_tokenizer("tiny", vocab, TINY_PATTERN, TINY_ADDED)
    entry = next((tmp_path / "cache" / "tokenizers").glob("tiny-*.json"))
    entry.write_text(Tokenizer(Tokenizer.from_str(entry.read_text()).model).to_str())
    again = tiktoken_vocab.cached_tokenizer("tiny", vocab, TINY_PATTERN, TINY_ADDED)  # checksum differs: built again
    assert again.encode("<|im_start|>hi").ids == first.encode("<|im_start|>hi").ids == [257, 256]
    assert tiktoken_vocab._verified(entry, entry.with_suffix(".sha256")) is not None


def test_an_unwritable_cache_leaves_no_temporary_file(tmp_path, monkeypatch):
    import tempfile

    from tokprof.models import tiktoken_vocab

    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("TOKPROF_CACHE_DIR", str(blocked / "cache"))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    tokenizer = tiktoken_vocab.cached_tokenizer("tiny", _tiny_vocabulary(tmp_path), TINY_PATTERN, TINY_ADDED)
    assert tokenizer.encode("hello").ids and list(scratch.iterdir()) == []  # unpacked to a temporary file, removed
