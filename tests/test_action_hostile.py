"""The pull-request comment and the runner's files against hostile input (#33 item 4): mentions and
links from a log, comments by others with the marker, redirects, malformed or endless API answers,
/dev/zero as the event, an unwritable GITHUB_OUTPUT, a report over GitHub's limit. A stub of
GitHub's API on 127.0.0.1."""

from __future__ import annotations

import json
import re
import threading
import urllib.error
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from tokprof.frontends import github


class Stub(BaseHTTPRequestHandler):
    """Answers every GET with ``answer`` (bytes) or redirects to ``location``; records requests."""

    answer: bytes = b"[]"
    location: str | None = None
    seen: list[tuple[str, str, str | None]] = []

    def do_GET(self):
        self.seen.append(("GET", self.path, self.headers.get("Authorization")))
        if self.location:
            self.send_response(302)
            self.send_header("Location", self.location)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.answer)))
        self.end_headers()
        self.wfile.write(self.answer)

    def _write(self, method):
        length = int(self.headers.get("Content-Length") or 0)
        self.seen.append((method, self.path, json.loads(self.rfile.read(length))["body"]))
        data = b'{"id": 99}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        self._write("POST")

    def do_PATCH(self):
        self._write("PATCH")

    def log_message(self, *args):
        pass


def serve(handler):
    server = HTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def api():
    class Handler(Stub):
        answer, location, seen = b"[]", None, []

    server = serve(Handler)
    yield Handler, f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def comment(body, login, id=1):
    return {"id": id, "body": body, "user": {"login": login}}


def test_mentions_and_links_are_neutralised():
    source = "tool @alice and @acme/team, mail a@b.example, see https://evil.example/x or WWW.evil.example, #12, a/b#3"
    text = github.comment_text(source)
    assert not re.search(r"@\w|#\d|://|www\.", text, re.I), text
    assert text.replace(github.BREAK, "") == github.MARKER + "\n" + source  # shown as written
    assert text.startswith(github.MARKER + "\n")


def test_character_references_and_gh_references_are_neutralised():
    """``&commat;`` and ``&#x40;`` are an ``@`` in the rendered text, where GitHub finds mentions (the
    Markdown of a check escapes ``#``, not ``&``); GH-12 links issue 12."""
    source = "tool &commat;alice, &#x40;bob, &#64;carol, &num;12, see GH-12 and gh-3; AT&T & co; x&y;"
    text = github.comment_text(source)
    assert not re.search(r"&#|&[A-Za-z][A-Za-z0-9]*;|\bGH-\d", text, re.I), text
    assert text.replace(github.BREAK, "") == github.MARKER + "\n" + source  # shown as written
    assert "AT&T & co" in text  # an ampersand that starts no reference is left as it is


def test_a_long_report_is_cut_and_says_so():
    text = github.comment_text("| row |\n" * 20_000)
    assert len(text) <= github.COMMENT_LIMIT and "cut: the report is" in text and "step summary" in text
    assert len(github.comment_text("short")) < 100


def test_only_the_bots_own_comment_is_edited(api):
    handler, url = api
    handler.answer = json.dumps(
        [comment(github.MARKER + "\nmine? no", "mallory"), comment("quoting " + github.MARKER, github.BOT, 2)]
    ).encode()
    assert github.upsert_comment("report", "t0ken", "acme/agent", 7, url) == "created"
    assert [m for m, _, _ in handler.seen if m != "GET"] == ["POST"]
    handler.seen.clear()
    handler.answer = json.dumps([comment(github.MARKER + "\nold", github.BOT, 5)]).encode()
    assert github.upsert_comment("report", "t0ken", "acme/agent", 7, url) == "updated"
    assert [(m, p) for m, p, _ in handler.seen if m != "GET"] == [("PATCH", "/repos/acme/agent/issues/comments/5")]


def test_a_redirect_to_another_host_is_not_followed_with_the_token(api):
    handler, url = api

    class Other(Stub):
        answer, location, seen = b"[]", None, []

    other = serve(Other)
    try:
        handler.location = f"http://localhost:{other.server_port}/steal"
        with pytest.raises(urllib.error.URLError, match="another host"):
            github.upsert_comment("report", "t0ken", "acme/agent", 7, url)
        assert Other.seen == []
    finally:
        other.shutdown()


@pytest.mark.parametrize(
    "answer, message",
    [
        (b'{"message": "odd"}', "not a list"),
        (b"<html>rate limited</html>", "not JSON"),
        (b"[" * 100_000, "not JSON"),
    ],
)
def test_malformed_answers_are_one_line(api, answer, message):
    handler, url = api
    handler.answer = answer
    with pytest.raises(ValueError, match=message):
        github.upsert_comment("report", "t0ken", "acme/agent", 7, url)


def test_an_api_that_always_answers_a_full_page_is_left(api):
    handler, url = api
    handler.answer = json.dumps([comment("hi", "someone", i) for i in range(100)]).encode()
    with pytest.raises(ValueError, match="always answers a full page"):
        github.upsert_comment("report", "t0ken", "acme/agent", 7, url)
    assert sum(1 for m, p, _ in handler.seen if "/comments?" in p) == github.MAX_PAGES


def test_endless_event_and_unwritable_outputs(tmp_path, monkeypatch, capsys):
    assert github.pull_request("/dev/zero") is None
    (tmp_path / "deep.json").write_text("[" * 100_000)
    assert github.pull_request(str(tmp_path / "deep.json")) is None
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path))  # a directory: cannot be appended to
    github.set_outputs({"status": "pass"})
    err = capsys.readouterr().err
    assert err.startswith("tokprof: warning: cannot write the step outputs") and err.count("\n") == 1
