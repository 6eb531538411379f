"""The cut list's replays (tokprof.analyses.cutlist), each a policy of the registry's kind:

* :class:`CapTools`: one tool's results, or one MCP server's tools', capped as ``cap`` caps every tool's
  (:class:`tokprof.transforms.policies.Cap`: a result is kept whole in the prompt it arrives in, and cut to
  its first C characters, with the same note, in the prompts after). Made by the cut list rather than
  parsed: it is not registered (``tokprof whatif -p cap:C`` caps every tool);
* :class:`DropTools` (registered, ``drop-tools[:NAMES]``): tools the log never calls taken out of every
  call's tool list (:meth:`tokprof.transforms.policies.Step.without_tools`), the messages as logged: what
  removing their definitions from the agent's configuration would have sent.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from tokprof.trace import Call, PromptView, Trace
from tokprof.transforms.policies import CUT, Policy, PolicyError, Step, register, tool_name


def tool_names(messages: Sequence[dict]) -> dict[str, str]:
    """Tool call id -> the name of the tool it called, from the assistant messages."""
    names: dict[str, str] = {}
    for m in messages:
        for tc in m.get("tool_calls") or ():
            if isinstance(tc, dict) and isinstance(tc.get("id"), str):
                name = (tc.get("function") or {}).get("name")
                if isinstance(name, str):
                    names[tc["id"]] = name
    return names


def _called_in(messages: Iterable[dict]) -> set[str]:
    called: set[str] = set()
    for m in messages:
        if not isinstance(m, dict):
            continue
        for tc in m.get("tool_calls") or ():
            name = (tc.get("function") or {}).get("name") if isinstance(tc, dict) else None
            if isinstance(name, str):
                called.add(name)
    return called


class ToolUse:
    """The tools a log's calls carry and the tools the model calls, a call at a time (:meth:`observe`,
    in log order; a stream's calls): a prompt that is a longer view of an earlier one's list is read
    for what it adds, each tool list once."""

    def __init__(self) -> None:
        self.defined: set[str] = set()
        self.called: set[str] = set()
        self._lists: dict[int, list[dict]] = {}  # the tool lists read (held: their ids stay theirs)
        self._read: dict[int, tuple[list[dict], int]] = {}  # id(list) -> (list, messages read of it)

    @classmethod
    def of(cls, trace: "Trace | ToolUse | None") -> "ToolUse":
        """A trace's (every call fed), or the one given."""
        if isinstance(trace, ToolUse):
            return trace
        use = cls()
        for call in trace.calls if trace is not None else ():
            use.observe(call)
        return use

    def observe(self, call: Call) -> None:
        if call.tools is not None and self._lists.get(id(call.tools)) is not call.tools:
            self._lists[id(call.tools)] = call.tools
            self.defined.update(n for n in (tool_name(t) for t in call.tools) if n is not None)
        self.called |= _called_in(new_messages(call.messages, self._read))
        if call.response is not None:
            self.called |= _called_in([call.response])

    def never_called(self) -> tuple[str, ...]:
        return tuple(sorted(self.defined - self.called))


def new_messages(messages: Sequence[dict], read: dict[int, tuple[list[dict], int]]) -> Sequence[dict]:
    """A prompt's messages not read before: of a view (:class:`tokprof.trace.PromptView`), those past what
    earlier views of its list showed (``read``: by list, how far it was read; the lists of the last few
    prompts); of any other prompt, all."""
    if not isinstance(messages, PromptView):
        return messages
    base = messages.base
    found = read.pop(id(base), None)
    start = found[1] if found is not None and found[0] is base else 0
    read[id(base)] = (base, max(start, messages.length))
    while len(read) > 32:
        del read[next(iter(read))]
    return base[start : messages.length] if start < messages.length else ()


def called_tools(trace: "Trace | ToolUse") -> set[str]:
    """The names of the tools the model called anywhere in the log (its prompts' assistant messages and the
    calls' responses)."""
    return ToolUse.of(trace).called


def never_called(trace: "Trace | ToolUse") -> tuple[str, ...]:
    """The tools some call of the log carried and the model never called, sorted."""
    return ToolUse.of(trace).never_called()


@dataclass(frozen=True)
class CapTools(Policy):
    """The results of these tools cut to their first ``chars`` characters, with a note."""

    name: ClassVar[str] = "cap-tools"
    tools: tuple[str, ...] = ()
    chars: int = 4000

    @property
    def spec(self) -> str:
        return f"cap:{self.chars} of {', '.join(self.tools)}"

    def describe(self) -> str:
        return f"the results of {', '.join(self.tools)} cut to their first {self.chars:,} characters, with a note"

    def apply(self, step: Step) -> list[dict]:
        chars, wanted = self.chars, set(self.tools)
        names: dict[str, str] | None = None
        out = list(step.messages)
        for i in range(step.fresh):
            m = step.messages[i]
            content = m.get("content")
            if m["role"] != "tool" or not isinstance(content, str) or len(content) <= chars:
                continue
            if names is None:
                names = tool_names(step.messages)
            if names.get(m.get("tool_call_id") or "") not in wanted:
                continue
            out[i] = step.rewrite(
                m, f"cap:{chars}", lambda: content[:chars] + CUT.format(size=len(content), kept=chars)
            )
        return out


@register
@dataclass(frozen=True)
class DropTools(Policy):
    """Tools the log never calls taken out of every call's tool list; ``tools`` empty: every tool it never calls.
    A tool the log does call cannot be dropped (the replay would keep calls to a tool it no longer offers)."""

    name: ClassVar[str] = "drop-tools"
    #: What it drops rests on the whole log (the tools it never calls): not known before every call is read.
    needs_log: ClassVar[bool] = True
    tools: tuple[str, ...] = ()

    @classmethod
    def syntax(cls) -> str:
        return "drop-tools[:NAMES]"

    @classmethod
    def parse(cls, params: Sequence[str], spec: str) -> Policy:
        names = [n.strip() for text in params for n in text.split(",")]
        if any(not n for n in names):
            raise PolicyError(
                f"policy {spec!r}: drop-tools takes tool names separated by commas (drop-tools:NAME,NAME), "
                "or none (every tool the log never calls)"
            )
        return cls(tuple(sorted(set(names))))

    @property
    def spec(self) -> str:
        return self.name + (":" + ",".join(self.tools) if self.tools else "")

    def describe(self) -> str:
        if not self.tools:
            return "the tools the log never calls taken out of every request's tool list"
        return f"{', '.join(self.tools)} taken out of every request's tool list"

    def dropped(self, step: Step) -> frozenset[str]:
        """The names dropped over this replay (checked once: a named tool the log calls is refused)."""
        found = step.state.get("dropped")
        if found is None:
            trace = step.replay.trace  # the log, or what its calls showed of their tools (ToolUse)
            if not self.tools:
                found = frozenset(never_called(trace) if trace is not None else ())
            else:
                called = sorted(set(self.tools) & called_tools(trace)) if trace is not None else []
                if called:
                    raise PolicyError(
                        f"policy {self.spec!r}: the log calls {', '.join(called)}; a replay drops only tools "
                        "never called (dropping a tool the model used changes what it does, which no replay shows)"
                    )
                found = frozenset(self.tools)
            step.state["dropped"] = found
        return found

    def apply(self, step: Step) -> list[dict]:
        step.without_tools(self.dropped(step))
        return step.messages
