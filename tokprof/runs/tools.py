"""What each tool definition costs: a log's catalogues with the cut list (its costliest caps proved by
replay), or a catalogue priced alone."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from tokprof.analyses.standard import PricesArg, user_prices
from tokprof.analyses.tools import ToolsReport, static_report
from tokprof.analyses.tools import tools_report as _tools_report
from tokprof.attribution.attributor import RenderError
from tokprof.base.errors import InputError, TokprofError
from tokprof.models import DEFAULT_MODEL
from tokprof.models.base import ChatModel
from tokprof.profiling import profile_trace
from tokprof.runs.arguments import PathLike
from tokprof.runs.inputs import read_log, system_arg, tools_arg
from tokprof.runs.model import Model, model_for_trace, named_model
from tokprof.runs.options import DEFAULTS, Options
from tokprof.runs.profile import one_run
from tokprof.runs.progress import progress_bar
from tokprof.trace import Trace

if TYPE_CHECKING:
    from tokprof.analyses.cutlist import CutList


@one_run
def tools_report(log: PathLike | Trace | None = None, options: Options = DEFAULTS) -> ToolsReport:
    """What each tool definition costs per request. With a log: per distinct catalogue in it, with
    how often each tool was carried and called (``tools``/``system`` supply what the log does not
    record), and the cut list (``ToolsReport.cut_list``: per tool and MCP server, in dollars at
    ``prices``' rates where genai-prices has none). Without one: the catalogue ``tools`` priced alone,
    with ``system`` as the system prompt."""
    tools, system, model, prices = options.tools, options.system, options.model, options.prices
    if log is None:
        if tools is None:
            raise InputError("tools_report", None, "give a log or tools")
        tool_list = tools_arg(tools)
        assert tool_list is not None
        source = os.fspath(tools) if isinstance(tools, (str, os.PathLike)) else "tools"
        if isinstance(model, Model):
            chat = model.chat
        else:
            chat = named_model(model or DEFAULT_MODEL, options.chat_template, None)
        try:
            return static_report(chat, tool_list, system_arg(system), source)
        except TokprofError:
            raise
        except Exception as exc:  # a template failing on the catalogue prompt (system + empty user)
            raise InputError(source, None, f"the chat template failed on the tool catalogue: {exc}") from None
    trace = log if isinstance(log, Trace) else read_log(log, options)
    chat = model_for_trace(trace, model, options.chat_template)
    from tokprof.transforms import fit

    trace = fit(trace, chat)
    with progress_bar(options.progress, len(trace.calls), "profiling calls") as advance:
        try:
            result = profile_trace(trace, chat, on_call=lambda _: advance())
        except RenderError as exc:
            raise InputError(trace.path, None, str(exc)) from None
    assert result.facts is not None  # the pass's: its catalogues and tool calls
    facts = result.facts.tools
    try:
        report = _tools_report(trace, chat, result.computed_billed_input(), facts=facts)
    except Exception as exc:  # a template failing on the isolated catalogue prompt (system + empty user)
        raise InputError(trace.path, None, f"the chat template failed on the tool catalogue alone: {exc}") from None
    from tokprof.analyses.carry_cost import price_carry
    from tokprof.pricing.cost import attach_cost
    from tokprof.mcp.rollup import server_rollup

    # the carry cost in dollars, where the log is priced (at ``prices``' rates where genai-prices has none)
    result = price_carry(attach_cost(result, trace, user_prices(prices)))
    report.mcp_servers = server_rollup(facts.called, result.tool_result_costs)
    report.billed_input_profile = sum(c.total for c in result.calls)  # what tokprof profile reports
    from tokprof.analyses.cutlist import cut_list, run_definitions

    cuts = cut_list(result, run_definitions(report.catalogues), facts.called)
    report.cut_list = _replayed_cuts(cuts, trace, chat, prices)
    return report


def _replayed_cuts(cuts: "CutList", trace: Trace, chat: ChatModel, prices: PricesArg) -> "CutList":
    """The cut list with its costliest caps and drops replayed (tokprof.analyses.cutlist.replayed): each cut
    as a policy of its own (tokprof.transforms.cuts), the log's baseline made once."""
    from tokprof.analyses.cutlist import replayed

    return replayed(cuts, trace, chat, user_prices(prices))
