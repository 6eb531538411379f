"""What each tool definition costs on every request, and what the log did with it.

All figures are differences of exact token counts of full renders with the model's template, on a
prompt made of the catalogue's system prompt and an empty user message:

* catalogue = render(all tools) − render(no tools)   (``tools=None``; ``[]`` if the template needs it)
* marginal of tool k = render(all tools) − render(all tools but k); for a catalogue of one tool,
  render(it and a renamed copy) − render(the copy), so that the scaffolding stays out of it
* scaffolding = catalogue − Σ marginals   (what a template adds once whenever any tool exists)
* description tokens of tool k = render(all tools) − render(all tools, k's description emptied);
  parameter tokens = marginal − description tokens (the name, the parameter schema, the JSON around them)

so catalogue = scaffolding + Σ marginals holds exactly, by construction.
"""

from __future__ import annotations

import copy
import difflib
import re
import time
from dataclasses import dataclass, field
from datetime import date

import numpy as np

from tokprof.analyses.cutlist import CutList, cut_list, run_definitions
from tokprof.analyses.tool_pieces import Pieces, pieces
from tokprof.attribution.catalogue import Catalogue, CatalogueSummary, ToolCost, UnknownCall
from tokprof.models.base import ChatModel, ModelInfo
from tokprof.models.jsonmemo import JsonMemo
from tokprof.models.counters import count_like
from tokprof.attribution.attributor import Attributor
from tokprof.attribution.facts import ToolFacts, prompt_facts
from tokprof.profiling import Profile, Source
from tokprof.trace import Call, Note, Trace

SCHEMA_VERSION = 1
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


@dataclass
class ToolsReport:
    model: ModelInfo
    source: Source
    catalogues: list[Catalogue]
    billed_input: int | None = None
    unknown_calls: list[UnknownCall] = field(default_factory=list)
    warnings: list[Note] = field(default_factory=list)
    system_tokens: int | None = None  # what the system prompt costs, for a catalogue priced on its own
    mcp_servers: list = field(default_factory=list)  # per MCP server the log's tool names carry (mcp_rollup)
    #: the billed input ``tokprof profile`` reports (an estimate's, scaled to the reported usage), when it
    #: differs from ``billed_input`` (the catalogue's units) or a profile gave it
    billed_input_profile: int | None = None
    #: per tool and MCP server, what it cost and how to cut it (tokprof.analyses.cutlist), with a log
    cut_list: CutList | None = None

    @property
    def main(self) -> Catalogue | None:
        """The catalogue carried by the most requests (the only one, usually)."""
        if not self.catalogues:
            return None
        return max(self.catalogues, key=lambda c: (c.requests or 0, -(c.first_call or 0)))

    def unused_waste(self) -> int | None:
        if self.billed_input is None:
            return None
        return sum(t.run_cost or 0 for c in self.catalogues for t in c.tools if t.calls == 0)

    def summary_section(self) -> CatalogueSummary | None:
        """The ``catalogue`` section that a profile's summary carries."""
        main = self.main
        if main is None:
            return None
        waste = self.unused_waste()
        return CatalogueSummary(
            catalogue=main,
            distinct_catalogues=len(self.catalogues),
            unused_waste=waste,
            unused_waste_share=round(waste / self.billed_input, 6) if waste is not None and self.billed_input else None,
            unknown_tool_calls=list(self.unknown_calls),
        )

    @classmethod
    def from_profile(cls, profile: Profile) -> "ToolsReport":
        """The report of a saved profile: its main catalogue (a profile keeps that one only)."""
        section = profile.catalogue
        warnings = [w for w in profile.warnings if w.code in ("tools-unrecorded", "catalogue-unpriced")]
        if section is not None and section.distinct_catalogues > 1:
            warnings.append(
                Note(
                    "catalogue-changed",
                    f"the tool catalogue changed during the log: {section.distinct_catalogues} "
                    "distinct catalogues; a saved profile keeps the one most requests carried (run tokprof tools on "
                    "the log for each)",
                )
            )
        catalogues = [section.catalogue] if section else []
        called = {t.name: t.calls for c in catalogues for t in c.tools if t.calls}
        for cost in profile.tool_result_costs.tools if profile.tool_result_costs else ():
            if cost.tool and cost.tool not in called:
                called[cost.tool] = cost.results  # a tool of no saved catalogue: called once per result
        return cls(
            model=profile.model,
            source=profile.source,
            catalogues=catalogues,
            billed_input=profile.computed_billed_input(),
            unknown_calls=list(section.unknown_tool_calls) if section else [],
            warnings=warnings,
            billed_input_profile=sum(c.total for c in profile.calls),
            cut_list=cut_list(profile, run_definitions(catalogues), called),
        )

    def to_dict(self) -> dict:
        section = self.summary_section()
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": "tools",
            "model": self.model.to_dict(),
            "source": self.source.to_dict(),
            "billed_input": self.billed_input,
            "billed_input_profile": self.billed_input_profile,
            "catalogue": section.to_dict() if section else None,
            "catalogues": [c.to_dict() for c in self.catalogues],
            "unknown_tool_calls": [u.to_dict() for u in self.unknown_calls],
            "warnings": [w.to_dict() for w in self.warnings],
            "mcp_servers": [s.to_dict() for s in self.mcp_servers],
            **({"cut_list": self.cut_list.to_dict()} if self.cut_list is not None else {}),
        }


