"""The GitHub Action (action.yml, tokprof/frontends/action.py) run as a runner runs it: a fake GITHUB_*
environment, the step summary and output files, and a stub of GitHub's API on 127.0.0.1."""

from __future__ import annotations

import os

import json
import shutil
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from conftest import ROOT

SAMPLES = ROOT / "samples"
GOLD = ROOT / "tests" / "fixtures" / "action_comment.md"


class GitHub(BaseHTTPRequestHandler):
    """Issue comments of one pull request, kept in memory; every request is recorded."""

    comments: list[dict] = []
    requests: list[tuple[str, str, dict | None]] = []

    def _reply(self, status: int, body) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict | None:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length)) if length else None

    def do_GET(self):  # noqa: N802
        self.requests.append(("GET", self.path, None))
        self._reply(200, self.comments if "/issues/7/comments" in self.path else [])

    def do_POST(self):  # noqa: N802
        body = self._body()
        self.requests.append(("POST", self.path, body))
        self.comments.append(
            {"id": len(self.comments) + 1, "body": body["body"], "user": {"login": "github-actions[bot]"}}
        )
        self._reply(201, self.comments[-1])

    def do_PATCH(self):  # noqa: N802
        body = self._body()
        self.requests.append(("PATCH", self.path, body))
        comment_id = int(self.path.rsplit("/", 1)[1])
        self.comments[comment_id - 1]["body"] = body["body"]
        self._reply(200, self.comments[comment_id - 1])

    def log_message(self, *args):  # the test's output stays quiet
        pass


@pytest.fixture
def github(tmp_path, monkeypatch):
    GitHub.comments, GitHub.requests = [], []
    server = HTTPServer(("127.0.0.1", 0), GitHub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 7}}))
    for name, value in {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": "acme/agent",
        "GITHUB_API_URL": f"http://127.0.0.1:{server.server_port}",
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "GITHUB_OUTPUT": str(tmp_path / "output.txt"),
    }.items():
        monkeypatch.setenv(name, value)
    yield server
    server.shutdown()


def outputs(tmp_path) -> dict[str, str]:
    lines = (tmp_path / "output.txt").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines)


def catalogue_change(tmp_path, monkeypatch):
    """A catalogue with a baseline, then one tool longer and one added: what a pull request does."""
    from tokprof.frontends.cli import main

    work = tmp_path / "repo"
    work.mkdir()
    shutil.copy(SAMPLES / "tools_anthropic.json", work / "tools.json")
    shutil.copy(SAMPLES / "system_prompt.txt", work / "system.txt")
    (work / "tokprof.toml").write_text('max_increase = "5%"\n[budgets]\ntool_definitions = 5000\n')
    monkeypatch.chdir(work)
    assert main(["check", "--tools", "tools.json", "--system", "system.txt", "--update-baseline"]) == 0
    tools = json.loads((work / "tools.json").read_text())
    tools[0]["description"] += " It also explains every field of every record it returns, at length, twice."
    tools.append(
        {
            "name": "restart_service",
            "description": "Restart one service.",
            "input_schema": {"type": "object", "properties": {"name": {"type": "string"}}},
        }
    )
    (work / "tools.json").write_text(json.dumps(tools))
    return work


