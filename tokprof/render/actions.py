"""The "what to change" block (tokprof.analyses.actions) in words: one headline per action with what it
saves, then why and how. Shared by the terminal table, the HTML report and the directory views."""

from __future__ import annotations

from collections.abc import Sequence

from tokprof.profiling import Action
from tokprof.pricing.render import dollars

TITLE = "What to change"
NOTHING = (
    "none of the changes tokprof measures (a cache fix, capping or eliding tool results, dropping tools never "
    "called) saves anything on this log"
)
#: A directory view's: it prices the cache fixes alone (the replays run per session).
NOTHING_CACHED = "no cache fix saves anything over these sessions"


def saving_text(action: Action) -> str:
    """What an action saves: dollars a replay proves (labelled when the counts are an estimate), tokens
    beside; without dollars, the tokens and why there are none."""
    estimate = " (estimate)" if action.estimate else ""
    if action.basis == "cache":
        tokens = f"{action.tokens:,} tokens read from the cache instead of written again" if action.tokens else ""
    elif action.basis == "none":
        tokens = f"{action.tokens:,} tokens over the run" if action.tokens else ""
    else:
        tokens = f"{action.tokens:,} input tokens" if action.tokens else ""
    if action.dollars is not None:
        return f"saves {dollars(action.dollars)}{estimate}" + (f", {tokens}" if tokens else "")
    if action.basis == "none":
        return f"{tokens}{estimate}; no dollars: {action.unpriced or 'not priced'}"
    return f"saves {tokens}{estimate}; no dollars: {action.unpriced or 'not priced'}"


def headline(action: Action) -> str:
    return f"{action.what}: {saving_text(action)}"


def wrapped(actions: Sequence[Action] | None, width: int, nothing: str = NOTHING) -> list[str]:
    """The block as lines of at most ``width`` columns, each action's why and how under its headline
    (``nothing``: the line when no action saves anything)."""
    import textwrap

    out: list[str] = []
    for label, text in action_lines(actions, nothing):
        if label and not label.startswith(" "):  # a headline: "1. ...", continued under its text
            first, rest = f"  {label} ", "       "
        elif label:  # why, how: under the headline, continued a little further in
            first, rest = "       ", "         "
            text = f"{label.strip()}: {text}"
        else:
            first = rest = "  "
        lines = textwrap.wrap(
            text, max(40, width), initial_indent=first, subsequent_indent=rest, break_on_hyphens=False
        )
        out += lines or [first]
    return out


def action_lines(actions: Sequence[Action] | None, nothing: str = NOTHING) -> list[tuple[str, str]]:
    """(label, text) lines: each action's headline, why and how; none when actions were not worked out."""
    if actions is None:
        return []
    if not actions:
        return [("", nothing)]
    out: list[tuple[str, str]] = []
    for n, action in enumerate(actions, 1):
        out.append((f"{n}.", headline(action)))
        out.append(("   why", action.why))
        if action.how:
            out.append(("   how", action.how))
    return out
