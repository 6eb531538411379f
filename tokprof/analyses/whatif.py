"""What-if: a log replayed under context policies, every prompt counted exactly like a profile's.

Each policy (:mod:`tokprof.transforms.policies`) makes a trace from the log's; each trace is profiled
with the same model (one :func:`tokprof.profiling.profile_trace` per policy, the same incremental
engine), and the figures are gathered in a :class:`WhatIfReport`: per policy the billed input, its
saving against ``full``, the largest prompt, the calls over the context window, the billed input per
bucket, and per call the prompt tokens it shares with the previous call of its thread (the longest
common prefix of the two prompts' tokens: what a prefix cache could reuse).
"""

from __future__ import annotations

import dataclasses
from datetime import date
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from tokprof.version import __version__
from tokprof.pricing.cost import UserPrice, attach_cost
from tokprof.analyses.replay_bill import Replayed, billed_usage
from tokprof.analyses.retention import Fact, FactRetention, carries, first_calls, retention
from tokprof.attribution.attributor import Attributor, RenderError
from tokprof.pricing.billing import DIGITS, CallCost, CostSummary, money
from tokprof.attribution.estimates import UNRECORDED, scale_buckets
from tokprof.base.jsontext import dumps
from tokprof.models.base import ChatModel, ModelInfo, Tokens
from tokprof.profiling import CallRow, Profile, Source, log_window, profile_calls
from tokprof.base.textdiff import common_prefix
from tokprof.trace import Call, Note, Trace
from tokprof.transforms.cuts import ToolUse
from tokprof.transforms.policies import AddedCall, Full, Policy, Replay, shared_messages

SCHEMA_VERSION = 1


# -- counting prompts for the policies that need it ---------------------------------------------------
class PromptCounter:
    """The :class:`tokprof.transforms.policies.Counter` of a model: a prompt rendered with its chat
    template (the first message shape it takes) and tokenized, reusing the tokens of the last prompt
    it counted up to where the two part. ``fixed`` gives, per (log model, thread), the tokens of the
    parts of every prompt the log does not record (inferred by the profile of ``full``), which are in
    the real prompt too; ``known`` the rendered tokens of the log's calls' own prompts, by call index."""

    def __init__(
        self,
        model: ChatModel,
        fixed: dict[tuple, int] | None = None,
        known: dict[int, int] | None = None,
        units: dict[int, "LogUnits"] | None = None,
    ):
        self.model = model
        self.fixed = fixed or {}
        self.units = units or {}
        self.known = known or {}
        self._shape = model.prompt_format.shapes[0]
        self._prepared: dict[int, tuple[dict, dict, str]] = {}  # id(message) -> (message, prepared, shape)
        self._last: tuple[str, Tokens] | None = None

    def render(self, messages: list[dict], tools: list[dict] | None, day: date | None) -> str:
        template = self.model.prompt_format
        shapes = [self._shape] + [s for s in template.shapes if s != self._shape]
        error: Exception | None = None
        for shape in shapes:
            prepared = []
            for m in messages:
                entry = self._prepared.get(id(m))
                if entry is None or entry[0] is not m or entry[2] != shape:
                    entry = (m, template.prepare([m], shape)[0], shape)
                    self._prepared[id(m)] = entry
                prepared.append(entry[1])
            try:
                text = template.render(prepared, tools, add_generation_prompt=True, day=day)
            except Exception as exc:
                error = error or exc
                continue
            self._shape = shape
            return text
        raise RenderError(f"the chat template failed: {error}")

    def prompt(self, messages: list[dict], call: Call) -> int:
        found = self.known.get(call.index)
        if found is not None and _same(messages, call.messages):
            rendered = found
        else:
            text = self.render(messages, call.tools, call.day)
            last = self._last
            common = common_prefix(last[0], text) if last is not None else 0
            tokens = self.model.counter.token_starts_reusing(text, last[1] if last is not None else None, common)
            self._last = (text, tokens)
            rendered = len(tokens[0])
        fixed = self.fixed.get((call.model, call.thread), 0)
        units = self.units.get(call.index)
        if units is not None:  # an estimate: in the units of the log's call, as its profile counts it
            rendered = round(rendered * units.ratio)
        # tokens known from usage only (encrypted reasoning) stay where every assistant message stays
        kept = {id(m) for m in messages if m["role"] == "assistant"}
        if call.unrendered and all(id(m) in kept for m in call.messages if m["role"] == "assistant"):
            rendered += sum(call.unrendered.values())
        return rendered + fixed

    def text(self, text: str) -> int:
        return self.model.count(text)

    def growth(self, call: Call) -> int:
        """What an estimate's profile bills in the log's call beyond :meth:`prompt`'s count: its unrecorded part
        (the growth its messages do not explain, and an inferred part larger than its thread's first call's),
        which no policy removes."""
        units = self.units.get(call.index)
        return max(0, units.unrecorded - self.fixed.get((call.model, call.thread), 0)) if units is not None else 0


