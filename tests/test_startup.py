"""Start-up: what each fast path leaves unloaded (checked in fresh processes, by sys.modules at exit),
and that the command line's shortcuts (tokprof.frontends.cli_startup) change nothing it prints."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex
import subprocess
import sys

import pytest

from conftest import ROOT, stop_statusline_counters
from tokprof.frontends import cli
from tokprof.frontends.cli_startup import _NO, command_named, plain_value

#: Modules no start-up path that does not use them may load.
HEAVY = (
    "numpy",
    "plotly",
    "jinja2",
    "pydantic",
    "pydantic_core",
    "httpx",
    "httpx2",
    "genai_prices",
    "tiktoken",
    "tokenizers",
    "transformers",
    "rich.markdown",
    "rich.traceback",
    "markdown_it",
    "pygments",
    "asyncio",
)


def loaded(
    tmp_path, args: list[str] | None, stdin: str = "", code: str | None = None, modules: tuple[str, ...] = HEAVY
) -> tuple[set[str], str]:
    """The ``modules`` (default: HEAVY) a fresh process had loaded when it exited, and what it printed."""
    body = (
        code
        if code is not None
        else f"import sys\nsys.argv = ['tokprof', *{args!r}]\nfrom tokprof.frontends.launch import entry\nentry()\n"
    )
    program = (
        "import atexit, sys\n"
        f"atexit.register(lambda: sys.stderr.write('LOADED ' + ' '.join(m for m in {modules!r} if m in sys.modules) + '\\n'))\n"
        + body
    )
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        HOME=str(tmp_path / "home"),
        XDG_CACHE_HOME=str(tmp_path / "xdg"),
        TOKPROF_CACHE_DIR=str(tmp_path / "cache"),
        COLUMNS="120",
    )
    done = subprocess.run(
        [sys.executable, "-c", program], input=stdin, capture_output=True, text=True, env=env, timeout=120, check=False
    )
    line = [x for x in done.stderr.splitlines() if x.startswith("LOADED")][-1]
    return set(line.split()[1:]), done.stdout


def test_import_tokprof_loads_nothing_heavy(tmp_path):
    modules, _ = loaded(tmp_path, None, code="import tokprof\n")
    assert modules == set()


def test_help_and_version_load_nothing_heavy(tmp_path):
    for args in (["--help"], ["--version"], ["profile", "--help"], ["whatif", "--help"]):
        modules, out = loaded(tmp_path, args)
        assert modules == set(), (args, modules)
        assert out.strip(), args


def test_statusline_loads_nothing_heavy(tmp_path):
    transcript = tmp_path / "s.jsonl"  # one assistant record as Claude Code writes them (hand-written)
    transcript.write_text(
        json.dumps(
            {
                "type": "assistant",
                "sessionId": "s",
                "uuid": "a1",
                "timestamp": "2026-01-01T00:00:00Z",
                "message": {
                    "id": "m1",
                    "role": "assistant",
                    "model": "claude-sonnet-4-20250514",
                    "content": [{"type": "text", "text": "hi"}],
                    "usage": {"input_tokens": 10, "cache_read_input_tokens": 5000, "output_tokens": 3},
                },
            }
        )
        + "\n"
    )
    status = json.dumps({"transcript_path": str(transcript)})
    try:
        first, out = loaded(tmp_path, ["statusline"], status)  # genai-prices finds the model's window, once
        modules, again = loaded(tmp_path, ["statusline"], status)
    finally:  # the first started the bucket counter in the background: it is this test's to stop
        assert stop_statusline_counters(tmp_path / "cache" / "statusline") == 1
    assert modules == set() and again == out and out.startswith("ctx ") and "of 200k" in out


#: tokprof's own modules a one-call profile of a registered model does not use (#32 item 3).
UNUSED_BY_A_PROFILE = (
    "tokprof.analyses.budgets",
    "tokprof.analyses.sessions",
    "tokprof.analyses.directory",
    "tokprof.formats.claude_code.fold",
    "tokprof.models.local",
    "tokprof.models.gguf",
    "rich._emoji_codes",
)


def test_a_one_call_profile_leaves_what_other_commands_use_unloaded(tmp_path):
    log = tmp_path / "one.json"
    messages = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
    log.write_text(json.dumps({"model": "Qwen/Qwen2.5-7B-Instruct", "messages": messages}))
    found, out = loaded(tmp_path, ["profile", str(log), "--no-progress"], modules=UNUSED_BY_A_PROFILE + ("numpy",))
    assert found == {"numpy"} and "1 call" in out, (found, out)


def test_a_one_call_profile_loads_only_what_it_uses(tmp_path):
    log = tmp_path / "one.json"
    log.write_text(
        json.dumps(
            {
                "model": "claude-sonnet-4-20250514",
                "messages": [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}],
            }
        )
    )
    first, out = loaded(tmp_path, ["profile", str(log), "--no-progress", "-m", "qwen2.5"])
    assert "genai_prices" in first  # the first time a log names the model: genai-prices finds it, once
    again, out_again = loaded(tmp_path, ["profile", str(log), "--no-progress", "-m", "qwen2.5"])
    assert out_again == out and "cost" in out
    assert again & {"numpy", "jinja2"} == {"numpy", "jinja2"}  # what counting uses
    assert "tiktoken" not in again  # short ASCII texts are counted before its encoder is needed (smallbpe)
    assert not again & {
        "pydantic",
        "httpx",
        "httpx2",
        "genai_prices",
        "plotly",
        "rich.markdown",
        "rich.traceback",
        "asyncio",
        "transformers",
    }, again


# -- typer's values without pydantic -------------------------------------------------------------------
class Info:
    def __init__(self, low=None, high=None, clamp=None):
        self.min, self.max, self.clamp = low, high, clamp


@pytest.mark.parametrize(
    "annotation, value, expected",
    [
        (str, "x", "x"),
        (str, "", ""),
        (str, 3, _NO),
        (bool, True, True),
        (bool, "yes", _NO),
        (int, "12", 12),
        (int, "007", 7),
        (int, 5, 5),
        (int, "-1", _NO),
        (int, "1.0", _NO),
        (int, " 2", _NO),
        (int, "١٢", _NO),
        (int, True, _NO),
        (list[str], ("a", "b"), ["a", "b"]),
        (list[str], ["a"], ["a"]),
        (list[str], (1,), _NO),
        (float, "0.5", _NO),
    ],
)
def test_plain_values_are_taken_as_typers_adapter_takes_them(annotation, value, expected):
    assert (
        plain_value(annotation, Info(), value) == expected
        if expected is not _NO
        else plain_value(annotation, Info(), value) is _NO
    )


def test_a_number_out_of_range_goes_to_typers_adapter():
    assert plain_value(int, Info(low=1), "0") is _NO and plain_value(int, Info(low=1), "1") == 1
    assert plain_value(int, Info(high=9), "10") is _NO and plain_value(int, Info(low=1, clamp=True), "5") is _NO


def run(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(args)
    return code, out.getvalue(), err.getvalue()


def test_bad_option_values_get_typers_own_messages(tmp_path):
    log = tmp_path / "one.json"
    log.write_text(json.dumps({"messages": [{"role": "user", "content": "hello"}]}))
    code, _, err = run(["profile", str(log), "--jobs", "abc"])
    assert code == 2 and "Input should be a valid integer" in err
    code, _, err = run(["profile", str(log), "--jobs", "0"])
    assert code == 2 and "greater than or equal to 1" in err
    code, _, err = run(["probe", "--temperature", "hot", "--model", "qwen2.5", "--dry-run"])
    assert code == 2 and "temperature" in err


# -- building only the command that runs -------------------------------------------------------------
def whole(args: list[str]) -> str:
    """What typer prints with every command built."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        cli.app(args=args, prog_name="tokprof", standalone_mode=False)
    return out.getvalue()


