"""The neutral trace every log reader produces: calls, their prompts, tools and reported usage.

Messages are plain dicts in the OpenAI Chat Completions shape, already checked by the reader:
``role`` is one of system, developer, user, assistant, tool; ``content`` is a string or None;
assistant messages may carry ``tool_calls`` (``[{"id", "type", "function": {"name", "arguments"}}]``);
tool messages carry ``tool_call_id``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from itertools import islice
from typing import Any, Iterator, overload

from tokprof.base.text import visible

ROLES = ("system", "developer", "user", "assistant", "tool")


class PromptView(Sequence):
    """The first ``length`` messages of ``base``, read as a list is: a call's prompt that shares its
    messages with the calls before it, a conversation's growing list, without a list of its own per
    call (a stretch of n calls would hold n²/2 pointers). ``base`` only grows at its end, past every
    view of it (:func:`extended`), so a view never changes. Slicing gives a list; ``+`` a list; a
    view equals a list or view of equal messages. It has no list's methods that change it: a
    transform that changes a prompt builds a new list."""

    __slots__ = ("base", "length")

    def __init__(self, base: list[dict], length: int) -> None:
        if not 0 <= length <= len(base):
            raise ValueError(f"a view of {length} messages of a list of {len(base)}")
        self.base = base
        self.length = length

    def __len__(self) -> int:
        return self.length

    @overload
    def __getitem__(self, index: int) -> dict: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict]: ...

    def __getitem__(self, index: int | slice) -> dict | list[dict]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self.length)
            if step < 0:  # rare: through a copy of what the view shows
                return self.base[: self.length][index]
            return self.base[start:stop:step]
        if index < 0:
            index += self.length
        if not 0 <= index < self.length:
            raise IndexError("prompt index out of range")
        return self.base[index]

    def __iter__(self) -> Iterator[dict]:
        return islice(self.base, self.length)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PromptView) and other.base is self.base:
            return other.length == self.length
        if not isinstance(other, (list, PromptView)):
            return NotImplemented
        return len(other) == self.length and all(a is b or a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]  # as a list's

    def __add__(self, other: Any) -> list[dict]:
        if not isinstance(other, (list, PromptView)):
            return NotImplemented
        return [*self, *other]

    def __radd__(self, other: Any) -> list[dict]:
        if not isinstance(other, list):
            return NotImplemented
        return [*other, *self]

    def __repr__(self) -> str:
        return repr(list(self))

    def __reduce__(self) -> tuple:  # pickled as the list it reads as
        return (list, (list(self),))

    def extends(self, other: "Sequence[dict]") -> bool:
        """Whether this prompt starts with ``other`` because both are views of one list: O(1)."""
        return isinstance(other, PromptView) and other.base is self.base and other.length <= self.length


def extended(prompt: "Sequence[dict]", more: "Sequence[dict]") -> PromptView:
    """``prompt`` followed by ``more``, as a view: of ``prompt``'s own list when ``prompt`` is a view of
    all of it so far (the list grows at its end, which no view shows), else of a new list."""
    if isinstance(prompt, PromptView) and len(prompt.base) == prompt.length:
        prompt.base.extend(more)
        return PromptView(prompt.base, len(prompt.base))
    base = [*prompt, *more]
    return PromptView(base, len(base))


def as_list(messages: "Sequence[dict]") -> list[dict]:
    """Messages as a list (a view's copied: for what only takes a list, such as ``json.dumps``)."""
    return messages if isinstance(messages, list) else list(messages)


@dataclass(frozen=True, slots=True)
class Usage:
    """Usage as the provider reported it, normalised.

    ``prompt`` is the whole prompt the provider counted, cached tokens included. ``cache_write`` is
    every token written to the cache; ``cache_write_5m`` and ``cache_write_1h`` split it by the
    cache's lifetime when the provider reports that (Anthropic's ``cache_creation``), else None.
    """

    prompt: int | None = None
    cache_read: int | None = None
    cache_write: int | None = None
    output: int | None = None
    cache_write_5m: int | None = None
    cache_write_1h: int | None = None

    @property
    def uncached(self) -> int | None:
        """The prompt tokens neither read from nor written to the cache (None without a prompt count)."""
        if self.prompt is None:
            return None
        return max(self.prompt - (self.cache_read or 0) - (self.cache_write or 0), 0)

    def to_dict(self) -> dict:
        out = {
            "prompt": self.prompt,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
            "output": self.output,
        }
        if self.cache_write_5m is not None or self.cache_write_1h is not None:
            out["cache_write_5m"] = self.cache_write_5m
            out["cache_write_1h"] = self.cache_write_1h
        return out


@dataclass(slots=True)
class Call:
    """One model call: the prompt it was sent (messages and tools) and what was reported."""

    index: int
    messages: list[dict] | PromptView  # a view: shared with the calls before it (see PromptView)
    tools: list[dict] | None
    model: str | None = None
    reported: Usage | None = None
    day: date | None = None
    where: str = ""  # where in the log this call came from, for messages
    response: dict | None = None  # the assistant message the call produced, when the log has it
    #: Tokens known to be in the prompt from reported usage but not renderable (encrypted reasoning
    #: items of earlier calls), by bucket name: counted in that bucket as reported, and labelled.
    unrendered: dict[str, int] = field(default_factory=dict)
    kind: str = "call"  # "call", or "compaction" for a call that summarised the context
    thread: str = ""  # "" for the main conversation, else a subagent's id: its prompts have their own fixed part
    request_id: str | None = None  # the provider's id of the call, when the log has one (to count it once)
    time: datetime | None = None  # when the call was made (timezone-aware, UTC), when the log says
    cwd: str | None = None  # the agent's working directory (the project), when the log records it
    git_branch: str | None = None  # the git branch the agent worked on, when the log records it
    git_commit: str | None = None  # the commit it started from, when the log records it


@dataclass
class Note:
    """A warning: something a reader noticed and handled by a documented rule (a skipped error
    response, a truncated last line, content that is not text), with the places in the log it
    applies to; or something a later stage found, with the calls it applies to."""

    code: str
    message: str
    places: list[str] = field(default_factory=list)
    calls: list[int] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"code": self.code, "message": self.message, "calls": list(self.calls), "places": list(self.places)}

    @classmethod
    def from_dict(cls, d: dict) -> "Note":
        return cls(
            code=d["code"], message=d["message"], places=list(d.get("places") or []), calls=list(d.get("calls") or [])
        )