def _same(messages: Sequence[dict], prompt: Sequence[dict]) -> bool:
    """Whether a prompt's messages are a call's own (the same objects)."""
    return messages is prompt or (len(messages) == len(prompt) and all(a is b for a, b in zip(messages, prompt)))


def shared_tokens(a: tuple[str, np.ndarray], b: tuple[str, np.ndarray]) -> int:
    """How many first tokens two tokenized texts have in common: tokens at the same place, of the same
    length, inside the text the two have in common (so the same tokens): the tokens that end inside
    the common text found by bisection, then their starts compared (no copy of either array)."""
    text_a, starts_a = a
    text_b, starts_b = b
    n = min(len(starts_a), len(starts_b))
    if n == 0:
        return 0
    common = common_prefix(text_a, text_b)
    # token i ends where token i + 1 starts (the last one at its text's end): the tokens that end
    # inside the common text are the first ``inside`` (ends grow with i)
    inside = int(np.searchsorted(starts_a[1:n], common, side="right"))
    if inside == n - 1 and _end(text_a, starts_a, n - 1) <= common:
        inside = n
    # token i (but the last of the n) is the same in both when it and the next token start at the same
    # place in both: only starts up to the first token past the common text need comparing
    check = min(inside + 1, n)
    differ = np.flatnonzero(starts_a[:check] != starts_b[:check])
    if len(differ):
        return min(max(int(differ[0]) - 1, 0), inside)
    if check < n:
        return inside
    return min(n if _end(text_a, starts_a, n - 1) == _end(text_b, starts_b, n - 1) else n - 1, inside)


def _end(text: str, starts: np.ndarray, i: int) -> int:
    return int(starts[i + 1]) if i + 1 < len(starts) else len(text)


# -- the report ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PolicyCall:
    """One call as a policy replays it."""

    index: int  # the log's call it replays (for a summarising call: the call it comes before)
    kind: str  # "call", "compaction" (the log's own), or "summary" (a summarising call the policy added)
    thread: str | None
    total: int
    buckets: dict[str, int]
    shared: int  # prompt tokens it shares with the previous call of its thread (0 for a thread's first)
    messages: int
    changed: bool  # whether the policy changed the log's prompt
    #: The prompt tokens billed as cache reads and cache writes: the log's reported usage for a call the
    #: policy keeps, the replay's bill (tokprof.analyses.replay_bill) for one it changes; None where the
    #: log reports no usage to bill on.
    cache_read: int | None = None
    cache_write: int | None = None
    cost: float | None = None  # what the call costs in US dollars (None: unpriced)
    #: ``shared`` as counted, where the cache read (a measurement) raised it: the bill of another policy
    #: compares counts with counts (tokprof.analyses.replay_bill); None: ``shared`` is the count
    counted_shared: int | None = None

    def to_dict(self) -> dict:
        return {
            "index": self.index,
            "kind": self.kind,
            "thread": self.thread,
            "total": self.total,
            "buckets": dict(self.buckets),
            "shared_prefix": self.shared,
            "messages": self.messages,
            "changed": self.changed,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
            "cost": self.cost,
        }


