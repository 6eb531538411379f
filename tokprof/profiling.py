"""The profile: one row per call plus run totals. Serialisable, and the input of every renderer.

``Profile.to_dict()`` is the documented JSON (docs/schema/profile.schema.json).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TypeVar

import tokprof.base.bounded as bounded
from tokprof.version import __version__
from tokprof.attribution.attributor import Attributor
from tokprof.attribution.buckets import BUCKETS, WARNINGS
from tokprof.base.gc_freeze import frozen
from tokprof.base.files import encoded, write_atomic
from tokprof.attribution.tool_results import ResultTracker, ToolResultCosts
from tokprof.attribution.catalogue import CatalogueSummary
from tokprof.pricing.billing import CacheSummary, CallCache, CallCost, CostSummary, cache_loss, summarise
from tokprof.base.jsontext import object_chunks
from tokprof.attribution.estimates import BAND, UNRECORDED, Continuations, Counted, attribute
from tokprof.attribution.facts import PassFacts, PromptTracker
from tokprof.models import as_stand_in, is_default
from tokprof.models.base import ChatModel, ModelInfo
from tokprof.models.agent_window import AgentWindow, agent_window
from tokprof.trace import Call, Note, Trace, Usage

SCHEMA_VERSION = 3
#: Saved profiles this version reads (what an earlier version lacks reads as absent).
READABLE_VERSIONS = (1, 2, 3)
INFERENCE = (
    "the log does not record {what}: their tokens are inferred, per model and thread, as the first call's "
    "reported prompt minus its rendered messages, and counted in 'unrecorded' on every call"
)
#: Computed prompts that differ from the reported ones by more than this, on average, get a
#: warning when the counts claim to be exact: the model or template is probably not the log's.
RECONCILE_THRESHOLD = 0.03
#: The same for an estimate (a proxy, or an inferred part), whose counts are expected to differ somewhat.
PROXY_THRESHOLD = 0.15
#: How an estimate's buckets are made to agree with what was billed (see tokprof.attribution.estimates).
SCALING = (
    "where a call reports usage, its buckets add up to the reported prompt: a call that continues the previous "
    "one of its thread is that call's buckets plus the estimate's growth, made to add up to the reported growth "
    f"up to {BAND:g} times the log's usual ratio (more goes to 'unrecorded'); other calls are scaled whole "
    "(largest remainder); calls without usage keep the estimate's counts"
)


@dataclass(slots=True)  # one per call: no __dict__ each
class CallRow:
    index: int
    buckets: dict[str, int]
    total: int
    cumulative: int
    messages: int
    where: str
    reported: Usage | None = None
    computed: int | None = None  # the count before scaling: rendered, plus unrendered and inferred (None: total)
    exact: bool = True
    kind: str = "call"  # or "compaction"
    unrendered: int = 0  # tokens known from usage only (encrypted reasoning), included in the buckets
    thread: str | None = None  # None for the main conversation, else a subagent's id
    anchored: bool = False  # an estimate's buckets: the previous call's plus its growth (tokprof.attribution.estimates)
    unexplained: int = 0  # reported growth the call's new messages do not explain, in 'unrecorded'
    #: The roles of the messages this call's prompt adds to the previous call of its thread (None when it
    #: is the thread's first call or does not continue the previous one: a rewrite, a compaction).
    added: list[str] | None = None
    cost: CallCost | None = None  # what the call cost (tokprof.pricing.cost), when it was priced
    cache: CallCache | None = None  # what a prefix cache could reuse (tokprof.analyses.prefix_cache)

    @property
    def rendered(self) -> int:
        return self.total if self.computed is None else self.computed

    @property
    def recorded(self) -> bool:
        """Whether the log records anything of the call's prompt: its messages, tools or usage (False: a
        span with content capture off and its usage redacted, whose figures are not known, not 0)."""
        return self.total > 0 or self.messages > 0 or self.reported is not None or self.unrendered > 0

    def difference(self) -> tuple[int, float] | None:
        """Computed minus reported prompt, and that relative to the reported prompt (None when nothing,
        or a prompt of 0, was reported: some servers report 0 when they do not count)."""
        if not self.reported or not self.reported.prompt:
            return None
        diff = self.rendered - self.reported.prompt
        return diff, diff / self.reported.prompt

    def to_dict(self) -> dict:
        reported = self.reported.to_dict() if self.reported else None
        diff = self.difference()
        known = self.recorded  # a call the log records nothing of: its figures are null, never 0
        return {
            "index": self.index,
            "buckets": dict(self.buckets) if known else {name: None for name in self.buckets},
            "total": self.total if known else None,
            "computed": self.rendered if known else None,
            "exact": self.exact,
            "kind": self.kind,
            "thread": self.thread,
            "unrendered": self.unrendered,
            "anchored": self.anchored,
            "unexplained": self.unexplained,
            "added_messages": self.added,
            "cumulative": self.cumulative if known else None,
            "messages": self.messages,
            "source": self.where,
            "reported": reported,
            "difference": diff[0] if diff else None,
            "relative_difference": round(diff[1], 6) if diff else None,
            **({"cost": self.cost.to_dict()} if self.cost is not None else {}),
            **({"cache": self.cache.to_dict()} if self.cache is not None else {}),
        }

    @classmethod
    def from_dict(cls, d: dict) -> "CallRow":
        _check_row(d)
        reported = Usage(**d["reported"]) if d.get("reported") else None
        return cls(
            index=d["index"],
            # null figures: a call the log records nothing of (held as 0, shown as not recorded)
            buckets={name: count or 0 for name, count in d["buckets"].items()},
            total=d["total"] or 0,
            cumulative=d["cumulative"] or 0,
            messages=d["messages"],
            where=d.get("source", ""),
            reported=reported,
            computed=d.get("computed"),
            exact=d.get("exact", True),
            kind=d.get("kind", "call"),
            unrendered=d.get("unrendered", 0),
            thread=d.get("thread"),
            anchored=d.get("anchored", False),
            unexplained=d.get("unexplained", 0),
            added=d.get("added_messages"),
            cost=CallCost.from_dict(d["cost"]) if d.get("cost") else None,
            cache=CallCache.from_dict(d["cache"]) if d.get("cache") else None,
        )


#: The types of a saved call's fields that the reports read (``docs/schema/profile.schema.json``).
_ROW_TYPES: dict[str, tuple[type, ...]] = {
    "index": (int,),
    "total": (int, type(None)),  # null: a call the log records nothing of (its figures are not known, not 0)
    "cumulative": (int, type(None)),
    "messages": (int,),
    "source": (str,),
    "computed": (int, type(None)),
    "exact": (bool,),
    "kind": (str,),
    "unrendered": (int,),
    "thread": (int, str, type(None)),
    "anchored": (bool,),
    "unexplained": (int,),
    "added_messages": (list, type(None)),
    "reported": (dict, type(None)),
    "cost": (dict, type(None)),
    "cache": (dict, type(None)),
}


def _check_row(d: dict) -> None:
    """Raise :class:`ProfileFileError` at the first field of a saved call of the wrong type."""
    where = f"calls[{d.get('index')}]" if type(d.get("index")) is int else "a call"
    for key, types in _ROW_TYPES.items():
        if key in d and (type(d[key]) not in types):
            raise ProfileFileError(f"{where}.{key}: expected {' or '.join(_TYPE_NAMES[t] for t in types)}")
    added = d.get("added_messages")
    if added is not None and not all(type(role) is str for role in added):
        raise ProfileFileError(f"{where}.added_messages: expected a list of roles (strings)")


_TYPE_NAMES = {
    int: "a whole number",
    str: "a string",
    bool: "true or false",
    list: "a list",
    dict: "an object",
    type(None): "null",
}


@dataclass(frozen=True)
class Source:
    """The log a profile or report was made from."""

    path: str
    format: str
    model: str | None = None  # the model the log names
    session: str | None = None  # the session id, for logs of agent sessions

    def to_dict(self) -> dict:
        out: dict = {"path": self.path, "format": self.format, "model": self.model}
        if self.session:
            out["session"] = self.session
        return out

    @classmethod
    def from_dict(cls, d: dict) -> "Source":
        return cls(path=d.get("path", ""), format=d.get("format", ""), model=d.get("model"), session=d.get("session"))


@dataclass(frozen=True)
class Crossovers:
    """The first call at which tool results, and the conversation, outgrow the tool definitions."""

    tool_results_exceed_tool_definitions: int | None
    conversation_exceeds_tool_definitions: int | None

    def to_dict(self) -> dict:
        return {
            "tool_results_exceed_tool_definitions": self.tool_results_exceed_tool_definitions,
            "conversation_exceeds_tool_definitions": self.conversation_exceeds_tool_definitions,
        }


@dataclass(frozen=True)
class Reconciliation:
    """How far the computed prompts are from the reported ones, in relative terms: weighted by tokens
    (the sum of the differences over the sum of the reported prompts, which the warning uses), as a
    plain mean over calls, and the largest."""

    calls: int
    weighted_relative_difference: float
    mean_relative_difference: float
    max_relative_difference: float
    max_call: int
    threshold: float

    def to_dict(self) -> dict:
        return {
            "calls": self.calls,
            "weighted_relative_difference": self.weighted_relative_difference,
            "mean_relative_difference": self.mean_relative_difference,
            "max_relative_difference": self.max_relative_difference,
            "max_call": self.max_call,
            "threshold": self.threshold,
        }


@dataclass(frozen=True)
class Estimate:
    """How an estimate's counts were made and made to agree with what was billed."""

    method: str | None
    scaling: str
    calls_scaled_to_reported: int
    billed_input_computed: int
    calls_anchored: int = 0  # calls whose buckets are the previous call's plus their growth
    unexplained_growth: int = 0  # tokens the anchoring rule put in 'unrecorded'
    ratios: dict[str, float] = field(default_factory=dict)  # per model: reported growth per estimated growth
    band: float = BAND

    def to_dict(self) -> dict:
        return {
            "method": self.method,
            "scaling": self.scaling,
            "calls_scaled_to_reported": self.calls_scaled_to_reported,
            "billed_input_computed": self.billed_input_computed,
            "calls_anchored": self.calls_anchored,
            "unexplained_growth": self.unexplained_growth,
            "ratios": dict(self.ratios),
            "band": self.band,
        }