def first_sentence(text: str) -> str:
    parts = _SENTENCE_END.split(text.strip(), maxsplit=1)
    return parts[0] if parts else text


class _Counter:
    """Token counts of prompts with a given tool list, for one system prompt."""

    def __init__(self, model: ChatModel, system: str | None, day: date | None):
        self.model = model
        self.day = day
        messages = ([{"role": "system", "content": system}] if system is not None else []) + [
            {"role": "user", "content": ""}
        ]
        self.messages = model.prompt_format.prepare(messages, model.prompt_format.shapes[0])

        self.reference: tuple[str, np.ndarray] | None = None  # the whole catalogue's render and token starts

    def __call__(self, tools: list[dict] | None) -> int:
        return self.text(self._render(tools))

    def text(self, text: str) -> int:
        """The count of a rendered prompt."""
        if self.reference is None:
            return len(self.model.counter.token_starts(text))
        return count_like(self.model.counter, text, *self.reference)

    def _render(self, tools: list[dict] | None) -> str:
        return self.model.prompt_format.render(self.messages, tools, True, self.day, template_tools=True)

    def whole(self, tools: list[dict]) -> int:
        """The whole catalogue's count; later counts of catalogues that differ from it in one tool
        tokenize only the part that differs."""
        text = self._render(tools)
        starts = self.model.counter.token_starts(text)
        self.reference = (text, starts)
        return len(starts)

    def changed(self, start: int, end: int, new: str) -> int:
        """The count of the whole catalogue's render with ``[start, end)`` replaced by ``new``, from a
        window around the change: the whole render's tokens before and after it, and the window
        counted as :meth:`text` counts a whole render. The window is taken only where the whole
        render's tokens split alike at both its ends as they do in the window alone (checked);
        otherwise the changed render is counted whole. Time follows the change, not the catalogue."""
        assert self.reference is not None
        text, starts = self.reference
        i = max(int(np.searchsorted(starts, max(0, start - WINDOW_MARGIN), "right")) - 1, 0)
        j = int(np.searchsorted(starts, min(len(text), end + WINDOW_MARGIN), "left"))
        lo, hi = int(starts[i]) if len(starts) else 0, int(starts[j]) if j < len(starts) else len(text)
        if lo <= start and end <= hi:
            window = text[lo:hi]
            alone = self.model.counter.token_starts(window)
            inside = starts[i:j]
            if len(alone) == len(inside) and np.array_equal(alone, inside - lo):
                changed = window[: start - lo] + new + window[end - lo :]
                return i + count_like(self.model.counter, changed, window, alone) + len(starts) - j
        return self.text(text[:start] + new + text[end:])

    def none(self) -> int:
        try:
            return self(None)
        except Exception:
            return self([])


#: Characters of the whole render taken on each side of a change, at least, to count it from a window.
WINDOW_MARGIN = 512


