"""GitHub Actions: the step summary, annotations, step outputs and a pull-request comment.

Everything here reads the runner's environment (``GITHUB_STEP_SUMMARY``, ``GITHUB_OUTPUT``,
``GITHUB_ACTIONS``, ``GITHUB_EVENT_PATH``, ``GITHUB_API_URL``, ``GITHUB_REPOSITORY``) and does
nothing outside a runner. The comment is made or updated through the REST API the runner can
reach, and found again by a hidden marker, so that a pull request has one tokprof comment.
"""

from __future__ import annotations

import json
import os
import sys
import re
import urllib.error
import urllib.parse
import urllib.request
from typing import IO, TYPE_CHECKING, Any

import tokprof.base.bounded as bounded
from tokprof.base.text import visible

if TYPE_CHECKING:
    from tokprof import CheckResult

#: The hidden line that marks tokprof's pull-request comment.
MARKER = "<!-- tokprof-check -->"
#: Who comments with the runner's token.
BOT = "github-actions[bot]"
#: GitHub's limit on a comment's length, in characters.
COMMENT_LIMIT = 65_536
#: Pages of 100 comments read looking for tokprof's own, at most.
MAX_PAGES = 30
#: The largest API answer and event payload read, in bytes.
ANSWER_LIMIT = 32 * 1024 * 1024
EVENT_LIMIT = 32 * 1024 * 1024
#: What breaks a mention or an autolink in a comment: a zero-width space, which shows as nothing and
#: survives every stage of GitHub's rendering. (An HTML entity such as ``&#64;`` does not: mentions and
#: issue references are found in the rendered text, where the entity is an ``@`` again.)
BREAK = "\u200b"
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
_REFERENCE = re.compile(r"#(?=[0-9])")
_AUTOLINK = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]*):/(?=/)")
_WWW = re.compile(r"\b(www)(?=\.)", re.I)
#: A character reference (``&commat;``, ``&#x40;``: an ``@`` once rendered, where mentions are found)
#: and a ``GH-12`` issue reference.
_ENTITY = re.compile(r"&(?=#|[A-Za-z][A-Za-z0-9]*;)")
_GH = re.compile(r"\b(GH)-(?=[0-9])", re.I)


def report(result: CheckResult, annotations_to: IO[str] | None = None) -> None:
    """Append the Markdown report to the step summary and, on a runner, print annotations (to
    standard output unless told otherwise)."""
    from tokprof.runs.reports import render_report

    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        try:
            with open(summary, "a", encoding="utf-8") as f:
                f.write(render_report(result, "markdown"))
        except OSError as exc:
            print(f"tokprof: warning: cannot append to GITHUB_STEP_SUMMARY: {exc.strerror}", file=sys.stderr)
    if os.environ.get("GITHUB_ACTIONS") == "true":
        (annotations_to or sys.stdout).write(github_annotations(result))


def _command_data(text: str) -> str:
    """A workflow command's message as GitHub reads it: percent signs, carriage returns and newlines escaped (a runner
    ends a line at a lone carriage return too, so one left raw could start a command of its own)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _title(name: str) -> str:
    """A server's name (the project's MCP configuration's: anyone's, on a pull request) as part of a
    workflow command's ``title`` property: one line, colons shown as ``_`` (a colon would end the
    properties), and a comma or percent sign escaped as GitHub reads properties (a raw comma would
    end the title, and what follows it, ``file=...,line=...``, would move the annotation)."""
    return visible(name).replace(":", "_").replace("%", "%25").replace(",", "%2C")


def github_annotations(check: CheckResult) -> str:
    """Workflow commands that GitHub Actions shows as annotations: a budget that fails is an error,
    one that warns a warning, an MCP server that fails an error."""
    lines = []
    for m in check.metrics:
        if m.status in ("fail", "warn"):
            kind = "error" if m.status == "fail" else "warning"
            message = _command_data("; ".join(m.reasons))
            lines.append(f"::{kind} title=tokprof {m.name}::{message}")
    for server in check.servers:
        if server.status == "fail":
            message = _command_data("; ".join(server.reasons))
            lines.append(f"::error title=tokprof MCP {server.kind} {_title(server.name)}::{message}")
    return "".join(line + "\n" for line in lines)


def outputs(result: CheckResult) -> dict[str, str]:
    """The step outputs: the status, the exit code, and each metric's value as a plain number."""
    values = {"status": result.status, "exit-code": str(result.exit_code)}
    for metric in result.metrics:
        if metric.value is not None:
            number = float(metric.value)
            values[metric.name.replace("_", "-")] = str(int(number)) if number.is_integer() else repr(number)
    return values


def set_outputs(values: dict[str, str]) -> None:
    """Write step outputs to ``GITHUB_OUTPUT`` (values are one line each: numbers and words)."""
    path = os.environ.get("GITHUB_OUTPUT")
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as f:
            for key, value in values.items():
                f.write(f"{key}={value.replace(chr(10), ' ')}\n")
    except OSError as exc:
        print(
            f"tokprof: warning: cannot write the step outputs to GITHUB_OUTPUT: {exc.strerror or exc}", file=sys.stderr
        )