@dataclass(frozen=True)
class PolicyResult:
    """What one policy does to the log."""

    policy: str  # as written canonically: "window:20"
    description: str
    calls: tuple[PolicyCall, ...]
    billed_input: int
    saving: int  # against full (negative: it costs more)
    saving_share: float
    largest_prompt: int
    calls_over_window: int | None  # None when the context window is not known
    buckets_billed: dict[str, int]
    shared_prefix: int  # the calls' shared tokens, added up
    summaries: int  # summarising calls the policy added
    changed_calls: int
    exact: bool
    warnings: tuple[str, ...] = ()  # the codes of its profile's warnings
    #: What the policy's calls cost in US dollars (None: unpriced), and on what: "reported" usage for the
    #: calls it keeps as logged, the counts for the calls it changes ("computed"), or "mixed".
    cost: float | None = None
    cost_basis: str | None = None
    cost_saving: float | None = None  # against full
    cost_unpriced: str | None = None  # why some calls have no price (None: every call is priced)
    facts: tuple[FactRetention, ...] = ()  # the facts asked about, as this policy keeps them
    #: The cost's parts in US dollars (None: unpriced): "uncached" input, "cache_write", "cache_read", "output".
    cost_parts: dict[str, float | None] | None = None

    @property
    def shared_share(self) -> float:
        return round(self.shared_prefix / self.billed_input, 6) if self.billed_input else 0.0

    def to_dict(self) -> dict:
        return {
            "policy": self.policy,
            "description": self.description,
            "calls": len(self.calls),
            "billed_input": self.billed_input,
            "saving": self.saving,
            "saving_share": self.saving_share,
            "largest_prompt": self.largest_prompt,
            "calls_over_window": self.calls_over_window,
            "buckets_billed": dict(self.buckets_billed),
            "shared_prefix": self.shared_prefix,
            "shared_prefix_share": self.shared_share,
            "summaries": self.summaries,
            "changed_calls": self.changed_calls,
            "exact": self.exact,
            "warnings": list(self.warnings),
            "cost": self.cost,
            "cost_basis": self.cost_basis,
            "cost_saving": self.cost_saving,
            "cost_unpriced": self.cost_unpriced,
            "cost_parts": None if self.cost_parts is None else dict(self.cost_parts),
            "facts": [f.to_dict() for f in self.facts],
            "per_call": [c.to_dict() for c in self.calls],
        }


@dataclass
class WhatIfReport:
    """The log under each policy, ``full`` first (``tokprof whatif``'s JSON: docs/schema/whatif.schema.json)."""

    model: ModelInfo
    source: Source
    context_window: int | None
    policies: list[PolicyResult] = field(default_factory=list)
    warnings: list[Note] = field(default_factory=list)
    #: The profile of ``full`` (the log as it is), for the HTML report; not in the JSON.
    baseline: Profile | None = None
    #: The log's calls as the baseline's pass kept them (light: no prompt), for the profile's analyses.
    log: Trace | None = None

    @property
    def exact(self) -> bool:
        return all(p.exact for p in self.policies)

    @property
    def priced(self) -> bool:
        """Whether every policy has a cost in dollars (its savings are then in dollars)."""
        return bool(self.policies) and all(p.cost_saving is not None for p in self.policies)

    def ranked(self) -> list[PolicyResult]:
        """``full`` first (the baseline), then the other policies by what they save, most first: in dollars
        where every policy is priced, else in tokens (a tie keeps the order they were asked in)."""
        if not self.policies:
            return []
        priced = self.priced

        def saving(result: PolicyResult) -> float:
            return float(result.cost_saving or 0.0) if priced else float(result.saving)

        return [self.policies[0]] + sorted(self.policies[1:], key=lambda r: -saving(r))

    def policy(self, spec: str) -> PolicyResult:
        for result in self.policies:
            if result.policy == spec:
                return result
        raise KeyError(spec)

    def bucket_names(self) -> tuple[str, ...]:
        names: list[str] = []
        for result in self.policies:
            for name in result.buckets_billed:
                if name not in names:
                    names.append(name)
        return tuple(names)

    def to_dict(self) -> dict:
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": "whatif",
            "tokprof_version": __version__,
            "model": self.model.to_dict(),
            "source": self.source.to_dict(),
            "context_window": self.context_window,
            "exact": self.exact,
            "policies": [p.to_dict() for p in self.policies],
            "warnings": [w.to_dict() for w in self.warnings],
        }

    def to_json(self) -> str:
        return dumps(self.to_dict()) + "\n"


