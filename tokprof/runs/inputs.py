"""What a run reads: a log into its neutral trace, with the tool definitions and the system prompt a
log does not record given as lists, texts or files."""

from __future__ import annotations

import os

from tokprof.base.errors import InputError
from tokprof.runs.arguments import PathLike, ToolsArg
from tokprof.runs.options import DEFAULTS, Options
from tokprof.trace import Note, Trace


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


def read_log(path: PathLike, options: Options = DEFAULTS) -> Trace:
    """Read an agent log into its neutral trace (the format is detected unless named). ``tools`` and
    ``system`` give what a log does not record (Claude Code, Codex): tool definitions as a list or
    a JSON file, the system prompt as text or as a :class:`pathlib.Path`."""
    from tokprof.formats import read_trace
    from tokprof.transforms import supply, thread_by_content

    name = os.fspath(path)
    tools, system = options.tools, options.system
    trace = thread_by_content(read_trace(name, options.input_format))
    if tools is not None or system is not None:
        try:
            supply(trace, tools_arg(tools), system_arg(system))
        except InputError:
            raise
        except ValueError as exc:
            raise InputError(name, None, str(exc)) from None
        if isinstance(tools, (str, os.PathLike)):
            from tokprof.formats.toolsfile import tools_file_source

            label = tools_file_source(os.fspath(tools))
            if label:
                trace.notes.append(Note("tools-from-mcp", f"{label} ({os.fspath(tools)})"))
    return trace


NOTHING_RECORDED = (
    "no call records its prompt or its usage (usage redacted, content capture off): nothing {what}; "
    "'tokprof profile' lists the calls and the totals the log holds"
)
