"""Supply what a log does not record: the tool definitions and the system prompt."""

from __future__ import annotations

from tokprof.trace import Trace


def supply(trace: Trace, tools: list[dict] | None, system: str | None) -> Trace:
    """Give a trace what its log does not record: the tool definitions and the system prompt.

    They go to the main conversation's calls (a subagent has its own system prompt and tools, which
    stay unrecorded): tools to every such call that carries none; the system prompt first in every
    such call, when the log does not record it (``"system"`` in ``trace.unrecorded``) or the call has
    no system message. What is supplied is not inferred. Raises ValueError when the log already
    records what is supplied.
    """
    main = [call for call in trace.calls if not call.thread]
    if tools is not None:
        if not any(call.tools is None for call in main):
            raise ValueError("the log records its tool definitions: --tools is for logs that do not")
        for call in main:
            if call.tools is None:
                call.tools = list(tools)
    if system is not None:
        missing = "system" in trace.unrecorded
        if not missing and all(c.messages and c.messages[0]["role"] in ("system", "developer") for c in main):
            raise ValueError("the log records its system prompt: --system is for logs that do not")
        for call in main:
            if missing or not call.messages or call.messages[0]["role"] not in ("system", "developer"):
                call.messages = [{"role": "system", "content": system}, *call.messages]
    supplied = {"tools"} if tools is not None else set()
    if system is not None:
        supplied.add("system")
    trace.supplied = tuple(sorted(set(trace.supplied) | supplied))
    return trace
