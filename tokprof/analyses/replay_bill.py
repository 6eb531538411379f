"""How the log's provider would bill a call a what-if policy changed.

A changed call has no reported usage (that was the log's prompt's), so its usage is predicted under
the cache rules :mod:`tokprof.analyses.prefix_cache` uses for the profile:

* the log shows no caching for the call's model (no call of it read or wrote the cache): the whole
  prompt is uncached input;
* **Anthropic**: the prefix it shares with the previous replayed call of its thread is read from the
  cache when that call's cache entry is alive (a call that continues the previous one reads all of
  it; one that parts from it reads its fixed part, tools and system prompt, when the prefix holds
  it), not past the entry's lifetime (5 minutes, or 1 hour for a 1-hour write), and not under the
  model's minimum cacheable length; the rest of the prompt is a cache write at the tier the log's
  call wrote (``usage.cache_creation``: 5-minute or 1-hour; a call that wrote nothing takes the
  tier of the log's last write before it). A prompt under the minimum is not cached at all.
* **OpenAI**: the shared prefix is read in OpenAI's steps from 1,024 tokens, not after 10 minutes
  idle; the rest is uncached input (OpenAI has no cache writes).
* other providers: the shared prefix is read, the rest uncached.

The output is the log's for the call it replays; a summarising call a policy adds outputs its summary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from tokprof.analyses.prefix_cache import (
    ANTHROPIC,
    LONG_TTL,
    OPENAI,
    OPENAI_IDLE,
    SHORT_TTL,
    _openai_read,
    anthropic_minimum,
    first_difference,
    rules_for,
)
from tokprof.trace import Call, Usage


@dataclass(frozen=True)
class Replayed:
    """What the bill of one replayed call needs: its prompt, the tokens it shares with the previous
    replayed call of its thread, its fixed part (tools, system prompt, the inferred unrecorded part),
    and its output tokens (None: not recorded)."""

    total: int
    shared: int
    fixed: int
    output: int | None
    changed: bool


def _long_share(usage: Usage | None) -> float | None:
    """The share of a call's cache writes at the 1-hour tier (None: it wrote nothing)."""
    if usage is None or not usage.cache_write:
        return None
    return min(usage.cache_write_1h or 0, usage.cache_write) / usage.cache_write


def _caching_models(log_calls: Sequence[Call]) -> set[str | None]:
    return {c.model for c in log_calls if c.reported and ((c.reported.cache_read or 0) + (c.reported.cache_write or 0))}


def _gap(a: datetime | None, b: datetime | None) -> float | None:
    if a is None or b is None:
        return None
    try:
        return (b - a).total_seconds()
    except TypeError:
        return None


def replay_usage(calls: Sequence[Call], replayed: Sequence[Replayed], log_calls: Sequence[Call],
                 model: str | None = None) -> dict[int, Usage]:
    """Per position of a changed call, the usage the provider would report for it (see the module)."""
    logged = {c.index: c for c in log_calls}
    caching = _caching_models(log_calls)
    tier: dict[str, float] = {}  # thread -> the 1-hour share of the log's last write
    previous: dict[str, int] = {}  # thread -> position of its last replayed call
    written: dict[int, float] = {}  # position -> the 1-hour share of what it wrote
    out: dict[int, Usage] = {}
    for position, (call, bill) in enumerate(zip(calls, replayed)):
        log = logged.get(call.index)
        share = _long_share(log.reported) if log is not None else None
        share = tier.get(call.thread, 0.0) if share is None else share
        tier[call.thread] = share
        written[position] = share
        before = previous.get(call.thread)
        previous[call.thread] = position
        if not bill.changed:
            continue
        name = call.model or model
        rules = rules_for(name)
        if name not in caching:
            out[position] = Usage(prompt=bill.total, cache_read=0, cache_write=0, output=bill.output)
            continue
        gap = None if before is None else _gap(calls[before].time, call.time)
        if rules == ANTHROPIC:
            minimum = anthropic_minimum(name)
            read = 0
            if before is not None:
                prior, lifetime = calls[before], LONG_TTL if written[before] >= 0.5 else SHORT_TTL
                extends = (first_difference(prior.messages, call.messages) >= len(prior.messages)
                           and prior.tools == call.tools)
                cached = replayed[before].total if replayed[before].total >= minimum else 0
                read = min(cached, bill.shared) if extends else (bill.fixed if bill.fixed <= bill.shared else 0)
                if (gap is not None and gap > lifetime) or read < minimum:
                    read = 0
            write = bill.total - read if bill.total >= minimum else 0
            long = round(write * share)
            out[position] = Usage(prompt=bill.total, cache_read=read, cache_write=write, output=bill.output,
                                  cache_write_5m=write - long, cache_write_1h=long)
        elif rules == OPENAI:
            read = 0 if before is None or (gap is not None and gap > OPENAI_IDLE) else _openai_read(bill.shared)
            out[position] = Usage(prompt=bill.total, cache_read=read, cache_write=0, output=bill.output)
        else:
            out[position] = Usage(prompt=bill.total, cache_read=bill.shared if before is not None else 0,
                                  cache_write=0, output=bill.output)
    return out
