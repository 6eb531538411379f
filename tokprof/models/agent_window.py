"""The context window an agent runs a model with, which may be smaller than the model's own (Claude
Code's 200,000 unless its 1M option shows), and for Claude Code the prompt at which it compacts by itself;
the model's own window comes from :mod:`tokprof.pricing.models`."""

from __future__ import annotations

from dataclasses import dataclass

from tokprof.pricing.models import context_window


#: The log formats of Claude Code (its transcripts, and ``claude -p --output-format stream-json``).
CLAUDE_CODE_FORMATS = ("claude-code", "claude-stream-json")
#: The window Claude Code runs a Claude model with unless its 1M option is chosen (a ``[1m]`` model
#: id), whatever larger window the model has.
CLAUDE_CODE_WINDOW = 200_000
#: The larger window Claude Code's 1M option gives.
CLAUDE_CODE_LARGE_WINDOW = 1_000_000
#: Claude Code compacts a conversation automatically when its prompt reaches the window less the
#: tokens kept for the summary's output (at most 20,000) and a buffer of 13,000: 167,000 of 200,000.
COMPACT_OUTPUT, COMPACT_BUFFER = 20_000, 13_000


@dataclass(frozen=True)
class AgentWindow:
    """The context window an agent runs a model with, where it comes from, and for Claude Code the
    prompt at which it compacts the conversation by itself."""

    window: int | None
    source: str  # what says so: "the agent", "a [1m] model id", "a prompt above 200,000", "Claude Code", "genai-prices"
    compacts_at: int | None = None


def agent_window(
    log_format: str | None,
    names: list[str | None],
    largest: int | None = None,
    given: int | None = None,
) -> AgentWindow:
    """The window a log's calls ran with. ``given``: the agent's own word (Claude Code's statusLine
    input carries it, in versions that send it); ``largest``: the largest prompt seen. Claude Code
    runs Claude models at 200,000 tokens unless a ``[1m]`` model id or a prompt above 200,000 shows
    the 1M option; other agents, the model's window in genai-prices."""
    bare = [n[: -len("[1m]")] if n and n.lower().endswith("[1m]") else n for n in names]
    claude_code = log_format in CLAUDE_CODE_FORMATS
    if given is not None and given > 0:
        found = AgentWindow(given, "the agent")
    elif not claude_code:
        return AgentWindow(context_window(bare), "genai-prices")
    elif any(n and n.lower().endswith("[1m]") for n in names):
        found = AgentWindow(CLAUDE_CODE_LARGE_WINDOW, "a [1m] model id")
    elif largest is not None and largest > CLAUDE_CODE_WINDOW:
        public = context_window(bare)
        larger = public if public is not None and public > CLAUDE_CODE_WINDOW else CLAUDE_CODE_LARGE_WINDOW
        found = AgentWindow(larger, "a prompt above 200,000")
    else:
        public = context_window(bare)
        found = AgentWindow(min(public or CLAUDE_CODE_WINDOW, CLAUDE_CODE_WINDOW), "Claude Code")
    if claude_code and found.window is not None:
        found = AgentWindow(found.window, found.source, compacts_at(found.window))
    return found


def compacts_at(window: int) -> int:
    """The prompt at which Claude Code compacts a conversation by itself, for its window: the window
    less the summary's output (the model's output limit, at most 20,000: every Claude model Claude
    Code runs allows 20,000) and a buffer of 13,000. ``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`` makes it
    earlier, which no log records."""
    return max(0, window - COMPACT_OUTPUT - COMPACT_BUFFER)
