"""A session followed while the agent writes it: the figures of each new model call.

:class:`LiveSession` reads a Claude Code transcript incrementally (:class:`tokprof.base.follow.Follower`
for the bytes, the Claude Code reader following the session for the calls,
:class:`tokprof.formats.claude_code.SessionReader`): each update reads
what was appended and counts only the new calls, with a :class:`tokprof.Model` that keeps what
it learnt from earlier prompts, so an update costs what the agent added. Other formats are read
again whole when they change (their readers are not incremental); only their new calls are counted.

A call's figures (:class:`LiveCall`): its prompt (reported usage, else counted), the fill of the
context window the agent runs the model with (:func:`tokprof.models.agent_window.agent_window`: Claude Code's
200,000 unless its 1M option shows, or the window the agent says, :attr:`LiveSession.agent_window`;
other agents, genai-prices' window for the log's model name, else the counting model's) and the
thresholds it is past, for Claude Code the tokens left before it compacts the conversation by itself,
its buckets (the newest prompt counted alone; with reported usage, scaled down to it when the count
is larger, the rest of a larger report in ``unrecorded``: Claude Code does not record its system
prompt and tools; an estimate, which ``tokprof profile``'s split of the same call differs from: it
takes each call as the one before plus what it adds), the tokens it added to the previous call of
the session's main thread, the largest tool result it added, and the session's cost and cache read
share so far.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import asdict, dataclass
from typing import Any

from tokprof.base.errors import TokprofError
from tokprof.base.follow import Follower
from tokprof.models.agent_window import AgentWindow, agent_window
from tokprof.formats.prompts import Prompt
from tokprof.trace import Call, as_list

THRESHOLDS = (0.7, 0.8)
#: A call broke the cache when it read less than this share of the previous call's prompt from it.
CACHE_BROKE = 0.5
#: ... and that previous prompt was at least this long (the provider's cache minimum is about 1,024).
CACHE_MINIMUM = 1024
#: The Claude Code reader's prompt states a session keeps between updates (the newest: a rewind to
#: an older line rebuilds its state once); the status line saves as many.
KEPT_STATES = 16


@dataclass(frozen=True)
class LiveCall:
    """One new call's figures, as ``tokprof watch --json`` prints them."""

    path: str
    session: str | None
    call: int  # 0-based, in the order calls were found
    where: str
    model: str | None
    prompt: int
    basis: str  # "reported" (the log's usage) or "computed"
    window: int | None
    fill: float | None
    thresholds: tuple[float, ...]
    past: tuple[float, ...]  # thresholds the prompt is at or past
    crossed: tuple[float, ...]  # thresholds this call crossed (the previous one was below them)
    buckets: dict[str, int] | None
    estimate: bool
    added: int | None  # tokens more than the previous main-thread prompt (negative after a compaction)
    largest_result: dict | None  # {"tool", "tokens"}: the largest tool result this call added
    cost: float | None  # the session's cost so far, USD (None: not priced)
    cache_read_share: float | None  # reported cache reads / reported prompts so far
    cache_broke: bool
    window_source: str | None = None  # what gives the window (see tokprof.models.agent_window.AgentWindow)
    compacts_at: int | None = None  # the prompt at which the agent compacts by itself (Claude Code)
    to_compact: int | None = None  # compacts_at less the prompt (0 or less: due)

    def to_dict(self) -> dict:
        out = {"schema_version": 1, "kind": "watch", **asdict(self)}  # docs/schema/watch.schema.json
        out["thresholds"], out["past"], out["crossed"] = list(self.thresholds), list(self.past), list(self.crossed)
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"), ensure_ascii=True)


@dataclass
class _Totals:
    prompt: int = 0  # reported prompts
    cache_read: int = 0
    cost: float | None = 0.0
    calls: int = 0
    previous: int | None = None  # the last main-thread prompt
    last: LiveCall | None = None


