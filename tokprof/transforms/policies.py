"""Context policies: what of the earlier history each call's prompt carries, as a trace-to-trace transform.

A what-if replays a saved log under a policy. It is replay, not re-run: every call keeps its own
new messages, byte for byte (the messages its prompt adds to the previous call of its thread: the
assistant output of that call, tool results, user text); a policy only decides what of the earlier
history the prompt carries. Each thread (a subagent is a conversation of its own) is replayed on
its own.

A policy string is parsed by :func:`parse_policy` into one of the dataclasses below, and
:func:`apply` makes the transformed trace. Three policies need the token counts of the prompts they
build (``window-tokens``, ``compact``, ``clear-tool-uses``): they take a :class:`Counter`, passed in,
so that the transform stays pure. The exact texts a policy writes into a prompt (the stubs, the
notes, the summary and its instruction) are the constants of this module, documented in
docs/whatif.md.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, Union

from tokprof.base.errors import TokprofError
from tokprof.trace import Call, Trace, as_list

from tokprof.transforms.policy_names import DEFAULT_POLICIES, SYNTAX  # noqa: F401  (named here too)

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


# -- the policies ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Full:
    """The log as it is."""

    @property
    def spec(self) -> str:
        return "full"

    def describe(self) -> str:
        return "the log as it is"


@dataclass(frozen=True)
class Window:
    messages: int = 20

    @property
    def spec(self) -> str:
        return f"window:{self.messages}"

    def describe(self) -> str:
        return f"system and developer messages and the last {self.messages} other messages"


@dataclass(frozen=True)
class WindowTokens:
    tokens: int = 32000

    @property
    def spec(self) -> str:
        return f"window-tokens:{self.tokens}"

    def describe(self) -> str:
        return f"system and developer messages and the most recent messages that fit in {self.tokens:,} tokens"


@dataclass(frozen=True)
class Elide:
    turns: int = 2

    @property
    def spec(self) -> str:
        return f"elide:{self.turns}"

    def describe(self) -> str:
        return f"tool results older than the last {self.turns} user turns replaced by a one-line stub"


@dataclass(frozen=True)
class Cap:
    chars: int = 4000

    @property
    def spec(self) -> str:
        return f"cap:{self.chars}"

    def describe(self) -> str:
        return f"tool results cut to their first {self.chars:,} characters, with a note"


@dataclass(frozen=True)
class UserVerbatim:
    turns: int = 4

    @property
    def spec(self) -> str:
        return f"user-verbatim:{self.turns}"

    def describe(self) -> str:
        return (
            f"system and user messages, and the last {self.turns} turns in full; other assistant and tool "
            "messages dropped"
        )


@dataclass(frozen=True)
class Compact:
    percent: float = 80.0
    summary_tokens: int = 2000

    @property
    def spec(self) -> str:
        base = f"compact:{self.percent:g}"
        return base if self.summary_tokens == 2000 else f"{base}:{self.summary_tokens}"

    def describe(self) -> str:
        return (
            f"history replaced by a summary (the log's own, else a stand-in of {self.summary_tokens:,} tokens) "
            f"when a prompt would exceed {self.percent:g}% of the context window"
        )


@dataclass(frozen=True)
class ClearToolUses:
    trigger: int = 100000
    keep: int = 3

    @property
    def spec(self) -> str:
        return f"clear-tool-uses:{self.trigger}:{self.keep}"

    def describe(self) -> str:
        return (
            f"once a prompt exceeds {self.trigger:,} tokens, tool results but the {self.keep} most recent "
            f"replaced by {CLEARED!r}"
        )


Policy = Union[Full, Window, WindowTokens, Elide, Cap, UserVerbatim, Compact, ClearToolUses]

#: name -> (class, the names of its parameters, in order)
_POLICIES: dict[str, tuple[type, tuple[str, ...]]] = {
    "full": (Full, ()),
    "window": (Window, ("N",)),
    "window-tokens": (WindowTokens, ("T",)),
    "elide": (Elide, ("K",)),
    "cap": (Cap, ("C",)),
    "user-verbatim": (UserVerbatim, ("K",)),
    "compact": (Compact, ("P", "S")),
    "clear-tool-uses": (ClearToolUses, ("TRIGGER", "KEEP")),
}
MAX_PARAMETER = 10**12


def _listing() -> str:
    return "the policies are " + ", ".join(SYNTAX)


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
    if name not in _POLICIES:
        import difflib

        close = difflib.get_close_matches(name, list(_POLICIES), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise PolicyError(f"unknown policy {spec!r}{hint}: {_listing()}")
    cls, names = _POLICIES[name]
    params = [p for p in rest.split(":")] if rest or spec.endswith(":") else []
    if len(params) > len(names):
        expected = "no parameter" if not names else f"at most {len(names)} parameter{'s' if len(names) > 1 else ''}"
        raise PolicyError(f"policy {spec!r}: {name} takes {expected} ({_listing()})")
    if name == "clear-tool-uses" and len(params) == 1:
        raise PolicyError(f"policy {spec!r}: clear-tool-uses takes TRIGGER:KEEP, or neither ({_listing()})")
    if name == "window":
        return Window(*(int(_number(p, spec, "N", minimum=1)) for p in params))
    if name == "window-tokens":
        return WindowTokens(*(int(_number(p, spec, "T", minimum=1)) for p in params))
    if name == "elide":
        return Elide(*(int(_number(p, spec, "K", minimum=0)) for p in params))
    if name == "cap":
        return Cap(*(int(_number(p, spec, "C", minimum=1)) for p in params))
    if name == "user-verbatim":
        return UserVerbatim(*(int(_number(p, spec, "K", minimum=0)) for p in params))
    if name == "compact":
        percent = _number(params[0], spec, "P", minimum=1, decimal=True) if params else 80.0
        if percent > 100:
            raise PolicyError(f"policy {spec!r}: P is a percentage of the context window, at most 100 ({_listing()})")
        tokens = int(_number(params[1], spec, "S", minimum=1)) if len(params) > 1 else 2000
        return Compact(float(percent), tokens)
    if name == "clear-tool-uses":
        if not params:
            return ClearToolUses()
        return ClearToolUses(
            int(_number(params[0], spec, "TRIGGER", minimum=1)), int(_number(params[1], spec, "KEEP", minimum=0))
        )
    return Full()


def parse_policies(texts: Sequence[str]) -> list[Policy]:
    """Policies from their strings, each once, ``full`` first (the baseline every other is compared with)."""
    out: list[Policy] = [Full()]
    for text in texts:
        policy = parse_policy(text)
        if policy not in out:
            out.append(policy)
    return out


def needs_counter(policy: Policy) -> bool:
    return isinstance(policy, (WindowTokens, Compact, ClearToolUses))


class AddedCall(Call):
    """A call the policy adds to the log: the summarising call of ``compact`` (``kind`` "compaction")."""


# -- applying ----------------------------------------------------------------------------------------
def shared_messages(messages: list[dict], before: list[dict]) -> int:
    """How many first messages two prompts have in common (the same objects, or equal ones)."""
    n = min(len(messages), len(before))
    i = 0
    while i < n and (messages[i] is before[i] or messages[i] == before[i]):
        i += 1
    return i


def _fresh(messages: list[dict], before: list[dict]) -> int:
    """Where a call's new messages start: after the last of its messages that the previous call of
    its thread also held (the previous prompt's length when the call continues it)."""
    shared = shared_messages(messages, before)
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


class _Replayer:
    """Applies one policy to the calls of one trace, thread by thread, in log order."""

    def __init__(self, policy: Policy, counter: Counter | None, window: int | None):
        self.policy = policy
        self.counter = counter
        self.window = window
        self.rewrites = _Rewrites()
        self.previous: dict[str, list[dict]] = {}  # thread -> the log's messages of its last call
        self.starts: dict[str, int] = {}  # thread -> window-tokens: where the last call's kept part started
        #: thread -> (the index of the first message carried after the summary, that message (None: none
        #: yet), the summary message)
        self.compacted: dict[str, tuple[int, dict | None, dict]] = {}
        self.stand_ins: dict[int, str] = {}

    def calls(self, call: Call) -> list[Call]:
        """The call as the policy replays it, after the calls the policy adds before it."""
        messages = as_list(call.messages)
        before = self.previous.get(call.thread)
        self.previous[call.thread] = messages
        # the call's new messages: those after the last message the thread's last call also held (all of
        # them for a thread's first call)
        fresh = 0 if before is None else _fresh(messages, before)
        extends = before is not None and fresh == len(before) and shared_messages(messages, before) == fresh
        policy = self.policy
        added: list[Call] = []
        if isinstance(policy, Full):
            kept = messages
        elif isinstance(policy, Window):
            others = _others(messages)
            start = others[-policy.messages] if len(others) >= policy.messages else (others[0] if others else 0)
            kept = _keep_from(messages, start, fresh)
        elif isinstance(policy, WindowTokens):
            kept = self._window_tokens(call, fresh, extends)
        elif isinstance(policy, Elide):
            limit = min(_turn_start(messages, policy.turns), fresh)
            kept = self._stub_results(messages, limit)
        elif isinstance(policy, Cap):
            kept = self._cap(messages, fresh, policy.chars)
        elif isinstance(policy, UserVerbatim):
            limit = min(_turn_start(messages, policy.turns), fresh)
            while 0 < limit < len(messages) and messages[limit]["role"] == "tool":  # a new result keeps its call
                limit -= 1
            kept = [m for i, m in enumerate(messages) if i >= limit or m["role"] in (*ALWAYS_KEPT, "user")]
        elif isinstance(policy, Compact):
            kept, added = self._compact(call, fresh, extends)
        elif isinstance(policy, ClearToolUses):
            kept = self._clear(call, fresh)
        else:  # pragma: no cover - every policy is handled above
            raise TypeError(policy)
        return added + [self._replayed(call, kept)]

    # -- the policies that rewrite messages ------------------------------------------------------
    def _stub_results(self, messages: list[dict], limit: int) -> list[dict]:
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
            out[i] = self.rewrites.get(m, "elide", lambda: _with_content(m, ELIDED.format(tool=tool, size=size)))
        return out

    def _cap(self, messages: list[dict], fresh: int, chars: int) -> list[dict]:
        out = list(messages)
        for i in range(fresh):
            m = messages[i]
            content = m.get("content")
            if m["role"] != "tool" or not isinstance(content, str) or len(content) <= chars:
                continue
            out[i] = self.rewrites.get(
                m, f"cap:{chars}", lambda: _with_content(m, content[:chars] + CUT.format(size=len(content), kept=chars))
            )
        return out

    def _clear(self, call: Call, fresh: int) -> list[dict]:
        assert isinstance(self.policy, ClearToolUses)
        messages = as_list(call.messages)
        results = [i for i in range(fresh) if messages[i]["role"] == "tool"]
        if not results or self._count(messages, call) <= self.policy.trigger:
            return messages
        newer = sum(1 for m in messages[fresh:] if m["role"] == "tool")
        keep = max(0, self.policy.keep - newer)  # the most recent tool results, new ones first
        cleared = results[: len(results) - keep]
        out = list(messages)
        for i in cleared:
            m = messages[i]
            out[i] = self.rewrites.get(m, "clear", lambda: _with_content(m, CLEARED))
        return out

    # -- the policies that count ------------------------------------------------------------------
    def _growth(self, call: Call) -> int:
        """The tokens the log's usage shows in the call's prompt that no message explains (a counter that knows them)."""
        growth = getattr(self.counter, "growth", None)
        return growth(call) if callable(growth) else 0

    def _count(self, messages: list[dict], call: Call) -> int:
        if self.counter is None:
            raise PolicyError(f"policy {self.policy.spec!r} needs token counts: give apply() a counter")
        return self.counter.prompt(messages, call)

    def _window_tokens(self, call: Call, fresh: int, extends: bool) -> list[dict]:
        """The earliest start (of the messages other than system and developer, up to the new ones)
        whose prompt fits in T tokens; the new messages in any case. Prompts shrink as the start moves
        later, so the start is found by a search from the last call's start."""
        assert isinstance(self.policy, WindowTokens)
        messages = as_list(call.messages)
        limit = self.policy.tokens
        candidates = [i for i in _others(messages) if i <= fresh]
        if not candidates or candidates[-1] != fresh:
            candidates.append(fresh)
        cache: dict[int, tuple[list[dict], bool]] = {}

        def fits(j: int) -> bool:
            if j not in cache:
                kept = _keep_from(messages, candidates[j], fresh)
                cache[j] = (kept, self._count(kept, call) <= limit)
            return cache[j][1]

        guess = 0
        previous = self.starts.get(call.thread) if extends else None
        if previous is not None:
            guess = min(range(len(candidates)), key=lambda j: abs(candidates[j] - previous))
        answer = _earliest(fits, len(candidates) - 1, guess)
        self.starts[call.thread] = candidates[answer]
        if answer in cache:
            return cache[answer][0]
        return _keep_from(messages, candidates[answer], fresh)

    def _stand_in(self, tokens: int) -> str:
        """A summary of ``tokens`` tokens (counted alone): :data:`STAND_IN`, then filler words."""
        if tokens in self.stand_ins:
            return self.stand_ins[tokens]
        assert self.counter is not None
        head = STAND_IN.format(tokens=tokens)
        base = self.counter.text(head)
        if base > tokens:  # too short for the line that says what it is: filler alone
            head, base = "", 0
        per = max(1, self.counter.text(head + STAND_IN_WORD * 100) - base) / 100
        words = max(0, int((tokens - base) / per))

        def made(n: int) -> str:
            text = head + STAND_IN_WORD * n
            return text if head else text.lstrip()

        def count(n: int) -> int:
            assert self.counter is not None
            return self.counter.text(made(n))

        while words > 0 and count(words) > tokens:
            words -= 1
        while count(words + 1) <= tokens:
            words += 1
        self.stand_ins[tokens] = text = made(words)
        return text

    def _compact(self, call: Call, fresh: int, extends: bool) -> tuple[list[dict], list[Call]]:
        assert isinstance(self.policy, Compact)
        if self.window is None:
            raise PolicyError(f"policy {self.policy.spec!r} needs the model's context window: give it (--window N)")
        messages = as_list(call.messages)
        state = self.compacted.get(call.thread)
        if state is not None and not extends:  # the log rewrote its history: where is the carried part now?
            carried, first, summary = state
            found = fresh if first is None else _find(messages, first, fresh)
            state = None if found is None else (found, first, summary)
        if state is None:
            self.compacted.pop(call.thread, None)  # the log's own compaction, say: start anew from its prompt
            prompt = messages
        else:
            self.compacted[call.thread] = state
            carried, _, summary = state
            prompt = [m for m in messages[:carried] if m["role"] in ALWAYS_KEPT] + [summary] + messages[carried:]
        threshold = self.policy.percent / 100 * self.window
        fresh_in_prompt = len(prompt) - (len(messages) - fresh)
        history = prompt[:fresh_in_prompt]
        # what is billed: the prompt and the growth the log's usage shows that no message explains (which no
        # policy removes); nothing to compact when the history carries nothing but system messages and the summary
        carried_summary = state[2] if state is not None else None
        carries = any(m["role"] not in ALWAYS_KEPT and m is not carried_summary for m in history)
        if call.kind == "compaction" or not carries or self._count(prompt, call) + self._growth(call) <= threshold:
            return prompt, []
        # compact: a summarising call with the history and the instruction, then the conversation from the summary
        text = self._stand_in(self.policy.summary_tokens)
        summary = {"role": "user", "content": SUMMARY_HEADER + text}
        summarising = AddedCall(
            index=call.index,
            messages=history + [{"role": "user", "content": COMPACT_INSTRUCTION}],
            tools=call.tools,
            model=call.model,
            reported=None,
            day=call.day,
            where=f"{call.where} (a summarising call added by {self.policy.spec})",
            response={"role": "assistant", "content": text},
            kind="compaction",
            thread=call.thread,
            time=call.time,
        )
        self.compacted[call.thread] = (fresh, messages[fresh] if fresh < len(messages) else None, summary)
        kept = [m for m in messages[:fresh] if m["role"] in ALWAYS_KEPT] + [summary] + messages[fresh:]
        return kept, [summarising]

    # -- the replayed call ---------------------------------------------------------------------------
    @staticmethod
    def _replayed(call: Call, kept: list[dict]) -> Call:
        if len(kept) == len(call.messages) and all(a is b for a, b in zip(kept, call.messages)):
            return call
        # usage was reported for the log's prompt, not this one; encrypted reasoning the log resends
        # stays only where every assistant message stays
        assistants = {id(m) for m in kept if m["role"] == "assistant"}
        keeps_reasoning = all(id(m) in assistants for m in call.messages if m["role"] == "assistant")
        return dataclasses.replace(
            call, messages=kept, reported=None, unrendered=dict(call.unrendered) if keeps_reasoning else {}
        )


def apply(trace: Trace, policy: Policy, counter: Counter | None = None, window: int | None = None) -> Trace:
    """The trace as ``policy`` replays it: every call keeps its own new messages; the policy decides
    what of the earlier history each prompt carries, per thread. ``counter`` counts tokens for the
    policies that need it, ``window`` is the context window ``compact`` measures against. A call the
    policy leaves as it is is the trace's own :class:`Call`; a call it changes has no reported usage
    (that was the log's prompt's); the summarising calls ``compact`` adds are :class:`AddedCall`.
    The trace given is not changed."""
    if needs_counter(policy) and counter is None:
        raise PolicyError(f"policy {policy.spec!r} needs token counts: give apply() a counter")
    replayer = _Replayer(policy, counter, window)
    calls: list[Call] = []
    for call in trace.calls:
        calls.extend(replayer.calls(call))
    return dataclasses.replace(trace, calls=calls, notes=list(trace.notes))