def _windows_agree(count: _Counter, split: Pieces) -> bool:
    """Whether the catalogue without a tool, and with a tool's variant, counted from a window give the
    counts of the whole changed render, on a sample of tools (the first, the middle, the last)."""
    n = len(split.texts)
    for k in sorted({0, n // 2, n - 1}):
        if count.changed(*split.span_without(k), "") != count.text(split.without(k)):
            return False
        if k in split.variants:
            if count.changed(*split.span_of(k), split.variants[k]) != count.text(split.with_variant(k)):
                return False
    return True


def catalogue_cost(
    model: ChatModel,
    tools: list[dict],
    system: str | None = None,
    day: date | None = None,
    called: set[str] | None = None,
    splice: bool = True,
    deadline: float | None = None,
) -> Catalogue:
    """The catalogue's costs; with ``called`` (the tool names the log called), also the saving of
    dropping the tools never called. Every variant renders the same tool definitions again: their
    JSON is written once (the catalogue is not changed while it is priced). Where the template
    writes each tool on its own, the variants without a tool (or with its description emptied) are
    spliced from each tool rendered once (:mod:`tokprof.analyses.tool_pieces`) and counted from a
    window around the tool (:meth:`_Counter.changed`), so that the time follows the catalogue's
    size; ``splice=False`` renders each of them. Past ``deadline`` (``time.monotonic()``), a
    :class:`TimeoutError` says how many tools were priced."""
    memo = JsonMemo()
    memo.add(tools)
    with memo.using():
        return _catalogue_cost(model, tools, system, day, called, splice, deadline)


def _catalogue_cost(
    model: ChatModel,
    tools: list[dict],
    system: str | None,
    day: date | None,
    called: set[str] | None,
    splice: bool = True,
    deadline: float | None = None,
) -> Catalogue:
    count = _Counter(model, system, day)
    full = count.whole(tools)
    emptied_tools = {k: _emptied(tool) for k, tool in enumerate(tools) if tool.get("function", {}).get("description")}
    split = pieces(count._render, tools, emptied_tools, count.reference[0]) if splice and count.reference else None
    none = count.none()
    total = full - none
    costs = []
    twin = None
    if len(tools) == 1:
        # With one tool, "all but it" is no tools at all, which also removes the scaffolding. Price it
        # beside a copy of itself under another name instead: what it adds to a catalogue of one.
        twin = copy.deepcopy(tools[0])
        twin["function"]["name"] = twin["function"]["name"] + "_copy"
    if split is not None and not _windows_agree(count, split):
        split = None  # counted from windows, a sampled tool differs from its whole count: render each
    for k, tool in enumerate(tools):
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"{k:,} of the {len(tools):,} tools were priced")
        function = tool.get("function", {})
        if twin is not None:
            marginal = count([tool, twin]) - count([twin])
        elif split is not None:
            marginal = full - count.changed(*split.span_without(k), "")
        else:
            marginal = full - count(tools[:k] + tools[k + 1 :])
        if not function.get("description"):
            description = 0
        elif split is not None:
            description = full - count.changed(*split.span_of(k), split.variants[k])
        else:
            description = full - count(tools[:k] + [emptied_tools[k]] + tools[k + 1 :])
        properties = (function.get("parameters") or {}).get("properties") or {}
        costs.append(
            ToolCost(
                name=function.get("name", f"tools[{k}]"),
                marginal=marginal,
                description_tokens=description,
                parameter_tokens=marginal - description,
                parameters=len(properties) if isinstance(properties, dict) else 0,
            )
        )
    trimmed = copy.deepcopy(tools)
    for tool in trimmed:
        if tool["function"].get("description"):
            tool["function"]["description"] = first_sentence(tool["function"]["description"])
    drop_unused_saving = None
    if called is not None:
        used = [t for t in tools if t["function"]["name"] in called]
        drop_unused_saving = full - (count(used) if used else none)
    return Catalogue(
        total=total,
        scaffolding=total - sum(c.marginal for c in costs),
        tools=costs,
        trim_saving=full - count(trimmed),
        drop_unused_saving=drop_unused_saving,
    )


def _emptied(tool: dict) -> dict:
    """The tool with its description emptied."""
    return {**tool, "function": {**tool.get("function", {}), "description": ""}}


def tools_report(
    trace: Trace,
    model: ChatModel,
    billed_input: int | None = None,
    source_name: str | None = None,
    facts: ToolFacts | None = None,
) -> ToolsReport:
    """Per distinct catalogue in the log: its cost, each tool's, and what the model did with them.
    ``facts``: the log's catalogues and tool calls as the pass took them (``Profile.facts``), else
    taken from the trace's calls now; the trace's own fields are read, never its prompts."""
    if facts is None:
        facts = prompt_facts(trace.calls).tools
    if facts.error is not None:
        raise facts.error
    calls_by_name = facts.called
    catalogues = []
    known: set[str] = set()
    for use in facts.catalogues.values():
        catalogue = catalogue_cost(model, use.tools, use.system, use.day, called=set(calls_by_name))
        catalogue.requests = use.requests
        catalogue.first_call = use.first_call
        for cost in catalogue.tools:
            cost.requests = use.requests
            cost.calls = calls_by_name.get(cost.name, 0)
            known.add(cost.name)
        catalogues.append(catalogue)
    unknown = []
    unrecorded = "tools" in trace.unrecorded and not catalogues
    for name, n in sorted(calls_by_name.items()):
        if name not in known and not unrecorded:  # with no catalogue recorded, every name would be "unknown"
            close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.3)
            unknown.append(UnknownCall(name, n, close[0] if close else None))
    warnings = []
    if unrecorded:
        warnings.append(
            Note(
                "tools-unrecorded",
                f"this log does not record its tool definitions, so there is no catalogue to price (the model "
                f"called {len(calls_by_name)} tools: {', '.join(sorted(calls_by_name)[:8])}"
                f"{', ...' if len(calls_by_name) > 8 else ''}); give them with --tools FILE",
            )
        )
    if len(catalogues) > 1:
        warnings.append(
            Note(
                "catalogue-changed",
                f"the tool catalogue changed during the log: {len(catalogues)} distinct catalogues, each reported on its own",
            )
        )
    source = Source(path=source_name or trace.path, format=trace.format, model=trace.model)
    return ToolsReport(
        model=model.describe(),
        source=source,
        catalogues=catalogues,
        billed_input=billed_input,
        unknown_calls=unknown,
        warnings=warnings,
    )