def pull_request(event_path: str | None) -> int | None:
    """The pull request's number from the event payload, when the workflow runs for one."""
    if not event_path:
        return None
    try:
        data = bounded.read_bytes(event_path, "event", EVENT_LIMIT)  # /dev/zero is read no further
        event = json.loads(data.decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    number = (event.get("pull_request") or {}).get("number") if isinstance(event, dict) else None
    return number if isinstance(number, int) else None


class _SameHost(urllib.request.HTTPRedirectHandler):
    """Redirects are followed only within the API's own scheme, host and port: the token is never
    sent anywhere else."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        old, new = (
            urllib.parse.urlsplit(req.full_url),
            urllib.parse.urlsplit(urllib.parse.urljoin(req.full_url, newurl)),
        )
        if (old.scheme, old.netloc) != (new.scheme, new.netloc):
            raise urllib.error.URLError(
                f"the API redirected to another host ({visible(new.netloc)[:80]}): not followed"
            )
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _request(method: str, url: str, token: str, body: dict | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url,
        data=data,
        method=method,
        headers={
            "Authorization": f"Bearer {token}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "Content-Type": "application/json",
            "User-Agent": "tokprof",
        },
    )
    with urllib.request.build_opener(_SameHost).open(request, timeout=30) as response:
        raw = response.read(ANSWER_LIMIT + 1)
    if len(raw) > ANSWER_LIMIT:
        raise ValueError(f"the API's answer to {method} is over {ANSWER_LIMIT:,} bytes")
    try:
        return json.loads(raw.decode("utf-8")) if raw else None
    except (ValueError, RecursionError):
        raise ValueError(f"the API's answer to {method} is not JSON") from None


def comment_text(body: str) -> str:
    """A report made safe to post: no @mention or @org/team pings anyone, no #123 or owner/repo#123
    links another issue, no bare URL becomes a link (each is broken by :data:`BREAK` after its ``@``,
    its ``#``, the first ``/`` of its ``://`` or its ``www``, so that it shows the same), no character
    reference is read as one (``&commat;alice``, an ``@`` once rendered: broken after its ``&``, so it
    shows as written) and no GH-12 links an issue (broken after its ``-``), and at most
    :data:`COMMENT_LIMIT` characters with the marker, cut with a line that says so."""
    text = _MENTION.sub("@" + BREAK, body)
    text = _REFERENCE.sub("#" + BREAK, text)
    text = _AUTOLINK.sub(lambda m: m.group(1) + ":/" + BREAK, text)
    text = _WWW.sub(lambda m: m.group(1) + BREAK, text)
    text = _ENTITY.sub("&" + BREAK, text)
    text = _GH.sub(lambda m: m.group(1) + "-" + BREAK, text)
    text = f"{MARKER}\n{text}"
    if len(text) > COMMENT_LIMIT:
        note = (
            f"\n\n**(cut: the report is {len(text):,} characters, over GitHub's {COMMENT_LIMIT:,}-character "
            "limit for a comment; the whole report is in the job's step summary)**\n"
        )
        text = text[: COMMENT_LIMIT - len(note)].rsplit("\n", 1)[0] + note
    return text


def _own(comment: Any, login: str) -> bool:
    """Whether a comment is tokprof's: it has the marker and was written by ``login``."""
    if not isinstance(comment, dict) or not isinstance(comment.get("id"), int):
        return False
    user = comment.get("user")
    author = user.get("login") if isinstance(user, dict) else None
    body = comment.get("body")
    return author == login and isinstance(body, str) and body.startswith(MARKER)


def _login(base: str, token: str) -> str:
    """Who the token comments as: the user a personal token belongs to, else the Actions bot (the
    runner's token cannot read /user)."""
    try:
        user = _request("GET", f"{base}/user", token)
    except (urllib.error.URLError, OSError, ValueError):
        user = None
    login = user.get("login") if isinstance(user, dict) else None
    return login if isinstance(login, str) and login else BOT


def upsert_comment(body: str, token: str, repository: str, number: int, api_url: str = "https://api.github.com") -> str:
    """Create tokprof's comment on a pull request, or update the one it made before (found by
    :data:`MARKER`); returns "created" or "updated"."""
    root = api_url.rstrip("/")
    base = f"{root}/repos/{repository}/issues"
    text = comment_text(body)
    login = _login(root, token)
    for page in range(1, MAX_PAGES + 1):
        comments = _request("GET", f"{base}/{number}/comments?per_page=100&page={page}", token)
        if comments is None:
            comments = []
        if not isinstance(comments, list):
            raise ValueError("the API's list of comments is not a list")
        for comment in comments:
            if _own(comment, login):
                _request("PATCH", f"{base}/comments/{comment['id']}", token, {"body": text})
                return "updated"
        if len(comments) < 100:
            break
    else:
        raise ValueError(
            f"the pull request has over {MAX_PAGES * 100:,} comments (or the API always answers a full page)"
        )
    _request("POST", f"{base}/{number}/comments", token, {"body": text})
    return "created"


__all__ = ["MARKER", "comment_text", "outputs", "pull_request", "report", "set_outputs", "upsert_comment"]


def annotation_text(text: str) -> str:
    """Text for a workflow command: one visible line, at most 1,000 characters, escaped as GitHub
    reads it (``%``, ``\r``, ``\n``), so that nothing from a log can end the command or start another."""
    from tokprof.base.text import shorten, visible

    return shorten(visible(text), 1000).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def error_annotation(message: str) -> str | None:
    """On a GitHub Actions runner, the workflow command that shows an error as an annotation."""
    if os.environ.get("GITHUB_ACTIONS") != "true":
        return None
    return f"::error title=tokprof::{annotation_text(message)}\n"