# -- the analysis ---------------------------------------------------------------------------------------
#: A fresh stream of a log's calls, in log order, each time it is called: a trace's calls, or its file
#: read again (each policy's replay is one pass over one; no trace is held).
Calls = Callable[[], Iterable[Call]]


@dataclass
class _Seen:
    """What a pass keeps of each call besides its light copy and its row (no prompt): the rendered
    tokens its prompt shares with the previous call of its thread, its rendered tokens, whether the
    policy changed it, whether it is billed as its log call's parts (:func:`_as_logged`), and whether
    it carries each fact asked about."""

    shared: list[int] = field(default_factory=list)
    rendered: list[int] = field(default_factory=list)
    changed: list[bool] = field(default_factory=list)
    as_logged: set[int] = field(default_factory=set)
    same_prompt: set[int] = field(default_factory=set)  # changed calls whose messages and tools are the log call's
    carried: list[tuple[bool, ...]] = field(default_factory=list)


def _pass(
    pairs: Iterable[tuple[Call, Call]],
    header: Trace,
    model: ChatModel,
    on_call: Callable[[Call], None] | None,
    facts: Sequence[Fact] = (),
) -> tuple[Profile, Trace, _Seen]:
    """The profile of a stream of calls, each given with the log's call it replays (itself when the
    policy keeps it; a summarising call the policy adds: the call it comes before), one at a time
    (:func:`tokprof.profiling.profile_calls`): the profile, the trace of the light calls, and what
    :class:`_Seen` keeps of each. A call's prompt is let go after its pass but the last of each thread."""
    attributor = Attributor(model, keep_json=True)
    seen = _Seen()
    last: dict[str, tuple[str, np.ndarray]] = {}
    current: list[Call] = []

    def given() -> Iterator[Call]:
        previous: dict[str, Call] = {}  # thread -> the policy's last call of it
        log_last: dict[str, Call] = {}  # thread -> the log's last call of it
        log_before: Call | None = None
        log_now: Call | None = None
        for position, (call, log) in enumerate(pairs):
            if log is not log_now:  # the next call of the log
                log_before, log_now = log_last.get(log.thread), log
                log_last[log.thread] = log
            changed = call is not log
            seen.changed.append(changed)
            before = previous.get(call.thread)
            previous[call.thread] = call
            if changed and _as_logged(call, before, log, log_before):
                seen.as_logged.add(position)
            if (
                changed
                and not isinstance(call, AddedCall)
                and call.messages == log.messages
                and call.tools == log.tools
            ):
                seen.same_prompt.add(position)
            seen.carried.append(tuple(carries(call.messages, fact) for fact in facts))
            current[:] = [call]
            yield call

    def passed(_: int) -> None:
        call = current[0]
        prompt = attributor.last_prompt()
        before = last.get(call.thread)
        seen.shared.append(0 if before is None else shared_tokens(before, prompt))
        seen.rendered.append(len(prompt[1]))
        last[call.thread] = prompt
        if on_call is not None:
            on_call(call)

    profile, light = profile_calls(given(), header, model, on_call=passed, attributor=attributor)
    return profile, light, seen


