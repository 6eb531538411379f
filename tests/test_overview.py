"""All the sessions at a glance (#49): spend by day, week, month, project, agent and model (``tokprof
sessions --by``), a session picked by its row number, ``--latest`` or its id's start. The sessions
are the hand-made fixtures of the format tests, below a temporary HOME; the state folder is the test's."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path

import pytest
import test_format_claude_code as claude_log
import test_format_codex as codex_log
import test_format_gemini_cli as gemini_log
import test_format_pi as pi_log
import test_format_qwen_code as qwen_log

from tokprof.runs.sessions import local_sessions
from tokprof.analyses.periods import parse_when
from conftest import ROOT
from tokprof.frontends.cli import main
from test_action import GitHub, github  # noqa: F401, F811  (the stub of GitHub's API, a fixture)

VARIABLES = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "PI_CODING_AGENT_DIR", "QWEN_RUNTIME_DIR")
LONG = "/home/someone/projects/a-very-long-project-name/with/deep/subfolders/and-the-project-itself"


def jsonl(path: Path, rows: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def codex_rollout() -> list:
    count = codex_log.Counter()
    return [
        codex_log.meta(session="019a-codex"),
        codex_log.user("list files"),
        codex_log.context(),
        count(100, output=30, cached=64, reasoning=20),
        codex_log.say("Two files."),
    ]


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TOKPROF_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("COLUMNS", "200")
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    gemini = home / ".gemini/tmp/4aa47759/chats/session-2026-03-26T04-33-b36c9e17.json"
    gemini.parent.mkdir(parents=True)
    gemini.write_text(json.dumps(gemini_log.session(gemini_log.messages())))
    jsonl(home / ".pi/agent/sessions/--work-app--/2026-06-05_sess-1.jsonl", pi_log.v3_lines())
    long = pi_log.v3_lines()
    long[0] = dict(long[0], id="other-2", cwd=LONG)
    jsonl(home / ".pi/agent/sessions/--long--/2026-06-05_other-2.jsonl", long)
    jsonl(home / ".qwen/projects/work-app/chats/qs-1.jsonl", qwen_log.lines())
    claude = [
        dict(line, cwd="/home/me/app") if isinstance(line, dict) else line for line in claude_log.split_response()
    ]
    jsonl(home / ".claude/projects/-home-me-app/s1.jsonl", claude)
    jsonl(home / ".codex/sessions/2025/09/25/rollout-2025-09-25T09-49-46-x.jsonl", codex_rollout())
    return home


def test_projects_are_the_recorded_working_directories(home):
    rows = {row.agent: row for row in local_sessions()}
    assert rows["claude-code"].project == "/home/me/app"  # its cwd, not the folder -home-me-app
    assert rows["codex"].project == "/w"  # session_meta.cwd
    assert rows["pi"].project in ("/work/app", LONG) and rows["qwen-code"].project == "/work/app"
    assert rows["gemini-cli"].project == "4aa47759"  # no working directory recorded: the folder
    assert rows["codex"].session == "019a-codex"


@pytest.mark.parametrize("columns", [80, 100, 200])
def test_the_project_column_is_shortened_never_dropped(home, capsys, monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main(["sessions"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert "project" in lines[1] and max(len(line) for line in lines) <= columns
    assert "and-the-project-itself" in out or "…" in out  # the long path shortened in the middle
    assert "/home/me/app" in out and "/w " in out


def test_spend_by_day_adds_up_to_the_total_exactly(home, capsys):
    assert main(["sessions", "--by", "day", "--tz", "UTC", "-f", "json"]) == 0
    doc = valid(json.loads(capsys.readouterr().out), "sessions-periods")
    rows, total = doc["rows"], doc["total"]
    assert [row["day"] for row in rows] == sorted(row["day"] for row in rows) and doc["time_zone"] == "UTC"
    costs = [Decimal(str(row["cost"])) for row in rows if row["cost"] is not None]
    assert sum(costs) == Decimal(str(total["cost"]))  # exactly, not within a tolerance
    assert sum(row["calls"] for row in rows) == total["calls"] == sum(r.calls or 0 for r in local_sessions())
    for kind in ("uncached", "cache_read"):
        assert sum(row["billed_input"][kind] or 0 for row in rows) == total["billed_input"][kind]
    gemini = next(row for row in rows if row["day"] == "2026-03-26")
    assert gemini["billed_input"]["cache_write"] is None  # Gemini reports no cache writes: not recorded, not 0
    assert 0 <= total["cache_hit_rate"] <= 1 and total["cache_lost_cost"] >= 0


@pytest.mark.parametrize("by", ["week", "month", "project", "agent", "model"])
def test_every_grouping_adds_up(home, capsys, by):
    assert main(["sessions", "--by", by, "--tz", "UTC", "-f", "json"]) == 0
    doc = valid(json.loads(capsys.readouterr().out), "sessions-periods")
    assert all(by in row and "cost" in row for row in doc["rows"])
    assert sum(Decimal(str(r["cost"])) for r in doc["rows"] if r["cost"] is not None) == Decimal(
        str(doc["total"]["cost"])
    )
    assert sum(r["calls"] for r in doc["rows"]) == doc["total"]["calls"]


def test_groups_combine_and_the_table_has_a_total_row(home, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["sessions", "--by", "month", "--by", "project", "--tz", "UTC"]) == 0
    out = capsys.readouterr().out
    assert "spend by month, project" in out and "\ntotal" in out and "lost (est.)" in out
    assert "2026-06" in out and "/home/me/app" in out
    assert main(["sessions", "--by", "month,agent", "--tz", "UTC", "-f", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert {(row["month"], row["agent"]) for row in rows} >= {("2026-06", "pi"), ("2025-09", "codex")}


def test_the_time_zone_moves_a_call_to_another_day(home, capsys):
    """Codex's call at 2025-09-25T15:49:46Z is on the 25th in UTC and on the 26th in Auckland (UTC+12)."""
    days = {}
    for zone in ("UTC", "Pacific/Auckland"):
        assert main(["sessions", "--by", "day", "--agent", "codex", "--tz", zone, "-f", "json"]) == 0
        days[zone] = [row["day"] for row in json.loads(capsys.readouterr().out)["rows"]]
    assert days == {"UTC": ["2025-09-25"], "Pacific/Auckland": ["2025-09-26"]}


