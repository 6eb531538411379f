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


@dataclass
class CallRow:
    index: int
    buckets: dict[str, int]
    total: int
    cumulative: int
    messages: int
    where: str
    reported: Usage | None = None

    def to_dict(self) -> dict:
        reported = self.reported.to_dict() if self.reported else None
        diff = None
        if self.reported and self.reported.prompt is not None:
            diff = self.total - self.reported.prompt
        return {
            "index": self.index,
            "buckets": dict(self.buckets),
            "total": self.total,
            "cumulative": self.cumulative,
            "messages": self.messages,
            "source": self.where,
            "reported": reported,
            "difference": diff,
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
        )


@dataclass
class Profile:
    model: dict
    source: dict
    calls: list[CallRow] = field(default_factory=list)
    warnings: list[dict] = field(default_factory=list)
    catalogue: dict | None = None  # the tools analysis' summary section, when it was run

    # -- totals ---------------------------------------------------------------------------
    def summary(self) -> dict:
        billed = sum(c.total for c in self.calls)
        by_bucket = {name: sum(c.buckets[name] for c in self.calls) for name in BUCKETS}
        shares = {name: (by_bucket[name] / billed if billed else 0.0) for name in BUCKETS}
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
        reported = [c.reported.prompt for c in self.calls if c.reported and c.reported.prompt is not None]
        if reported:
            summary["billed_input_reported"] = sum(reported)
            summary["calls_reported"] = len(reported)
        return summary

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
        )


def profile_trace(
    trace: Trace, model: ChatModel, on_call: Callable[[int], None] | None = None, source_name: str | None = None
) -> Profile:
    """Attribute every call of a trace and gather the rows and warnings into a profile."""
    attributor = Attributor(model)
    rows: list[CallRow] = []
    flagged: dict[str, list[int]] = {}
    cumulative = 0
    for call in trace.calls:
        buckets = attributor.attribute(call)
        cumulative += buckets.total
        rows.append(
            CallRow(
                index=call.index,
                buckets=buckets.as_dict(),
                total=buckets.total,
                cumulative=cumulative,
                messages=len(call.messages),
                where=call.where,
                reported=call.reported,
            )
        )
        for code in buckets.warnings:
            flagged.setdefault(code, []).append(call.index)
        if on_call is not None:
            on_call(call.index)
    warnings = [{"code": n.code, "message": n.message, "calls": [], "places": list(n.places)} for n in trace.notes]
    warnings += [{"code": code, "message": WARNINGS[code], "calls": calls} for code, calls in flagged.items()]
    source = {"path": source_name or trace.path, "format": trace.format, "model": trace.model}
    return Profile(model=model.describe(), source=source, calls=rows, warnings=warnings)