@dataclass(frozen=True)
class Reported:
    """The run's usage as the provider reported it, over the calls that report it."""

    billed_input: int
    calls: int
    cache_read: int | None = None
    cache_write: int | None = None
    output: int | None = None
    uncached_input: int | None = None  # the prompts' tokens neither read from nor written to the cache
    cache_write_5m: int | None = None  # the cache writes by lifetime, when the log splits them
    cache_write_1h: int | None = None

    @property
    def hit_rate(self) -> float | None:
        """The share of the reported prompts read from the cache (None when no call reports reads)."""
        if self.cache_read is None or not self.billed_input:
            return None
        return self.cache_read / self.billed_input


@dataclass(frozen=True)
class ThreadSummary:
    """One conversation of a log: the main one (``thread`` None) or a subagent's."""

    thread: str | None
    calls: int
    billed_input: int
    final_prompt: int
    largest_prompt: int

    def to_dict(self) -> dict:
        return {
            "thread": self.thread,
            "calls": self.calls,
            "billed_input": self.billed_input,
            "final_prompt": self.final_prompt,
            "largest_prompt": self.largest_prompt,
        }


@dataclass(frozen=True)
class Summary:
    """A profile's run totals (``summary`` in the JSON). ``final_prompt`` is the main conversation's
    last prompt (a subagent's may come later); ``largest_prompt`` the largest of any call; per
    conversation both are in ``threads`` when the log has subagents. ``not_recorded`` names the
    parts of the main conversation's prompts that the log does not record (and nobody supplied):
    figures that rest on them are not known, not 0."""

    calls: int
    billed_input: int
    final_prompt: int
    largest_prompt: int
    buckets_billed: dict[str, int]
    shares: dict[str, float]
    crossovers: Crossovers
    exact: bool
    catalogue: CatalogueSummary | None = None
    compactions: int = 0
    unrendered: int = 0
    inferred: str | None = None
    estimate: Estimate | None = None
    reported: Reported | None = None
    reconciliation: Reconciliation | None = None
    threads: tuple[ThreadSummary, ...] = ()
    not_recorded: tuple[str, ...] = ()
    cost: CostSummary | None = None
    cache: CacheSummary | None = None
    tool_result_costs: ToolResultCosts | None = None  # which tool results cost most (tokprof.attribution.tool_results)

    def to_dict(self) -> dict:
        out: dict = {
            "calls": self.calls,
            "billed_input": self.billed_input,
            "final_prompt": self.final_prompt,
            "largest_prompt": self.largest_prompt,
            "buckets_billed": dict(self.buckets_billed),
            "shares": dict(self.shares),
            "crossovers": self.crossovers.to_dict(),
            "not_recorded": list(self.not_recorded),
        }
        if len(self.threads) > 1:
            out["threads"] = [t.to_dict() for t in self.threads]
        if self.catalogue is not None:
            out["catalogue"] = self.catalogue.to_dict()
        if self.tool_result_costs is not None:
            out["tool_result_costs"] = self.tool_result_costs.to_dict()
        if self.compactions:
            out["compactions"] = self.compactions
        if self.unrendered:
            out["unrendered"] = self.unrendered
        if self.inferred:
            out["inferred"] = self.inferred
        out["exact"] = self.exact
        if self.estimate is not None:
            out["estimate"] = self.estimate.to_dict()
        if self.reported is not None:
            out["billed_input_reported"] = self.reported.billed_input
            out["calls_reported"] = self.reported.calls
            for key in ("uncached_input", "cache_read", "cache_write", "cache_write_5m", "cache_write_1h", "output"):
                value = getattr(self.reported, key)
                if value is not None:
                    out[f"{key}_reported"] = value
            out["reconciliation"] = self.reconciliation.to_dict() if self.reconciliation else None
        if self.cost is not None:
            out["cost"] = self.cost.to_dict()
        if self.cache is not None:
            out["cache"] = self.cache.to_dict()
        return out


