"""Counts made to agree with what was billed: inferring what a log does not record, and anchoring an
estimate's buckets on reported usage.

Two rules, both on calls that report usage, per *key* (the log's model name and the thread: a
subagent is its own conversation, and a model switch mid-thread starts a new key):

**Fixed part.** When a log does not record part of every prompt (Claude Code's system prompt, the
tool definitions of Claude Code and Codex), the first call of a key that reports usage gives it:
its reported prompt minus its computed count. Every call of the key carries it, in ``unrecorded``.

**Usage anchoring** (estimates only: a proxy's counts, or a stand-in's). A call whose messages
start with those of the key's previous call with usage (and that has the same tools, and whose
reported prompt did not shrink) is that call plus what it adds. Its buckets are the previous call's
buckets plus the estimate's growth per bucket, made to add up to the reported growth, as long as
the reported growth is at most :data:`BAND` times the estimate's growth at the log's usual ratio
(the median, over such steps, of reported growth over estimated growth, per model). Growth beyond
that, when it is :data:`NOISE` tokens or more, is content the log does not show (Claude Code
injects text it does not record): it goes to ``unrecorded``, never to buckets whose content did
not grow. Any other call (the first of a key, a
rewrite, a compaction) is scaled whole: its buckets in their proportions (largest remainder) to its
reported prompt minus the fixed part. Calls without usage keep the estimate's own counts.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from tokprof.trace import PromptView

UNRECORDED = "unrecorded"
#: How far above the log's usual ratio a call's reported growth may be and still be taken as the
#: growth of its recorded content: up to BAND times that ratio.
BAND = 1.5
#: Growth beyond the band smaller than this is tokenizer noise, not unrecorded content: the content takes it.
NOISE = 100


def scale_buckets(buckets: dict[str, int], target: int) -> dict[str, int]:
    """Scale bucket counts to add up to ``target``, keeping their proportions (largest remainder),
    so that an estimate's buckets add up to the prompt the provider billed."""
    current = sum(buckets.values())
    if current == 0:
        return {name: (target if name == "conversation" else 0) for name in buckets}
    shares = {name: divmod(count * target, current) for name, count in buckets.items()}  # whole numbers: exact
    scaled = {name: whole for name, (whole, _) in shares.items()}
    short = target - sum(scaled.values())
    for name in sorted(shares, key=lambda n: shares[n][1], reverse=True)[:short]:
        scaled[name] += 1
    return scaled


@dataclass
class Counted:
    """One call as counted: what :func:`attribute` needs of it."""

    counts: dict[str, int]  # the estimate's (or exact) buckets: rendered, plus tokens known from usage
    reported: int | None  # the reported prompt (None: no usage)
    key: tuple  # (the log's model name, thread)
    unrecorded: bool  # the prompt has parts the log does not record (nor the user supplied)
    #: whether its prompt is the key's previous call with usage plus what it adds (:class:`Continuations`)
    extends: bool = False


@dataclass
class Attributed:
    """A call's final buckets, and how they were made."""

    buckets: dict[str, int]
    inferred: int = 0  # tokens in ``unrecorded``
    part: int | None = None  # the key's fixed part, when one was inferred for it
    anchored: bool = False  # whether its growth was anchored on the previous call's buckets
    unexplained: int = 0  # growth that went to ``unrecorded`` by the anchoring rule


@dataclass
class Estimates:
    """What :func:`attribute` found for a log."""

    calls: list[Attributed]
    fixed: dict[tuple, int] = field(default_factory=dict)  # key -> fixed part
    ratios: dict[object, float] = field(default_factory=dict)  # model -> reported growth per estimated growth


def fixed_parts(calls: Sequence[Counted]) -> dict[tuple, int]:
    """The unrecorded part of the prompts, per key: the first call with usage, minus its count. It
    applies to every call of the key, earlier ones included."""
    fixed: dict[tuple, int] = {}
    for call in calls:
        if call.key not in fixed and call.reported is not None and call.unrecorded:
            fixed[call.key] = max(0, call.reported - sum(call.counts.values()))
    return fixed


def starts_with(messages: Sequence[dict], prefix: Sequence[dict]) -> bool:
    """Whether a prompt's messages start with another prompt's (the same objects, or equal ones)."""
    # list equality compares each pair as ``a is b or a == b``, at C speed (logs share the objects);
    # lists are compared as they are, without copies: a call's check costs a pass over its prompt
    if isinstance(messages, PromptView) and messages.extends(prefix):
        return True  # a longer view of the same list: O(1)
    n = len(prefix)
    if len(messages) < n:
        return False
    if type(messages) is list and type(prefix) is list:
        return messages == prefix if len(messages) == n else messages[:n] == prefix
    return list(prefix) == list(messages[:n])


