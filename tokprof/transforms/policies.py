"""Context policies: what of the earlier history each call's prompt carries, as a trace-to-trace transform.

A what-if replays a saved log under a policy. It is replay, not re-run: every call keeps its own
new messages, byte for byte (the messages its prompt adds to the previous call of its thread: the
assistant output of that call, tool results, user text); a policy only decides what of the earlier
history the prompt carries. Each thread (a subagent is a conversation of its own) is replayed on
its own.

A policy is one class (:class:`Policy`): its ``name``, its ``parameters`` (how its string parses:
``window:N``), :meth:`Policy.apply` (a call's prompt under it, given a :class:`Step`) and whether it
``needs_counter``. :func:`register` adds it to the registry, from which the policies' syntax, parsing
(:func:`parse_policy`) and the help derive; the built-in ones are registered below, and a new one is
one class and one ``register`` (a test registers its own). :func:`apply` makes the transformed trace.
The policies that need the token counts of the prompts they build (``window-tokens``, ``compact``,
``clear-tool-uses``) take a :class:`Counter`, passed in, so that the transform stays pure. The exact
texts a policy writes into a prompt (the stubs, the notes, the summary and its instruction) are the
constants of this module, documented in docs/whatif.md.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from tokprof.base.errors import TokprofError
from tokprof.trace import Call, PromptView, Trace, as_list

#: ``tokprof whatif`` without --policy (and without ``whatif`` in the configuration).
DEFAULT_POLICIES = ("full", "window", "elide", "cap:4000", "user-verbatim:4", "compact:80")

#: What ``elide`` puts in place of a tool result: the tool's name and the result's size in characters.
ELIDED = "[tool result elided by tokprof: {tool}, {size:,} characters]"
#: What ``cap`` adds after the first C characters of a longer tool result.
CUT = "\n[cut by tokprof: {size:,} characters, the first {kept:,} kept]"
#: What ``clear-tool-uses`` puts in place of a cleared tool result. Anthropic does not publish its own
#: placeholder text; this is the one LangChain's ClearToolUsesEdit, modelled on it, writes.
CLEARED = "[cleared]"
#: The user message that asks for a summary, last in the prompt of a summarising call ``compact`` adds.
COMPACT_INSTRUCTION = (
    "Summarise the conversation so far for a continuation of it: the user's requests, what has been done and "
    "found (files, commands, results that matter), and what is left to do. Your summary will replace the "
    "conversation."
)
#: How the summary that replaces the history starts (a user message), followed by the summary.
SUMMARY_HEADER = "This session is being continued from a previous conversation. Summary:\n"
#: The stand-in for a summary the log does not have: this line, then filler words, S tokens in all
#: (counted alone; a stand-in shorter than the line is the filler words alone).
STAND_IN = "[a stand-in made by tokprof for a summary of {tokens:,} tokens]"
STAND_IN_WORD = " summary"

ALWAYS_KEPT = ("system", "developer")


class PolicyError(TokprofError):
    """A policy that does not parse; the message lists the policies."""


class Counter(Protocol):
    """Token counts for the policies that need them, with the model the what-if profiles with."""

    def prompt(self, messages: list[dict], call: Call) -> int:
        """The tokens of a prompt of these messages in the place of ``call`` (with its tools and date,
        in its thread): rendered with the chat template, with the generation prompt, and tokenized."""
        ...

    def text(self, text: str) -> int:
        """The tokens of a text on its own."""
        ...


# -- what a policy is, and the registry ----------------------------------------------------------------
@dataclass(frozen=True)
class Parameter:
    """One parameter of a policy's string: its letter as the syntax writes it (``N`` in ``window:N``),
    the dataclass field it sets, its least value, whether it takes decimals, and whether it may be left
    out when the ones before it are given (``compact:P[:S]``)."""

    letter: str
    field: str
    minimum: int
    decimal: bool = False
    optional: bool = False

    def value(self, text: str, spec: str) -> float:
        return _number(text, spec, self.letter, minimum=self.minimum, decimal=self.decimal)


class Policy:
    """A context policy: what of the earlier history each call's prompt carries. A subclass is a frozen
    dataclass whose fields are its parameters (with their defaults), and says:

    * ``name``: as a user writes it (``window``);
    * ``parameters``: its :class:`Parameter` s, in order (the string ``window:20`` sets ``messages``);
    * ``needs_counter``: whether :meth:`apply` counts tokens (:meth:`Step.count`);
    * :meth:`describe`: one line for the tables;
    * :meth:`apply`: a call's prompt under it.

    :meth:`parse` (from the parameters' strings) and :attr:`spec` (the canonical string) derive from
    ``parameters``; a policy with rules of its own overrides :meth:`parse`."""

    name: ClassVar[str]
    parameters: ClassVar[tuple[Parameter, ...]] = ()
    needs_counter: ClassVar[bool] = False

    @classmethod
    def syntax(cls) -> str:
        """As a user writes it, for help and error messages: ``window:N``, ``compact:P[:S]``."""
        return cls.name + "".join(f"[:{p.letter}]" if p.optional else f":{p.letter}" for p in cls.parameters)

    @classmethod
    def parse(cls, params: Sequence[str], spec: str) -> "Policy":
        """The policy from its parameters' strings (fewer than its parameters: the rest take their
        defaults). Raises :class:`PolicyError`, one line that lists the policies."""
        if len(params) > len(cls.parameters):
            count = len(cls.parameters)
            expected = "no parameter" if not count else f"at most {count} parameter{'s' if count > 1 else ''}"
            raise PolicyError(f"policy {spec!r}: {cls.name} takes {expected} ({_listing()})")
        values = {}
        for parameter, text in zip(cls.parameters, params):
            number = parameter.value(text, spec)
            values[parameter.field] = float(number) if parameter.decimal else int(number)
        return cls(**values)

    @property
    def spec(self) -> str:
        """As written canonically: every parameter, but trailing optional ones at their defaults."""
        shown = []
        for parameter in self.parameters:
            value = getattr(self, parameter.field)
            default = getattr(type(self), parameter.field, None)
            shown.append((parameter, f"{value:g}" if isinstance(value, float) else str(value), value == default))
        while shown and shown[-1][0].optional and shown[-1][2]:
            shown.pop()
        return ":".join([self.name, *(text for _, text, _ in shown)])

    def describe(self) -> str:
        raise NotImplementedError

    def apply(self, step: "Step") -> list[dict]:
        """The messages of the call's prompt under this policy (never without its new messages,
        ``step.messages[step.fresh:]``); calls to add before it go to ``step.added``."""
        raise NotImplementedError


_REGISTRY: dict[str, type[Policy]] = {}
_NAME = re.compile(r"[a-z][a-z0-9-]*")


def register(cls: type[Policy]) -> type[Policy]:
    """Adds a policy class to the registry (a class decorator): its name then parses, and is listed in
    the help and the error messages. A name already taken by another class is a ValueError."""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"a policy's name is lower-case letters, digits and '-', found {name!r}")
    if _REGISTRY.get(name, cls) is not cls:
        raise ValueError(f"policy {name!r} is already registered ({_REGISTRY[name].__qualname__})")
    _REGISTRY[name] = cls
    return cls


def unregister(name: str) -> None:
    """Takes a policy out of the registry (a test's own, when it is done)."""
    _REGISTRY.pop(name, None)


def registered() -> tuple[type[Policy], ...]:
    """The policy classes, in the order they were registered."""
    return tuple(_REGISTRY.values())


def syntax() -> tuple[str, ...]:
    """The policies as a user writes them (``full``, ``window:N``, …), for help and error messages."""
    return tuple(cls.syntax() for cls in _REGISTRY.values())


MAX_PARAMETER = 10**12


def _listing() -> str:
    return "the policies are " + ", ".join(syntax())


def _number(text: str, spec: str, name: str, *, minimum: int, decimal: bool = False) -> float:
    raw = text.strip().replace("_", "").replace(",", "")
    pattern = r"[0-9]+(\.[0-9]+)?" if decimal else r"[0-9]+"
    if not re.fullmatch(pattern, raw) or len(raw) > 15:
        kind = "a number" if decimal else "a whole number"
        raise PolicyError(f"policy {spec!r}: {name} must be {kind}, found {text!r} ({_listing()})")
    value = float(raw) if decimal else int(raw)
    if value < minimum or value > MAX_PARAMETER:
        raise PolicyError(f"policy {spec!r}: {name} must be at least {minimum}, found {text!r} ({_listing()})")
    return value


def parse_policy(text: str) -> Policy:
    """A policy from its string (``window:20``, ``compact:80:2000``, …); a bare name takes the
    default parameters. Raises :class:`PolicyError`, one line that lists the policies."""
    if not isinstance(text, str):
        raise PolicyError(f"policy {text!r}: expected a string ({_listing()})")
    spec = text.strip()
    name, _, rest = spec.partition(":")
    name = name.strip().lower()
    if name not in _REGISTRY:
        import difflib

        close = difflib.get_close_matches(name, list(_REGISTRY), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise PolicyError(f"unknown policy {spec!r}{hint}: {_listing()}")
    params = [p for p in rest.split(":")] if rest or spec.endswith(":") else []
    return _REGISTRY[name].parse(params, spec)


def parse_policies(texts: Sequence[str]) -> list[Policy]:
    """Policies from their strings, each once, ``full`` first (the baseline every other is compared with)."""
    out: list[Policy] = [Full()]
    for text in texts:
        policy = parse_policy(text)
        if policy not in out:
            out.append(policy)
    return out


class AddedCall(Call):
    """A call the policy adds to the log: the summarising call of ``compact`` (``kind`` "compaction")."""


# -- applying ----------------------------------------------------------------------------------------
def shared_messages(messages: Sequence[dict], before: Sequence[dict]) -> int:
    """How many first messages two prompts have in common (the same objects, or equal ones): in O(1)
    when one is a longer view of the other's list (:class:`tokprof.trace.PromptView`)."""
    if isinstance(messages, PromptView) and messages.extends(before):
        return len(before)
    if isinstance(before, PromptView) and before.extends(messages):
        return len(messages)
    n = min(len(messages), len(before))
    i = 0
    while i < n and (messages[i] is before[i] or messages[i] == before[i]):
        i += 1
    return i


def _fresh(messages: Sequence[dict], before: Sequence[dict], shared: int) -> int:
    """Where a call's new messages start: after the last of its messages that the previous call of
    its thread also held (the previous prompt's length when the call continues it); ``shared``: the
    messages they have in common first (:func:`shared_messages`)."""
    if shared == len(before):
        return shared
    held = {id(m) for m in before}
    texts: set[str] | None = None
    for i in range(len(messages) - 1, shared - 1, -1):
        m = messages[i]
        if id(m) in held:
            return i + 1
        if texts is None:
            texts = {_text(b) for b in before}
        if _text(m) in texts:
            return i + 1
    return shared


def _text(message: dict) -> str:
    return json.dumps(message, sort_keys=True, ensure_ascii=False, default=str)


def _find(messages: list[dict], wanted: dict, stop: int) -> int | None:
    """The index of the last of the first ``stop`` messages that is ``wanted`` (or equal to it)."""
    for i in range(min(stop, len(messages)) - 1, -1, -1):
        if messages[i] is wanted or messages[i] == wanted:
            return i
    return None


def _tool_names(messages: Sequence[dict]) -> dict[str, str]:
    """Tool call id -> the name of the tool it called, from the assistant messages."""
    names: dict[str, str] = {}
    for m in messages:
        for tc in m.get("tool_calls") or ():
            if isinstance(tc, dict) and tc.get("id") is not None:
                names[tc["id"]] = (tc.get("function") or {}).get("name") or "?"
    return names


def _user_turns(messages: Sequence[dict]) -> list[int]:
    return [i for i, m in enumerate(messages) if m["role"] == "user"]


def _turn_start(messages: Sequence[dict], turns: int) -> int:
    """Where the last ``turns`` user turns start (a turn: a user message and what follows it up to the
    next one); 0 when there are fewer, the end when ``turns`` is 0."""
    if turns == 0:
        return len(messages)
    users = _user_turns(messages)
    return users[-turns] if len(users) >= turns else 0


class _Rewrites:
    """Rewritten messages, made once per original message (by identity), so that a message rewritten
    the same way in every call is one object: the attributor then does its work once."""

    def __init__(self) -> None:
        self._made: dict[tuple[int, str], tuple[dict, dict]] = {}

    def get(self, message: dict, how: str, make: Callable[[], dict]) -> dict:
        key = (id(message), how)
        found = self._made.get(key)
        if found is None or found[0] is not message:
            found = (message, make())
            self._made[key] = found
        return found[1]


def _with_content(message: dict, content: str) -> dict:
    out = dict(message)
    out["content"] = content
    return out


def _keep_from(messages: list[dict], start: int, fresh: int) -> list[dict]:
    """The prompt that keeps the system and developer messages and everything from ``start`` on, with
    the window rule: tool messages at the start of the kept part whose assistant tool call was cut are
    dropped too (new messages never are: a kept new tool message keeps its assistant message instead)."""
    start = min(start, fresh)
    n = len(messages)
    while start < fresh and start < n and messages[start]["role"] == "tool":
        start += 1
    if start < n and messages[start]["role"] == "tool":  # a new tool result whose call was cut: keep the call
        while start > 0 and not messages[start]["role"] == "assistant":
            start -= 1
    head = [m for m in messages[:start] if m["role"] in ALWAYS_KEPT]
    return head + messages[start:]


def _others(messages: Sequence[dict]) -> list[int]:
    return [i for i, m in enumerate(messages) if m["role"] not in ALWAYS_KEPT]


def _earliest(fits: Callable[[int], bool], last: int, guess: int) -> int:
    """The smallest j in 0..last for which ``fits(j)`` holds, for a ``fits`` that is false and then
    true as j grows (``last`` when none is): galloping from ``guess``, then bisecting."""
    if fits(guess):
        good, bad, step = guess, -1, 1
        while good > 0:
            j = max(0, good - step)
            if not fits(j):
                bad = j
                break
            good, step = j, step * 2
    else:
        bad, step = guess, 1
        found = None
        while bad < last:
            j = min(last, bad + step)
            if fits(j):
                found = j
                break
            bad, step = j, step * 2
        if found is None:
            return last
        good = found
    while good - bad > 1:
        mid = (good + bad) // 2
        if fits(mid):
            good = mid
        else:
            bad = mid
    return good


class Replay:
    """One policy applied to the calls of one trace, thread by thread, in log order: what every
    :class:`Step` shares (the counter, the context window, the rewritten messages, and ``state``, where
    a policy keeps what it carries from call to call)."""

    def __init__(self, policy: Policy, counter: Counter | None, window: int | None, trace: Any = None):
        self.policy = policy
        self.counter = counter
        self.window = window
        #: the log replayed, or what its calls showed of their tools (transforms.cuts.ToolUse): a policy
        #: that looks at the whole log (the tools it never calls)
        self.trace = trace
        self.rewrites = _Rewrites()
        self.tool_lists: dict[tuple[int, frozenset[str]], tuple[list[dict], list[dict] | None]] = {}
        self.previous: dict[str, Sequence[dict]] = {}  # thread -> the log's messages of its last call
        self.state: dict[str, Any] = {}

    def calls(self, call: Call) -> list[Call]:
        """The call as the policy replays it, after the calls the policy adds before it."""
        messages = as_list(call.messages)
        before = self.previous.get(call.thread)
        self.previous[call.thread] = call.messages
        # the call's new messages: those after the last message the thread's last call also held (all of
        # them for a thread's first call); a prompt that is a longer view of the last one's list costs
        # nothing here (what a call adds)
        shared = 0 if before is None else shared_messages(call.messages, before)
        fresh = 0 if before is None else _fresh(messages, before, shared)
        extends = before is not None and shared == len(before)
        step = Step(call, messages, fresh, extends, self, tools=call.tools)
        kept = self.policy.apply(step)
        return step.added + [_replayed(call, kept, step.tools, messages)]


@dataclass
class Step:
    """One call as a policy replays it, what :meth:`Policy.apply` is given: the call, its prompt's
    messages as the log has them, where its new messages start (``fresh``; a policy never changes or
    drops them), whether it continues the previous call of its thread whole (``extends``), and the
    :class:`Replay` it is part of. Calls the policy adds before it go in ``added``. ``tools`` is the
    tool list the call is replayed with: the log's (``call.tools``) unless the policy sets another
    (:meth:`without_tools`); a call with other tools is a changed call, billed as one."""

    call: Call
    messages: list[dict]
    fresh: int
    extends: bool
    replay: Replay
    added: list[Call] = field(default_factory=list)
    tools: list[dict] | None = None

    @property
    def state(self) -> dict[str, Any]:
        """What the policy carries from call to call over one replay (its own keys)."""
        return self.replay.state

    @property
    def window(self) -> int | None:
        return self.replay.window

    def count(self, messages: list[dict]) -> int:
        """The tokens of a prompt of these messages in the call's place (:meth:`Counter.prompt`)."""
        counter = self.replay.counter
        if counter is None:
            raise PolicyError(f"policy {self.replay.policy.spec!r} needs token counts: give apply() a counter")
        return counter.prompt(messages, self.call)

    def count_text(self, text: str) -> int:
        assert self.replay.counter is not None
        return self.replay.counter.text(text)

    def growth(self) -> int:
        """The tokens the log's usage shows in the call's prompt that no message explains (a counter that knows them)."""
        growth = getattr(self.replay.counter, "growth", None)
        return growth(self.call) if callable(growth) else 0

    def rewrite(self, message: dict, how: str, content: Callable[[], str]) -> dict:
        """The message with its content replaced, made once per message and ``how`` over the replay (so that a
        message rewritten alike in every call is one object, and the attributor does its work once)."""
        return self.replay.rewrites.get(message, how, lambda: _with_content(message, content()))

    def without_tools(self, names: frozenset[str]) -> list[dict] | None:
        """The call's tool list without the tools of these names (:func:`tool_name`), made once per tool list
        over the replay (so that calls that carried one list carry one list again, and the attributor and
        the counter do their work once); the log's own list where it has none of them (the call stays the
        log's), None where none is left. Sets :attr:`tools`."""
        tools = self.call.tools
        if tools is not None and names:
            key = (id(tools), names)
            found = self.replay.tool_lists.get(key)
            if found is None or found[0] is not tools:
                left = [t for t in tools if tool_name(t) not in names]
                found = (tools, tools if len(left) == len(tools) else (left or None))
                self.replay.tool_lists[key] = found
            tools = found[1]
        self.tools = tools
        return tools

    def keep_from(self, start: int) -> list[dict]:
        """The system and developer messages, and the messages from ``start`` on (never from past the new
        ones), with the window rule: tool messages at the start of the kept part whose assistant tool call
        was cut are dropped too (a new tool message keeps its assistant message instead)."""
        return _keep_from(self.messages, start, self.fresh)

    def others(self) -> list[int]:
        """Where the messages other than system and developer are."""
        return _others(self.messages)


def tool_name(tool: dict) -> str | None:
    """A tool definition's name (``{"type": "function", "function": {"name": …}}``, or ``{"name": …}``)."""
    function = tool.get("function")
    name = function.get("name") if isinstance(function, dict) else tool.get("name")
    return name if isinstance(name, str) else None


def _replayed(call: Call, kept: list[dict], tools: list[dict] | None, messages: list[dict]) -> Call:
    same_tools = tools is call.tools  # else the policy replays the call with another tool list
    if same_tools and kept is messages:  # the policy kept the prompt as it is
        return call
    if same_tools and len(kept) == len(call.messages) and all(a is b for a, b in zip(kept, call.messages)):
        return call
    # usage was reported for the log's prompt, not this one; encrypted reasoning the log resends
    # stays only where every assistant message stays
    assistants = {id(m) for m in kept if m["role"] == "assistant"}
    keeps_reasoning = all(id(m) in assistants for m in call.messages if m["role"] == "assistant")
    return dataclasses.replace(
        call,
        messages=kept,
        tools=call.tools if same_tools else tools,
        reported=None,
        unrendered=dict(call.unrendered) if keeps_reasoning else {},
    )


# -- the policies ------------------------------------------------------------------------------------
@register
@dataclass(frozen=True)
class Full(Policy):
    """The log as it is."""

    name: ClassVar[str] = "full"

    def describe(self) -> str:
        return "the log as it is"

    def apply(self, step: Step) -> list[dict]:
        return step.messages


@register
@dataclass(frozen=True)
class Window(Policy):
    name: ClassVar[str] = "window"
    parameters: ClassVar[tuple[Parameter, ...]] = (Parameter("N", "messages", minimum=1),)
    messages: int = 20

    def describe(self) -> str:
        return f"system and developer messages and the last {self.messages} other messages"

    def apply(self, step: Step) -> list[dict]:
        others = step.others()
        start = others[-self.messages] if len(others) >= self.messages else (others[0] if others else 0)
        return step.keep_from(start)


@register
@dataclass(frozen=True)
class WindowTokens(Policy):
    name: ClassVar[str] = "window-tokens"
    parameters: ClassVar[tuple[Parameter, ...]] = (Parameter("T", "tokens", minimum=1),)
    needs_counter: ClassVar[bool] = True
    tokens: int = 32000

    def describe(self) -> str:
        return f"system and developer messages and the most recent messages that fit in {self.tokens:,} tokens"

    def apply(self, step: Step) -> list[dict]:
        """The earliest start (of the messages other than system and developer, up to the new ones)
        whose prompt fits in T tokens; the new messages in any case. Prompts shrink as the start moves
        later, so the start is found by a search from the last call's start."""
        starts: dict[str, int] = step.state.setdefault("starts", {})  # thread -> where the last kept part started
        messages, fresh, thread = step.messages, step.fresh, step.call.thread
        candidates = [i for i in step.others() if i <= fresh]
        if not candidates or candidates[-1] != fresh:
            candidates.append(fresh)
        cache: dict[int, tuple[list[dict], bool]] = {}

        def fits(j: int) -> bool:
            if j not in cache:
                kept = _keep_from(messages, candidates[j], fresh)
                cache[j] = (kept, step.count(kept) <= self.tokens)
            return cache[j][1]

        guess = 0
        previous = starts.get(thread) if step.extends else None
        if previous is not None:
            guess = min(range(len(candidates)), key=lambda j: abs(candidates[j] - previous))
        answer = _earliest(fits, len(candidates) - 1, guess)
        starts[thread] = candidates[answer]
        if answer in cache:
            return cache[answer][0]
        return _keep_from(messages, candidates[answer], fresh)


@register
@dataclass(frozen=True)
class Elide(Policy):
    name: ClassVar[str] = "elide"
    parameters: ClassVar[tuple[Parameter, ...]] = (Parameter("K", "turns", minimum=0),)
    turns: int = 2

    def describe(self) -> str:
        return f"tool results older than the last {self.turns} user turns replaced by a one-line stub"

    def apply(self, step: Step) -> list[dict]:
        messages = step.messages
        limit = min(_turn_start(messages, self.turns), step.fresh)
        names: dict[str, str] | None = None
        out = list(messages)
        for i in range(limit):
            m = messages[i]
            if m["role"] != "tool":
                continue
            if names is None:
                names = _tool_names(messages)
            tool = names.get(m.get("tool_call_id") or "", "?")
            size = len(m.get("content") or "")
            out[i] = step.rewrite(m, "elide", lambda: ELIDED.format(tool=tool, size=size))
        return out


@register
@dataclass(frozen=True)
class Cap(Policy):
    name: ClassVar[str] = "cap"
    parameters: ClassVar[tuple[Parameter, ...]] = (Parameter("C", "chars", minimum=1),)
    chars: int = 4000

    def describe(self) -> str:
        return f"tool results cut to their first {self.chars:,} characters, with a note"

    def apply(self, step: Step) -> list[dict]:
        chars = self.chars
        messages, fresh = step.messages, step.fresh
        #: thread -> the messages before its last call's new ones as kept, and whether any was cut: a
        #: call that continues its thread's last call looks at only the messages that call added
        done: dict[str, tuple[list[dict], bool]] = step.state.setdefault("capped", {})
        last = done.get(step.call.thread)
        head, changed = last if step.extends and last is not None else ([], False)  # the list grows in place
        for m in messages[len(head) : fresh]:
            content = m.get("content")
            if m["role"] == "tool" and isinstance(content, str) and len(content) > chars:
                m = step.rewrite(m, f"cap:{chars}", lambda: content[:chars] + CUT.format(size=len(content), kept=chars))
                changed = True
            head.append(m)
        done[step.call.thread] = (head, changed)
        return head + messages[fresh:] if changed else messages


@register
@dataclass(frozen=True)
class UserVerbatim(Policy):
    name: ClassVar[str] = "user-verbatim"
    parameters: ClassVar[tuple[Parameter, ...]] = (Parameter("K", "turns", minimum=0),)
    turns: int = 4

    def describe(self) -> str:
        return (
            f"system and user messages, and the last {self.turns} turns in full; other assistant and tool "
            "messages dropped"
        )

    def apply(self, step: Step) -> list[dict]:
        messages = step.messages
        limit = min(_turn_start(messages, self.turns), step.fresh)
        while 0 < limit < len(messages) and messages[limit]["role"] == "tool":  # a new result keeps its call
            limit -= 1
        return [m for i, m in enumerate(messages) if i >= limit or m["role"] in (*ALWAYS_KEPT, "user")]


@register
@dataclass(frozen=True)
class Compact(Policy):
    name: ClassVar[str] = "compact"
    parameters: ClassVar[tuple[Parameter, ...]] = (
        Parameter("P", "percent", minimum=1, decimal=True),
        Parameter("S", "summary_tokens", minimum=1, optional=True),
    )
    needs_counter: ClassVar[bool] = True
    percent: float = 80.0
    summary_tokens: int = 2000

    @classmethod
    def parse(cls, params: Sequence[str], spec: str) -> Policy:
        policy = super().parse(params, spec)
        assert isinstance(policy, Compact)
        if policy.percent > 100:
            raise PolicyError(f"policy {spec!r}: P is a percentage of the context window, at most 100 ({_listing()})")
        return policy

    def describe(self) -> str:
        return (
            f"history replaced by a summary (the log's own, else a stand-in of {self.summary_tokens:,} tokens) "
            f"when a prompt would exceed {self.percent:g}% of the context window"
        )

    def apply(self, step: Step) -> list[dict]:
        if step.window is None:
            raise PolicyError(f"policy {self.spec!r} needs the model's context window: give it (--window N)")
        #: thread -> (the index of the first message carried after the summary, that message (None: none
        #: yet), the summary message)
        compacted: dict[str, tuple[int, dict | None, dict]] = step.state.setdefault("compacted", {})
        call, messages, fresh = step.call, step.messages, step.fresh
        state = compacted.get(call.thread)
        if state is not None and not step.extends:  # the log rewrote its history: where is the carried part now?
            carried, first, summary = state
            found = fresh if first is None else _find(messages, first, fresh)
            state = None if found is None else (found, first, summary)
        if state is None:
            compacted.pop(call.thread, None)  # the log's own compaction, say: start anew from its prompt
            prompt = messages
        else:
            compacted[call.thread] = state
            carried, _, summary = state
            prompt = [m for m in messages[:carried] if m["role"] in ALWAYS_KEPT] + [summary] + messages[carried:]
        threshold = self.percent / 100 * step.window
        fresh_in_prompt = len(prompt) - (len(messages) - fresh)
        history = prompt[:fresh_in_prompt]
        # what is billed: the prompt and the growth the log's usage shows that no message explains (which no
        # policy removes); nothing to compact when the history carries nothing but system messages and the summary
        carried_summary = state[2] if state is not None else None
        carries = any(m["role"] not in ALWAYS_KEPT and m is not carried_summary for m in history)
        if call.kind == "compaction" or not carries or step.count(prompt) + step.growth() <= threshold:
            return prompt
        # compact: a summarising call with the history and the instruction, then the conversation from the summary
        text = self._stand_in(step)
        summary = {"role": "user", "content": SUMMARY_HEADER + text}
        step.added.append(
            AddedCall(
                index=call.index,
                messages=history + [{"role": "user", "content": COMPACT_INSTRUCTION}],
                tools=call.tools,
                model=call.model,
                reported=None,
                day=call.day,
                where=f"{call.where} (a summarising call added by {self.spec})",
                response={"role": "assistant", "content": text},
                kind="compaction",
                thread=call.thread,
                time=call.time,
            )
        )
        compacted[call.thread] = (fresh, messages[fresh] if fresh < len(messages) else None, summary)
        return [m for m in messages[:fresh] if m["role"] in ALWAYS_KEPT] + [summary] + messages[fresh:]

    def _stand_in(self, step: Step) -> str:
        """A summary of S tokens (counted alone): :data:`STAND_IN`, then filler words."""
        tokens = self.summary_tokens
        stand_ins: dict[int, str] = step.state.setdefault("stand_ins", {})
        if tokens in stand_ins:
            return stand_ins[tokens]
        head = STAND_IN.format(tokens=tokens)
        base = step.count_text(head)
        if base > tokens:  # too short for the line that says what it is: filler alone
            head, base = "", 0
        per = max(1, step.count_text(head + STAND_IN_WORD * 100) - base) / 100
        words = max(0, int((tokens - base) / per))

        def made(n: int) -> str:
            text = head + STAND_IN_WORD * n
            return text if head else text.lstrip()

        while words > 0 and step.count_text(made(words)) > tokens:
            words -= 1
        while step.count_text(made(words + 1)) <= tokens:
            words += 1
        stand_ins[tokens] = text = made(words)
        return text


@register
@dataclass(frozen=True)
class ClearToolUses(Policy):
    name: ClassVar[str] = "clear-tool-uses"
    parameters: ClassVar[tuple[Parameter, ...]] = (
        Parameter("TRIGGER", "trigger", minimum=1),
        Parameter("KEEP", "keep", minimum=0),
    )
    needs_counter: ClassVar[bool] = True
    trigger: int = 100000
    keep: int = 3

    @classmethod
    def parse(cls, params: Sequence[str], spec: str) -> Policy:
        if len(params) == 1:
            raise PolicyError(f"policy {spec!r}: clear-tool-uses takes TRIGGER:KEEP, or neither ({_listing()})")
        return super().parse(params, spec)

    def describe(self) -> str:
        return (
            f"once a prompt exceeds {self.trigger:,} tokens, tool results but the {self.keep} most recent "
            f"replaced by {CLEARED!r}"
        )

    def apply(self, step: Step) -> list[dict]:
        messages, fresh = step.messages, step.fresh
        results = [i for i in range(fresh) if messages[i]["role"] == "tool"]
        if not results or step.count(messages) <= self.trigger:
            return messages
        newer = sum(1 for m in messages[fresh:] if m["role"] == "tool")
        keep = max(0, self.keep - newer)  # the most recent tool results, new ones first
        out = list(messages)
        for i in results[: len(results) - keep]:
            out[i] = step.rewrite(messages[i], "clear", lambda: CLEARED)
        return out


def apply(trace: Trace, policy: Policy, counter: Counter | None = None, window: int | None = None) -> Trace:
    """The trace as ``policy`` replays it: every call keeps its own new messages; the policy decides
    what of the earlier history each prompt carries, per thread. ``counter`` counts tokens for the
    policies that need it, ``window`` is the context window ``compact`` measures against. A call the
    policy leaves as it is is the trace's own :class:`Call`; a call it changes has no reported usage
    (that was the log's prompt's); the summarising calls ``compact`` adds are :class:`AddedCall`.
    The trace given is not changed."""
    if policy.needs_counter and counter is None:
        raise PolicyError(f"policy {policy.spec!r} needs token counts: give apply() a counter")
    replay = Replay(policy, counter, window, trace)
    calls: list[Call] = []
    for call in trace.calls:
        calls.extend(replay.calls(call))
    return dataclasses.replace(trace, calls=calls, notes=list(trace.notes))
