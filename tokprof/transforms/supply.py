"""Supply what a log does not record: the tool definitions and the system prompt."""

from __future__ import annotations

from tokprof.base.errors import InputError
from tokprof.trace import Call, PromptView, Trace

#: The lists whose prompts get the supplied system prompt first (the conversations last seen).
_PREFIXED = 32


def supply(trace: Trace, tools: list[dict] | None, system: str | None) -> Trace:
    """Give a trace what its log does not record: the tool definitions and the system prompt.

    They go to the main conversation's calls (a subagent has its own system prompt and tools, which
    stay unrecorded): tools to every such call that carries none; the system prompt first in every
    such call, when the log does not record it (``"system"`` in ``trace.unrecorded``) or the call has
    no system message. What is supplied is not inferred. Raises InputError when the log already
    records what is supplied. Every call fed to a :class:`Supplier` (the one way).
    """
    supplier = Supplier(tools, system, "system" in trace.unrecorded)
    for call in trace.calls:
        supplier.give(call)
    supplier.check(trace.path)
    supplied = {"tools"} if tools is not None else set()
    if system is not None:
        supplied.add("system")
    trace.supplied = tuple(sorted(set(trace.supplied) | supplied))
    return trace


class Supplier:
    """What the user supplies, given to each call of the main conversation as it comes (:meth:`give`;
    the rule of :func:`supply`), checked once every call is seen (:meth:`check`): what the log records
    already is refused. ``unrecorded``: the log does not record its system prompt (a header the
    reader may complete only at the end: found by a first read)."""

    def __init__(self, tools: list[dict] | None, system: str | None, unrecorded: bool) -> None:
        self.tools = tools
        self.system = {"role": "system", "content": system} if system is not None else None
        self.tools_missing = False  # a main call without tool definitions
        self.system_missing = False  # a main call without a system message first
        self.unrecorded = unrecorded  # the log does not record the system prompt (found by a first read)
        self._prefixed: dict[int, tuple[list[dict], list[dict]]] = {}  # id(list) -> (list, the system, then it)

    def give(self, call: Call) -> None:
        if call.thread:
            return
        if self.tools is not None and call.tools is None:
            self.tools_missing = True
            call.tools = list(self.tools)
        if self.system is not None:
            first = call.messages[0]["role"] if call.messages else None
            missing = self.unrecorded or first not in ("system", "developer")
            self.system_missing = self.system_missing or first not in ("system", "developer")
            if missing:
                call.messages = self._with_system(call.messages)

    def _with_system(self, messages: list[dict] | PromptView) -> PromptView:
        """The system message, then the messages: a view of one list per conversation, which grows as
        its prompts do (a call costs what it adds)."""
        assert self.system is not None
        if isinstance(messages, PromptView):
            found = self._prefixed.pop(id(messages.base), None)
            if found is None or found[0] is not messages.base or len(found[1]) > messages.length + 1:
                found = (messages.base, [self.system])
            self._prefixed[id(messages.base)] = found
            while len(self._prefixed) > _PREFIXED:
                del self._prefixed[next(iter(self._prefixed))]
            base, prefixed = found
            prefixed.extend(base[len(prefixed) - 1 : messages.length])
            return PromptView(prefixed, messages.length + 1)
        prefixed = [self.system, *messages]
        return PromptView(prefixed, len(prefixed))

    def check(self, path: str) -> None:
        """Refuse what the log records already (once every call is seen: before anything is written)."""
        if self.tools is not None and not self.tools_missing:
            raise InputError(path, None, "the log records its tool definitions: --tools is for logs that do not")
        if self.system is not None and not self.system_missing and not self.unrecorded:
            raise InputError(path, None, "the log records its system prompt: --system is for logs that do not")