class LiveSession:
    """One session file followed as it grows. ``update()`` returns the calls added since the last
    update (or since the start: the first update reads the whole file). ``count=False`` leaves
    buckets out (no tokenizer is loaded), ``price=False`` the cost."""

    def __init__(
        self,
        path: str,
        *,
        thresholds: tuple[float, ...] = THRESHOLDS,
        count: bool = True,
        model: str | None = None,
        price: bool = True,
    ):
        self.path = path
        self.thresholds = tuple(sorted(thresholds))
        self.count = count
        self.price = price  # False: no cost (genai-prices is not loaded)
        self.model_name = model
        self.follower = Follower(path)
        self.problems: list[str] = []  # bad lines, one message each (the last few kept)
        self._models: dict[str, Any] = {}
        #: kept with the state: genai-prices loads once
        self._windows: dict[tuple[str | None, str | None, str | None, int | None, bool], AgentWindow] = {}
        #: what the agent says of the session (Claude Code's statusLine input): its window, its model id
        self.agent_window: int | None = None
        self.agent_model: str | None = None
        self._reset()

    def _reset(self) -> None:
        from tokprof.formats.claude_code import SessionReader

        # the lines appended since the last update are fed to it; uncounted calls need no prompt
        self.reader = SessionReader(self.path, follow=True, prompts=self.count)
        self.totals = _Totals()
        self.format: str | None = None
        self.undecided: list[tuple[int, Any]] = []  # lines read before one told the format
        self.whole_calls = 0  # formats read whole: the calls already seen
        self.largest = 0  # the largest prompt so far (above 200,000: Claude Code's 1M option)
        self.log_format: str | None = None  # a file read whole: its format (the agent's window depends on it)

    @property
    def last(self) -> LiveCall | None:
        return self.totals.last

    @property
    def session(self) -> str | None:
        return self.reader.trace.session

    def update(self, *, count_every: bool = True) -> list[LiveCall]:
        """The calls added since the last update. ``count_every=False`` counts the buckets of the
        last of them only (a session's first read: earlier calls get ``buckets`` None)."""
        appended = self.follower.read()
        if appended.restarted:
            self._reset()
            self._note(f"{self.path}: the file was truncated or replaced: read again from its start")
        calls: list[Call] = []
        for number, raw in appended.lines:
            record = self._record(number, raw)
            if record is None:
                continue
            if self.format is None:
                told = _format_of(record)
                if told is None and len(self.undecided) < UNDECIDED_LINES:
                    self.undecided.append((number, record))  # a line that does not tell (2.x's first snapshot)
                    continue
                self.format = told or "other"
                if self.format == "claude-code":
                    for held, value in self.undecided:
                        calls += self._feed(held, value)
                self.undecided = []
            if self.format != "claude-code":
                break
            calls += self._feed(number, record)
        if self.format == "other" and (appended.lines or appended.restarted):
            calls = self._read_whole()
        if len(self.reader.transcript.states) > 2 * KEPT_STATES:  # now and then: a long session's
            self.reader.forget(KEPT_STATES)  # memory stays what the next lines need
        last = len(calls) - 1
        return [self._figures(call, count_every or i == last) for i, call in enumerate(calls)]

    def _feed(self, number: int, record: Any) -> list[Call]:
        from tokprof.formats.reader import Record

        try:
            return list(self.reader.feed(Record(record, number)))
        except TokprofError as exc:
            self._note(str(exc))
            return []

    def _record(self, number: int, raw: bytes) -> Any:
        try:
            return json.loads(raw)
        except ValueError:
            self._note(f"{self.path}: line {number}: not JSON, skipped")
            return None

    def _note(self, message: str) -> None:
        self.problems = (self.problems + [message])[-5:]

    def _read_whole(self) -> list[Call]:
        from tokprof.runs.inputs import read_log

        try:
            trace = read_log(self.path)
        except TokprofError as exc:
            self._note(str(exc))
            return []
        self.reader.trace.session = trace.session
        self.log_format = trace.format
        new = trace.calls[self.whole_calls :]
        self.whole_calls = len(trace.calls)
        return new

    # -- figures -----------------------------------------------------------------------------------
    def __getstate__(self) -> dict:
        return {**self.__dict__, "_models": {}}  # models are loaded again when needed

    def _model(self, name: str | None) -> Any:
        from tokprof.runs.model import get_model

        wanted = self.model_name or name or "qwen2.5"
        if wanted not in self._models:
            try:
                self._models[wanted] = get_model(wanted)
            except TokprofError as exc:
                self._note(str(exc))
                self._models[wanted] = None
        return self._models[wanted]

    def figures(self, call: Call) -> LiveCall:
        """The figures of a call read elsewhere (``tokprof record`` feeds its recorded calls), as the
        session's next call."""
        return self._figures(call)

    def _figures(self, call: Call, count: bool = True) -> LiveCall:
        model = self._model(call.model) if self.count else None
        counted = _count(model, call) if model is not None and count else None
        reported = call.reported.prompt if call.reported is not None else None
        prompt = reported if reported else (sum(counted.values()) if counted else 0)
        buckets = _anchor(counted, reported) if counted is not None else None
        found = self._window(call.model, prompt)
        window = found.window or (model.context_window if model is not None else None)
        fill = prompt / window if window else None
        totals = self.totals
        main = call.thread == ""
        before = totals.last.fill if totals.last is not None and totals.last.fill is not None else 0.0
        past = tuple(t for t in self.thresholds if fill is not None and fill >= t)
        crossed = tuple(t for t in past if before < t) if main else ()
        broke = bool(
            main
            and totals.previous
            and totals.previous >= CACHE_MINIMUM
            and call.reported is not None
            and (call.reported.cache_read or 0) < CACHE_BROKE * totals.previous
        )
        added = prompt - totals.previous if main and totals.previous is not None else None
        self._add_cost(call)
        figures = LiveCall(
            path=self.follower.path,
            session=self.session,
            call=totals.calls,
            where=call.where,
            model=call.model,
            prompt=prompt,
            basis="reported" if reported else "computed",
            window=window,
            fill=round(fill, 6) if fill is not None else None,
            thresholds=self.thresholds,
            past=past,
            crossed=crossed,
            buckets=buckets,
            estimate=bool(model is not None and not model.exact),
            added=added,
            largest_result=_largest_result(model, call) if counted is not None else None,
            cost=round(totals.cost, 6) if totals.cost is not None else None,
            cache_read_share=round(totals.cache_read / totals.prompt, 6) if totals.prompt else None,
            cache_broke=broke,
            window_source=found.source if found.window else "the counting model" if window else None,
            compacts_at=found.compacts_at,
            to_compact=None if found.compacts_at is None else found.compacts_at - prompt,
        )
        totals.calls += 1
        if main:
            totals.previous, totals.last = prompt, figures
        elif totals.last is None:
            totals.last = figures
        return figures

    def agent_says(self, window: int | None, model: str | None) -> None:
        """What the agent says of the session (Claude Code's statusLine input: its window, its model
        id), for the calls to come and the newest one's figures."""
        if (window, model) == (self.agent_window, self.agent_model):
            return
        self.agent_window, self.agent_model = window, model
        last = self.totals.last
        if last is not None:
            found = self._window(last.model, last.prompt)
            if found.window:
                fill = last.prompt / found.window
                self.totals.last = dataclasses.replace(
                    last,
                    window=found.window,
                    fill=round(fill, 6),
                    past=tuple(t for t in self.thresholds if fill >= t),
                    window_source=found.source,
                    compacts_at=found.compacts_at,
                    to_compact=None if found.compacts_at is None else found.compacts_at - last.prompt,
                )

    def _window(self, name: str | None, prompt: int) -> AgentWindow:
        """The window the agent runs the call's model with (:func:`tokprof.models.agent_window.agent_window`)."""
        from tokprof.models.agent_window import CLAUDE_CODE_WINDOW

        self.largest = max(self.largest, prompt)
        log_format = "claude-code" if self.format == "claude-code" else self.log_format
        key = (log_format, name, self.agent_model, self.agent_window, self.largest > CLAUDE_CODE_WINDOW)
        if key not in self._windows:
            names = [name] + ([self.agent_model] if self.agent_model else [])
            self._windows[key] = agent_window(log_format, names, self.largest, self.agent_window)
        return self._windows[key]

    def _add_cost(self, call: Call) -> None:
        totals = self.totals
        usage = call.reported
        if usage is None or not usage.prompt:
            totals.cost = None  # a call without usage: the run's cost is not known
            return
        totals.prompt += usage.prompt
        totals.cache_read += usage.cache_read or 0
        if totals.cost is None or not call.model or not self.price:
            totals.cost = None
            return
        try:
            from tokprof.pricing.cost import genai_price, priced_tokens

            tokens, whole, _ = priced_tokens(usage, usage.prompt)
            totals.cost += float(genai_price(call.model, tokens, whole, call.day)[2]["total"])
        except Exception:  # noqa: BLE001 - an unpriced model: the cost is not known, never $0
            totals.cost = None


