"""Telemetry's rows (``tokprof collect``): each call a span or an agent's event stands for, as a row of the
calls table (:class:`tokprof.analyses.calls.CallRecord`, docs/tables.md), or a day's aggregate; what
telemetry cannot know stays null, costs are genai-prices' (else the agent's own), and cache misses follow
the rule docs/collect.md states."""

from __future__ import annotations

import hashlib
import json
import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from tokprof.analyses.calls import FIELDS, call_records
from tokprof.pricing.cost import genai_price, priced_tokens
from tokprof.formats.otel import MODEL_KEYS
from tokprof.formats.otlp import Item
from tokprof.profiling import Profile
from tokprof.trace import Call, Trace, as_list

#: The profile of a one-call trace with the model named (None: as ``profile`` chooses).
ProfileTrace = Callable[[Trace, "str | None"], Profile]

KEEPS = ("aggregates", "calls", "text")
TELEMETRY = "telemetry"
IDLE = timedelta(minutes=5)
SESSIONS_KEPT = 100_000  # sessions whose last call the miss rule remembers (oldest forgotten first)

USER_KEYS = ("user.email", "user.account_uuid", "user.id", "enduser.id", "enduser.pseudo.id", "user.name")
PROJECT_KEYS = ("tokprof.project", "project", "vcs.repository.name", "github.copilot.git.repository")
BRANCH_KEYS = ("vcs.ref.head.name", "github.copilot.git.branch")
COMMIT_KEYS = ("vcs.ref.head.revision", "github.copilot.git.commit_sha")
SESSION_KEYS = ("gen_ai.conversation.id", "session.id", "conversation.id")
INDEX_KEYS = ("event.sequence", "github.copilot.turn_id")
COLUMNS = tuple(name for name in FIELDS)  # with ``text`` last; left out unless --keep text
#: An aggregate row: a day, agent, user, project and model's calls added up.
AGGREGATE_KEYS = ("day", "agent", "user", "project", "model")
AGGREGATE_SUMS = (
    "reported_prompt",
    "reported_uncached_input",
    "reported_cache_read",
    "reported_cache_write",
    "reported_output",
    "cost_input",
    "cost_cache_write",
    "cost_cache_read",
    "cost_output",
    "cost_total",
)


@dataclass(frozen=True)
class RowOptions:
    collector: str = "collector"
    keep: str = "calls"
    hash_users: bool = False
    salt: str = ""
    model: str | None = None  # the model that counts captured content (None: the log's, as profile chooses)


