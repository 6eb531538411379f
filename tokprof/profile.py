"""The profile: one row per call plus run totals. Serialisable, and the input of every renderer.

``Profile.to_dict()`` is the documented JSON schema (``schema_version`` 1, see the README).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable

from tokprof import __version__
from tokprof.attribution import BUCKETS, WARNINGS, Attributor
from tokprof.models.model import ChatModel
from tokprof.trace import Trace, Usage

SCHEMA_VERSION = 1
#: The bucket for what every prompt holds but the log does not record (Claude Code's system prompt,
#: the tool definitions of Claude Code and Codex), inferred from reported usage.
UNRECORDED = "unrecorded"
INFERENCE = (
    "the log does not record {what}: their tokens are inferred, per model and thread, as the first call's "
    "reported prompt minus its rendered messages, and counted in 'unrecorded' on every call"
)
#: Computed prompts that differ from the reported ones by more than this, on average, get a
#: warning when the counts claim to be exact: the model or template is probably not the log's.
RECONCILE_THRESHOLD = 0.03
#: The same for an estimate (a proxy, or an inferred part), whose counts are expected to differ somewhat.
PROXY_THRESHOLD = 0.15
#: How an estimate's buckets are made to agree with what was billed.
SCALING = (
    "where a call reports usage, its buckets are scaled (largest remainder) to add up to the reported prompt; "
    "calls without usage keep the proxy's counts"
)


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

    @property
    def rendered(self) -> int:
        return self.total if self.computed is None else self.computed

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
        return {
            "index": self.index,
            "buckets": dict(self.buckets),
            "total": self.total,
            "computed": self.rendered,
            "exact": self.exact,
            "kind": self.kind,
            "unrendered": self.unrendered,
            "cumulative": self.cumulative,
            "messages": self.messages,
            "source": self.where,
            "reported": reported,
            "difference": diff[0] if diff else None,
            "relative_difference": round(diff[1], 6) if diff else None,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "CallRow":
        reported = Usage(**d["reported"]) if d.get("reported") else None
        return cls(
            index=d["index"],
            buckets=dict(d["buckets"]),
            total=d["total"],
            cumulative=d["cumulative"],
            messages=d["messages"],
            where=d.get("source", ""),
            reported=reported,
            computed=d.get("computed"),
            exact=d.get("exact", True),
            kind=d.get("kind", "call"),
            unrendered=d.get("unrendered", 0),
        )


@dataclass
class Profile:
    model: dict
    source: dict
    calls: list[CallRow] = field(default_factory=list)
    warnings: list[dict] = field(default_factory=list)
    catalogue: dict | None = None  # the tools analysis' summary section, when it was run
    inferred: str | None = None  # how the unrecorded bucket was inferred, when it was
    compactions: int = 0  # compaction boundaries the log records, whether or not their calls are

    def buckets(self) -> tuple[str, ...]:
        """The four buckets, and ``unrecorded`` when the log leaves parts of the prompt unrecorded."""
        if any(UNRECORDED in c.buckets for c in self.calls):
            return (*BUCKETS, UNRECORDED)
        return BUCKETS

    # -- totals ---------------------------------------------------------------------------
    def summary(self) -> dict:
        billed = sum(c.total for c in self.calls)
        names = self.buckets()
        by_bucket = {name: sum(c.buckets.get(name, 0) for c in self.calls) for name in names}
        shares = {name: (by_bucket[name] / billed if billed else 0.0) for name in names}
        summary = {
            "calls": len(self.calls),
            "billed_input": billed,
            "final_prompt": self.calls[-1].total if self.calls else 0,
            "largest_prompt": max((c.total for c in self.calls), default=0),
            "buckets_billed": by_bucket,
            "shares": {k: round(v, 6) for k, v in shares.items()},
            "crossovers": self.crossovers(),
        }
        if self.catalogue is not None:
            summary["catalogue"] = self.catalogue
        compactions = max(self.compactions, sum(1 for c in self.calls if c.kind == "compaction"))
        if compactions:
            summary["compactions"] = compactions
        unrendered = sum(c.unrendered for c in self.calls)
        if unrendered:
            summary["unrendered"] = unrendered
        if self.inferred:
            summary["inferred"] = self.inferred
        summary["exact"] = all(c.exact for c in self.calls) and not self.inferred
        if not self.model.get("exact", True):
            summary["estimate"] = {
                "method": self.model.get("method"),
                "scaling": SCALING,
                "calls_scaled_to_reported": sum(1 for c in self.calls if c.difference() is not None),
                "billed_input_computed": sum(c.rendered for c in self.calls),
            }
        reported = [c.reported for c in self.calls if c.reported and c.reported.prompt]  # 0 is not a count
        if reported:
            summary["billed_input_reported"] = sum(u.prompt for u in reported)
            summary["calls_reported"] = len(reported)
            for key in ("cache_read", "cache_write", "output"):
                values = [getattr(u, key) for u in reported if getattr(u, key) is not None]
                if values:
                    summary[f"{key}_reported"] = sum(values)
            summary["reconciliation"] = self.reconciliation()
        return summary

    def reconciliation(self) -> dict | None:
        """How far the computed prompts are from the reported ones, in relative terms."""
        diffs = [(c.index, d[1]) for c in self.calls if (d := c.difference()) is not None]
        if not diffs:
            return None
        worst = max(diffs, key=lambda item: abs(item[1]))
        return {
            "calls": len(diffs),
            "mean_relative_difference": round(sum(abs(r) for _, r in diffs) / len(diffs), 6),
            "max_relative_difference": round(worst[1], 6),
            "max_call": worst[0],
            "threshold": RECONCILE_THRESHOLD if self.model.get("exact", True) else PROXY_THRESHOLD,
        }

    def crossovers(self) -> dict:
        def first(bucket: str) -> int | None:
            for c in self.calls:
                if 0 < c.buckets["tool_definitions"] < c.buckets[bucket]:
                    return c.index
            return None

        return {
            "tool_results_exceed_tool_definitions": first("tool_results"),
            "conversation_exceeds_tool_definitions": first("conversation"),
        }

    # -- serialisation --------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {
            "schema_version": SCHEMA_VERSION,
            "tokprof_version": __version__,
            "model": self.model,
            "source": self.source,
            "calls": [c.to_dict() for c in self.calls],
            "summary": self.summary(),
            "warnings": self.warnings,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def from_dict(cls, d: dict) -> "Profile":
        if d.get("schema_version") != SCHEMA_VERSION:
            raise ValueError(f"unsupported profile schema_version {d.get('schema_version')!r}")
        return cls(
            model=d["model"],
            source=d["source"],
            calls=[CallRow.from_dict(c) for c in d["calls"]],
            warnings=list(d.get("warnings", [])),
            catalogue=d.get("summary", {}).get("catalogue"),
            inferred=d.get("summary", {}).get("inferred"),
            compactions=d.get("summary", {}).get("compactions", 0),
        )


_UNRECORDED_NAMES = {"system": "the system prompt", "tools": "the tool definitions"}
NOT_INFERRED = (
    "the log does not record every part of the prompt (the system prompt or the tool definitions), and no call "
    "reports usage to infer them from: they are missing from the counts (give them with --system and --tools)"
)


def _reported(call) -> int | None:
    """The reported prompt, when there is one (0 is not a count: some servers report 0 when they do not count)."""
    return call.reported.prompt if call.reported and call.reported.prompt else None


def _unrecorded(trace: Trace, call) -> bool:
    """Whether a call's prompt has parts the log does not record (and the user did not supply: what
    is supplied goes to the main conversation, not to subagents, which have their own)."""
    missing = set(trace.unrecorded)
    if not call.thread:
        missing -= set(trace.supplied)
    return bool(missing)


def _fixed_parts(trace: Trace, rendered: list[dict[str, int]]) -> dict[tuple, int]:
    """The unrecorded part of the prompts, per (model, thread): the first call with reported usage,
    minus its rendered count. It applies to every call of the thread, earlier ones included."""
    fixed: dict[tuple, int] = {}
    for call, counts in zip(trace.calls, rendered):
        key = (call.model, call.thread)
        reported = _reported(call)
        if key not in fixed and reported is not None and _unrecorded(trace, call):
            fixed[key] = max(0, reported - sum(counts.values()))
    return fixed


def profile_trace(
    trace: Trace, model: ChatModel, on_call: Callable[[int], None] | None = None, source_name: str | None = None
) -> Profile:
    """Attribute every call of a trace and gather the rows and warnings into a profile."""
    attributor = Attributor(model)
    flagged: dict[str, list[int]] = {}
    rendered: list[dict[str, int]] = []
    for call in trace.calls:
        buckets = attributor.attribute(call)
        counts = buckets.as_dict()
        for name, tokens in call.unrendered.items():  # known from usage, not renderable
            counts[name] += tokens
        rendered.append(counts)
        for code in buckets.warnings:
            flagged.setdefault(code, []).append(call.index)
        if on_call is not None:
            on_call(call.index)
    fixed = _fixed_parts(trace, rendered)
    rows: list[CallRow] = []
    cumulative = 0
    for call, counts in zip(trace.calls, rendered):
        reported = _reported(call)
        inferred = None
        if _unrecorded(trace, call):
            part = fixed.get((call.model, call.thread))
            if part is not None:
                inferred = part if reported is None else min(part, reported)
        before_scaling = sum(counts.values()) + (inferred or 0)
        if not model.exact and reported is not None:
            counts = scale_buckets(counts, reported - (inferred or 0))
        if inferred is not None:
            counts = {**counts, UNRECORDED: inferred}
        total = sum(counts.values())
        cumulative += total
        rows.append(
            CallRow(
                index=call.index,
                buckets=counts,
                total=total,
                cumulative=cumulative,
                messages=len(call.messages),
                where=call.where,
                reported=call.reported,
                computed=before_scaling,
                exact=model.exact and inferred is None and not call.unrendered,
                kind=call.kind,
                unrendered=sum(call.unrendered.values()),
            )
        )
    warnings = [{"code": n.code, "message": n.message, "calls": [], "places": list(n.places)} for n in trace.notes]
    warnings += [{"code": code, "message": WARNINGS[code], "calls": calls} for code, calls in flagged.items()]
    source = {"path": source_name or trace.path, "format": trace.format, "model": trace.model}
    if trace.session:
        source["session"] = trace.session
    inference = None
    if fixed:
        parts = [p for p in trace.unrecorded if any(p not in trace.supplied or c.thread for c in trace.calls)]
        inference = INFERENCE.format(what=" and ".join(_UNRECORDED_NAMES[p] for p in parts))
    elif any(_unrecorded(trace, c) for c in trace.calls):
        warnings.append({"code": "not-inferred", "message": NOT_INFERRED, "calls": []})
    profile = Profile(
        model=model.describe(), source=source, calls=rows, warnings=warnings, inferred=inference,
        compactions=trace.compactions,
    )
    check = profile.reconciliation()
    if check and check["mean_relative_difference"] > (RECONCILE_THRESHOLD if model.exact else PROXY_THRESHOLD):
        differ = (
            f"differ from the reported ones by {check['mean_relative_difference']:.1%} on average (largest "
            f"{check['max_relative_difference']:+.1%}, call {check['max_call']})"
        )
        if model.exact:
            message = (f"computed prompts {differ}: is the model (--model) the one the log used, and the chat "
                       "template the one it was served with?")
        else:
            message = (f"the estimate's own counts {differ}: the scaled buckets rest on proportions that may not "
                       "hold (a part of the prompt the log does not show, or a proxy far from the model)")
        profile.warnings.append({"code": "reported-differs", "message": message, "calls": []})
    return profile
