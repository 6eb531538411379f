"""The neutral trace every log reader produces: calls, their prompts, tools and reported usage.

Messages are plain dicts in the OpenAI Chat Completions shape, already checked by the reader:
``role`` is one of system, developer, user, assistant, tool; ``content`` is a string or None;
assistant messages may carry ``tool_calls`` (``[{"id", "type", "function": {"name", "arguments"}}]``);
tool messages carry ``tool_call_id``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime

from tokprof.base.text import visible

ROLES = ("system", "developer", "user", "assistant", "tool")


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
    messages: list[dict]
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