def _as_logged(call: Call, before: Call | None, log: Call, log_before: Call | None) -> bool:
    """Whether a changed call of a policy's replay parts from the previous call of its thread no
    earlier than the log's call does from the log's previous call: it continues that call whole, or
    (a policy that rewrites messages in place) it shares at least as many first messages as the
    log's two prompts do. Else it parts earlier: the policy rewrote or dropped a message the log's
    two prompts share, and the read is capped at the shared prefix (tokprof.analyses.replay_bill)."""
    if before is None or isinstance(call, AddedCall) or isinstance(before, AddedCall) or log_before is None:
        return False
    if not _same_tools(call, before) and _same_tools(log, log_before):  # the policy parts them at the tools
        return False
    shared = shared_messages(call.messages, before.messages)
    if shared == len(before.messages):
        return True
    if len(call.messages) == len(log.messages) and len(before.messages) == len(log_before.messages):
        return shared >= shared_messages(log.messages, log_before.messages)
    return False


def _fixed(row: CallRow) -> int:
    """The inferred part of a call's prompt the log does not record (not an estimate's unexplained growth)."""
    return max(0, row.buckets.get(UNRECORDED, 0) - row.unexplained)


@dataclass(frozen=True)
class LogUnits:
    """How an estimate counts a log's call in its profile: the proxy's rendered tokens times
    ``ratio`` (the call's scaling to its reported usage), plus its ``unrecorded`` part (what the log
    does not record: the inferred fixed part and the growth its usage shows but its messages do not
    explain, ``unexplained`` of it), which no policy changes. (The triggers of the policies that
    count, :class:`PromptCounter`, take the fixed part alone: whether a policy would remove the
    unexplained growth is not known, and counting it would make ``compact`` compact again and again
    when it cannot.)"""

    ratio: float
    unrecorded: int
    unexplained: int


def inferred_parts(trace: Trace, profile: Profile) -> dict[tuple, int]:
    """Per (log model, thread), the inferred part of its prompts the log does not record (the same for
    every call of it: what the profile inferred from its first call)."""
    parts: dict[tuple, int] = {}
    for call, row in zip(trace.calls, profile.calls):
        parts.setdefault((call.model, call.thread), _fixed(row))
    return parts


def log_units(trace: Trace, profile: Profile, parts: dict[tuple, int]) -> dict[int, LogUnits]:
    """Per log call (by index), its units (:class:`LogUnits`), with ``parts`` the profile's inferred
    parts (:func:`inferred_parts`); none for an exact model, whose counts are the prompt's."""
    if profile.model.exact:
        return {}
    units = {}
    for call, row in zip(trace.calls, profile.calls):
        unrecorded = row.buckets.get(UNRECORDED, 0)
        raw = row.rendered - parts[(call.model, call.thread)] - row.unrendered
        recorded = row.total - unrecorded - row.unrendered
        ratio = recorded / raw if raw > 0 and recorded > 0 else 1.0
        units[row.index] = LogUnits(ratio, unrecorded, row.unexplained)
    return units


def _in_log_units(profile: Profile, trace: Trace, units: dict[int, LogUnits], changed: Sequence[bool]) -> Profile:
    """An estimate's profile of a policy's trace with every changed call counted in the units of the
    log's call it replays (a summarising call: of the call it comes before): its rendered buckets
    scaled by that call's ratio, and that call's unrecorded part, so that changed and unchanged calls
    are counted alike and a policy saves only what it removes."""
    if not units:
        return profile
    rows: list[CallRow] = []
    cumulative = 0
    for call, row, differs in zip(trace.calls, profile.calls, changed):
        log = units.get(row.index)
        if differs and log is not None:
            rendered = {name: count for name, count in row.buckets.items() if name != UNRECORDED}
            for name, tokens in call.unrendered.items():  # known from usage: not scaled
                rendered[name] -= tokens
            scaled = scale_buckets(rendered, round(sum(rendered.values()) * log.ratio))
            for name, tokens in call.unrendered.items():
                scaled[name] += tokens
            buckets = {name: scaled.get(name, log.unrecorded if name == UNRECORDED else 0) for name in row.buckets}
            if log.unrecorded and UNRECORDED not in buckets:
                buckets[UNRECORDED] = log.unrecorded
            row = dataclasses.replace(row, buckets=buckets, total=sum(buckets.values()), unexplained=log.unexplained)
        cumulative += row.total
        rows.append(dataclasses.replace(row, cumulative=cumulative))
    return dataclasses.replace(profile, calls=rows)