def static_report(model: ChatModel, tools: list[dict], system: str | None, path: str) -> ToolsReport:
    """A catalogue priced on its own (no log): on a prompt of the system prompt and an empty user message."""
    catalogue = catalogue_cost(model, tools, system)
    return ToolsReport(
        model=model.describe(),
        source=Source(path=path, format="tools"),
        catalogues=[catalogue],
        system_tokens=system_tokens(model, tools, system),
    )


def system_tokens(model: ChatModel, tools: list[dict], system: str | None) -> int:
    """The system bucket of a one-turn prompt with the catalogue: what the system prompt costs."""
    messages = ([{"role": "system", "content": system}] if system is not None else []) + [
        {"role": "user", "content": ""}
    ]
    return Attributor(model).attribute(Call(index=0, messages=messages, tools=tools, where="static")).system


def attach_catalogue(profile: Profile, trace: Trace, model: ChatModel) -> Profile:
    """Give a profile its log's main catalogue (``summary.catalogue``); a template that cannot price
    the catalogue alone costs a warning, not the profile."""
    try:
        report = tools_report(trace, model, profile.computed_billed_input(), facts=_tool_facts(profile, trace))
    except Exception as exc:  # the template failing on the isolated catalogue prompt (system + empty user)
        profile.warnings.append(
            Note("catalogue-unpriced", f"{trace.path}: the chat template failed on the tool catalogue alone: {exc}")
        )
        return profile
    profile.catalogue = report.summary_section()
    return profile


def _tool_facts(profile: Profile, trace: Trace) -> ToolFacts | None:
    """The profile's facts of its tools, when they are the trace's (the same calls): else None, taken anew."""
    facts = profile.facts
    return facts.tools if facts is not None and len(facts.calls) == len(trace.calls) else None