@dataclass
class Trace:
    path: str
    format: str
    calls: list[Call] = field(default_factory=list)
    model: str | None = None
    notes: list[Note] = field(default_factory=list)
    #: Parts of every prompt the log does not record ("system", "tools"): Claude Code and Codex logs
    #: keep neither the tool definitions nor (Claude Code) the system prompt.
    unrecorded: tuple[str, ...] = ()
    supplied: tuple[str, ...] = ()  # what of that the user supplied (--system, --tools): for the main thread
    session: str | None = None  # the session id, for logs of agent sessions
    compactions: int = 0  # compaction boundaries in the log (their calls may or may not be recorded)

    def note(self, code: str, message: str, place: str | None = None) -> None:
        """Record a note, gathering the places of notes with the same code."""
        if place is not None:  # places come from the log: one line, nothing a terminal acts on, encodable
            place = visible(place)
        for existing in self.notes:
            if existing.code == code:
                if place is not None:
                    existing.places.append(place)
                return
        self.notes.append(Note(code, message, [place] if place is not None else []))

    def tool_calls(self) -> list[dict]:
        """Every tool call the model made in the log, each once: in prompts and in responses."""
        seen: set = set()
        out = []
        for call in self.calls:
            messages = list(call.messages) + ([call.response] if call.response else [])
            for message in messages:
                for j, tool_call in enumerate(message.get("tool_calls") or []):
                    key = tool_call.get("id") or (id(message), j)
                    if key in seen:
                        continue
                    seen.add(key)
                    out.append(tool_call)
        return out