def _result(
    policy: Policy,
    trace: Trace,
    profile: Profile,
    seen: _Seen,
    full: PolicyResult | None,
    window: int | None,
    log_calls: Sequence[Call],
    prices: Mapping[str, UserPrice] | None = None,
    units: dict[int, LogUnits] | None = None,
) -> PolicyResult:
    """A policy's result from its pass: ``trace`` the light calls of its replay, ``log_calls`` the
    log's (light too)."""
    exact_model = profile.model.exact
    shared_raw, rendered = seen.shared, seen.rendered
    profile = _in_log_units(profile, trace, units or {}, seen.changed)
    rows = profile.calls
    calls: list[PolicyCall] = []
    previous: dict[str | None, int] = {}  # thread -> position of its last call
    for position, (call, row) in enumerate(zip(trace.calls, rows)):
        fixed = _fixed(row)
        shared = shared_raw[position]
        before = previous.get(row.thread)
        previous[row.thread] = position
        if before is None:
            shared = 0
        else:
            if not exact_model:  # the estimate's rendered tokens, in its scaled units
                own = row.total - row.buckets.get(UNRECORDED, 0) - row.unrendered
                shared = min(own, int(round(shared * own / max(1, rendered[position]))))
            # tokens known from usage only (encrypted reasoning the log resends) are spread over the
            # conversation: shared in the proportion of its rendered tokens the two prompts share; the
            # unrecorded part comes first in the real prompt: shared when both carry it
            reasoning = min(row.unrendered, rows[before].unrendered)
            if reasoning:
                shared += int(reasoning * min(1.0, shared_raw[position] / max(1, rendered[position])))
            shared = min(row.total, rows[before].total, shared + min(fixed, _fixed(rows[before])))
        if isinstance(call, AddedCall):
            kind = "summary"
        else:
            kind = "compaction" if call.kind == "compaction" else "call"
        calls.append(
            PolicyCall(
                index=row.index,
                kind=kind,
                thread=row.thread,
                total=row.total,
                buckets=dict(row.buckets),
                shared=shared,
                messages=row.messages,
                changed=seen.changed[position],
            )
        )
    # a changed call is billed as its provider would bill it (tokprof.analyses.replay_bill): the shared prefix
    # read from the cache under the profile's cache rules, the rest written at the log's tier, the log's output
    summary_output = getattr(policy, "summary_tokens", None)
    as_logged = seen.as_logged
    counted = [
        Replayed(
            total=c.total,
            shared=c.shared,
            changed=c.changed,
            output=summary_output if c.kind == "summary" else None,
            parts_as_logged=position in as_logged,
            same_prompt=position in seen.same_prompt,
        )
        for position, c in enumerate(calls)
    ]
    log_shared = (
        None
        if full is None
        else {c.index: c.shared if c.counted_shared is None else c.counted_shared for c in full.calls}
    )
    predicted = billed_usage(trace, counted, log_calls, log_shared)
    priced = attach_cost(dataclasses.replace(profile, calls=list(profile.calls)), trace, prices, None, predicted)
    reports = any(c.reported is not None and c.reported.prompt for c in log_calls)
    calls = [_billed(c, row.cost, reports) for c, row in zip(calls, priced.calls)]
    cost = priced.summary().cost
    total = cost.total if cost is not None and cost.priced else None
    summary = profile.summary()
    billed = summary.billed_input
    base = full.billed_input if full is not None else billed
    saving = base - billed
    base_cost = full.cost if full is not None else total
    return PolicyResult(
        cost=money(total),
        cost_basis=cost.basis if cost is not None and total is not None else None,
        cost_saving=None if total is None or base_cost is None else round(base_cost - round(total, DIGITS), 6),
        cost_unpriced=_unpriced(cost),
        cost_parts=_parts(cost) if total is not None else None,
        policy=policy.spec,
        description=policy.describe(),
        calls=tuple(calls),
        billed_input=billed,
        saving=saving,
        saving_share=round(saving / base, 6) if base else 0.0,
        largest_prompt=summary.largest_prompt,
        calls_over_window=None if window is None else sum(1 for c in calls if c.total > window),
        buckets_billed=dict(summary.buckets_billed),
        shared_prefix=sum(c.shared for c in calls),
        summaries=sum(1 for c in calls if c.kind == "summary"),
        changed_calls=sum(1 for c in calls if c.changed),
        exact=summary.exact,
        warnings=tuple(dict.fromkeys(w.code for w in profile.warnings)),
    )


