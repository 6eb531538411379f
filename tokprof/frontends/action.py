"""The GitHub Action's step (``action.yml``): ``tokprof check`` with the action's inputs, then the
step outputs and, when asked and given a token, one pull-request comment.

Inputs arrive as environment variables (``action.yml`` maps each input to one, so that no input is
ever pasted into a shell script): ``INPUT_LOG``, ``INPUT_TOOLS``, ``INPUT_SYSTEM``, ``INPUT_CONFIG``,
``INPUT_BASELINE``, ``INPUT_MODEL``, ``INPUT_COMMENT`` ("true" to comment), ``INPUT_COMPARE`` (a run
to compare the log with in the comment: the base branch's log or saved profile; default: the
baseline) and ``INPUT_GITHUB_TOKEN``. With a log, the comment ends with ``tokprof diff`` of the
compared run and the log.
The exit code is the check's: 0 pass, 1 failed, 2 bad input or configuration.
"""

from __future__ import annotations

import os
import sys
import urllib.error

from tokprof.base.errors import TokprofError


def _input(name: str) -> str | None:
    value = os.environ.get(f"INPUT_{name}", "").strip()
    return value or None


def main() -> int:
    from tokprof.runs.check import run_check
    from tokprof.runs.options import Options
    from tokprof.runs.reports import render_report
    from tokprof.frontends import github
    from tokprof.base.text import no_workflow_commands, shorten, visible

    log, tools = _input("LOG"), _input("TOOLS")
    try:
        if log is None and tools is None:
            raise TokprofError("the action needs a log or tools input")
        options = Options(model=_input("MODEL"), tools=tools, system=_input("SYSTEM"))
        run = run_check(log, options, config=_input("CONFIG"), baseline=_input("BASELINE"))
    except TokprofError as exc:
        print(f"tokprof: error: {shorten(visible(str(exc)), 1200)}", file=sys.stderr)
        print(f"::error title=tokprof check::{_annotation(str(exc))}")
        github.set_outputs({"status": "error", "exit-code": "2"})
        return 2
    result = run.result
    sys.stdout.write(no_workflow_commands(render_report(result, "table", width=120)))
    github.report(result)
    github.set_outputs(github.outputs(result))
    if (_input("COMMENT") or "").lower() == "true":
        _comment(result, _diff_section(run, log))
    return result.exit_code


def _annotation(text: str) -> str:
    from tokprof.frontends.github import annotation_text

    return annotation_text(text)


def _diff_section(run, log: str | None) -> str:
    """``tokprof diff`` of the run to compare with (``compare``, else the baseline) and the log, as
    Markdown; empty without a log or anything to compare with, or with a line saying why it failed."""
    from tokprof.runs.diff import diff
    from tokprof.runs.options import Options
    from tokprof.runs.reports import render_report
    from tokprof.base.text import visible

    if log is None:
        return ""
    compare = _input("COMPARE")
    try:
        if compare is not None:
            found = diff(compare, log, Options(model=_input("MODEL")))
        elif run.baseline and os.path.isfile(run.baseline):
            found = diff(run.baseline, run)
        else:
            return ""
    except TokprofError as exc:
        print(f"tokprof: no diff in the comment: {visible(str(exc))}")
        return ""
    return render_report(found, "markdown")


def _comment(result, extra: str = "") -> None:
    """One comment on the pull request, made or updated; skipped, with a line saying why, without a
    token or outside a pull request; a failed request is a warning, never the check's failure."""
    from tokprof.runs.reports import render_report
    from tokprof.frontends import github

    token = _input("GITHUB_TOKEN")
    number = github.pull_request(os.environ.get("GITHUB_EVENT_PATH"))
    repository = os.environ.get("GITHUB_REPOSITORY")
    if not token:
        print("tokprof: no pull-request comment: no github-token was given")
        return
    if number is None or not repository:
        print("tokprof: no pull-request comment: this run is not for a pull request")
        return
    body = render_report(result, "markdown") + ("\n" + extra if extra else "")
    try:
        done = github.upsert_comment(
            body, token, repository, number, os.environ.get("GITHUB_API_URL", "https://api.github.com")
        )
    except (urllib.error.URLError, OSError, ValueError) as exc:
        print(f"::warning title=tokprof check::could not comment on the pull request: {_annotation(str(exc))}")
        return
    print(f"tokprof: pull-request comment {done}")


if __name__ == "__main__":
    raise SystemExit(main())
