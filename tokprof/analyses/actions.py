"""What to change: at most three actions, ranked by the dollars a replay of the log proves each saves.

Each action is measured on the log itself, never estimated from a rule of thumb:

* a **cache fix** (idle gaps past the cache's lifetime, a changing system prompt or tool list, a model
  switch) is priced by cache forensics (:mod:`tokprof.analyses.cache_forensics`): the log's own calls
  billed again with the tokens a kept cache would have read read from it, at each call's own prices;
* **capping or eliding tool results** is priced by a what-if replay (:mod:`tokprof.analyses.whatif`) of
  the log under ``cap`` and ``elide``; the tools whose results it cuts are named;
* **dropping tools never called** is priced by a what-if replay of the log under ``drop-tools``
  (:class:`tokprof.transforms.cuts.DropTools`: the tools the log never calls taken out of every call's tool
  list, the prefix they change written to the cache again); the tools are named. Where it was not
  replayed (a directory view) it carries the tokens their definitions cost over the run, unpriced, and
  says so (``dollars`` None, ``unpriced`` the reason).

An action that saves nothing (or costs more) is not one. Priced actions come first, by dollars, then
the unpriced by tokens. An unpriced log gets tokens and the reason there are no dollars. The
configuration change of each (``how``) is the documented one of the agent that wrote the log
(:mod:`tokprof.analyses.agent_config`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import TYPE_CHECKING

from tokprof.analyses import agent_config
from tokprof.pricing.billing import CacheSummary
from tokprof.profiling import Action, Profile
from tokprof.trace import Call, Trace

if TYPE_CHECKING:  # the replay's results (the module stays light for the directory views)
    from tokprof.analyses.whatif import PolicyResult, WhatIfReport
    from tokprof.transforms.cuts import ToolUse

#: At most this many actions are shown.
MAX_ACTIONS = 3
#: The policies replayed for the tool-results action: a cap of each result, and stubs for old ones.
RESULT_POLICIES = ("cap:4000", "elide:2")
#: The policy replayed for the tools-never-called action (tokprof.transforms.cuts.DropTools).
DROP_POLICY = "drop-tools"
#: ``elide`` rewrites every earlier prompt, so its replay counts every prompt anew (ten times a profile on a
#: 439-call session): it is replayed only for logs that carry at most this many messages over the run.
ELIDE_MESSAGES = 20000
#: How many tools an action names.
NAMED = 3


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _listed(names: Sequence[str]) -> str:
    shown = list(names[:NAMED])
    more = len(names) - len(shown)
    text = ", ".join(shown)
    return text + (f" and {more} more" if more > 0 else "")


# -- cache fixes -----------------------------------------------------------------------------------
def _cache_fix(reason: str, part: str | None) -> tuple[str, str, str] | None:
    """(what, why with {calls}, how) for a miss reason a change of practice removes; None: none does."""
    if reason == "idle-gap":
        return (
            "resume within the cache's lifetime",
            "{calls} came back after an idle gap past the cache's lifetime, and the prompt was written again",
            "keep pauses under the cache lifetime (Anthropic: 5 minutes, or 1 hour where the 1-hour cache "
            "is written; OpenAI: about 10 minutes), or start a new session after a long break",
        )
    if reason == "model-switch":
        return (
            "stay on one model within a session",
            "{calls} switched model, and a cache is per model",
            "choose the model when the session starts; switch models in a new session",
        )
    if reason == "prefix-changed" and part == "system":
        return (
            "keep the system prompt the same from call to call",
            "{calls} changed the system prompt, so nothing after it was read from the cache",
            "move what changes (dates, status, file lists) out of the system prompt into a later message",
        )
    if reason == "prefix-changed" and part == "tools":
        return (
            "keep the tool list fixed within a session",
            "{calls} changed the tool definitions, so nothing after them was read from the cache",
            "connect MCP servers before the session starts and do not add or remove tools during it",
        )
    if reason == "prefix-changed" and part in ("message", "reasoning"):
        return (
            "do not rewrite earlier messages",
            "{calls} changed an earlier message, so nothing after it was read from the cache",
            "append to the conversation rather than edit what was sent before",
        )
    if reason == "no-breakpoint":
        return (
            "mark a cache breakpoint",
            "{calls} sent a prompt with no cache breakpoint and paid the input price for all of it",
            "add cache_control to the last block of the prompt (Anthropic API)",
        )
    return None


def cache_actions(profile: Profile, cache: CacheSummary | None = None) -> list[Action]:
    """One action per miss reason a change of practice removes, priced by cache forensics (``cache``: the
    profile's cache summary, when the caller has it)."""
    if cache is None:
        cache = profile.cache_summary()
    lost = cache.lost if cache is not None else None
    if cache is None or lost is None or not lost.by_reason:
        return []
    estimate = any("estimated" in n for n in cache.notes) or not profile.model.exact
    out = []
    for r in lost.by_reason:
        fix = _cache_fix(r.reason, r.part)
        if fix is None or not r.tokens:
            continue
        what, why, how = fix
        out.append(
            Action(
                what=what,
                why=why.format(calls=_plural(r.calls, "call")),
                dollars=r.cost if lost.cost is not None else None,
                tokens=r.tokens,
                how=how,
                basis="cache",
                estimate=estimate,
                unpriced=None if lost.cost is not None else (lost.why or "not priced"),
            )
        )
    return [a for a in out if a.dollars is None or a.dollars > 0]


# -- tool results ----------------------------------------------------------------------------------
def results_over(calls: Iterable[Call], chars: int) -> Counter:
    """Per tool, the characters of its results beyond ``chars`` (each result counted once): what a cap
    cuts. A prompt that is a longer view of the list an earlier one was read from costs what it adds."""
    from tokprof.transforms.cuts import new_messages

    names: dict[str, str] = {}
    cut: Counter = Counter()
    seen: set[str] = set()
    read: dict[int, tuple[list[dict], int]] = {}
    for call in calls:
        for m in new_messages(call.messages, read):
            for tc in m.get("tool_calls") or ():
                if isinstance(tc, dict) and isinstance(tc.get("id"), str):
                    name = (tc.get("function") or {}).get("name")
                    if isinstance(name, str):
                        names[tc["id"]] = name
            if m.get("role") != "tool":
                continue
            content = m.get("content")
            key = m.get("tool_call_id")
            if not isinstance(content, str) or not isinstance(key, str) or key in seen:
                continue
            seen.add(key)
            if len(content) > chars:
                cut[names.get(key, "(unnamed)")] += len(content) - chars
    return cut


def _carrying(profile: Profile) -> list[str]:
    """The tools whose results carry most into later prompts, most first."""
    costs = profile.tool_result_costs
    if costs is None:
        return []
    tools = sorted(costs.tools, key=lambda t: (-t.carry_cost, -t.tokens, t.tool or ""))
    return [t.tool or "(unnamed)" for t in tools if t.carry_cost > 0]


def _saves(result: "PolicyResult") -> bool:
    """Whether a replay saves anything: dollars where priced, else tokens."""
    if result.cost_saving is not None:
        return result.cost_saving > 0 and result.saving > 0
    return result.saving > 0


def result_action(
    profile: Profile, calls: Callable[[], Iterable[Call]] | None, report: "WhatIfReport"
) -> Action | None:
    """The best replay of :data:`RESULT_POLICIES` that saves anything, naming the tools it cuts."""
    candidates = [p for p in report.policies if p.policy in RESULT_POLICIES and _saves(p)]
    if not candidates:
        return None
    priced = all(p.cost_saving is not None for p in candidates)
    best = max(candidates, key=lambda p: (p.cost_saving or 0.0) if priced else p.saving)
    fmt = profile.source.format
    if best.policy.startswith("cap:") and calls is not None:
        chars = int(best.policy.split(":")[1])
        cut = results_over(calls(), chars)
        tools = [name for name, _ in sorted(cut.items(), key=lambda item: (-item[1], item[0]))]
        why = (
            f"results of {_listed(tools)} run past {chars:,} characters and are carried into every later prompt"
            if tools
            else f"tool results run past {chars:,} characters"
        )
        what = f"cap tool results at {chars:,} characters ({_listed(tools)})" if tools else best.description
        how = agent_config.cap_results(fmt, tools[:NAMED]) if tools else ""
    else:
        tools = _carrying(profile)
        turns = best.policy.split(":")[1] if ":" in best.policy else "2"
        why = (
            f"old results of {_listed(tools)} stay in every later prompt"
            if tools
            else "old tool results stay in every later prompt"
        )
        what = (
            f"drop tool results older than the last {turns} user turns ({_listed(tools)})"
            if tools
            else best.description
        )
        how = agent_config.elide_results(fmt)
    unpriced = None if best.cost_saving is not None else (best.cost_unpriced or "the log is not priced")
    return Action(
        what=what,
        why=why + f" ({best.changed_calls:,} calls change in the replay)",
        dollars=None if best.cost_saving is None else round(best.cost_saving, 6),
        tokens=best.saving,
        how=how or "no setting found",
        basis=f"replay:{best.policy}",
        # an estimate: a proxy's counts, or a log whose own bill is computed (it reports no usage)
        estimate=not best.exact or not profile.model.exact or report.policies[0].cost_basis not in (None, "reported"),
        unpriced=unpriced,
    )


# -- tools never called ----------------------------------------------------------------------------
def _server_of(name: str) -> str | None:
    return name.split("__")[1] if name.startswith(agent_config.MCP_PREFIX) and name.count("__") >= 2 else None


def _drop_how(fmt: str, unused: Sequence[str], used: Collection[str]) -> str:
    """The setting that drops the unused tools; for Claude Code, the servers none of whose tools was used too."""
    busy = {_server_of(n) for n in used}
    servers = sorted({s for s in map(_server_of, unused) if s is not None and s not in busy})
    return agent_config.drop_tools(fmt, unused) + (
        f" (whole servers: {', '.join(servers)})" if servers and fmt == "claude-code" else ""
    )


def _rewrites(result: "PolicyResult") -> bool:
    """Whether the replay's first changed call writes its prompt to the cache."""
    first = next((c for c in result.calls if c.changed), None)
    return first is not None and bool(first.cache_write)


def unused_tools_action(
    profile: Profile, tools: "ToolUse | None" = None, report: "WhatIfReport | None" = None
) -> Action | None:
    """The tools the log carried and the model never called: with a what-if ``report`` of :data:`DROP_POLICY`
    (and ``tools``, what the log's calls showed of their tools), the dollars the replay proves dropping them
    saves (none saved: no action); without one, the main catalogue's unused tools with their tokens over the
    run, unpriced."""
    fmt = profile.source.format
    replayed = None
    if report is not None and tools is not None:
        replayed = next((p for p in report.policies if p.policy == DROP_POLICY), None)
    if replayed is not None and tools is not None:
        unused = list(tools.never_called())
        if not unused or not _saves(replayed):
            return None
        return Action(
            what=f"drop {_plural(len(unused), 'tool')} never called ({_listed(unused)})",
            why=(
                f"their definitions are sent with every request: {replayed.saving:,} tokens over the run (the "
                f"replay takes them out of {_plural(replayed.changed_calls, 'call')}"
                + ("; its first call writes the changed prompt to the cache again)" if _rewrites(replayed) else ")")
            ),
            dollars=None if replayed.cost_saving is None else round(replayed.cost_saving, 6),
            tokens=replayed.saving,
            how=_drop_how(fmt, unused, tools.called),
            basis=f"replay:{DROP_POLICY}",
            estimate=not replayed.exact
            or not profile.model.exact
            or report.policies[0].cost_basis not in (None, "reported"),  # type: ignore[union-attr]
            unpriced=None if replayed.cost_saving is not None else (replayed.cost_unpriced or "the log is not priced"),
        )
    section = profile.catalogue
    if section is None or not section.unused_waste:
        return None
    unused = [t.name for t in section.catalogue.tools if t.unused]
    if not unused:
        return None
    return Action(
        what=f"drop {_plural(len(unused), 'tool')} never called ({_listed(unused)})",
        why=f"their definitions are sent with every request: {section.unused_waste:,} tokens over the run",
        dollars=None,
        tokens=section.unused_waste,
        how=_drop_how(fmt, unused, [t.name for t in section.catalogue.tools if not t.unused]),
        basis="none",
        estimate=not profile.model.exact,
        unpriced=f"not replayed here (tokprof whatif LOG -p {DROP_POLICY} prices it)",
    )


# -- the block -------------------------------------------------------------------------------------
def rank(actions: Sequence[Action]) -> tuple[Action, ...]:
    """Priced actions by dollars, most first, then unpriced ones by tokens; at most :data:`MAX_ACTIONS`."""
    ordered = sorted(
        actions,
        key=lambda a: (a.dollars is None, -(a.dollars or 0.0), -(a.tokens or 0), a.what),
    )
    return tuple(ordered[:MAX_ACTIONS])


def advise(
    profile: Profile,
    calls: Callable[[], Iterable[Call]] | None = None,
    report: "WhatIfReport | None" = None,
    tools: "ToolUse | None" = None,
) -> tuple[Action, ...]:
    """The actions for a profile: its cache fixes and unused tools, and with a what-if ``report`` of
    :data:`RESULT_POLICIES` (and ``calls``, a fresh stream of the calls it replayed, and ``tools``, what
    they showed of their tools) the tool-results and dropped-tools actions."""
    found: list[Action] = cache_actions(profile)
    if report is not None:
        action = result_action(profile, calls, report)
        if action is not None:
            found.append(action)
    unused = unused_tools_action(profile, tools, report if _replays(report, DROP_POLICY) else None)
    if unused is not None:
        found.append(unused)
    return rank(found)


def _replays(report: "WhatIfReport | None", spec: str) -> bool:
    return report is not None and any(p.policy == spec for p in report.policies)


def replayed_policies(trace: Trace) -> tuple[str, ...]:
    """Which policies to replay: :data:`RESULT_POLICIES` for a log with tool results (``elide`` only for a
    log that carries at most :data:`ELIDE_MESSAGES` messages over the run: its replay's cost), and
    :data:`DROP_POLICY` for a log whose calls carry tools it never calls. Every call fed to a :class:`PolicyPick`."""
    pick = PolicyPick()
    for call in trace.calls:
        pick.observe(call)
    return pick.policies()


class PolicyPick:
    """:func:`replayed_policies` a call at a time (a stream's calls, in log order): :meth:`observe` each,
    then :meth:`policies`. A prompt that is a longer view of an earlier one's list is read for what it adds."""

    def __init__(self) -> None:
        from tokprof.transforms.cuts import ToolUse

        self.results = False  # whether a prompt holds a tool result
        self.carried = 0  # the messages the prompts carry, added up
        self.tools = ToolUse()  # the tools the calls carry and call
        self._read: dict[int, tuple[list[dict], int]] = {}

    def observe(self, call: Call) -> None:
        from tokprof.transforms.cuts import new_messages

        self.carried += len(call.messages)
        if not self.results:
            self.results = any(m.get("role") == "tool" for m in new_messages(call.messages, self._read))
        self.tools.observe(call)

    def policies(self) -> tuple[str, ...]:
        out: tuple[str, ...] = ()
        if self.results:
            out = tuple(p for p in RESULT_POLICIES if not p.startswith("elide") or self.carried <= ELIDE_MESSAGES)
        return out + ((DROP_POLICY,) if self.tools.never_called() else ())


def combined(actions: Sequence[Action], sessions: Sequence[int]) -> tuple[Action, ...]:
    """The actions of several sessions as one list: the same change added up over the sessions that have
    it (``sessions``: for each action, the session it is of), ranked; dollars only where every one has them."""
    groups: dict[str, list[tuple[Action, int]]] = {}
    for action, session in zip(actions, sessions):
        groups.setdefault(action.what, []).append((action, session))
    out = []
    for what, group in groups.items():
        first = group[0][0]
        priced = all(a.dollars is not None for a, _ in group)
        count = len({s for _, s in group})
        out.append(
            Action(
                what=what,
                why=f"in {_plural(count, 'session')}: {first.why}" if count > 1 else first.why,
                dollars=round(sum(a.dollars or 0.0 for a, _ in group), 6) if priced else None,
                tokens=sum(a.tokens or 0 for a, _ in group),
                how=first.how,
                basis=first.basis,
                estimate=any(a.estimate for a, _ in group),
                unpriced=None if priced else next(a.unpriced for a, _ in group if a.unpriced),
            )
        )
    return rank(out)