def _same_tools(a: Call, b: Call) -> bool:
    return a.tools is b.tools or a.tools == b.tools


def _billed(call: PolicyCall, cost: CallCost | None, reports: bool) -> PolicyCall:
    """The call with what it is billed: its cache reads and writes (none known where it is billed on its
    computed prompt, or the log reports no usage at all) and its cost in dollars."""
    if cost is None:
        return call
    known = cost.tokens is not None and cost.basis != "computed" and reports
    tokens = cost.tokens
    read = tokens.cache_read if known and tokens is not None else None
    return dataclasses.replace(
        call,
        # what the provider read from its cache was shared: a count below it (an estimate's scaled units,
        # or a prefix the count cannot see) gives way to the read, so a call never reads past its prefix
        shared=max(call.shared, read or 0),
        counted_shared=call.shared if (read or 0) > call.shared else None,
        cache_read=read,
        cache_write=tokens.cache_write if known and tokens is not None else None,
        cost=money(cost.total) if cost.priced else None,
    )


def _parts(cost: CostSummary | None) -> dict[str, float | None] | None:
    if cost is None:
        return None
    return {
        "uncached": money(cost.input),
        "cache_write": money(cost.cache_write),
        "cache_read": money(cost.cache_read),
        "output": money(cost.output),
    }


def _unpriced(cost: CostSummary | None) -> str | None:
    if cost is None or not cost.unpriced:
        return None
    return "; ".join(u.reason + (f", {u.calls} calls" if u.calls > 1 else "") for u in cost.unpriced)