#: Claude Code lines that carry neither a session id nor a uuid (2.x starts a session with a
#: file-history-snapshot): they do not tell the format, the next line does.
UNDECIDED_TYPES = ("file-history-snapshot", "queue-operation", "summary", "custom-title", "last-prompt")
#: How many such lines are held before the file is taken for another format.
UNDECIDED_LINES = 50


def _format_of(record: Any) -> str | None:
    """The format a session's line tells: "claude-code" for a Claude Code line, None for one that
    does not tell (a snapshot, a queue operation), "other" for anything else."""
    from tokprof.formats.claude_code import SNIFF_FIELDS, SNIFF_TYPES

    if not isinstance(record, dict):
        return "other"
    kind = record.get("type")
    if kind in SNIFF_TYPES + ("attachment",) and any(isinstance(record.get(k), str) for k in SNIFF_FIELDS):
        return "claude-code"
    if kind in UNDECIDED_TYPES:
        return None
    return "other"


def _count(model: Any, call: Call) -> dict[str, int] | None:
    try:
        found = model.count_prompt(Prompt(as_list(call.messages), call.tools), date=call.day)
    except TokprofError:
        return None
    return found.as_dict()


def _anchor(counted: dict[str, int], reported: int | None) -> dict[str, int]:
    """The counted buckets against the reported prompt: scaled down to it when larger, the rest of a
    larger report in ``unrecorded`` (what the log does not record)."""
    from tokprof.attribution.estimates import UNRECORDED, scale_buckets

    total = sum(counted.values())
    if not reported:
        return dict(counted)
    if total > reported:
        return {**scale_buckets(counted, reported), UNRECORDED: 0}
    return {**counted, UNRECORDED: reported - total}


def _largest_result(model: Any, call: Call) -> dict | None:
    """The largest tool message after the prompt's last assistant message (what this call added)."""
    names: dict[str, str] = {}
    results: list[dict] = []
    for message in reversed(call.messages):
        if message.get("role") == "assistant":
            for c in message.get("tool_calls") or ():
                names[c.get("id")] = (c.get("function") or {}).get("name") or "?"
            break
        if message.get("role") == "tool":
            results.append(message)
    best: dict | None = None
    for message in results:
        tokens = model.count_text(message.get("content") or "")
        if best is None or tokens > best["tokens"]:
            best = {"tool": names.get(str(message.get("tool_call_id")), "?"), "tokens": tokens}
    return best
