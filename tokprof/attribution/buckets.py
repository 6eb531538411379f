"""The four buckets every token of a prompt goes to, the bucket each role's messages fill, the warnings a
call's attribution can carry (keyed, so that a profile counts the calls each applies to) and one call's
counts. Shared by the attributor (:mod:`tokprof.attribution.attributor`) and splicing
(:mod:`tokprof.attribution.splice`)."""

from __future__ import annotations

from dataclasses import dataclass, field

BUCKETS = ("system", "tool_definitions", "tool_results", "conversation")
SYSTEM, TOOLS, RESULTS, CONVERSATION = range(4)
ROLE_BUCKET = {"system": SYSTEM, "developer": SYSTEM, "tool": RESULTS, "user": CONVERSATION, "assistant": CONVERSATION}


#: Warning texts, keyed so that a profile can count how many calls each applies to.
WARN_TOOLS_IGNORED = "tools-ignored"
WARN_TOOLS_UNRENDERABLE = "tools-unrenderable"
WARN_RESULTS_DROPPED = "results-dropped"
WARN_SYSTEM_DROPPED = "system-dropped"
WARN_MESSAGES_DROPPED = "messages-dropped"
WARN_NO_SPANS = "spans-unavailable"
WARN_BOUNDARIES_ESTIMATED = "boundaries-estimated"
WARNINGS = {
    WARN_TOOLS_IGNORED: "the chat template does not render tool definitions: tool_definitions is 0 "
    "because the template ignores the tools, not because they cost nothing",
    WARN_TOOLS_UNRENDERABLE: "the chat template fails without tools (both tools=None and tools=[]): "
    "tool definition scaffolding could not be separated and is counted with the messages around it",
    WARN_RESULTS_DROPPED: "the chat template drops the content of some tool results: they are not in the "
    "prompt, so tool_results does not count them",
    WARN_SYSTEM_DROPPED: "the chat template drops a system or developer message: it is not in the prompt, "
    "so system does not count it",
    WARN_MESSAGES_DROPPED: "the chat template drops the content of some user or assistant messages",
    WARN_NO_SPANS: "the chat template changes message content in a way tokprof cannot follow (content markers "
    "could not be used): buckets rest on message boundaries alone and may be less precise",
    WARN_BOUNDARIES_ESTIMATED: "the call has too many messages new to it to render every prefix of the "
    "conversation (the time would grow with the square of their number): where messages start was taken "
    "from the content markers and each role's header, which may move a few tokens of scaffolding "
    "between neighbouring messages",
}


@dataclass
class CallBuckets:
    system: int = 0
    tool_definitions: int = 0
    tool_results: int = 0
    conversation: int = 0
    warnings: list[str] = field(default_factory=list)
    spans: bool = True  # whether content markers were used

    @property
    def total(self) -> int:
        return self.system + self.tool_definitions + self.tool_results + self.conversation

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in BUCKETS}
