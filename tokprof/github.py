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
import urllib.error
import urllib.request
from typing import IO, Any

from tokprof.analyses.budgets import CheckResult

#: The hidden line that marks tokprof's pull-request comment.
MARKER = "<!-- tokprof-check -->"


def report(result: CheckResult, annotations_to: IO[str] | None = None) -> None:
    """Append the Markdown report to the step summary and, on a runner, print annotations (to
    standard output unless told otherwise)."""
    from tokprof.render import render
    from tokprof.render.check import github_annotations

    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        try:
            with open(summary, "a", encoding="utf-8") as f:
                f.write(render("check", "markdown", result))
        except OSError as exc:
            print(f"tokprof: warning: cannot append to GITHUB_STEP_SUMMARY: {exc.strerror}", file=sys.stderr)
    if os.environ.get("GITHUB_ACTIONS") == "true":
        (annotations_to or sys.stdout).write(github_annotations(result))


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
    with open(path, "a", encoding="utf-8") as f:
        for key, value in values.items():
            f.write(f"{key}={value.replace(chr(10), ' ')}\n")


def pull_request(event_path: str | None) -> int | None:
    """The pull request's number from the event payload, when the workflow runs for one."""
    if not event_path:
        return None
    try:
        with open(event_path, encoding="utf-8") as f:
            event = json.load(f)
    except (OSError, ValueError):
        return None
    number = (event.get("pull_request") or {}).get("number") if isinstance(event, dict) else None
    return number if isinstance(number, int) else None


def _request(method: str, url: str, token: str, body: dict | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={
        "Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": "2022-11-28", "Content-Type": "application/json", "User-Agent": "tokprof",
    })
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read().decode("utf-8")
    return json.loads(text) if text else None


def upsert_comment(body: str, token: str, repository: str, number: int, api_url: str = "https://api.github.com") -> str:
    """Create tokprof's comment on a pull request, or update the one it made before (found by
    :data:`MARKER`); returns "created" or "updated"."""
    base = f"{api_url.rstrip('/')}/repos/{repository}/issues"
    text = f"{MARKER}\n{body}"
    page = 1
    while True:
        comments = _request("GET", f"{base}/{number}/comments?per_page=100&page={page}", token) or []
        for comment in comments:
            if isinstance(comment, dict) and MARKER in (comment.get("body") or ""):
                _request("PATCH", f"{base}/comments/{comment['id']}", token, {"body": text})
                return "updated"
        if len(comments) < 100:
            break
        page += 1
    _request("POST", f"{base}/{number}/comments", token, {"body": text})
    return "created"


__all__ = ["MARKER", "outputs", "pull_request", "report", "set_outputs", "upsert_comment"]


def annotation_text(text: str) -> str:
    """Text for a workflow command: one visible line, at most 1,000 characters, escaped as GitHub
    reads it (``%``, ``\r``, ``\n``), so that nothing from a log can end the command or start another."""
    from tokprof.text import shorten, visible

    return shorten(visible(text), 1000).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def error_annotation(message: str) -> str | None:
    """On a GitHub Actions runner, the workflow command that shows an error as an annotation."""
    if os.environ.get("GITHUB_ACTIONS") != "true":
        return None
    return f"::error title=tokprof::{annotation_text(message)}\n"