def _first(attrs: dict[str, Any], resource: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    for source in (attrs, resource):
        for key in keys:
            value = source.get(key)
            if value is not None and value != "" and type(value) in (str, int):  # not a bool, a list
                return str(value)
    return None


def agent_of(resource: dict[str, Any], attrs: dict[str, Any]) -> str:
    name = resource.get("service.name")
    if isinstance(name, str) and name and not name.startswith("unknown_service"):
        return name
    provider = attrs.get("gen_ai.provider.name") or attrs.get("gen_ai.system")
    return f"otel/{provider}" if isinstance(provider, str) and provider else "otel"


_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def partition_value(value: Any) -> str:
    """A partition folder's value: letters, digits, ``.``, ``_`` and ``-`` only, at most 64 characters."""
    text = _SAFE.sub("_", str(value or "")).strip("._")[:64]
    return text or "unknown"


class Rows:
    """Turns each call into its row; remembers each session's last call (bounded) for the miss rule."""

    def __init__(self, options: RowOptions, profile: ProfileTrace | None = None) -> None:
        self.options = options
        self.profile = profile
        self.last: OrderedDict[tuple[str, str], tuple[str | None, int | None, datetime | None, int]] = OrderedDict()

    def user(self, value: str | None) -> str | None:
        if value is None or not self.options.hash_users:
            return value
        return hashlib.sha256((self.options.salt + value).encode("utf-8")).hexdigest()[:32]

    def row(self, item: Item, call: Call) -> dict[str, Any]:
        a, resource = item.span.attrs, item.resource
        session = _first(a, resource, SESSION_KEYS) or item.span.trace_id or "unknown"
        agent = agent_of(resource, a)
        index = self._index(agent, session, a)
        miss = self._miss(agent, session, call)
        if call.messages and self.options.keep != "aggregates" and self.profile is not None:
            row = self._profiled(item, call, session)
        else:
            row = self._telemetry(call)
        usage = call.reported
        row.update(
            session=session,
            path=f"collect:{self.options.collector}",
            agent=agent,
            thread=None,
            thread_kind="main",
            call_index=index,
            kind="call",
            time=call.time,
            request_id=call.request_id,
            model=call.model or next((a[k] for k in MODEL_KEYS if isinstance(a.get(k), str)), None),
            reported_prompt=usage.prompt if usage else None,
            reported_uncached_input=usage.uncached if usage else None,
            reported_cache_write=usage.cache_write if usage else None,
            reported_cache_write_5m=usage.cache_write_5m if usage else None,
            reported_cache_write_1h=usage.cache_write_1h if usage else None,
            reported_cache_read=usage.cache_read if usage else None,
            reported_output=usage.output if usage else None,
            cache_miss=miss[0],
            cache_miss_detail=miss[1],
            project=_first(a, resource, PROJECT_KEYS),
            git_branch=_first(a, resource, BRANCH_KEYS),
            git_commit=_first(a, resource, COMMIT_KEYS),
            machine=_first(resource, a, ("host.name",)),
            user=self.user(_first(a, resource, USER_KEYS)),
        )
        if row.get("cost_total") is None:
            row.update(self._cost(call, a))
        if self.options.keep != "text":
            row["text"] = None
        elif row.get("text") is None and call.messages:
            row["text"] = json.dumps({"messages": as_list(call.messages), "tools": call.tools}, ensure_ascii=False)
        return row

    # -- buckets ---------------------------------------------------------------------------------
    def _telemetry(self, call: Call) -> dict[str, Any]:
        usage = call.reported
        return {
            "profiled_with": TELEMETRY,
            "exact": True,
            "estimate": None,
            "system": None,
            "tool_definitions": None,
            "tool_results": None,
            "conversation": None,
            "unrecorded": None,
            "total": usage.prompt if usage and usage.prompt is not None else None,
            "context_window": None,
            "window_fill": None,
            "text": None,
        }

    def _profiled(self, item: Item, call: Call, session: str) -> dict[str, Any]:
        assert self.profile is not None
        call.index = 0
        trace = Trace(path=item.span.where, format="otel/otlp", calls=[call], model=call.model, session=session)
        result = self.profile(trace, self.options.model)
        record = call_records(result, trace, session, "", with_text=self.options.keep == "text")[0]
        return {name: getattr(record, name) for name in COLUMNS}

    # -- cost ------------------------------------------------------------------------------------
    def _cost(self, call: Call, attrs: dict[str, Any]) -> dict[str, Any]:
        none: dict[str, Any] = {f"cost_{p}": None for p in ("input", "cache_write", "cache_read", "output", "other")}
        usage = call.reported
        if usage is None or not usage.prompt:
            return {**none, "cost_total": None, "priced": False, "provider": None, "unpriced_reason": "no usage"}
        if call.model:
            tokens, prompt, _ = priced_tokens(usage, 0)
            try:
                provider, _model, parts = genai_price(
                    call.model, tokens, prompt, call.time.date() if call.time else None
                )
            except (LookupError, ValueError, KeyError):
                pass
            else:
                found: dict[str, float | None] = {
                    f"cost_{name}": float(parts[name]) for name in ("input", "cache_write", "cache_read", "other")
                }
                found["cost_output"] = float(parts["output"]) if usage.output is not None else None
                return {
                    **found,
                    "cost_total": float(parts["total"]),
                    "priced": True,
                    "provider": provider.id,
                    "unpriced_reason": None,
                }
        own = attrs.get("gen_ai.usage.cost")
        if isinstance(own, (int, float)) and not isinstance(own, bool) and 0 <= own < 1e9:
            return {**none, "cost_total": float(own), "priced": True, "provider": None, "unpriced_reason": None}
        reason = f"genai-prices has no price for {call.model!r}" if call.model else "no model named"
        return {**none, "cost_total": None, "priced": False, "provider": None, "unpriced_reason": reason}

    # -- what the collector remembers --------------------------------------------------------------
    def _index(self, agent: str, session: str, attrs: dict[str, Any]) -> int:
        for key in INDEX_KEYS:
            value = attrs.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                return value
            if isinstance(value, str) and value.isdigit() and len(value) < 12:
                return int(value)
        last = self.last.get((agent, session))
        return 0 if last is None else last[3] + 1

    def _miss(self, agent: str, session: str, call: Call) -> tuple[str | None, str | None]:
        key = (agent, session)
        usage = call.reported
        last = self.last.pop(key, None)
        count = 0 if last is None else last[3] + 1
        self.last[key] = (call.model, usage.prompt if usage else None, call.time, count)
        while len(self.last) > SESSIONS_KEPT:
            self.last.popitem(last=False)
        if usage is None or usage.prompt is None:
            return None, None
        if last is None:
            return "first-call", "the session's first call this collector saw"
        model, prompt, when, _ = last
        read = usage.cache_read or 0
        if not prompt or read >= 0.9 * prompt:
            return None, None
        detail = f"read {read:,} of the previous prompt's {prompt:,} tokens from the cache"
        if model != call.model:
            return "model-switch", detail + f" (model {model} before)"
        if when is not None and call.time is not None and call.time - when > IDLE:
            return "idle-gap", detail + f" ({int((call.time - when).total_seconds())} s after the previous call)"
        return "prefix-changed", detail


def aggregate(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``--keep aggregates``: the rows added up by day, agent, user, project and model (null sums stay
    null: a sum over rows none of which records a field is not 0)."""
    groups: dict[tuple, dict[str, Any]] = {}
    for row in rows:
        day = row["time"].date().isoformat() if row.get("time") else None
        key = (day, row["agent"], row["user"], row["project"], row["model"])
        found = groups.get(key)
        if found is None:
            found = groups[key] = {
                **dict(zip(AGGREGATE_KEYS, key)),
                "calls": 0,
                "priced_calls": 0,
                **{name: None for name in AGGREGATE_SUMS},
            }
        found["calls"] += 1
        found["priced_calls"] += 1 if row.get("priced") else 0
        for name in AGGREGATE_SUMS:
            if row.get(name) is not None:
                found[name] = (found[name] or 0) + row[name]
    return list(groups.values())