class Continuations:
    """Whether each call extends the previous call with usage of its key (:attr:`Counted.extends`),
    told during the pass, in log order: the prompt of that one call per key is all it holds."""

    def __init__(self) -> None:
        self._last: dict[tuple, tuple[int, Sequence[dict], object]] = {}  # key -> (reported, messages, tools)

    def observe(self, key: tuple, reported: int | None, messages: Sequence[dict], tools: object) -> bool:
        """Whether a call's prompt is the key's previous call with usage plus what it adds (the same
        tools, a reported prompt that did not shrink); a call with usage becomes the key's previous one."""
        if reported is None:
            return False
        before = self._last.get(key)
        self._last[key] = (reported, messages, tools)
        if before is None or tools != before[2]:
            return False
        return reported >= before[0] and starts_with(messages, before[1])


def _extends(call: Counted, before: Counted) -> bool:
    """Whether a call's prompt is an earlier call's plus what it adds (``before``: the key's previous
    call with usage, which :attr:`Counted.extends` was told against)."""
    return call.extends and call.reported is not None and before.reported is not None


def _growth(call: Counted, before: Counted) -> dict[str, int] | None:
    """What the estimate says a call adds, per bucket (None when a bucket shrank: not an extension)."""
    growth = {name: call.counts.get(name, 0) - before.counts.get(name, 0) for name in call.counts}
    return None if min(growth.values(), default=0) < 0 else growth


def ratios(calls: Sequence[Counted]) -> dict[object, float]:
    """Per model: the median, over calls that extend the key's previous call with usage, of the
    reported growth over the estimate's growth."""
    found: dict[object, list[float]] = {}
    last: dict[tuple, Counted] = {}
    for call in calls:
        if call.reported is None:
            continue
        before = last.get(call.key)
        if before is not None and _extends(call, before):
            growth = _growth(call, before)
            added = sum(growth.values()) if growth else 0
            if added > 0 and before.reported is not None and call.reported is not None:
                found.setdefault(call.key[0], []).append((call.reported - before.reported) / added)
        last[call.key] = call
    return {model: statistics.median(values) for model, values in found.items()}


def attribute(calls: Sequence[Counted], exact: bool) -> Estimates:
    """Every call's buckets (see the module's docstring): fixed parts for all; for estimates, scaling
    and usage anchoring."""
    fixed = fixed_parts(calls)
    usual = ratios(calls) if not exact else {}
    out: list[Attributed] = []
    last: dict[tuple, tuple[Counted, dict[str, int]]] = {}  # key -> (its last call with usage, that call's buckets)
    for call in calls:
        part = fixed.get(call.key) if call.unrecorded else None
        if part is not None and call.reported is not None:
            part = min(part, call.reported)
        if exact or call.reported is None:
            buckets = dict(call.counts)
            if part is not None:
                buckets[UNRECORDED] = part
            out.append(Attributed(buckets, inferred=part or 0, part=part))
            continue
        previous = last.get(call.key)
        growth = _growth(call, previous[0]) if previous is not None and _extends(call, previous[0]) else None
        if previous is not None and growth is not None:
            before, before_buckets = previous
            assert before.reported is not None
            reported_growth = call.reported - before.reported
            added = sum(growth.values())
            credit = min(reported_growth, int(added * usual.get(call.key[0], 1.0) * BAND))
            if reported_growth - credit < NOISE:
                credit = reported_growth
            buckets = dict(before_buckets)
            for name, tokens in scale_buckets(growth, credit).items():
                buckets[name] = buckets.get(name, 0) + tokens
            unexplained = reported_growth - credit
            if unexplained or UNRECORDED in buckets:
                buckets[UNRECORDED] = buckets.get(UNRECORDED, 0) + unexplained
            attributed = Attributed(
                buckets, inferred=buckets.get(UNRECORDED, 0), part=part, anchored=True, unexplained=unexplained
            )
        else:
            buckets = scale_buckets(call.counts, call.reported - (part or 0))
            if part is not None:
                buckets[UNRECORDED] = part
            attributed = Attributed(buckets, inferred=part or 0, part=part)
        out.append(attributed)
        last[call.key] = (call, attributed.buckets)
    return Estimates(out, fixed, usual)