_KIND_PROFILE = re.compile(r'"kind"\s*:\s*"profile"')


@dataclass(frozen=True)
class Action:
    """One change to the way the log's agent runs and what it would have saved (tokprof.analyses.actions):
    ``dollars`` is what a replay of the log proves (None: no replay priced it, ``unpriced`` says why),
    ``tokens`` the input tokens it saves (a cache fix: the tokens read from the cache instead of written),
    ``basis`` how it was measured, ``estimate`` whether the counts are a proxy's."""

    what: str
    why: str
    dollars: float | None
    tokens: int | None
    how: str
    basis: str
    estimate: bool = False
    unpriced: str | None = None

    def to_dict(self) -> dict:
        return {
            "what": self.what,
            "why": self.why,
            "dollars": self.dollars,
            "tokens": self.tokens,
            "how": self.how,
            "basis": self.basis,
            "estimate": self.estimate,
            "unpriced": self.unpriced,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "Action":
        return cls(
            what=str(d["what"]),
            why=str(d["why"]),
            dollars=None if d.get("dollars") is None else float(d["dollars"]),
            tokens=None if d.get("tokens") is None else int(d["tokens"]),
            how=str(d["how"]),
            basis=str(d["basis"]),
            estimate=bool(d.get("estimate", False)),
            unpriced=d.get("unpriced"),
        )


class ProfileFileError(ValueError):
    """A file that is not a saved profile tokprof can read."""


@dataclass
class Profile:
    """Where a log's prompt tokens went: a row per call, the warnings, and what the reports need
    (the model's description, the main tool catalogue). Saved and loaded as a versioned JSON file."""

    model: ModelInfo
    source: Source
    calls: list[CallRow] = field(default_factory=list)
    warnings: list[Note] = field(default_factory=list)
    catalogue: CatalogueSummary | None = None  # the tools analysis' summary section, when it was run
    inferred: str | None = None  # how the unrecorded bucket was inferred, when it was
    compactions: int = 0  # compaction boundaries the log records, whether or not their calls are
    not_recorded: tuple[str, ...] = ()  # "system_prompt", "tool_definitions": what the log does not record
    ratios: dict[str, float] = field(
        default_factory=dict
    )  # an estimate's usual ratio per model (tokprof.attribution.estimates)
    cache_notes: tuple[str, ...] = ()  # what the computed cache assumes (tokprof.analyses.prefix_cache)
    tool_result_costs: ToolResultCosts | None = None  # which tool results cost most (tokprof.attribution.tool_results)
    #: What to change, best first (tokprof.analyses.actions); None: not worked out (a profile saved before)
    actions: tuple[Action, ...] | None = None
    #: What the pass took of the log's prompts for the analyses (tokprof.attribution.facts): not saved,
    #: and None for a loaded profile or one not made by the pass.
    facts: PassFacts | None = field(default=None, compare=False, repr=False)

    def buckets(self) -> tuple[str, ...]:
        """The four buckets, and ``unrecorded`` when the log leaves parts of the prompt unrecorded."""
        if any(UNRECORDED in c.buckets for c in self.calls):
            return (*BUCKETS, UNRECORDED)
        return BUCKETS

    def computed_billed_input(self) -> int:
        """The billed input as tokprof counted it, before an estimate was scaled to reported usage: in
        the units of the tool catalogue's counts, which are never scaled."""
        return sum(c.rendered for c in self.calls)

    # -- totals ---------------------------------------------------------------------------
    def summary(self) -> Summary:
        billed = sum(c.total for c in self.calls)
        names = self.buckets()
        by_bucket = {name: sum(c.buckets.get(name, 0) for c in self.calls) for name in names}
        shares = {name: round(by_bucket[name] / billed, 6) if billed else 0.0 for name in names}
        estimate = None
        if not self.model.exact:
            estimate = Estimate(
                method=self.model.method,
                scaling=SCALING,
                calls_scaled_to_reported=sum(1 for c in self.calls if c.difference() is not None),
                billed_input_computed=self.computed_billed_input(),
                calls_anchored=sum(1 for c in self.calls if c.anchored),
                unexplained_growth=sum(c.unexplained for c in self.calls),
                ratios=dict(self.ratios),
            )
        usages = [c.reported for c in self.calls if c.reported and c.reported.prompt]  # 0 is not a count
        reported = None
        if usages:

            def total(key: str) -> int | None:
                values = [getattr(u, key) for u in usages if getattr(u, key) is not None]
                return sum(values) if values else None

            split = [u for u in usages if u.cache_write_5m is not None or u.cache_write_1h is not None]
            reported = Reported(
                billed_input=sum(u.prompt or 0 for u in usages),
                calls=len(usages),
                cache_read=total("cache_read"),
                cache_write=total("cache_write"),
                output=total("output"),
                uncached_input=total("uncached"),
                cache_write_5m=sum(u.cache_write_5m or 0 for u in split) if split else None,
                cache_write_1h=sum(u.cache_write_1h or 0 for u in split) if split else None,
            )
        threads = self.threads()
        main = next((t for t in threads if t.thread is None), threads[0] if threads else None)
        return Summary(
            calls=len(self.calls),
            billed_input=billed,
            final_prompt=main.final_prompt if main else 0,
            largest_prompt=max((c.total for c in self.calls), default=0),
            buckets_billed=by_bucket,
            shares=shares,
            crossovers=self.crossovers(),
            exact=all(c.exact for c in self.calls) and not self.inferred,
            catalogue=self.catalogue,
            compactions=max(self.compactions, sum(1 for c in self.calls if c.kind == "compaction")),
            unrendered=sum(c.unrendered for c in self.calls),
            inferred=self.inferred,
            estimate=estimate,
            reported=reported,
            reconciliation=self.reconciliation() if usages else None,
            threads=tuple(threads),
            not_recorded=self.not_recorded,
            cost=summarise([(c.index, c.cost) for c in self.calls]),
            cache=self.cache_summary(),
            tool_result_costs=self.tool_result_costs,
        )

    def cache_summary(self) -> CacheSummary | None:
        """The computed cache over the run, when the calls have one (tokprof.analyses.prefix_cache)."""
        rows = [c for c in self.calls if c.cache is not None]
        if not rows:
            return None
        prompt = sum((c.reported.prompt if c.reported and c.reported.prompt else c.total) for c in rows)
        predicted = [c.cache.predicted for c in rows if c.cache and c.cache.predicted is not None]
        reported = [c.cache.reported for c in rows if c.cache and c.cache.reported is not None]
        misses: dict[str, int] = {}
        for c in rows:
            if c.cache and c.cache.miss:
                misses[c.cache.miss] = misses.get(c.cache.miss, 0) + 1
        return CacheSummary(
            rules=tuple(dict.fromkeys(c.cache.rules for c in rows if c.cache and c.cache.rules)),
            prompt=prompt,
            shared=sum(c.cache.shared or 0 for c in rows if c.cache),
            predicted=sum(predicted) if predicted else None,
            reported=sum(reported) if reported else None,
            hit_rate_reported=round(sum(reported) / prompt, 6) if reported and prompt else None,
            hit_rate_predicted=round(sum(predicted) / prompt, 6) if predicted and prompt else None,
            misses=misses,
            notes=self.cache_notes,
            lost=cache_loss([(c.index, c.thread, c.cache) for c in rows if c.cache is not None]),
        )

    def threads(self) -> list[ThreadSummary]:
        """Each conversation's totals, the main one first, then subagents in the order they start."""
        rows: dict[str | None, list[CallRow]] = {}
        for call in self.calls:
            rows.setdefault(call.thread, []).append(call)
        order = sorted(rows, key=lambda thread: (thread is not None, rows[thread][0].index))
        return [
            ThreadSummary(
                thread,
                len(rows[thread]),
                sum(c.total for c in rows[thread]),
                rows[thread][-1].total,
                max(c.total for c in rows[thread]),
            )
            for thread in order
        ]

    def reconciliation(self) -> Reconciliation | None:
        """How far the computed prompts are from the reported ones, in relative terms."""
        diffs = [(c.index, d[1]) for c in self.calls if (d := c.difference()) is not None]
        if not diffs:
            return None
        worst = max(diffs, key=lambda item: abs(item[1]))
        absolute = sum(abs(d[0]) for c in self.calls if (d := c.difference()) is not None)
        reported = sum(
            c.reported.prompt for c in self.calls if c.difference() is not None and c.reported and c.reported.prompt
        )
        return Reconciliation(
            calls=len(diffs),
            weighted_relative_difference=round(absolute / reported, 6) if reported else 0.0,
            mean_relative_difference=round(sum(abs(r) for _, r in diffs) / len(diffs), 6),
            max_relative_difference=round(worst[1], 6),
            max_call=worst[0],
            threshold=RECONCILE_THRESHOLD if self.model.exact else PROXY_THRESHOLD,
        )

    def crossovers(self) -> Crossovers:
        def first(bucket: str) -> int | None:
            for c in self.calls:
                if 0 < c.buckets["tool_definitions"] < c.buckets[bucket]:
                    return c.index
            return None

        return Crossovers(first("tool_results"), first("conversation"))

    # -- serialisation --------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": "profile",
            "tokprof_version": __version__,
            "model": self.model.to_dict(),
            "source": self.source.to_dict(),
            **({"actions": [a.to_dict() for a in self.actions]} if self.actions is not None else {}),
            "calls": [c.to_dict() for c in self.calls],
            "summary": self._summary_dict(),
            "warnings": [w.to_dict() for w in self.warnings],
        }

    def _summary_dict(self) -> dict:
        """The summary's JSON; when no call records anything of its prompt (usage redacted, content capture
        off), the prompt figures are null: not known, never 0."""
        out = self.summary().to_dict()
        if self.calls and not any(c.recorded for c in self.calls):
            for key in ("billed_input", "final_prompt", "largest_prompt"):
                out[key] = None
            out["buckets_billed"] = {name: None for name in out["buckets_billed"]}
            out["shares"] = {name: None for name in out["shares"]}
        return out

    def to_json(self) -> str:
        return "".join(self.json_chunks())

    def json_chunks(self) -> Iterator[str]:
        """:meth:`to_json`'s text in pieces, made as they are written: a row's dict exists only
        while that row is encoded, and the text is never whole (``json.dumps(to_dict(), indent=2)``
        and a line break, byte for byte)."""
        fields: list[tuple[str, Callable[[], Any]]] = [
            ("schema_version", lambda: SCHEMA_VERSION),
            ("kind", lambda: "profile"),
            ("tokprof_version", lambda: __version__),
            ("model", self.model.to_dict),
            ("source", self.source.to_dict),
            *((("actions", lambda: [a.to_dict() for a in self.actions or ()]),) if self.actions is not None else ()),
            ("calls", list),
            ("summary", self._summary_dict),
            ("warnings", lambda: [w.to_dict() for w in self.warnings]),
        ]
        yield from object_chunks(fields, "calls", (c.to_dict() for c in self.calls))
        yield "\n"

    @classmethod
    def from_dict(cls, d: dict) -> "Profile":
        """A profile from its JSON (:meth:`to_dict`); raises :class:`ProfileFileError` (a ValueError)
        naming the field when it is not one."""
        if not isinstance(d, dict) or d.get("kind", "profile") != "profile":
            raise ProfileFileError("not a tokprof profile (no 'kind': 'profile')")
        if d.get("schema_version") not in READABLE_VERSIONS:
            raise ProfileFileError(
                f"schema_version: a profile of schema version {d.get('schema_version')!r}, and this tokprof reads "
                f"versions {READABLE_VERSIONS[0]} to {SCHEMA_VERSION}: profile the log again"
            )
        missing = [key for key in ("model", "source", "calls") if key not in d]
        if missing:
            raise ProfileFileError(f"{missing[0]}: missing: not a complete tokprof profile")
        _check_calls(d["calls"])
        _check_schema(d)
        try:
            summary = d.get("summary") or {}
            catalogue = summary.get("catalogue")
            return cls(
                model=ModelInfo.from_dict(d["model"]),
                source=Source.from_dict(d["source"]),
                calls=[CallRow.from_dict(c) for c in d["calls"]],
                warnings=[Note.from_dict(w) for w in d.get("warnings", [])],
                catalogue=CatalogueSummary.from_dict(catalogue) if catalogue else None,
                inferred=summary.get("inferred"),
                compactions=summary.get("compactions", 0),
                not_recorded=tuple(summary.get("not_recorded") or ()),
                ratios=dict((summary.get("estimate") or {}).get("ratios") or {}),
                cache_notes=tuple((summary.get("cache") or {}).get("notes") or ()),
                tool_result_costs=(
                    ToolResultCosts.from_dict(summary["tool_result_costs"])
                    if summary.get("tool_result_costs")
                    else None
                ),
                actions=None if d.get("actions") is None else tuple(Action.from_dict(a) for a in d["actions"]),
            )
        except ProfileFileError:
            raise
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise ProfileFileError(f"not a valid tokprof profile ({type(exc).__name__}: {exc})") from None

    def save(self, path: str | os.PathLike) -> None:
        """Write the profile as JSON, atomically (readers see nothing or the whole file)."""
        write_atomic(Path(path), encoded(self.json_chunks()), make_parents=False)

    @staticmethod
    def sniff(path: str | os.PathLike) -> bool:
        """Whether a file looks like a saved profile (its JSON object says ``"kind": "profile"`` near
        the start, as :meth:`save` writes it); :meth:`load` checks the rest."""
        try:
            with bounded.open_input(path) as f:
                head = f.read(2048)
        except OSError:
            return False
        text = head.decode("utf-8", "replace").lstrip()
        return text.startswith("{") and _KIND_PROFILE.search(text) is not None

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Profile":
        """Read a profile saved by :meth:`save` (or ``tokprof profile --format json``)."""
        return cls.from_dict(_saved_json(bounded.read_bytes(path, "saved profile")))


