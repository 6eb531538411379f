"""The usage a provider would bill for the calls a what-if policy changes.

A call a policy leaves as it is keeps the log's reported usage. A call it changes (or adds) gets the
usage its provider would have reported for its prompt, under the cache rules :mod:`prefix_cache`
uses to predict reads:

* the part it shares with the previous call of its thread is **read** from the cache, at most what
  that call put in the cache (its reads and writes), and none when it is below the provider's
  minimum cacheable length. When the log reports the usage of the call it replays, the replayed call
  reads what the log's call read less the part of the log's shared prefix it no longer shares, and
  never more than the prefix it shares with the previous replayed call when the policy makes the two
  prompts part earlier than the log's do (a rewritten or dropped message they shared; else the log's
  read stands for the prefix, which an estimate's count can under-count) (so a
  prefix the policy rewrites is written again, and a policy that changes nothing reads what the log
  read; OpenAI's read, whole steps of 128 tokens past 1,024, is rounded anew from the prefix kept when the
  log's read is its whole shared prefix so rounded): the log shows what the provider kept (an entry past its lifetime, an ``idle-gap``, is read as
  nothing, so the prompt is written again; an entry evicted early likewise; a part kept longer, like
  a system prompt other sessions keep warm, is read). A call the log does not have (a summarising
  call a policy adds) or whose call reports no usage has the rules' read instead: none when the time
  since the previous call is past the cache's lifetime (5 minutes, or 1 hour when that call wrote
  the 1-hour cache; OpenAI: 10 minutes) or the previous call was another model (a cache is per
  model);
* Anthropic: the rest is **written** to the cache when the log's calls write it (Claude Code writes
  on every call), at the tier the log's call wrote (5 minutes or 1 hour, as ``usage.cache_creation``
  says; a call of the log that wrote nothing: the log's share of 1-hour writes), unless the prompt is
  below the minimum; OpenAI writes nothing (the rest is uncached input);
* a log that shows no caching at all (no call read or wrote the cache) is billed uncached;
* the output is the log's output for the call (a summarising call a policy adds: its summary).

A changed call whose prompt equals the log's (the same messages and tools) keeps the log's usage, so
a policy that changes nothing costs exactly what the profile does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tokprof.analyses.prefix_cache import (
    ANTHROPIC,
    LONG_TTL,
    OPENAI,
    OPENAI_IDLE,
    SHORT_TTL,
    anthropic_minimum,
    gap_seconds as _gap,
    openai_cached_read as _openai_read,
    rules_for,
)
from tokprof.trace import Call, Trace, Usage


@dataclass(frozen=True)
class Replayed:
    """What the bill needs of one call of a policy's trace."""

    total: int  # its prompt, in the log's units
    shared: int  # the tokens it shares with the previous call of its thread (0 for a thread's first)
    changed: bool
    output: int | None = None  # a call the policy adds: its output (None: the log's call's)
    #: Whether its prompt parts from the previous call of its thread no earlier than the log's call's does
    #: from the log's previous call (the policy rewrote nothing the log's two prompts share): the log's read
    #: then shows what the provider read of that prefix, even past the counted ``shared``.
    parts_as_logged: bool = False
    #: Whether its prompt is the log's call's (the same messages and tools), taken as the call went by:
    #: the policies' calls are let go after their pass, their light copies hold no prompt.
    same_prompt: bool = False


@dataclass(frozen=True)
class LogCaching:
    """How the log's calls use the cache: whether any reads or writes it, and its share of 1-hour writes."""

    reads: bool
    writes: bool
    long_share: float

    @classmethod
    def of(cls, calls: Sequence[Call]) -> "LogCaching":
        usages = [c.reported for c in calls if c.reported is not None and c.reported.prompt]
        written = sum(u.cache_write or 0 for u in usages)
        long = sum(min(u.cache_write_1h or 0, u.cache_write or 0) for u in usages)
        return cls(
            reads=any(u.cache_read for u in usages), writes=written > 0, long_share=long / written if written else 0.0
        )


def _long_share(original: Call | None, log: LogCaching) -> float:
    usage = original.reported if original is not None else None
    if usage is not None and usage.cache_write:
        return min(usage.cache_write_1h or 0, usage.cache_write) / usage.cache_write
    return log.long_share


def _cached(usage: Usage | None, total: int, rules: str | None) -> int:
    """What a call leaves in the cache for the next one: its reads and writes (Anthropic), else its prompt."""
    if rules != ANTHROPIC:
        return total
    if usage is None or not usage.prompt:
        return 0
    return (usage.cache_read or 0) + (usage.cache_write or 0)


def _same_prompt(counted: Replayed, original: Call | None) -> bool:
    return (
        original is not None
        and original.reported is not None
        and bool(original.reported.prompt)
        and counted.same_prompt
    )


