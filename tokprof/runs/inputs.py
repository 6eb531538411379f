"""What a run reads: a log into its neutral trace, with the tool definitions and the system prompt a
log does not record given as lists, texts or files."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from tokprof.runs.arguments import PathLike, ToolsArg
from tokprof.runs.options import DEFAULTS, Options
from tokprof.trace import Note, Trace

if TYPE_CHECKING:
    from tokprof.transforms.stream import LogCalls


def tools_arg(tools: ToolsArg) -> list[dict] | None:
    from tokprof.formats.toolsfile import normalise_tools, read_tools_file

    if tools is None:
        return None
    if isinstance(tools, (str, os.PathLike)):
        return read_tools_file(os.fspath(tools))
    return normalise_tools("tools", "", list(tools))


def system_arg(system: PathLike | None) -> str | None:
    """A system prompt: the text itself, or a file (a :class:`pathlib.Path`) holding it."""
    from tokprof.formats.toolsfile import read_system_file

    if system is None or isinstance(system, str):
        return system
    return read_system_file(os.fspath(system))


def log_calls(path: PathLike, options: Options = DEFAULTS) -> "LogCalls":
    """A log's calls to read as streams (:class:`tokprof.transforms.stream.LogCalls`), with the tool
    definitions and the system prompt ``options`` supply (a list or a JSON file, a text or a
    :class:`pathlib.Path`)."""
    from tokprof.transforms.stream import LogCalls

    tools, system = options.tools, options.system
    source = LogCalls(os.fspath(path), options.input_format, tools_arg(tools), system_arg(system))
    if isinstance(tools, (str, os.PathLike)):
        from tokprof.formats.toolsfile import tools_file_source

        label = tools_file_source(os.fspath(tools))
        if label:
            source.notes.append(Note("tools-from-mcp", f"{label} ({os.fspath(tools)})"))
    return source


def read_log(path: PathLike, options: Options = DEFAULTS) -> Trace:
    """Read an agent log into its neutral trace (the format is detected unless named). ``tools`` and
    ``system`` give what a log does not record (Claude Code, Codex): tool definitions as a list or
    a JSON file, the system prompt as text or as a :class:`pathlib.Path`. The whole trace is one
    stream of the log's calls (:func:`log_calls`), as every run reads it."""
    return log_calls(path, options).trace()


NOTHING_RECORDED = (
    "no call records its prompt or its usage (usage redacted, content capture off): nothing {what}; "
    "'tokprof profile' lists the calls and the totals the log holds"
)
