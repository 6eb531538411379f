"""One flat record per call of a profiled session: what a warehouse, a rollup or a dashboard takes.

A record holds numbers, names and times, never the prompt or tool text (unless asked for, as
``text``). What a log does not record is None (null in Parquet and JSON), never 0. The fields are
documented one by one in docs/tables.md; :data:`SCHEMA_VERSION` changes when they do.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import datetime

from tokprof.attribution.buckets import BUCKETS
from tokprof.pricing.billing import CallCost
from tokprof.attribution.estimates import UNRECORDED
from tokprof.profiling import CallRow, Profile, missing_buckets, recorded
from tokprof.trace import Call, Trace, as_list

#: The per-call table's version (calls.parquet's metadata, the state file, the CSV's header comment).
SCHEMA_VERSION = 2  # 2: a bucket the log does not record is null, not 0
#: Every bucket a call's prompt can have, in the table's order.
ALL_BUCKETS = (*BUCKETS, UNRECORDED)


@dataclass(frozen=True)
class Stamp:
    """What the user says of a whole run (``--machine``, ``--user``): None when not given."""

    machine: str | None = None
    user: str | None = None


@dataclass(frozen=True, slots=True)
class CallRecord:
    session: str
    path: str
    agent: str  # the log's format: claude-code, codex, ...
    thread: str | None  # None for the main conversation, else the subagent's id
    thread_kind: str  # "main" or "subagent"
    call_index: int
    kind: str  # "call" or "compaction"
    time: datetime | None
    request_id: str | None
    provider: str | None  # the provider the call was priced with (None when unpriced)
    model: str | None  # the model the log names for the call
    profiled_with: str
    exact: bool
    estimate: str | None  # how the counts are estimated, when they are
    system: int | None  # None: the log does not record it (a Claude Code log's system prompt)
    tool_definitions: int | None  # None: the log does not record the tools
    tool_results: int
    conversation: int
    unrecorded: int
    total: int
    reported_prompt: int | None
    reported_uncached_input: int | None
    reported_cache_write: int | None
    reported_cache_write_5m: int | None
    reported_cache_write_1h: int | None
    reported_cache_read: int | None
    reported_output: int | None
    priced: bool
    unpriced_reason: str | None
    cost_input: float | None
    cost_cache_write: float | None
    cost_cache_read: float | None
    cost_output: float | None
    cost_other: float | None
    cost_total: float | None
    context_window: int | None
    window_fill: float | None  # the prompt's share of the context window
    cache_miss: str | None  # a code of tokprof.pricing.billing.MISS_CODES
    cache_miss_detail: str | None
    project: str | None  # the working directory the log records
    git_branch: str | None
    git_commit: str | None
    machine: str | None
    user: str | None
    text: str | None = None  # the prompt's messages and the response as JSON, with --with-text only

    def to_dict(self) -> dict:
        out = {name: getattr(self, name) for name in FIELDS}  # the field list made once (#43.5)
        out["time"] = None if self.time is None else self.time.isoformat()
        return out


FIELDS = tuple(f.name for f in fields(CallRecord))


def call_records(
    result: Profile,
    trace: Trace,
    session: str,
    path: str,
    stamp: Stamp = Stamp(),
    with_text: bool = False,
    texts: Mapping[int, str] | None = None,
) -> list[CallRecord]:
    """The records of a profile's calls, with what the trace knows of each (time, model, place).
    ``with_text``: each with its prompt and response (:func:`call_text`), from ``texts`` by call index
    when given (taken as the calls went by: ``trace`` then holds their light copies), else from the calls."""
    by_index = {call.index: call for call in trace.calls}
    window = result.model.context_window
    missing = missing_buckets(result.not_recorded)
    return [
        _record(row, by_index[row.index], result, session, path, stamp, window, with_text, missing, texts)
        for row in result.calls
        if row.index in by_index
    ]


def _record(
    row: CallRow,
    call: Call,
    result: Profile,
    session: str,
    path: str,
    stamp: Stamp,
    window: int | None,
    with_text: bool,
    missing: frozenset[str] = frozenset(),
    texts: Mapping[int, str] | None = None,
) -> CallRecord:
    usage = row.reported
    cost = row.cost
    priced = bool(cost and cost.priced)
    cache = row.cache
    return CallRecord(
        session=session,
        path=path,
        agent=result.source.format,
        thread=row.thread,
        thread_kind="main" if row.thread is None else "subagent",
        call_index=row.index,
        kind=row.kind,
        time=call.time,
        request_id=call.request_id,
        provider=cost.provider if priced and cost else None,
        model=call.model,
        profiled_with=result.model.name,
        exact=row.exact,
        estimate=None if result.model.exact else result.model.method,
        system=recorded(row.buckets.get("system", 0), "system", missing),
        tool_definitions=recorded(row.buckets.get("tool_definitions", 0), "tool_definitions", missing),
        tool_results=row.buckets.get("tool_results", 0),
        conversation=row.buckets.get("conversation", 0),
        unrecorded=row.buckets.get(UNRECORDED, 0),
        total=row.total,
        reported_prompt=usage.prompt if usage else None,
        reported_uncached_input=usage.uncached if usage else None,
        reported_cache_write=usage.cache_write if usage else None,
        reported_cache_write_5m=usage.cache_write_5m if usage else None,
        reported_cache_write_1h=usage.cache_write_1h if usage else None,
        reported_cache_read=usage.cache_read if usage else None,
        reported_output=usage.output if usage else None,
        priced=priced,
        unpriced_reason=None if priced or cost is None else cost.reason,
        cost_input=_part(cost, "input", priced),
        cost_cache_write=_part(cost, "cache_write", priced),
        cost_cache_read=_part(cost, "cache_read", priced),
        cost_output=_part(cost, "output", priced),
        cost_other=_part(cost, "other", priced),
        cost_total=_part(cost, "total", priced),
        context_window=window,
        window_fill=round(row.total / window, 6) if window else None,
        cache_miss=cache.miss if cache else None,
        cache_miss_detail=cache.detail if cache else None,
        project=call.cwd,
        git_branch=call.git_branch,
        git_commit=call.git_commit,
        machine=stamp.machine,
        user=stamp.user,
        text=None if not with_text else texts[call.index] if texts is not None else call_text(call),
    )


def _part(cost: CallCost | None, name: str, priced: bool) -> float | None:
    if not priced or cost is None:
        return None
    value = getattr(cost, name)
    if value is None:
        return 0.0 if name == "other" else None  # a price with no fee per request
    return float(value)


def call_text(call: Call) -> str:
    """A call's prompt and response, as a record's ``text``."""
    return json.dumps(
        {"messages": as_list(call.messages), "tools": call.tools, "response": call.response},
        ensure_ascii=False,
        default=str,
    )