def billed_usage(
    trace: Trace, replayed: Sequence[Replayed], log_calls: Sequence[Call], log_shared: Mapping[int, int] | None = None
) -> dict[int, Usage]:
    """By position in the policy's ``trace``, the usage to bill each changed call on (module doc).
    ``log_shared``: by log call index, the tokens it shares with the previous call of its thread, counted
    as ``Replayed.shared`` is (the replay of ``full``)."""
    log = LogCaching.of(log_calls)
    logged = {c.index: c for c in log_calls}
    times = [getattr(c, "time", None) for c in trace.calls]
    last: dict[str | None, tuple[int, int, str | None, bool]] = {}  # thread -> (position, cached, model, 1-hour)
    out: dict[int, Usage] = {}
    for position, (call, counted) in enumerate(zip(trace.calls, replayed)):
        name = call.model or trace.model
        rules = rules_for(name)
        added = type(call).__name__ == "AddedCall"
        original = None if added else logged.get(call.index)
        before = last.get(call.thread)
        if not counted.changed or _same_prompt(counted, original):
            usage = call.reported if not counted.changed else original.reported  # type: ignore[union-attr]
            long = bool(usage and usage.cache_write_1h)
            last[call.thread] = (position, _cached(usage, counted.total, rules), name, long)
            if counted.changed and usage is not None:
                out[position] = usage
            continue
        output = counted.output if added else (original.reported.output if original and original.reported else None)
        logged_usage = original.reported if original is not None and original.reported is not None else None
        if not (log.reads or log.writes):
            read = 0
        elif logged_usage is not None and logged_usage.prompt:
            read = _read_as_logged(
                counted, before, logged_usage, None if log_shared is None else log_shared.get(call.index), name, rules
            )
        else:
            read = _read(counted, before, position, times, name, rules)
        write, long_written = 0, 0
        if rules == ANTHROPIC and log.writes and counted.total >= anthropic_minimum(name):
            write = counted.total - read
            long_written = round(write * _long_share(original, log))
        usage = Usage(
            prompt=counted.total,
            cache_read=read,
            cache_write=write,
            output=output,
            cache_write_5m=write - long_written,
            cache_write_1h=long_written,
        )
        out[position] = usage
        last[call.thread] = (position, _cached(usage, counted.total, rules), name, long_written > 0)
    return out


def _read_as_logged(
    counted: Replayed,
    before: tuple[int, int, str | None, bool] | None,
    usage: Usage,
    logged_shared: int | None,
    name: str | None,
    rules: str | None,
) -> int:
    """The tokens a changed call reads when the log's call it replays reports its usage: what the log's call
    read (what the provider kept, lifetimes and evictions included), less the part of the prefix the log's
    call shared with its previous call that the replayed one does not share with its own (``logged_shared``,
    counted as ``counted.shared`` is; None: the replayed call's shared prefix itself), at most what the
    previous call cached, and at most the prefix it shares with the previous replayed call
    (``counted.shared``) unless it parts from that call where the log's call parts from its own
    (``counted.parts_as_logged``: then the log's read, a measurement, stands for the prefix the count may
    under-count)."""
    if before is None:
        return 0
    logged_read = usage.cache_read or 0
    if logged_shared is None:
        read = min(counted.shared, logged_read)
    else:
        kept = logged_read
        if rules == OPENAI and logged_read and logged_read == _openai_read(logged_shared):
            # OpenAI reads whole steps of the prefix it kept: a read that is the log's whole shared prefix so
            # rounded kept all of it, and the replay's prefix is rounded anew (not the rounded read cut again)
            kept = logged_shared
        read = kept - max(0, logged_shared - counted.shared)
    if not counted.parts_as_logged:  # the policy parts the prompts earlier: never more than the prefix it shares
        read = min(read, counted.shared)
    read = max(0, min(read, before[1], counted.total))
    if rules == ANTHROPIC:
        return read if read >= anthropic_minimum(name) else 0
    if rules == OPENAI:
        return _openai_read(read)
    return read


def _read(
    counted: Replayed,
    before: tuple[int, int, str | None, bool] | None,
    position: int,
    times: Sequence,
    name: str | None,
    rules: str | None,
) -> int:
    """The tokens a changed call reads from the cache (module doc)."""
    if before is None:
        return 0
    at, cached, model, long = before
    if model != name:
        return 0
    gap = _gap(times, at, position)
    if rules == ANTHROPIC:
        if gap is not None and gap > (LONG_TTL if long else SHORT_TTL):
            return 0
        read = min(counted.shared, cached, counted.total)
        return read if read >= anthropic_minimum(name) else 0
    if rules == OPENAI:
        if gap is not None and gap > OPENAI_IDLE:
            return 0
        return _openai_read(min(counted.shared, cached, counted.total))
    return min(counted.shared, cached, counted.total)
