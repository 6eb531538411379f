"""The "what to change" block (tokprof.analyses.actions) in words: one headline per action with what it
saves, then why and how. Shared by the terminal table, the HTML report and the directory views."""

from __future__ import annotations

from collections.abc import Sequence

from tokprof.profiling import Action
from tokprof.render.money import dollars

TITLE = "What to change"
NOTHING = "no change tokprof can measure on this log saves anything"


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
    head = f"not priced: {tokens}{estimate}" if action.basis == "none" else f"saves {tokens}{estimate}"
    return head + f"; no dollars: {action.unpriced or 'not priced'}"


def headline(action: Action) -> str:
    return f"{action.what}: {saving_text(action)}"


def action_lines(actions: Sequence[Action] | None) -> list[tuple[str, str]]:
    """(label, text) lines: each action's headline, why and how; none when actions were not worked out."""
    if actions is None:
        return []
    if not actions:
        return [("", NOTHING)]
    out: list[tuple[str, str]] = []
    for n, action in enumerate(actions, 1):
        out.append((f"{n}.", headline(action)))
        out.append(("   why", action.why))
        if action.how:
            out.append(("   how", action.how))
    return out