def whatif(
    trace: Trace,
    model: ChatModel,
    policies: Sequence[Policy] | Callable[[], Sequence[Policy]],
    *,
    window: int | None = None,
    on_call: Callable[[], None] | None = None,
    prices: Mapping[str, UserPrice] | None = None,
    facts: Sequence[Fact] = (),
    calls: Calls | None = None,
) -> WhatIfReport:
    """The log under each policy (``full`` is always first, the baseline of the savings). ``window``:
    the context window (default: the model's; for an estimate, the log's model's when known), which
    ``compact`` measures against. ``on_call`` is called after each of the log's calls under each policy
    (len(trace.calls) × len(policies) steps; a summarising call a policy adds is no step). ``facts``:
    what each policy keeps of each (:mod:`tokprof.analyses.retention`). ``calls``: a fresh stream of
    the log's calls each time it is called (its file read again), ``trace`` then the log's header
    (its notes complete once a stream is read): each policy is a pass over one stream, and no prompt
    is held after its pass; without it, the trace's calls. ``policies`` may be a function, called once
    the baseline's pass is done (a choice that rests on every call of a stream)."""
    source: Calls = calls if calls is not None else (lambda: trace.calls)

    def step(call: Call) -> None:
        if on_call is not None and not isinstance(call, AddedCall):
            on_call()

    # whether the policies that count no tokens change a call: found on the baseline's stream when they are
    # known before it, else on one stream for all of them (never a stream each)
    # and what the calls show of their tools (a policy that rests on the whole log: the tools it never calls,
    # whose replay waits for the baseline's stream to end)
    use = ToolUse()
    known = () if callable(policies) else policies
    early = [p for p in known if not p.needs_counter and not isinstance(p, Full) and not _needs_log(p)]
    changes = _Changes(early, window, use)
    baseline, log, base = _pass(((c, c) for c in changes.watch(_using(source(), use))), trace, model, step, facts)
    chosen = policies() if callable(policies) else policies
    ordered: list[Policy] = [Full()] + [p for p in chosen if not isinstance(p, Full)]
    changed = dict(changes.changed)
    late = [p for p in ordered[1:] if not p.needs_counter and p not in changed]
    if late:
        changes = _Changes(late, window, use)
        for _ in changes.watch(source()):
            pass
        changed.update(changes.changed)
    if window is None:
        window = baseline.model.context_window
        if window is None and not model.exact:  # the window the agent ran the log's model with
            window = log_window(log, log.calls).window
    report = WhatIfReport(
        model=baseline.model,
        source=baseline.source,
        context_window=window,
        warnings=list(baseline.warnings),
        baseline=baseline,
        log=log,
    )
    fixed = inferred_parts(log, baseline)
    units = log_units(log, baseline, fixed)
    first = first_calls(log, facts, base.carried)

    def kept(result: PolicyResult, replayed: Trace, seen: _Seen) -> PolicyResult:
        return dataclasses.replace(result, facts=retention(replayed, facts, first, seen.carried)) if facts else result

    full = kept(_result(ordered[0], log, baseline, base, None, window, log.calls, prices), log, base)
    report.policies.append(full)
    rendered = {call.index: count for call, count in zip(log.calls, base.rendered)}
    for policy in ordered[1:]:
        if not policy.needs_counter and not changed[policy]:
            # the policy changes no call: its profile is full's, call for call
            for call in log.calls:
                step(call)
            report.policies.append(
                kept(_result(policy, log, baseline, base, full, window, log.calls, prices), log, base)
            )
            continue
        counter = PromptCounter(model, fixed, rendered, units) if policy.needs_counter else None
        replay = Replay(policy, counter, window, use)
        pairs = ((c, call) for call in source() for c in replay.calls(call))
        profile, replayed, seen = _pass(pairs, log, model, step, facts)
        if not any(seen.changed):  # the policy changed no call (one that counts): full's profile
            report.policies.append(
                kept(_result(policy, log, baseline, base, full, window, log.calls, prices), log, base)
            )
            continue
        report.policies.append(
            kept(_result(policy, replayed, profile, seen, full, window, log.calls, prices, units), replayed, seen)
        )
    return report


class _Changes:
    """Whether each of some policies that count no tokens changes a call of the log: their replays fed
    the calls of a stream as it goes by (:meth:`watch`), each until it changes one."""

    def __init__(self, policies: Sequence[Policy], window: int | None, use: ToolUse) -> None:
        self.changed: dict[Policy, bool] = {p: False for p in policies}
        self._replays = {p: Replay(p, None, window, use) for p in policies}

    def watch(self, calls: Iterable[Call]) -> Iterator[Call]:
        for call in calls:
            for policy, replay in self._replays.items():
                if not self.changed[policy]:
                    out = replay.calls(call)
                    self.changed[policy] = len(out) != 1 or out[0] is not call
            yield call


def _needs_log(policy: Policy) -> bool:
    """Whether what a policy does rests on the whole log (it is replayed once every call was read)."""
    return bool(getattr(policy, "needs_log", False))


def _using(calls: Iterable[Call], use: ToolUse) -> Iterator[Call]:
    """The calls, each shown to ``use`` as it goes by."""
    for call in calls:
        use.observe(call)
        yield call