@lru_cache(maxsize=1)
def _schema() -> dict:
    """The published schema of a profile (docs/schema/profile.schema.json, shipped in the package).

    In a checkout ``tokprof/schemas/`` links to ``docs/schema/``; where links are not made (Git on Windows
    without symlinks writes the link as a file holding its target), the target is read instead."""
    entry = resources.files("tokprof").joinpath("schemas/profile.schema.json")
    text = entry.read_text(encoding="utf-8")
    if not text.lstrip().startswith("{") and isinstance(entry, Path):
        text = (entry.parent / text.strip()).read_text(encoding="utf-8")
    return json.loads(text)


def _check_schema(d: dict) -> None:
    """A saved profile checked against the published schema before any report reads it: every field
    of the type and range the schema gives (fields a profile of an older version lacks may be missing;
    its version is checked before). :class:`ProfileFileError` names the first place that is not."""
    from tokprof.base.schemacheck import Checker, SchemaMismatch

    current = d.get("schema_version") == SCHEMA_VERSION
    checked = d if current else {**d, "schema_version": SCHEMA_VERSION}
    try:
        Checker(_schema(), required=current).check(checked)
    except SchemaMismatch as exc:
        raise ProfileFileError(f"{_visible_place(exc.place or 'the top')}: {exc.problem}") from None


