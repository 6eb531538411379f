"""What a context policy forgets: for each fact the user names, where it first enters the
conversation, which later prompts still carry it, and whether the final prompt does.

A fact is a text (matched verbatim) or a regular expression (``re:...``). A prompt carries a fact
when one of its messages holds it whole: a user message, a tool result, an assistant message or a
tool call's arguments, or the system prompt. A fact split across two messages is not carried
(neither message holds it). This is model-free: it reads the messages a policy keeps, the text the
template renders verbatim.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tokprof.base.bounded as bounded
from tokprof.base.errors import InputError
from tokprof.trace import Call, Trace
from tokprof.transforms.policies import AddedCall

#: The longest fact taken, in characters (a fact is a needle, not a document).
MAX_FACT = 2000
SUBAGENTS_ONLY = "only subagents' prompts carry it: retention is followed in the main conversation"


@dataclass(frozen=True)
class Fact:
    """A fact to look for: its text as the user wrote it, and the pattern that finds it."""

    text: str
    pattern: re.Pattern[str]

    @property
    def is_pattern(self) -> bool:
        return self.text.startswith("re:")


@dataclass(frozen=True)
class FactRetention:
    """One fact under one policy."""

    text: str
    first_call: int | None  # the log's call whose prompt first carries it (None: no prompt of the log does)
    last_call: int | None  # the last call whose prompt carries it under this policy
    kept_in_final: bool | None  # whether the final prompt carries it (None: the fact never appears)
    calls_missing: tuple[int, ...]  # calls after first_call whose prompts do not carry it
    note: str | None = None  # why there is nothing to say (a fact only subagents' prompts carry)

    @property
    def dropped(self) -> bool:
        """The fact entered the conversation and the policy's final prompt no longer carries it."""
        return self.first_call is not None and self.kept_in_final is False

    def to_dict(self) -> dict:
        return {
            "text": self.text,
            "first_call": self.first_call,
            "last_call": self.last_call,
            "kept_in_final": self.kept_in_final,
            "calls_missing": list(self.calls_missing),
            "note": self.note,
        }


def parse_fact(text: str) -> Fact:
    """A fact from the command line: ``re:PATTERN`` is a regular expression, anything else a text."""
    if not isinstance(text, str) or not text.strip():
        raise InputError("--fact", None, "expected a text to look for, found an empty one")
    if len(text) > MAX_FACT:
        raise InputError("--fact", None, f"a fact of {len(text):,} characters: the limit is {MAX_FACT:,}")
    if text.startswith("re:"):
        try:
            return Fact(text, re.compile(text[3:]))
        except re.error as exc:
            raise InputError("--fact", None, f"{text!r}: not a regular expression: {exc}") from None
    return Fact(text, re.compile(re.escape(text)))


def read_facts(path: str | Path) -> list[str]:
    """The facts of a file, one per line (blank lines and lines starting with ``#`` left out)."""
    try:
        lines = bounded.read_text(path, "facts").splitlines()
    except OSError as exc:
        raise InputError(str(path), None, f"cannot read the facts file: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise InputError(str(path), None, f"byte {exc.start}: not UTF-8 text") from None
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def texts(value: Any) -> Iterable[str]:
    """Every string a message holds (content, parts, tool calls' names and arguments)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from texts(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from texts(item)


def carries(messages: Sequence[dict], fact: Fact) -> bool:
    """Whether one message of a prompt holds the fact whole."""
    return any(fact.pattern.search(text) for message in messages for text in texts(message))


def main_calls(trace: Trace) -> list[Call]:
    """The calls that replay a call of the log (not the summarising calls a policy adds), main thread."""
    return [c for c in trace.calls if not isinstance(c, AddedCall) and not c.thread]


def first_calls(
    trace: Trace, facts: Sequence[Fact], carried: Sequence[Sequence[bool]] | None = None
) -> list[int | None]:
    """For each fact, the log's first call whose prompt carries it (``carried``: for each of the
    trace's calls, whether its prompt carries each fact, taken as the call went by; else read from
    the calls' prompts)."""
    calls = _main(trace, facts, carried)
    return [next((c.index for c, has in calls if has[k]), None) for k in range(len(facts))]


def retention(
    trace: Trace,
    facts: Sequence[Fact],
    first: Sequence[int | None],
    carried: Sequence[Sequence[bool]] | None = None,
) -> tuple[FactRetention, ...]:
    """Each fact under a policy's trace, given where it first appears in the log (:func:`first_calls`)
    and, for each of the trace's calls, whether its prompt carries each fact (``carried``, as
    :func:`first_calls` takes it)."""
    carried = carried if carried is not None else carried_facts(trace.calls, facts)
    calls = _main(trace, facts, carried)
    out = []
    for k, (fact, start) in enumerate(zip(facts, first)):
        if start is None:
            elsewhere = any(has[k] for c, has in zip(trace.calls, carried) if c.thread)
            out.append(FactRetention(fact.text, None, None, None, (), SUBAGENTS_ONLY if elsewhere else None))
            continue
        later = [(c, has) for c, has in calls if c.index >= start]
        held = [c.index for c, has in later if has[k]]
        kept = set(held)
        missing = tuple(c.index for c, _ in later if c.index not in kept)
        final = bool(calls) and calls[-1][1][k]
        out.append(FactRetention(fact.text, start, held[-1] if held else None, final, missing))
    return tuple(out)


def carried_facts(calls: Iterable[Call], facts: Sequence[Fact]) -> list[tuple[bool, ...]]:
    """For each call, whether its prompt carries each fact."""
    return [tuple(carries(c.messages, fact) for fact in facts) for c in calls]


def _main(
    trace: Trace, facts: Sequence[Fact], carried: Sequence[Sequence[bool]] | None
) -> list[tuple[Call, Sequence[bool]]]:
    carried = carried if carried is not None else carried_facts(trace.calls, facts)
    return [(c, has) for c, has in zip(trace.calls, carried) if not isinstance(c, AddedCall) and not c.thread]


_STANDING = re.compile(r"[^.!?\n]*\b(always|never|must|do not|don't|make sure)\b[^.!?\n]*[.!?]?", re.I)
_IDENTIFIER = re.compile(r"\b(?=[\w.-]*\d)(?=[\w.-]*[A-Za-z])[A-Za-z][\w.-]*\w\b|\b[A-Za-z]+[-_][\w-]*\w\b")


def suggest_facts(trace: Trace, limit: int = 12) -> list[str]:
    """Candidate facts from the user's own messages: standing instructions ("always", "must",
    "never"), then identifiers stated once (names with digits, hyphens or underscores). Suggestions
    only: a person decides which matter."""
    user: list[str] = []
    for call in trace.calls:  # each user message once, however many prompts (or copies) hold it
        for message in call.messages:
            if message.get("role") == "user":
                user.extend(t for t in texts(message.get("content")) if t.strip())
    user = list(dict.fromkeys(user))
    text = "\n".join(user)
    found: list[str] = []
    for match in _STANDING.finditer(text):
        sentence = " ".join(match.group(0).split())
        if 12 <= len(sentence) <= 200:
            found.append(sentence)
    counts: dict[str, int] = {}
    for match in _IDENTIFIER.finditer(text):
        counts[match.group(0)] = counts.get(match.group(0), 0) + 1
    found += [word for word, n in counts.items() if n == 1 and len(word) >= 4]
    return list(dict.fromkeys(found))[:limit]
