"""aider chat histories (#48.1): ``.aider.chat.history.md``.

The fixture is written here by hand in the shape aider's ``io.py`` appends (``# aider chat started
at``, ``#### `` user lines, ``> `` tool output with the ``Tokens:`` report of ``base_coder.py``); no
text comes from a real history.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tokprof
from tokprof.runs.sessions import local_sessions
from tokprof.formats import read_trace
from tokprof.formats.aider import count
from tokprof.frontends.cli import main

PLAIN = """
# aider chat started at 2025-10-23 17:04:56

> /usr/bin/aider --model anthropic/claude-3-5-sonnet-20241022
> Aider v0.86.1
> Main model: anthropic/claude-3-5-sonnet-20241022 with diff edit format, infinite output
> Git repo: .git with 12 files

#### /add app.py
> Added app.py to the chat

#### Add a --verbose flag to app.py.

I'll add the flag.

> Tokens: 3.4k sent, 2.9k cache write, 120 received. Cost: $0.02 message, $0.02 session.
> Applied edit to app.py

#### /ask why argparse?

It parses the command line.

> Tokens: 3,521 sent, 2,900 cache hit, 15 received. Cost: $0.0036 message, $0.02 session.

# aider chat started at 2025-10-24 09:00:00

> Model: gpt-4o with diff edit format

#### Rename main to run.
####   And update the tests.

Done.

#### What changed
> run() is the entry point now.

> Tokens: 12k sent, 1.1k received. Cost: $0.04 message, $0.04 session.

#### /clear

#### Hello again.

Hi.

> Tokens: 812 sent, 4 received.
"""

#: aider ends each line it writes for the user or itself with two spaces (a Markdown line break)
HISTORY = "\n".join(line + "  " if line.startswith((">", "####")) else line for line in PLAIN.split("\n"))
#: a reply's own heading and quote: written as the model wrote them, without aider's line break
HISTORY = HISTORY.replace("#### What changed  ", "#### What changed").replace("entry point now.  ", "entry point now.")


def own_sum(text: str) -> int:
    """billed input as the file prints it: each Tokens line's `sent`, k read as thousands."""
    total = 0
    for line in text.splitlines():
        if line.startswith("> Tokens: "):
            sent = line.split()[2].replace(",", "")
            total += round(float(sent[:-1]) * 1000) if sent.endswith("k") else int(sent)
    return total


def write(folder: Path, text: str = HISTORY) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ".aider.chat.history.md"
    path.write_text(text)
    return path


def test_sessions_calls_and_rounded_counts(tmp_path):
    trace = read_trace(str(write(tmp_path / "repo")))
    assert trace.format == "aider" and trace.unrecorded == ("system", "tools")
    assert [call.thread for call in trace.calls] == ["2025-10-23 17:04:56"] * 2 + ["2025-10-24 09:00:00"] * 2
    first, second, third, fourth = trace.calls
    assert first.model == "anthropic/claude-3-5-sonnet-20241022" and third.model == "gpt-4o"
    assert [m["content"] for m in first.messages] == ["Add a --verbose flag to app.py."]  # /add is not sent
    assert [m["content"] for m in second.messages] == [
        "Add a --verbose flag to app.py.",
        "I'll add the flag.",
        "why argparse?",
    ]  # /ask sends its question
    assert third.messages[-1]["content"] == "Rename main to run.\n  And update the tests."
    assert [m["content"] for m in fourth.messages] == ["Hello again."]  # /clear emptied the history
    assert first.reported.prompt == 3400 and first.reported.cache_write == 2900 and first.reported.cache_read is None
    assert second.reported.prompt == 3521 and second.reported.cache_read == 2900
    assert third.reported.output == 1100 and fourth.reported.prompt == 812
    # a reply's own heading and quote (no trailing line break) stay in the reply
    assert third.response["content"] == "Done.\n\n#### What changed\n> run() is the entry point now."
    notes = {note.code: note for note in trace.notes}
    rounded = [
        f"line {n}" for n, line in enumerate(HISTORY.splitlines(), 1) if line.startswith("> Tokens:") and "k " in line
    ]
    assert notes["approximate-usage"].places == rounded and len(rounded) == 2  # exact counts are not labelled
    assert "2025-10-24 09:00:00: $0.04" in notes["log-cost"].places[0]
    assert {call.cwd for call in trace.calls} == {str((tmp_path / "repo").resolve())}
    summary = tokprof.profile(trace).summary()
    assert summary.reported.billed_input == own_sum(HISTORY) == 3400 + 3521 + 12000 + 812


def test_format_tokens_as_aider_prints_them():
    assert count("f", "x", "999") == (999, False)
    assert count("f", "x", "1,234") == (1234, False)
    assert count("f", "x", "1.2k") == (1200, True)
    assert count("f", "x", "12k") == (12000, True)


def test_sessions_finds_histories_in_projects_and_the_variable(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("AIDER_CHAT_HISTORY_FILE", raising=False)
    write(home / "src" / "app")
    (home / "src" / "notes.md").write_text("# not aider\n")
    rows = local_sessions("aider")
    assert [(row.project, row.calls) for row in rows] == [(str((home / "src" / "app").resolve()), 4)]  # the repository
    elsewhere = tmp_path / "histories" / "chat.md"
    elsewhere.parent.mkdir()
    elsewhere.write_text(HISTORY)
    monkeypatch.setenv("AIDER_CHAT_HISTORY_FILE", str(elsewhere))
    assert [row.path for row in local_sessions("aider")] == [str(elsewhere)]


@pytest.mark.parametrize(
    "line, where",
    [
        ("> Tokens: lots sent, 4 received.  ", "line 3"),
        ("> Tokens: 99999999999999 sent, 4 received.  ", "line 3: sent"),
        ("> Tokens: 10 sent, 20 cache hit, 4 received.  ", "line 3"),
    ],
)
def test_hostile_input_is_one_line(tmp_path, capsys, line, where):
    path = write(tmp_path / "repo", f"# aider chat started at 2025-10-23 17:04:56\n#### hi\n{line}\n")
    out_file = tmp_path / "out.json"
    assert main(["profile", str(path), "-f", "json", "-o", str(out_file)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and f"{path}: {where}" in err and "Traceback" not in err
    assert not out_file.exists()


def test_not_utf8_is_one_line(tmp_path, capsys):
    path = tmp_path / ".aider.chat.history.md"
    path.write_bytes(b"# aider chat started at 2025\n\xff\xfe garbage\n")
    assert main(["profile", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and str(path) in err


def test_the_json_profile_keeps_counts_apart(tmp_path, capsys):
    path = write(tmp_path / "repo")
    assert main(["profile", str(path), "-f", "json"]) == 0
    profile = json.loads(capsys.readouterr().out)
    assert any(w["code"] == "approximate-usage" for w in profile["warnings"])
    for call in profile["calls"]:
        assert all(v >= 0 for v in call["buckets"].values()) and sum(call["buckets"].values()) == call["total"]
