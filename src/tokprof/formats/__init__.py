"""Log readers. Each one turns a file into the same neutral :class:`tokprof.trace.Trace`."""

from __future__ import annotations

from tokprof.formats.openai_chat import read_openai_chat
from tokprof.trace import Trace

FORMATS = {"openai-chat": read_openai_chat}


def read_trace(path: str, input_format: str | None = None) -> Trace:
    """Read a log. Only tokprof's native form (OpenAI Chat Completions requests) exists so far."""
    reader = FORMATS[input_format or "openai-chat"]
    return reader(path)