def _reject_constant(name: str) -> None:
    raise ProfileFileError(f"{name} is not a number JSON allows (tokprof never writes it)")


def _saved_json(data: bytes) -> Any:
    """A saved profile's JSON value, checked before any report reads it: UTF-8, JSON without NaN or
    Infinity, nested no deeper than logs may be, and no lone surrogate in any string or key (it
    could not be written out again); :class:`ProfileFileError` naming the first place that is not."""
    from tokprof.formats.jsonfile import NESTING_LIMIT, too_deep_at

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProfileFileError(f"byte {exc.start}: not UTF-8 text") from None
    where = too_deep_at(text) if text.count("[") + text.count("{") > NESTING_LIMIT else None
    if where is not None:
        raise ProfileFileError(f"{where}: nested too deeply (more than {NESTING_LIMIT} levels)")
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ProfileFileError(f"line {exc.lineno}, column {exc.colno}: invalid JSON: {exc.msg}") from None
    except (RecursionError, ValueError) as exc:
        if isinstance(exc, ProfileFileError):
            raise
        raise ProfileFileError(f"invalid JSON: {str(exc).split(';')[0]}") from None
    _check_strings(value)
    return value


def _check_strings(value: Any) -> None:
    """Raise :class:`ProfileFileError` at the first string or key holding a lone surrogate."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        node, where = stack.pop()
        if isinstance(node, dict):
            for key, child in node.items():
                at = f"{where}.{key}" if where else str(key)
                if _SURROGATE.search(key):
                    raise ProfileFileError(f"{_visible_place(where or 'the top')}: a key holds a lone surrogate")
                stack.append((child, at))
        elif isinstance(node, list):
            stack.extend((child, f"{where}[{i}]") for i, child in enumerate(node))
        elif isinstance(node, str) and _SURROGATE.search(node):
            raise ProfileFileError(f"{_visible_place(where)}: a lone surrogate (not valid Unicode)")


def _visible_place(where: str) -> str:
    from tokprof.base.text import shorten, visible

    return shorten(visible(where), 200)


_SURROGATE = re.compile("[\ud800-\udfff]")


#: The buckets a saved profile's calls may have.
SAVED_BUCKETS = (*BUCKETS, UNRECORDED)
#: More tokens than any prompt or run could hold: a saved count over it was not written by tokprof.
MAX_TOKENS = 10**15


def _whole(value: object) -> bool:
    return type(value) is int and 0 <= value <= MAX_TOKENS


def _check_calls(calls: object) -> None:
    """What every report reads of a saved profile's calls, checked as a profile's rule has it: each
    bucket a whole number of tokens, 0 or more, adding up to the call's total; raises
    :class:`ProfileFileError` naming the first field that is not so."""
    if not isinstance(calls, list):
        raise ProfileFileError("calls: expected a list of calls")
    for i, call in enumerate(calls):
        if not isinstance(call, dict):
            raise ProfileFileError(f"calls[{i}]: expected an object")
        buckets = call.get("buckets")
        if not isinstance(buckets, dict) or not buckets:
            raise ProfileFileError(f"calls[{i}].buckets: expected an object of token counts")
        # a call the log records nothing of has null figures (its total and every bucket), never 0
        unknown = call.get("total") is None and not call.get("messages") and call.get("reported") is None
        for name, count in buckets.items():
            if name not in SAVED_BUCKETS:
                raise ProfileFileError(
                    f"calls[{i}].buckets: {name!r} is not a bucket (expected {', '.join(SAVED_BUCKETS)})"
                )
            if not (_whole(count) or (unknown and count is None)):
                raise ProfileFileError(f"calls[{i}].buckets.{name}: expected a whole number of tokens, 0 or more")
        for key in ("index", "total", "cumulative", "messages"):
            if not (_whole(call.get(key)) or (unknown and key in ("total", "cumulative") and call.get(key) is None)):
                raise ProfileFileError(f"calls[{i}].{key}: expected a whole number, 0 or more")
        if unknown:
            if any(count is not None for count in buckets.values()):
                raise ProfileFileError(f"calls[{i}].buckets: a call with no total has no bucket counts")
            continue
        if call["total"] != sum(buckets.values()):
            raise ProfileFileError(
                f"calls[{i}].total: {call['total']:,} is not the sum of its buckets ({sum(buckets.values()):,})"
            )


_UNRECORDED_NAMES = {"system": "the system prompt", "tools": "the tool definitions"}
NOT_INFERRED = (
    "the log does not record every part of the prompt (the system prompt or the tool definitions), and no call "
    "reports usage to infer them from: they are missing from the counts (give them with --system and --tools)"
)


def log_window(trace: Trace, calls: Iterable[Call]) -> AgentWindow:
    """The context window the log's agent ran its model with (:func:`tokprof.models.agent_window.agent_window`:
    Claude Code's 200,000 unless a prompt above it shows its 1M option; other agents, genai-prices'
    window for the log's model names). ``calls``: the trace's (or their light copies)."""
    names: list[str | None] = [trace.model]
    largest = None
    for call in calls:
        names.append(call.model)
        if call.reported is not None and call.reported.prompt:
            largest = max(largest or 0, call.reported.prompt)
    return agent_window(trace.format, names, largest)


def _reported(call: Call) -> int | None:
    """The reported prompt, when there is one (0 is not a count: some servers report 0 when they do not count)."""
    return call.reported.prompt if call.reported and call.reported.prompt else None


def _no_system_prompt(trace: Trace, call: Call) -> bool:
    """Whether a call whose prompt holds no system message (its light copy) holds none because its
    log does not record the one the agent sent: then the text a chat template puts in the place of
    a missing one (Qwen's "You are Qwen...") was not sent and is not counted (#48.2)."""
    missing = set(trace.unrecorded)
    if not call.thread:
        missing -= set(trace.supplied)
    return "system" in missing


def _unrecorded(trace: Trace, call: Call) -> bool:
    """Whether a call's prompt has parts the log does not record (and the user did not supply: what
    is supplied goes to the main conversation, not to subagents, which have their own)."""
    missing = set(trace.unrecorded)
    if not call.thread:
        missing -= set(trace.supplied)
    return bool(missing)


def profile_trace(
    trace: Trace,
    model: ChatModel,
    on_call: Callable[[int], None] | None = None,
    source_name: str | None = None,
    attributor: Attributor | None = None,
) -> Profile:
    """Attribute every call of a trace and gather the rows and warnings into a profile: the trace's
    calls fed to :func:`profile_calls` (the one pass). ``attributor``: one of the model's to
    attribute with (a caller that reads its views of each call, in ``on_call``), else a new one. The
    trace is not changed: the profile's analyses read its calls' light fields and the facts the pass
    took of their prompts (``Profile.facts``)."""
    return profile_calls(trace.calls, trace, model, on_call, source_name, attributor)[0]


def profile_calls(
    calls: Iterable[Call],
    header: Trace,
    model: ChatModel,
    on_call: Callable[[int], None] | None = None,
    source_name: str | None = None,
    attributor: Attributor | None = None,
    settle: Callable[[], ChatModel] | None = None,
) -> tuple[Profile, Trace]:
    """The profile of a stream of calls (each yielded once, in log order; ``header``: the
    trace's other fields, its ``calls`` unread, its notes read once the stream is done), keeping of
    each call after its pass only a light copy (:func:`light_call`): what it holds is the last prompt
    of each thread and key that a later call is compared with, and a small record per call. Returns
    the profile and the trace of the light calls, which the analyses take
    (:func:`tokprof.analyses.standard.attach_analyses`). ``settle``: the model the rows are made with
    (its exactness, its description), called once the stream is done, where the model was chosen
    before every call was seen; it must count as ``model`` does, which the pass used."""
    light: list[Call] = []
    with frozen():
        profile = _profile(calls, header, model, on_call, source_name, attributor, light, settle)
    trace = dataclasses.replace(
        header, calls=light, notes=[Note(n.code, n.message, list(n.places), list(n.calls)) for n in header.notes]
    )
    return profile, trace


def light_call(call: Call, tools: list[dict] | None) -> Call:
    """A call without its prompt and response (``tools``: its catalogue's one shared copy): what the
    analyses read of it after its pass."""
    return dataclasses.replace(call, messages=(), tools=tools, response=None)  # type: ignore[arg-type]


def _profile(
    calls: Iterable[Call],
    trace: Trace,
    model: ChatModel,
    on_call: Callable[[int], None] | None,
    source_name: str | None,
    attributor: Attributor | None,
    light: list[Call],
    settle: Callable[[], ChatModel] | None = None,
) -> Profile:
    """The pass over the calls, then the rows. ``light``: where to keep each call's light copy (what
    the rows and the analyses read of it)."""
    attributor = attributor or Attributor(model, keep_json=True)
    flagged: dict[str, list[int]] = {}
    counted: list[Counted] = []
    defaults: set[int] = set()  # calls whose prompt holds no system message but the count has a system part
    results = ResultTracker()
    prompts = PromptTracker()
    continuations = Continuations()
    for position, call in enumerate(calls):
        buckets = attributor.attribute(call)
        facts = prompts.observe(call)
        continues = None if facts.added is None else facts.messages - len(facts.added)
        results.observe(position, call, attributor.message_tokens, continues)
        counts = buckets.as_dict()
        if counts.get("system") and not any(m.get("role") in ("system", "developer") for m in call.messages):
            defaults.add(position)  # the template's default system prompt, if the log records none (below)
        for name, tokens in call.unrendered.items():  # known from usage, not renderable
            counts[name] = counts.get(name, 0) + tokens
        key, reported = (call.model, call.thread), _reported(call)
        extends = continuations.observe(key, reported, call.messages, call.tools)
        counted.append(Counted(counts, reported, key, False, extends))
        for code in buckets.warnings:
            flagged.setdefault(code, []).append(call.index)
        light.append(light_call(call, prompts.facts.tools.tools[facts.catalogue]))
        if on_call is not None:
            on_call(call.index)
    # what rests on the log's header, complete only once every call is read: the parts it does not record
    for position in defaults:
        if _no_system_prompt(trace, light[position]):  # the agent sent its own system prompt (unrecorded)
            counted[position].counts["system"] = 0
    for count, call in zip(counted, light):
        # a call whose whole prompt is unrecorded (UNRECORDED unrendered) has no fixed part to infer
        count.unrecorded = _unrecorded(trace, call) and UNRECORDED not in call.unrendered
    if settle is not None:
        model = settle()
    if model.exact and is_default(model) and any(c.reported is not None for c in counted):
        model = as_stand_in(model)  # the log names no model but reports usage: counts anchored on it (#48.2)
    rest = light
    estimates = attribute(counted, model.exact)
    rows: list[CallRow] = []
    cumulative = 0
    for call, count, found, facts in zip(rest, counted, estimates.calls, prompts.facts.calls):
        total = sum(found.buckets.values())
        cumulative += total
        rows.append(
            CallRow(
                index=call.index,
                buckets=found.buckets,
                total=total,
                cumulative=cumulative,
                messages=facts.messages,
                where=call.where,
                reported=call.reported,
                computed=sum(count.counts.values()) + (found.part or 0),
                exact=model.exact and found.part is None and not found.unexplained and not call.unrendered,
                kind=call.kind,
                unrendered=sum(call.unrendered.values()),
                thread=call.thread or None,
                anchored=found.anchored,
                unexplained=found.unexplained,
                added=None if facts.added is None else list(facts.added),
            )
        )
    warnings = [Note(n.code, n.message, list(n.places)) for n in trace.notes]
    warnings += [Note(code, WARNINGS[code], calls=numbers) for code, numbers in flagged.items()]
    source = Source(path=source_name or trace.path, format=trace.format, model=trace.model, session=trace.session)
    inference = None
    if estimates.fixed:
        parts = [p for p in trace.unrecorded if any(p not in trace.supplied or c.thread for c in rest)]
        inference = INFERENCE.format(what=" and ".join(_UNRECORDED_NAMES[p] for p in parts))
    elif any(_unrecorded(trace, c) for c in rest):
        warnings.append(Note("not-inferred", NOT_INFERRED))
    if any(row.unexplained for row in rows):
        unexplained = [row.index for row in rows if row.unexplained]
        warnings.append(Note("unexplained-growth", UNEXPLAINED.format(band=BAND), calls=unexplained))
    info = model.describe()
    if not model.exact:  # an estimate stands in for the log's model: its window is the one the agent ran it with
        window = log_window(trace, rest).window
        info = dataclasses.replace(info, context_window=window or info.context_window)
    scale = None
    if not model.exact:  # an estimate's results in its scaled units: as their call's tool_results bucket was scaled
        scale = {
            p: found.buckets.get("tool_results", 0) / count.counts["tool_results"]
            for p, (count, found) in enumerate(zip(counted, estimates.calls))
            if count.counts.get("tool_results")
        }
    profile = Profile(
        model=info,
        source=source,
        calls=rows,
        warnings=warnings,
        inferred=inference,
        compactions=trace.compactions,
        not_recorded=_not_recorded(trace),
        ratios={str(k) if k else "unnamed": round(v, 4) for k, v in estimates.ratios.items()},
        tool_result_costs=results.costs(scale),
        facts=prompts.facts,
    )
    check = profile.reconciliation()
    if check and check.weighted_relative_difference > check.threshold:
        differ = (
            f"differ from the reported ones by {check.weighted_relative_difference:.1%} of the reported tokens "
            f"(largest {check.max_relative_difference:+.1%}, call {check.max_call})"
        )
        if model.exact:
            message = (
                f"computed prompts {differ}: is the model (--model) the one the log used, and the chat "
                "template the one it was served with?"
            )
        else:
            message = (
                f"the estimate's own counts {differ}: the buckets rest on proportions that may not "
                "hold (a part of the prompt the log does not show, or a proxy far from the model)"
            )
        profile.warnings.append(Note("reported-differs", message))
    return profile


#: What a profile says of growth the anchoring rule put in ``unrecorded``.
UNEXPLAINED = (
    "these calls' reported prompts grew by more than {band:g} times what their new messages explain at the log's "
    "usual ratio: the rest is counted in 'unrecorded' (content the log does not record, such as text an agent "
    "injects), not in the buckets of the messages"
)


def missing_buckets(not_recorded: tuple[str, ...]) -> frozenset[str]:
    """The buckets a log does not record, from a profile's ``not_recorded`` (``system_prompt``, ...)."""
    return frozenset({"system_prompt": "system"}.get(name, name) for name in not_recorded)


_Figure = TypeVar("_Figure", int, float)


def recorded(value: _Figure, name: str, missing: frozenset[str]) -> _Figure | None:
    """A bucket's figure (its tokens, its share), or None for an empty bucket the log does not record
    (``missing``: :func:`missing_buckets`): what a table shows as ``n/r`` and a data table as null."""
    return None if value == 0 and name in missing else value


def _not_recorded(trace: Trace) -> tuple[str, ...]:
    """The parts of the main conversation's prompts that neither the log nor the user gives."""
    names = {"system": "system_prompt", "tools": "tool_definitions"}
    return tuple(names[p] for p in trace.unrecorded if p not in trace.supplied and p in names)
