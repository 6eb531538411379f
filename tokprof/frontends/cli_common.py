"""What the commands of the command line share: the exit codes, the options several take (``--format``
checked against the result's renderers, ``--model``, ``--chat-template``), and how a result becomes output:
rendered (``render_report``, what a library user gets from ``tokprof.render_report``), then written, files first, all of them or none,
never over an input, then standard output. :mod:`tokprof.frontends.cli` and the commands in modules of their
own (:mod:`tokprof.frontends.mcp_cli`) use them."""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import TYPE_CHECKING, Annotated, Iterable, Iterator, Optional, Sequence

import typer

from tokprof.base.errors import TokprofError

if TYPE_CHECKING:
    from tokprof.render.tables import TeamOptions

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def esc(text: str) -> str:
    """Help text with square brackets shown as they are (rich reads them as markup)."""
    return text.replace("[", "\\[")


@dataclasses.dataclass(frozen=True)
class RenderOptions:
    """``render_report``'s options for a command's output, checked before the run."""

    color: bool = False
    width: Optional[int] = None
    calls: Optional[int] = None
    window: Optional[int] = None
    levels: tuple[float, ...] = (0.7, 0.8)
    cost_parts: bool = False


def formats_for(kind: str) -> list[str]:
    """The formats a kind of result renders in (``report_formats``: no pipeline loaded)."""
    from tokprof.names import report_formats

    return report_formats(kind)


def model_names() -> str:
    """The shipped models' names (plug-ins' names are not listed: finding them costs a scan of the
    installed packages on every start)."""
    from tokprof.names import registered_models

    return ", ".join(spec.name for spec in registered_models())


MODEL_HELP = (
    "The model that counts (default: the log's own; else qwen2.5, a labelled stand-in): {names}; a closed "
    "model's name (its proxy, an estimate); a tokenizer directory, .gguf file, Ollama name or Hub id "
    "(docs/models.md)."
)


def format_choice(kind: str, extra: tuple[str, ...] = ()):
    """A callback that checks a --format value against the renderers registered for ``kind``."""

    def check(value: str) -> str:
        choices = formats_for(kind) + list(extra)
        if value not in choices:
            from tokprof.base.text import did_you_mean

            raise typer.BadParameter(f"{value!r} is not one of {', '.join(choices)}{did_you_mean(value, choices)}")
        return value

    return check


def format_option(kind: str, default: str = "table", extra: tuple[str, ...] = ()):
    names = formats_for(kind) + list(extra)
    return typer.Option(
        "--format",
        "-f",
        metavar="|".join(names),
        callback=format_choice(kind, extra),
        help=f"Output format: {', '.join(names)}.",
        autocompletion=lambda: names,
    )


ModelName = Annotated[
    Optional[str], typer.Option("--model", "-m", metavar="MODEL", help=esc(MODEL_HELP.format(names=model_names())))
]
ChatTemplate = Annotated[
    Optional[str],
    typer.Option("--chat-template", metavar="FILE", help="Use this Jinja chat template instead of the model's."),
]


def one_line(text: str) -> str:
    """An error message for standard error: on one line, nothing from the log a terminal acts on
    (escape sequences shown as escapes), and cut to a readable length (a log's 3 MB role name)."""
    from tokprof.base.text import shorten, visible

    return shorten(visible(text), 1200)


def use_color(fmt: str, output: Optional[str]) -> bool:
    return fmt == "table" and output is None and sys.stdout.isatty() and "NO_COLOR" not in os.environ


def output_width(output: Optional[str]) -> Optional[int]:
    """The terminal's width when the table goes to one; else COLUMNS if set; else the default."""
    if output is None and sys.stdout.isatty():
        import shutil

        return shutil.get_terminal_size().columns
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else None


def fill_levels(fill_lines: str) -> tuple[float, ...]:
    from tokprof.base.text import percentages

    return percentages(fill_lines, "--fill-lines")


def render_options(
    fmt: str, output: Optional[str], window: Optional[int] = None, fill_lines: str = "70,80"
) -> RenderOptions:
    if window is not None and window <= 0:
        raise TokprofError(f"--window: expected a positive number of tokens, found {window}")
    return RenderOptions(
        color=use_color(fmt, output), width=output_width(output), window=window, levels=fill_levels(fill_lines)
    )


def write_outputs(
    outputs: "Sequence[tuple[Optional[str], str | Iterable[str]]]",
    inputs: tuple[Optional[str], ...] = (),
    replaces: Optional[str] = None,
) -> None:
    """Write every output: files first, all of them or none (atomically), then standard output. An
    output that is one of the ``inputs`` (``-o`` naming the log) or of the files every run may read
    (:func:`protected_paths`) is refused, as are two outputs to one file; ``replaces``: the baseline that
    ``check --update-baseline`` writes (not among the ``inputs``), which is the only file an output may
    replace, and only when it is none of the inputs. A file's text may come in pieces, written as
    they are made."""
    from tokprof.base.outputs import write_files
    from tokprof.base.text import no_workflow_commands

    shown = [text if isinstance(text, str) else "".join(text) for path, text in outputs if path is None]
    for text in shown:
        if text.lstrip()[:15].lower() == "<!doctype html>" and sys.stdout.isatty():
            raise TokprofError(
                "an HTML report (megabytes, with plotly.js) is not for the terminal: write it with -o FILE"
            )
    files = [(path, encoded(text)) for path, text in outputs if path is not None]
    write_files(files, protected_paths(inputs, replaces) if files else [])
    for text in shown:
        sys.stdout.write(no_workflow_commands(text))  # text from a log may start a line
        sys.stdout.flush()  # a full device or a closed pipe says so here, not at exit


def encoded(text: "str | Iterable[str]") -> "bytes | Iterator[bytes]":
    """A file's text as UTF-8: whole, or a piece at a time as it is made (a profile's JSON)."""
    if isinstance(text, str):
        return text.encode("utf-8")
    return (piece.encode("utf-8") for piece in text)


def protected_paths(inputs: tuple[Optional[str], ...], replaces: Optional[str] = None) -> list[str]:
    """What no output may replace: the inputs given, the subagent transcripts of a session file (the
    folder named after it), and the configuration found from the working directory with its baseline
    (every command may read them), unless that baseline is what ``replaces`` names (the baseline
    ``check --update-baseline`` writes). An input stays protected whatever ``replaces`` names."""
    out = [given for given in inputs if given]
    for given in list(out):
        if os.path.isfile(given):
            out.append(os.path.splitext(given)[0])  # Claude Code: SESSION.jsonl, SESSION/subagents/*.jsonl
    try:
        from tokprof.runs.check import load_config

        found = load_config(None)
    except Exception:  # a broken configuration is the command's own error, if it reads one
        return out
    baseline = found.resolve(found.baseline)
    if baseline and replaces is not None and os.path.realpath(baseline) == os.path.realpath(replaces):
        baseline = None  # the file being replaced, in its own role
    return out + [path for path in (found.path, baseline) if path]


def render(result: object, fmt: str, options: RenderOptions, team: Optional["TeamOptions"] = None) -> str:
    """A result in a format (what a library user gets from ``tokprof.render_report``)."""
    from tokprof.runs.reports import render_report

    return render_report(
        result,
        fmt,
        width=options.width,
        color=options.color,
        calls=options.calls,
        window=options.window,
        levels=options.levels,
        cost_parts=options.cost_parts,
        team=team,
    )