def test_the_action_checks_comments_and_sets_outputs(tmp_path, monkeypatch, capsys, github):
    from tokprof.frontends import action

    catalogue_change(tmp_path, monkeypatch)
    capsys.readouterr()
    for name, value in {
        "TOOLS": "tools.json",
        "SYSTEM": "system.txt",
        "COMMENT": "true",
        "GITHUB_TOKEN": "t0ken",
    }.items():
        monkeypatch.setenv(f"INPUT_{name}", value)
    assert action.main() == 1
    out = capsys.readouterr().out
    assert "::error title=tokprof " in out and "pull-request comment created" in out
    found = outputs(tmp_path)
    assert found["status"] == "fail" and found["exit-code"] == "1" and int(found["tool-definitions"]) > 0
    assert "### tokprof check: FAILED" in (tmp_path / "summary.md").read_text()
    [(method, path, body)] = [r for r in GitHub.requests if r[0] == "POST"]
    assert path == "/repos/acme/agent/issues/7/comments" and body["body"].startswith("<!-- tokprof-check -->\n")
    comment = body["body"].split("\n", 1)[1]
    if os.environ.get("TOKPROF_REGENERATE") and comment != GOLD.read_text(encoding="utf-8"):
        GOLD.write_text(comment, encoding="utf-8")  # the gold comment, rewritten on purpose
    assert comment == GOLD.read_text(encoding="utf-8")
    assert action.main() == 1  # a second run updates the same comment
    assert "pull-request comment updated" in capsys.readouterr().out
    assert len(GitHub.comments) == 1 and [r[0] for r in GitHub.requests].count("PATCH") == 1


def test_without_a_token_the_comment_is_skipped(tmp_path, monkeypatch, capsys, github):
    from tokprof.frontends import action

    catalogue_change(tmp_path, monkeypatch)
    monkeypatch.setenv("INPUT_TOOLS", "tools.json")
    monkeypatch.setenv("INPUT_SYSTEM", "system.txt")
    monkeypatch.setenv("INPUT_COMMENT", "true")
    assert action.main() == 1
    assert "no pull-request comment: no github-token was given" in capsys.readouterr().out
    assert GitHub.requests == []


def test_the_sample_and_its_tightened_config(tmp_path, monkeypatch, capsys, github):
    from tokprof.frontends import action

    monkeypatch.chdir(SAMPLES)
    monkeypatch.setenv("INPUT_LOG", "incident_session.json")
    assert action.main() == 0
    assert outputs(tmp_path)["status"] == "pass" and outputs(tmp_path)["billed-input"] == "2933755"
    tight = tmp_path / "tight"
    tight.mkdir()
    shutil.copy(SAMPLES / "tokprof-baseline.json", tight / "tokprof-baseline.json")
    (tight / "tokprof.toml").write_text(
        (SAMPLES / "tokprof.toml").read_text().replace("tool_definitions = 3000", "tool_definitions = 2000")
    )
    (tmp_path / "output.txt").unlink()
    monkeypatch.setenv("INPUT_CONFIG", str(tight / "tokprof.toml"))
    assert action.main() == 1
    assert outputs(tmp_path)["status"] == "fail"
    assert "exceeded the budget" in capsys.readouterr().out


def test_bad_input_is_one_line_and_an_error_status(tmp_path, monkeypatch, capsys, github):
    from tokprof.frontends import action

    monkeypatch.setenv("INPUT_LOG", str(tmp_path / "missing.json"))
    assert action.main() == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such file" in err
    assert outputs(tmp_path) == {"status": "error", "exit-code": "2"}


def test_action_yml_runs_the_module_with_every_input():
    import yaml

    spec = yaml.safe_load((ROOT / "action.yml").read_text())
    assert spec["runs"]["using"] == "composite"
    step = next(s for s in spec["runs"]["steps"] if s.get("id") == "check")
    assert "-m tokprof.frontends.action" in step["run"]
    names = {name.upper().replace("-", "_") for name in spec["inputs"]} - {"VERSION", "PYTHON_VERSION"}
    assert {key.removeprefix("INPUT_") for key in step["env"]} == names
    assert all("${{" not in s.get("run", "") for s in spec["runs"]["steps"])  # inputs reach scripts as variables only
    assert set(spec["outputs"]) >= {"status", "exit-code", "tool-definitions", "billed-input"}


def test_the_pre_commit_hook_entry_runs(tmp_path, monkeypatch, capsys):
    import shlex

    import yaml

    from tokprof.frontends.cli import main

    [hook] = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    command = shlex.split(hook["entry"])
    assert command[0] == "tokprof"
    monkeypatch.chdir(SAMPLES)
    assert main([*command[1:], "incident_session.json"]) == 0