def test_since_and_until(home, capsys):
    assert main(["sessions", "--by", "agent", "--since", "2026-01-01", "--until", "2026-06-30", "--tz", "UTC",
                 "-f", "json"]) == 0  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    assert {row["agent"] for row in doc["rows"]} == {"gemini-cli", "pi"}
    now = datetime(2026, 12, 4, 12, tzinfo=timezone.utc)
    assert parse_when("7d", "--since", timezone.utc, now) == datetime(2026, 11, 27, 12, tzinfo=timezone.utc)
    assert parse_when("2026-12-01", "--until", timezone.utc, now, end=True) == datetime(
        2026, 12, 2, tzinfo=timezone.utc
    )
    assert parse_when("yesterday", "--since", timezone.utc, now) == datetime(2026, 12, 3, tzinfo=timezone.utc)
    assert main(["sessions", "--since", "2026-06-01", "-f", "json"]) == 0  # a range alone: the sessions in it
    assert {row["agent"] for row in json.loads(capsys.readouterr().out)["sessions"]} == {"pi", "qwen-code"}


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--by", "hour"], "--by hour: expected day, week, month"),
        (["--by", "day", "--tz", "Mars/Base"], "--tz Mars/Base: not a time zone"),
        (["--by", "day", "--since", "last tuesday"], "--since last tuesday: expected a date"),
        (["--by", "day", "--since", "999999999d"], "--since 999999999d: out of the range of dates"),
        (["--by", "day", "--until", "9999-12-31"], "--until 9999-12-31: out of the range of dates"),
        (["--by", "day", "--since", "99999999999d"], "--since 99999999999d: expected a date"),
        (["--by", "day", "-f", "csv"], "'csv' is not one of table, json"),
    ],
)
def test_bad_options_are_one_line(home, capsys, argv, says):
    assert main(["sessions", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err


def test_an_unreadable_session_is_a_skipped_row_not_a_failed_run(home, capsys):
    bad = gemini_log.session(gemini_log.messages())
    bad["messages"][1]["tokens"]["input"] = "many"
    (home / ".gemini/tmp/4aa47759/chats/session-2026-03-27T00-00-bad.json").write_text(json.dumps(bad))
    assert main(["sessions", "--by", "day", "--tz", "UTC", "-f", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["skipped"]) == 1 and "messages[1].tokens.input" in doc["skipped"][0]["error"]
    assert main(["sessions", "--by", "day", "--tz", "UTC"]) == 0
    assert "skipped" in capsys.readouterr().out


# --- picking a session (#49.2) --------------------------------------------------------------------


def _profiled_path(capsys) -> str:
    return json.loads(capsys.readouterr().out)["source"]["path"]


def test_a_row_number_of_the_last_listing_picks_its_session(home, capsys):
    assert main(["profile", "2"]) == 2  # no listing yet
    assert "run tokprof sessions" in capsys.readouterr().err
    assert main(["sessions", "-f", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)["sessions"]
    assert main(["profile", "2", "-f", "json"]) == 0
    assert _profiled_path(capsys) == listed[1]["path"]
    assert main(["profile", "--session", "3", "-f", "json"]) == 0  # --session N is not ignored
    assert _profiled_path(capsys) == listed[2]["path"]
    assert main(["profile", "99"]) == 2
    assert f"rows 1 to {len(listed)}" in capsys.readouterr().err


def test_latest_and_an_id_prefix(home, capsys):
    assert main(["profile", "--latest", "-f", "json"]) == 0
    assert _profiled_path(capsys) == local_sessions()[0].path
    assert main(["profile", "--latest", "--agent", "codex", "-f", "json"]) == 0
    assert _profiled_path(capsys).endswith("rollout-2025-09-25T09-49-46-x.jsonl")
    assert main(["profile", "019a", "-f", "json"]) == 0  # no listing: the machine's sessions
    assert _profiled_path(capsys).endswith("rollout-2025-09-25T09-49-46-x.jsonl")
    assert main(["sessions"]) == 0
    capsys.readouterr()
    assert main(["profile", "b36c", "-f", "json"]) == 0
    assert "b36c9e17" in _profiled_path(capsys)


def test_an_ambiguous_prefix_lists_the_candidates_on_one_line(home, capsys):
    other = home / ".pi/agent/sessions/--work-app--/2026-06-06_sess-2.jsonl"
    lines = pi_log.v3_lines()
    lines[0] = dict(lines[0], id="sess-2")
    jsonl(other, lines)
    assert main(["sessions"]) == 0
    capsys.readouterr()
    assert main(["profile", "sess"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "2 sessions start with this id" in err and "sess-1" in err and "sess-2" in err
    assert main(["profile", "--latest", "--session", "1"]) == 2


# --- budgets per period (#49.5) -------------------------------------------------------------------


def _check(home: Path, target: Path, budgets: str, *extra: str) -> int:
    config = home / "tokprof.toml"
    config.write_text("[budgets]\n" + budgets, encoding="utf-8")
    return main(["check", str(target), "--config", str(config), "-f", "json", *extra])


def test_a_days_a_projects_and_a_sessions_spend_gate_a_directory(home, capsys):
    folder = home / ".pi/agent/sessions"  # two sessions of $0.0037 each, on 2026-06-05 (UTC), two projects
    budgets = 'max_cost_per_day = "$0.005"\ncost_per_project = "$0.01"\nmax_cost_per_session = 0.003\n'
    assert _check(home, folder, budgets) == 1
    metrics = {m["metric"]: m for m in json.loads(capsys.readouterr().out)["metrics"]}
    day, project, session = metrics["cost_per_day"], metrics["cost_per_project"], metrics["cost_per_session"]
    assert day["status"] == "fail" and "day over it: 2026-06-05 $0.0073" in day["reasons"][0]
    assert Decimal(str(day["value"])) == Decimal("0.007305")
    assert project["status"] == "pass" and project["value"] == 0.0036525
    assert session["status"] == "fail" and "sessions over it: " in session["reasons"][0]
    assert "sess-1 $0.0037" in session["reasons"][0] and "other-2 $0.0037" in session["reasons"][0]
    assert _check(home, folder, 'cost_per_day = "$1"\n') == 0
    capsys.readouterr()


def test_one_log_and_what_a_period_budget_cannot_measure(home, capsys, tmp_path):
    log = home / ".pi/agent/sessions/--work-app--/2026-06-05_sess-1.jsonl"
    assert _check(home, log, 'max_cost_per_session = "$0.001"\n', "--model", "qwen2.5") == 1
    failed = json.loads(capsys.readouterr().out)["metrics"][0]
    assert failed["metric"] == "cost_per_session" and "session over it: sess-1 $0.0037" in failed["reasons"][0]
    qwen = home / ".qwen/projects/work-app/chats/qs-1.jsonl"  # its model has no price: unknown, never $0
    assert _check(home, qwen, 'max_cost_per_day = "$1"\n', "--model", "qwen2.5") == 1
    failed = json.loads(capsys.readouterr().out)["metrics"][0]
    assert failed["value"] is None and failed["reasons"][0].startswith("unpriced")
    assert _check(home, home, 'max_cost_per_day = "$1"\ncost_per_day = "$2"\n') == 2
    assert "has a budget of its own" in capsys.readouterr().err


def test_an_unreadable_session_of_a_directory_is_a_note(home, capsys):
    bad = gemini_log.session(gemini_log.messages())
    bad["messages"][1]["tokens"]["input"] = "many"
    folder = home / ".gemini/tmp/4aa47759/chats"
    (folder / "session-2026-03-27T00-00-bad.json").write_text(json.dumps(bad))
    assert _check(home, folder, 'max_cost_per_session = "$1"\n') == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert any(note.startswith("skipped ") and "messages[1].tokens.input" in note for note in notes)


# --- tokprof diff (#49.4) -------------------------------------------------------------------------


TOOL = {"type": "function", "function": {"name": "grep", "description": "Search files.", "parameters": {}}}
OTHER = {"type": "function", "function": {"name": "read", "description": "Read a file.", "parameters": {}}}


def tiny_log(path: Path, system: str = "You are terse.", tools: list | None = None, second: str = "ok") -> Path:
    call = {"id": "c1", "type": "function", "function": {"name": "grep", "arguments": '{"q": "x"}'}}
    messages = [
        {"role": "system", "content": system},
        {"role": "user", "content": "Find x in the repo."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "x.py:1: x = 1\n" * 20},
        {"role": "assistant", "content": second},
        {"role": "user", "content": "Thanks."},
        {"role": "assistant", "content": "Done."},
    ]
    doc = {"model": "qwen2.5", "tools": [TOOL] if tools is None else tools, "messages": messages}
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def valid(doc: dict, kind: str) -> dict:
    """The document, checked against its JSON Schema in docs/schema."""
    from jsonschema import Draft202012Validator

    schema = json.loads((ROOT / "docs" / "schema" / f"{kind}.schema.json").read_text(encoding="utf-8"))
    errors = [f"{list(e.absolute_path)}: {e.message[:200]}" for e in Draft202012Validator(schema).iter_errors(doc)]
    assert not errors, errors
    return doc


def _diff(capsys, *argv: str) -> dict:
    assert main(["diff", *argv, "--model", "qwen2.5", "-f", "json", "--no-progress"]) == 0
    return valid(json.loads(capsys.readouterr().out), "diff")


def test_diff_of_two_logs_every_figure_a_b_change(tmp_path, capsys):
    a = tiny_log(tmp_path / "a.json")
    b = tiny_log(tmp_path / "b.json", tools=[TOOL, OTHER])
    doc = _diff(capsys, str(a), str(b))
    billed = doc["billed_input"]
    assert set(billed) == {"a", "b", "change"} and billed["change"] == billed["b"] - billed["a"] > 0
    assert all(set(doc[name]) == {"a", "b", "change"} for name in ("calls", "largest_prompt", "cost"))
    assert doc["buckets"]["tool_definitions"]["change"] > 0 and doc["buckets"]["conversation"]["change"] == 0
    assert doc["tools"]["read"]["a"] == 0 and doc["tools"]["read"]["b"] > 0  # a tool added: 0 before
    assert doc["same_conversation"] is True
    assert doc["first_change"] == {
        "call": 1,
        "part": "tools",
        "message": None,
        "detail": "the tools changed: added read",
    }
    assert doc["cost"]["a"] is None and doc["cost"]["change"] is None  # not priced: not recorded, never 0


def test_the_first_change_is_the_system_prompt_or_an_early_message(tmp_path, capsys):
    a = tiny_log(tmp_path / "a.json")
    system = _diff(capsys, str(a), str(tiny_log(tmp_path / "s.json", system="You are verbose.")))
    assert system["first_change"]["part"] == "system" and system["first_change"]["call"] == 1
    message = _diff(capsys, str(a), str(tiny_log(tmp_path / "m.json", second="fine")))
    assert message["first_change"] == {
        "call": 3,
        "part": "message",
        "message": 4,
        "detail": "message 4 (assistant) differs",
    }  # the system prompt is not counted among the messages
    other = tmp_path / "o.json"
    doc = json.loads(tiny_log(other).read_text())
    doc["messages"][1]["content"] = "Another task."
    other.write_text(json.dumps(doc))
    assert _diff(capsys, str(a), str(other))["same_conversation"] is False


def test_diff_of_a_saved_profile_and_its_baseline_and_the_text_outputs(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    log = tiny_log(tmp_path / "a.json")
    saved = tmp_path / "run.json"
    assert main(["profile", str(log), "--model", "qwen2.5", "-f", "json", "-o", str(saved)]) == 0
    config = tmp_path / "tokprof.toml"
    config.write_text("[budgets]\nbilled_input = 100000\n")
    baseline = tmp_path / "tokprof-baseline.json"
    assert main(["check", str(saved), "--config", str(config), "--update-baseline"]) == 0
    bigger = tiny_log(tmp_path / "b.json", tools=[TOOL, OTHER])
    capsys.readouterr()
    doc = _diff(capsys, str(baseline), str(bigger))
    assert doc["a"]["kind"] == "baseline" and doc["b"]["kind"] == "log"
    assert doc["billed_input"]["change"] > 0 and doc["tools"]["read"] == {"a": 0, "b": doc["tools"]["read"]["b"],
                                                                         "change": doc["tools"]["read"]["b"]}  # fmt: skip
    assert doc["buckets"]["system"]["a"] is None  # a baseline keeps no buckets
    assert main(["diff", str(saved), str(bigger), "--model", "qwen2.5", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "billed input" in out and "change" in out and "read" in out and max(map(len, out.splitlines())) <= 100
    assert main(["diff", str(saved), str(bigger), "--model", "qwen2.5", "-f", "markdown", "--no-progress"]) == 0
    assert "| billed input |" in capsys.readouterr().out
    assert main(["diff", str(saved), str(tmp_path / "none.json")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_the_actions_comment_ends_with_the_diff_against_the_baseline(tmp_path, monkeypatch, capsys, github):  # noqa: F811
    from tokprof.frontends import action

    monkeypatch.chdir(tmp_path)
    tiny_log(tmp_path / "run.json")
    Path("tokprof.toml").write_text('model = "qwen2.5"\nmax_increase = "900%"\n[budgets]\nbilled_input = 100000\n')
    assert main(["check", "run.json", "--update-baseline"]) == 0
    tiny_log(tmp_path / "run.json", tools=[TOOL, OTHER])  # the pull request adds a tool
    for name, value in {"LOG": "run.json", "COMMENT": "true", "GITHUB_TOKEN": "t0ken"}.items():
        monkeypatch.setenv(f"INPUT_{name}", value)
    capsys.readouterr()
    assert action.main() == 1  # the added tool is never called: unused_tool_waste regressed
    [body] = [r[2]["body"] for r in GitHub.requests if r[0] == "POST"]
    check, _, compared = body.partition("### tokprof diff")
    assert "### tokprof check" in check and "a: tokprof-baseline.json (baseline" in compared
    assert "| billed input |" in compared and "| read |" in compared
    monkeypatch.setenv("INPUT_COMPARE", "missing.json")  # a compared run that cannot be read: no diff, one line
    assert action.main() == 1
    assert "no diff in the comment: missing.json" in capsys.readouterr().out


# --- at scale: period rows from the incremental state ---------------------------------------------


def test_an_incremental_rerun_gives_period_rows_without_reading_unchanged_sessions(tmp_path, model_dir, monkeypatch):
    import csv

    import tokprof.formats as formats
    from test_sessions import claude_project, codex_tree

    logs = tmp_path / "logs"
    claude_project(logs / "claude")
    codex_tree(logs / "codex")
    out = tmp_path / "out"
    args = ["profile", str(logs), "--model", str(model_dir), "-f", "csv", "-o", f"{out}/", "--incremental"]
    args += ["--by", "day", "--by", "month", "--no-progress", "-j", "1"]
    assert main(args) == 0
    first = {name: (out / f"rollup_{name}.csv").read_text() for name in ("day", "month")}
    months = list(csv.DictReader((out / "rollup_month.csv").open()))
    assert months and all(row["month"] == "unknown" or len(row["month"]) == 7 for row in months)

    def no_reading(*args, **kwargs):
        raise AssertionError("an unchanged session was read again")

    monkeypatch.setattr(formats, "read_trace", no_reading)
    assert main(args) == 0
    assert {name: (out / f"rollup_{name}.csv").read_text() for name in ("day", "month")} == first


def test_a_second_listing_reads_only_new_or_changed_session_files(home, capsys, monkeypatch):
    import tokprof.formats as formats

    assert main(["sessions", "--by", "day", "--tz", "UTC", "-f", "json"]) == 0
    first = capsys.readouterr().out
    real, read = formats.read_trace, []

    def counting(path, *args, **kwargs):
        read.append(Path(path).name)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(formats, "read_trace", counting)
    assert main(["sessions", "--by", "day", "--tz", "UTC", "-f", "json"]) == 0
    assert capsys.readouterr().out == first and read == []  # every row from the state folder
    pi = home / ".pi/agent/sessions/--work-app--/2026-06-05_sess-1.jsonl"
    pi.write_text(pi.read_text() + "\n")  # changed: read again
    (home / ".qwen/projects/work-app/chats/qs-1.jsonl").unlink()  # gone: forgotten
    assert main(["sessions", "-f", "json"]) == 0
    assert read == ["2026-06-05_sess-1.jsonl"] and len(json.loads(capsys.readouterr().out)["sessions"]) == 5
    cache = json.loads((home.parent / "state" / "sessions-cache.json").read_text())["files"]
    assert not any(path.endswith("qs-1.jsonl") for path in cache)
    (home.parent / "state" / "sessions-cache.json").write_text("{damaged")  # a damaged cache: read again
    assert main(["sessions", "-f", "json"]) == 0 and len(read) == 6


def test_what_a_cache_miss_cost_is_estimated_from_the_reported_usage():
    from tokprof.pricing.spend import call_spends
    from tokprof.trace import Call, Trace, Usage

    def call(index: int, prompt: int, read: int, write: int, kind: str = "call", model: str = "claude-sonnet-4-5"):
        return Call(index, [], None, model=model, reported=Usage(prompt, read, write, 10), kind=kind)

    trace = Trace("t.jsonl", "claude-code")
    trace.calls = [
        call(0, 1000, 0, 1000),
        call(1, 1100, 0, 1100),  # an idle gap: the 1,000 cached tokens written again
        call(2, 1200, 1100, 100),  # read: nothing lost
        call(3, 600, 0, 600),  # the conversation cut short: not known, counted as nothing
        call(4, 700, 0, 700, kind="compaction"),
        call(5, 800, 0, 800, model="my-own-model"),  # no price: neither cost nor loss
    ]
    spends = call_spends(trace)
    assert [s.lost for s in spends] == [0, 345000, 0, 0, 0, None]  # 1,000 tokens at $3.75 less $0.30 a million
    assert spends[5].cost is None and spends[1].uncached == 0 and spends[1].cache_write == 1100


@pytest.mark.parametrize("columns", [80, 100, 200])
def test_the_period_table_fits_and_keeps_the_project(home, capsys, monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main(["sessions", "--by", "project", "--by", "model", "--tz", "UTC"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= columns and lines[1].startswith("project")
    assert any(line.startswith("total") for line in lines) and any("/home/me/app" in line for line in lines)


def test_a_cline_tasks_project_is_its_working_directory(home, monkeypatch):
    import test_format_cline as cline_log

    monkeypatch.delenv("CLINE_DATA_DIR", raising=False)
    monkeypatch.delenv("CLINE_DIR", raising=False)
    history, ui, metadata = cline_log.cline_task()
    cline_log.write_task(home / ".cline/data/tasks/1700000000000", history, ui, metadata)
    [row] = local_sessions("cline")
    assert row.project == "/work/app" and row.error is None


def test_the_machines_time_zone_without_tz(home, capsys, monkeypatch):
    import time

    monkeypatch.setenv("TZ", "Pacific/Auckland")
    time.tzset()
    try:
        assert main(["sessions", "--by", "day", "--agent", "codex", "-f", "json"]) == 0
        doc = json.loads(capsys.readouterr().out)
    finally:
        monkeypatch.undo()
        time.tzset()
    assert [row["day"] for row in doc["rows"]] == ["2025-09-26"] and doc["time_zone"] in ("NZST", "NZDT")


def test_the_state_folder(monkeypatch, tmp_path):
    from tokprof.base.files import state_dir

    monkeypatch.delenv("TOKPROF_STATE_DIR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert state_dir() == tmp_path / "xdg" / "tokprof"
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert state_dir() == tmp_path / ".local" / "state" / "tokprof"


# --- the dashboard (#49.3) --------------------------------------------------------------------------


def test_the_dashboard_over_a_directory_in_headless_chromium(home, tmp_path, capsys):
    import shutil

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    folder = tmp_path / "logs"
    folder.mkdir()
    shutil.copy(home / ".claude/projects/-home-me-app/s1.jsonl", folder / "s1.jsonl")
    shutil.copy(home / ".pi/agent/sessions/--work-app--/2026-06-05_sess-1.jsonl", folder / "pi.jsonl")
    bad = gemini_log.session(gemini_log.messages())
    bad["messages"][1]["tokens"]["input"] = "many"
    (folder / "session-2026-03-27T00-00-bad.json").write_text(json.dumps(bad))
    site = tmp_path / "site"
    assert main(["report", str(folder), "-o", f"{site}/", "--model", "qwen2.5", "--no-progress"]) == 0
    index = (site / "index.html").read_text()
    pages = sorted(p.name for p in site.glob("session-*.html"))
    assert len(pages) == 2 and len(index) < 5_000_000 and "messages[1].tokens.input" in index  # skipped, with why
    assert "not recorded" in index  # a Claude Code log's system prompt: never 0
    assert "what to change first" in index  # each costliest session's first action (#47.2), as its page has them
    assert all("What to change" in (site / page).read_text() for page in pages)
    for page in pages:
        assert '</head><body><nav><a href="index.html">' in (site / page).read_text() and f'href="{page}"' in index
    if chromium is None:
        pytest.skip("needs Chromium (Debian package chromium)")
    sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        try:
            for width in (400, 1280):
                page = browser.new_page(viewport={"width": width, "height": 800})
                errors: list[str] = []
                page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.goto((site / "index.html").as_uri())
                assert page.evaluate("document.documentElement.scrollWidth") <= width  # fits: no sideways scroll
                titles = page.eval_on_selector_all("a[href^='session-']", "els => els.map(e => e.title)")
                assert {"5e55-1", "sess-1"} <= set(titles)  # every session named
                links = page.eval_on_selector_all("a", "els => els.map(e => e.href)")
                assert links and all(Path(link.removeprefix("file://")).is_file() for link in links)  # they resolve
                assert errors == []  # (a session's page is tokprof report's, tested in test_html.py)
                page.close()
        finally:
            browser.close()


def test_a_damaged_baseline_is_one_line(tmp_path, capsys):
    baseline = tmp_path / "tokprof-baseline.json"
    doc = {"schema_version": 1, "tokprof_version": "0", "model": "qwen2.5", "metrics": {"billed_input": 5}, "tools": {}}
    doc["tools"] = {"grep\x1b[31m": "many"}
    baseline.write_text(json.dumps(doc))
    assert main(["diff", str(baseline), str(baseline)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "tools.grep\\x1b[31m: expected a number, found str" in err


def test_diff_of_two_saved_profiles_and_of_priced_runs(home, tmp_path, capsys):
    log = home / ".claude/projects/-home-me-app/s1.jsonl"
    saved = tmp_path / "run.json"
    assert main(["profile", str(log), "--model", "qwen2.5", "-f", "json", "-o", str(saved)]) == 0
    doc = _diff(capsys, str(saved), str(saved))
    assert doc["a"]["kind"] == doc["b"]["kind"] == "profile" and doc["same_conversation"] is None
    assert doc["cost"]["a"] > 0 and doc["cost"]["change"] == 0
    assert set(doc["cost_parts"]) == {"input", "cache_write", "cache_read", "output", "other", "total"}
    assert doc["cost_parts"]["total"]["a"] == doc["cost"]["a"] and doc["cache_miss_cost"]["change"] == 0


def test_tool_call_ids_are_no_change(tmp_path, capsys):
    a = tiny_log(tmp_path / "a.json")
    doc = json.loads(a.read_text())
    doc["messages"][2]["tool_calls"][0]["id"] = "c9"  # another run's ids
    doc["messages"][3]["tool_call_id"] = "c9"
    b = tmp_path / "b.json"
    b.write_text(json.dumps(doc))
    found = _diff(capsys, str(a), str(b))
    assert found["same_conversation"] is True and found["first_change"] is None


def test_the_dashboards_index_of_10000_sessions_stays_under_5_mb():
    from datetime import timedelta

    from tokprof.analyses.periods import SessionSpend
    from tokprof.analyses.sessions import SessionRow
    from tokprof.analyses.site import Site, SitePage
    from tokprof.pricing.spend import CallSpend
    from tokprof.render.site import index_page

    site = Site("/home/someone/agent-logs")
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    buckets = {"system": 1000, "tool_definitions": 2000, "tool_results": 3000, "conversation": 4000}
    for number in range(10_000):
        ident = f"{number:08x}-1111-2222-3333-444455556666"
        project = f"/home/someone/projects/project-{number % 40}/with/a/longish/path"
        row = SessionRow(
            ident, f"{ident}.jsonl", "claude-code", "claude-sonnet-4-5", 30, 0, 10_000, 10_000, buckets, True
        )
        row.cost, row.priced = 1.2345, True
        site.pages.append(SitePage(f"session-{number + 1:05d}.html", row, "claude-code", project))
        when = start + timedelta(hours=number)
        spend = CallSpend(when, "claude-sonnet-4-5", 10, 9000, 990, 100, 123_450_000, 0, project)
        site.spends.append(SessionSpend("claude-code", project, ident, row.path, (spend,)))
    index = index_page(site)
    assert len(index.encode("utf-8")) < 5_000_000 and index.count("<tr>") > 10_000
