"""The Action end to end in a hostile CI environment (#33 items 4, 8): the fixed-seed mutator of the
runner's environment (event payloads that are junk, endless or deep; GITHUB_OUTPUT and
GITHUB_STEP_SUMMARY unwritable; API answers malformed, endless pages, redirects to another host)
with a log whose tool is named as a workflow command and a mention. Against the stub GitHub API of
test_action_hostile on 127.0.0.1. Every run ends with the check's exit code, no traceback, no line of
standard output that a runner would obey but tokprof's own annotations, and no ping in a comment."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from test_action_hostile import Stub, comment, serve

from tokprof.frontends import action

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "incident_session.json"
EVIL_TOOL = "::error file=app.py::pwned @octocat"
OURS = re.compile(r"^::(error|warning) title=tokprof( check)?::.*$", re.M)  # tokprof's own annotations


def evil_log(tmp_path: Path) -> Path:
    text = SAMPLE.read_text(encoding="utf-8")
    name = sorted(set(re.findall(r'"name": "([a-z_]+)"', text)))[0]
    path = tmp_path / "evil.json"
    path.write_text(text.replace(f'"name": "{name}"', f'"name": {json.dumps(EVIL_TOOL)}'), encoding="utf-8")
    return path


EVENTS = [
    b'{"pull_request": {"number": 7}}',
    b"[" * 50_000,
    b"\xff\xfe",
    b"null",
    b'{"pull_request": []}',
    b'{"pull_request": {"number": "7"}}',
    "/dev/zero",
    "a directory",
]
OUTPUTS = ["fine", "a directory", "/dev/full", "missing/parent/file"]
ANSWERS = [b"[]", b"{", b'{"message": "Not Found"}', b"[1, 2, null]", "a full page", "redirect", b"\x00" * 64]


def environment(rng: random.Random, tmp_path: Path, url: str, handler) -> dict[str, str]:
    event = rng.choice(EVENTS)
    if event == "/dev/zero":
        event_path = "/dev/zero"
    elif event == "a directory":
        event_path = str(tmp_path)
    else:
        (tmp_path / "event.json").write_bytes(event)
        event_path = str(tmp_path / "event.json")
    places = {
        "fine": str(tmp_path / "out.txt"),
        "a directory": str(tmp_path),
        "/dev/full": "/dev/full",
        "missing/parent/file": str(tmp_path / "missing" / "parent" / "file"),
    }
    answer = rng.choice(ANSWERS)
    handler.location = "http://example.invalid/steal" if answer == "redirect" else None
    handler.answer = (
        json.dumps([comment("hi", "someone", i) for i in range(100)]).encode()
        if answer == "a full page"
        else answer
        if isinstance(answer, bytes)
        else b"[]"
    )
    return {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_PATH": event_path,
        "GITHUB_OUTPUT": places[rng.choice(OUTPUTS)],
        "GITHUB_STEP_SUMMARY": places[rng.choice(OUTPUTS)],
        "GITHUB_API_URL": url,
        "GITHUB_REPOSITORY": "acme/agent",
        "INPUT_COMMENT": "true",
        "INPUT_GITHUB_TOKEN": "t0ken",
        "INPUT_CONFIG": str(ROOT / "samples" / "tokprof.toml"),
    }


@pytest.fixture
def api():
    class Handler(Stub):
        answer, location, seen = b"[]", None, []

    server = serve(Handler)
    yield Handler, f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


@pytest.mark.parametrize("n", range(6))
def test_the_action_in_a_hostile_ci_environment(n, api, tmp_path, monkeypatch, capsys):
    handler, url = api
    rng = random.Random(f"33-ci-{n}")
    monkeypatch.setenv("INPUT_LOG", str(evil_log(tmp_path)))
    for key, value in environment(rng, tmp_path, url, handler).items():
        monkeypatch.setenv(key, value)
    code = action.main()
    out, err = capsys.readouterr()
    assert code in (0, 1, 2), err
    assert "Traceback" not in out + err
    theirs = OURS.sub("", out)
    assert not re.search(r"^[ \t]*(::|##\[)", theirs, re.M), theirs
    for method, path, body in handler.seen:
        if method in ("POST", "PATCH"):
            assert "@octocat" not in body and body.startswith(github_marker())
        else:
            assert "example.invalid" not in path


def github_marker() -> str:
    from tokprof.frontends.github import MARKER

    return MARKER


def test_the_comment_is_posted_safely(api, tmp_path, monkeypatch, capsys):
    handler, url = api
    (tmp_path / "event.json").write_text('{"pull_request": {"number": 7}}')
    monkeypatch.setenv("INPUT_LOG", str(evil_log(tmp_path)))
    for key, value in {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_PATH": str(tmp_path / "event.json"),
        "GITHUB_OUTPUT": str(tmp_path / "out.txt"),
        "GITHUB_API_URL": url,
        "GITHUB_REPOSITORY": "acme/agent",
        "INPUT_COMMENT": "true",
        "INPUT_GITHUB_TOKEN": "t0ken",
        "INPUT_CONFIG": str(ROOT / "samples" / "tokprof.toml"),
    }.items():
        monkeypatch.setenv(key, value)
    code = action.main()
    out = capsys.readouterr().out
    assert code in (0, 1) and "tokprof: pull-request comment created" in out
    posted = [body for method, _, body in handler.seen if method == "POST"]
    assert len(posted) == 1 and "@\u200boctocat" in posted[0] and "@octocat" not in posted[0]
    assert "status=" in (tmp_path / "out.txt").read_text()