@pytest.mark.parametrize("command", ["profile", "whatif", "tools", "check", "mcp", "statusline", "record"])
def test_a_commands_help_is_the_same_with_only_it_built(command):
    assert command_named(cli.app, [command, "--help"]) is not None
    assert run([command, "--help"])[1] == whole([command, "--help"])
    assert len(cli.app.registered_commands) > 10  # put back


def test_the_whole_command_line_is_built_for_help_typos_and_options():
    for args in ([], ["--help"], ["-V"], ["profil"], ["profile-x", "a"]):
        assert command_named(cli.app, args) is None, args
    code, _, err = run(["profil", "x"])
    assert code == 2 and "profile" in err  # typer's suggestion needs the other commands


# -- leaving without the teardown ------------------------------------------------------------------------
def test_a_command_leaves_with_its_code_its_output_and_the_exit_handlers_run(tmp_path):
    log = tmp_path / "one.json"
    log.write_text(
        json.dumps({"messages": [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]})
    )
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('handler ran', file=sys.stderr))\n"
        "sys.argv = ['tokprof', *sys.argv[1:]]\n"
        "from tokprof.frontends.launch import entry\nentry()\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="120")
    done = subprocess.run(
        [sys.executable, "-c", code, "profile", str(log), "-m", "qwen2.5", "-f", "json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and json.loads(done.stdout)["kind"] == "profile"
    assert "handler ran" in done.stderr
    bad = subprocess.run(
        [sys.executable, "-c", code, "profile", str(tmp_path / "missing.json")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert bad.returncode == 2 and "tokprof: error:" in bad.stderr and "handler ran" in bad.stderr
    head = subprocess.run(
        f"{shlex.quote(sys.executable)} -m tokprof profile {shlex.quote(str(log))} -m qwen2.5 | head -c 10",
        shell=True,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert head.returncode == 0 and len(head.stdout) == 10 and "Traceback" not in head.stderr
