"""A self-contained HTML report made with plotly: opens offline, plotly.js embedded once.

The page shows the summary, the buckets per call with cumulative billed input, the tool
catalogue per tool, the context-window fill, and (for logs with usage) computed versus reported.
The profile's JSON is embedded too (``<script id="tokprof-profile" type="application/json">``).
"""

from __future__ import annotations

import html
import json
from collections import Counter

from tokprof.attribution.tool_results import ToolResultCosts
from tokprof.attribution.catalogue import Catalogue
from tokprof.pricing.billing import UNEXPLAINED
from tokprof.profiling import Profile, missing_buckets, recorded
from tokprof.render import RenderOptions
from tokprof.render.plot_style import FONT, GRID
from tokprof.render.plot_style import count_axis as _count_axis
from tokprof.render.plot_style import layout as _layout

COLORS = {
    "system": "#7b61ff",
    "tool_definitions": "#f28e2b",
    "tool_results": "#4e79a7",
    "conversation": "#59a14f",
    "unrecorded": "#9c9c9c",
}
LABELS = {
    "system": "system",
    "tool_definitions": "tool definitions",
    "tool_results": "tool results",
    "conversation": "conversation",
    "unrecorded": "unrecorded (inferred)",
}
#: The window of the fill chart when neither the caller nor the model gives one.
DEFAULT_WINDOW = 131072
UNUSED = "#d1242f"  # tools never called

CSS = """
:root { color-scheme: light dark; --fg: #1f2328; --bg: #ffffff; --muted: #59636e; --card: #f6f8fa; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --bg: #0d1117; --muted: #9198a1; --card: #161b22; } }
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg);
       max-width: 1200px; margin: 0 auto; padding: 24px; }
h1 { font-size: 1.5rem; margin-bottom: 0.2rem; } h2 { font-size: 1.15rem; margin-top: 2rem; }
.muted { color: var(--muted); } .estimate { color: #d1242f; font-weight: 600; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(170px, 1fr)); gap: 12px; margin: 16px 0; }
.card { background: var(--card); border-radius: 8px; padding: 12px 14px; }
.card .v { font-size: 1.35rem; font-weight: 600; } .card .k { color: var(--muted); font-size: 0.85rem; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 6px; }
ul.warn li { color: #bf8700; }
.chart { width: 100%; min-height: 380px; } .chart.bars { min-height: 0; }
table.results, table.whatif { border-collapse: collapse; font-size: 0.9rem; margin: 8px 0 16px; }
table.results td, table.results th, table.whatif td, table.whatif th { padding: 4px 10px; text-align: right;
  border-bottom: 1px solid var(--card); }
table.results td:nth-child(2), table.results th:nth-child(2), table.whatif td:first-child,
table.whatif th:first-child, table.whatif td:last-child, table.whatif th:last-child { text-align: left; }
.scroll { overflow-x: auto; max-width: 100%; } .source { overflow-wrap: anywhere; }
table.breaks td:last-child { overflow-wrap: anywhere; min-width: 10em; }
table.breaks td:nth-child(4), table.breaks th:nth-child(4) { text-align: left; }
details.warn summary { cursor: pointer; color: #bf8700; }
section.actions { background: var(--card); border-radius: 8px; padding: 4px 16px 8px; margin: 16px 0; }
section.actions li { margin: 8px 0; overflow-wrap: anywhere; } section.actions h2 { margin-top: 12px; }
@media (max-width: 600px) {
  body { padding: 12px; }
  table.results, table.whatif { font-size: 0.78rem; }
  table.results td, table.results th, table.whatif td, table.whatif th { padding: 3px 5px; }
  table.results td:nth-child(2) code { word-break: break-all; }
}
"""
#: Below this page width plotly's toolbar is left out: it would sit on the legends (the charts still
#: zoom by dragging, and a double click resets them).
NARROW = 700


def _in_script(json_text: str) -> str:
    """JSON text to place inside a ``<script>`` element: ``<``, ``>`` and ``&`` written as JSON escapes
    (the same value), so that no text from a log (``</script>``, ``<!--``, ``<script``) can end the
    element or change how the HTML parser reads it; U+2028 and U+2029 too, for older JavaScript."""
    return (
        json_text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _call_axis(profile: Profile) -> dict:
    """An x axis of calls: ticks at whole calls only, about ten of them."""
    n = max(1, len(profile.calls))
    step = next(
        s for s in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10**4, 10**5, 10**6) if n / s <= 12
    )
    first = min((c.index for c in profile.calls), default=0)
    last = max((c.index for c in profile.calls), default=0)
    return {
        "title": {"text": "call"},
        "gridcolor": GRID,
        "zeroline": False,
        "tickmode": "linear",
        "tick0": 0,
        "dtick": step,
        "tickformat": "d",
        "range": [first - 0.5, last + 0.5],
    }  # the axis ends where the calls do


def _threads(profile: Profile) -> list[tuple[str | None, list]]:
    """The calls of each thread, the main conversation first, then each subagent as it starts."""
    rows: dict[str | None, list] = {}
    for call in profile.calls:
        rows.setdefault(call.thread, []).append(call)
    order = sorted(rows, key=lambda thread: (thread is not None, rows[thread][0].index))
    return [(thread, rows[thread]) for thread in order]


def _thread_label(thread: str | None) -> str:
    return "main" if thread is None else f"subagent {thread}"


#: Dash styles that tell the lines of subagents from the main conversation's (solid).
DASHES = ("dash", "dot", "dashdot", "longdash", "longdashdot")


def _buckets_figure(profile: Profile) -> dict:
    """The main conversation's prompts stacked by bucket; each subagent's prompts a line of its own
    (labelled), so that a subagent's short prompts never look like the main thread dropping."""
    threads = _threads(profile)
    main_thread, main = threads[0] if threads else (None, [])
    x = [c.index for c in main]
    suffix = "" if len(threads) == 1 else f" ({_thread_label(main_thread)})"
    data: list[dict] = []
    for name in profile.buckets():
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "stackgroup": "prompt",
                "name": LABELS[name] + suffix,
                "x": x,
                "y": [c.buckets.get(name, 0) for c in main],
                "line": {"width": 0.5, "color": COLORS[name]},
                "hovertemplate": "%{y:,} tokens",
            }
        )
    data.append(
        {
            "type": "scatter",
            "mode": "lines",
            "name": "total",
            "x": x,
            "y": [c.total for c in main],
            "line": {"width": 0},
            "showlegend": False,
            "hovertemplate": "%{y:,} tokens",
        }
    )
    for n, (thread, rows) in enumerate(threads[1:]):
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": f"{_thread_label(thread)}: its prompt",
                "x": [c.index for c in rows],
                "y": [c.total for c in rows],
                "line": {"color": FONT, "dash": DASHES[n % len(DASHES)], "width": 1.5},
                "marker": {"size": 3},
                "hovertemplate": "%{y:,} tokens",
            }
        )
    shapes, annotations = [], []
    cross = profile.crossovers()
    last = max((c.index for c in profile.calls), default=0)
    crossings = [
        (index, text)
        for index, text in (
            (cross.tool_results_exceed_tool_definitions, "tool results > tool defs"),
            (cross.conversation_exceeds_tool_definitions, "conversation > tool defs"),
        )
        if index is not None
    ]
    for row, (index, text) in enumerate(crossings):
        shapes.append(
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": index,
                "x1": index,
                "y0": 0,
                "y1": 1,
                "line": {"color": FONT, "dash": "dash", "width": 1},
            }
        )
        # one row each, so that two crossings close together never print over each other; a label
        # in the right half of the chart reads leftwards from its line
        annotations.append(
            {
                "x": index,
                "y": 1 - 0.08 * row,
                "xref": "x",
                "yref": "paper",
                "text": f"{text} (call {index})",
                "showarrow": False,
                "xanchor": "right" if index > last / 2 else "left",
                "yanchor": "top",
                "font": {"size": 11},
                "bgcolor": "rgba(255,255,255,0.6)",
            }
        )
    layout = _layout(
        xaxis=_call_axis(profile), yaxis=_count_axis("tokens in the prompt"), shapes=shapes, annotations=annotations
    )
    return {"data": data, "layout": layout}


def _billed_figure(profile: Profile) -> dict:
    """The input billed so far, over every call of every thread (a chart of its own: one axis)."""
    data = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": "billed so far",
            "x": [c.index for c in profile.calls],
            "y": [c.cumulative for c in profile.calls],
            "line": {"color": FONT, "width": 2},
            "hovertemplate": "%{y:,} tokens",
        }
    ]
    layout = _layout(xaxis=_call_axis(profile), yaxis=_count_axis("billed input so far"), showlegend=False)
    return {"data": data, "layout": layout}


#: A horizontal bar's height in pixels, and what a bar chart needs beside its bars (axis, margins).
BAR_HEIGHT = 24
BAR_FRAME = 110


def _bars(names: list[str], values: list[int] | list[float], colors: list[str], title: str, hover: str) -> dict:
    """A horizontal bar chart, one row per name (the first on top): names never print over each other,
    whatever the width, and one axis. No legend: the text beside the chart says what colours mean."""
    data = [
        {
            "type": "bar",
            "orientation": "h",
            "name": title,
            "x": values,
            "y": names,
            "marker": {"color": colors},
            "hovertemplate": "%{y}<br>%{x:,} " + hover + "<extra></extra>",
        }
    ]
    layout = _layout(
        hovermode="closest",
        showlegend=False,
        height=BAR_FRAME + BAR_HEIGHT * max(1, len(names)),
        margin={"l": 10, "r": 20, "t": 10, "b": 50},
        xaxis=_count_axis(title, tickformat="~s"),
        yaxis={"autorange": "reversed", "automargin": True, "gridcolor": GRID, "ticksuffix": " "},
    )
    return {"data": data, "layout": layout}


def _tool_order(catalogue: Catalogue) -> list:
    return sorted(catalogue.tools, key=lambda t: (bool(t.unused), -t.marginal, t.name))


def _tools_figure(catalogue: Catalogue) -> dict:
    """Each tool's definition, in tokens per request (never-called tools in red)."""
    tools = _tool_order(catalogue)
    names = [t.name + (" (unused)" if t.unused else "") for t in tools]
    colors = [UNUSED if t.unused else COLORS["tool_definitions"] for t in tools]
    return _bars(names, [t.marginal for t in tools], colors, "tokens per request", "tokens per request")


def _tools_run_figure(catalogue: Catalogue) -> dict | None:
    """Each tool's definition over the run: its tokens per request times the requests that carried it."""
    tools = _tool_order(catalogue)
    if not any(t.run_cost is not None for t in tools):
        return None
    names = [t.name + (" (unused)" if t.unused else "") for t in tools]
    colors = [UNUSED if t.unused else COLORS["tool_definitions"] for t in tools]
    return _bars(names, [t.run_cost or 0 for t in tools], colors, "tokens over the run", "tokens over the run")


def _window_figure(profile: Profile, window: int, levels: list[float]) -> dict:
    """Each prompt as a share of the window, a line per thread (subagents apart, labelled)."""
    fill = [c.total / window for c in profile.calls]
    threads = _threads(profile)
    data = [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": "prompt / window" + ("" if len(threads) == 1 else f" ({_thread_label(thread)})"),
            "x": [c.index for c in rows],
            "y": [c.total / window for c in rows],
            "line": {"color": COLORS["tool_results"] if thread is None else FONT}
            | ({} if n == 0 else {"dash": DASHES[(n - 1) % len(DASHES)]}),
            "marker": {"size": 4},
            "hovertemplate": "call %{x}: %{y:.1%} of the window<extra></extra>",
        }
        for n, (thread, rows) in enumerate(threads)
    ]
    shapes = [
        {
            "type": "line",
            "xref": "paper",
            "x0": 0,
            "x1": 1,
            "yref": "y",
            "y0": level,
            "y1": level,
            "line": {"color": "#bf8700" if i == 0 else "#d1242f", "dash": "dash", "width": 1},
        }
        for i, level in enumerate(levels)
    ]
    annotations = [
        {
            "xref": "paper",
            "x": 1,
            "y": level,
            "yref": "y",
            "text": f"{level:.0%}",
            "showarrow": False,
            "xanchor": "right",
            "yanchor": "bottom",
            "font": {"size": 11},
        }
        for level in levels
    ]
    top = max([1.0, *fill]) * 1.05
    layout = _layout(
        hovermode="closest",
        shapes=shapes,
        annotations=annotations,
        xaxis=_call_axis(profile),
        yaxis={
            "title": {"text": f"share of a {window:,}-token window"},
            "tickformat": ".0%",
            "range": [0, top],
            "gridcolor": GRID,
        },
    )
    return {"data": data, "layout": layout}


def _added_figure(profile: Profile) -> dict:
    """What each call added to the previous call of its conversation, per bucket (a rewrite or a
    compaction shows as a drop), with the roles of the messages it added in the hover."""
    previous: dict[str | None, dict[str, int]] = {}
    x: list[int] = []
    notes: list[str] = []
    deltas: dict[str, list[int]] = {name: [] for name in profile.buckets()}
    for call in profile.calls:
        before = previous.get(call.thread, {})
        previous[call.thread] = call.buckets
        x.append(call.index)
        for name in deltas:
            deltas[name].append(call.buckets.get(name, 0) - before.get(name, 0))
        if call.added is None:
            note = "the conversation's first call" if not before else "does not continue the previous call"
        else:
            roles = [f"{n} {role}" for role, n in Counter(call.added).items()]
            note = "adds " + (", ".join(roles) if roles else "no message")
        if call.thread is not None:
            note = f"subagent {call.thread}: {note}"
        notes.append(html.escape(note, quote=False))  # plotly reads tags in hover text
    data = [
        {
            "type": "bar",
            "name": LABELS[name],
            "x": x,
            "y": values,
            "marker": {"color": COLORS[name]},
            "customdata": notes,
            "hovertemplate": "%{y:+,} tokens<br>%{customdata}",
        }
        for name, values in deltas.items()
    ]
    layout = _layout(
        barmode="relative", xaxis=_call_axis(profile), yaxis=_count_axis("tokens added", rangemode="normal")
    )
    return {"data": data, "layout": layout}


def _reported_figure(profile: Profile) -> dict | None:
    """Computed and reported prompts, a pair of lines per thread (subagents apart, labelled)."""
    if not any(c.reported and c.reported.prompt is not None for c in profile.calls):
        return None
    threads = _threads(profile)
    data = []
    for n, (thread, calls) in enumerate(threads):
        rows = [c for c in calls if c.reported and c.reported.prompt is not None]
        if not rows:
            continue
        suffix = "" if len(threads) == 1 else f" ({_thread_label(thread)})"
        dash = {} if n == 0 else {"dash": DASHES[(n - 1) % len(DASHES)]}
        data += [
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": ("computed" if profile.model.exact else "proxy (unscaled)") + suffix,
                "x": [c.index for c in rows],
                "y": [c.rendered for c in rows],
                "line": {"color": COLORS["conversation"], **dash},
            },
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": "reported" + suffix,
                "x": [c.index for c in rows],
                "y": [c.reported.prompt if c.reported else None for c in rows],
                "line": {"color": FONT, "dash": "dot" if n == 0 else DASHES[(n - 1) % len(DASHES)]},
            },
        ]
    return {"data": data, "layout": _layout(xaxis=_call_axis(profile))}


PART_COLORS = {"input": "#e15759", "cache_write": "#f28e2b", "cache_read": "#76b7b2", "output": "#b07aa1"}


def _cost_figure(profile: Profile) -> dict | None:
    """Each call's cost, stacked by part (uncached input, cache writes, cache reads, output)."""
    from tokprof.pricing.render import PART_LABELS

    rows = [c for c in profile.calls if c.cost is not None and c.cost.priced]
    if not rows:
        return None
    x = [c.index for c in rows]
    data = [
        {
            "type": "bar",
            "name": PART_LABELS[part],
            "x": x,
            "y": [round(getattr(c.cost, part) or 0.0, 8) for c in rows],
            "marker": {"color": PART_COLORS[part]},
            "hovertemplate": "$%{y:.4f}",
        }
        for part in PART_LABELS
    ]
    return {
        "data": data,
        "layout": _layout(
            barmode="stack",
            xaxis=_call_axis(profile),
            yaxis={"title": {"text": "US dollars"}, "gridcolor": GRID, "rangemode": "tozero", "tickprefix": "$"},
        ),
    }


def _cache_figure(profile: Profile) -> dict | None:
    """Per call: the prompt and the cache reads predicted by the provider's rules and reported, lines
    per thread (subagents apart, labelled)."""
    if not any(c.cache is not None and c.cache.predicted is not None for c in profile.calls):
        return None
    threads = _threads(profile)
    data: list[dict] = []
    for n, (thread, calls) in enumerate(threads):
        rows = [c for c in calls if c.cache is not None and c.cache.predicted is not None]
        if not rows:
            continue
        suffix = "" if len(threads) == 1 else f" ({_thread_label(thread)})"
        dash = {} if n == 0 else {"dash": DASHES[(n - 1) % len(DASHES)]}
        x = [c.index for c in rows]
        data += [
            {
                "type": "scatter",
                "mode": "lines",
                "name": "prompt" + suffix,
                "x": x,
                "y": [c.total for c in rows],
                "line": {"color": FONT, "width": 1, **dash},
            },
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": "predicted cache read" + suffix,
                "x": x,
                "y": [c.cache.predicted if c.cache else None for c in rows],
                "line": {"color": COLORS["conversation"], **dash},
            },
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": "reported cache read" + suffix,
                "x": x,
                "y": [c.cache.reported if c.cache else None for c in rows],
                "line": {"color": COLORS["tool_results"], "dash": "dot" if n == 0 else DASHES[(n - 1) % len(DASHES)]},
                "text": [c.cache.detail or "" if c.cache else "" for c in rows],
                "hovertemplate": "%{y:,} %{text}",
            },
        ]
    return {"data": data, "layout": _layout(xaxis=_call_axis(profile), yaxis=_count_axis("tokens"))}


CACHE_COLORS = {"read": "#76b7b2", "written": "#f28e2b", "lost": "#d1242f", "uncached": "#9c9c9c"}


def _cache_timeline(profile: Profile) -> dict | None:
    """Per call, its reported prompt in what the cache did with it: read, newly written, lost to a miss
    (what a kept cache would have read: red, with what changed and its dollars in the hover), uncached."""
    rows = [c for c in profile.calls if c.cache is not None and c.reported is not None and c.reported.prompt]
    if not rows or not any(c.reported and (c.reported.cache_read or c.reported.cache_write) for c in rows):
        return None
    from tokprof.pricing.render import dollars, reason_label

    parts: dict[str, list[int]] = {name: [] for name in CACHE_COLORS}
    hover: list[str] = []
    for c in rows:
        usage, cache = c.reported, c.cache
        assert usage is not None and cache is not None and usage.prompt
        read, written = usage.cache_read or 0, usage.cache_write or 0
        lost = cache.lost or 0
        lost_written = min(lost, written)
        parts["read"].append(read)
        parts["lost"].append(lost)
        parts["written"].append(written - lost_written)
        parts["uncached"].append(max(0, usage.prompt - read - written - (lost - lost_written)))
        text = ""
        if cache.miss and cache.miss != "first-call":
            text = f"{reason_label(cache.miss, cache.part)}: {cache.detail or ''}"
            if lost:
                text += f" ({dollars(cache.lost_cost)} {'not read, why not known' if cache.miss in UNEXPLAINED else 'lost'})"
        hover.append(html.escape(text, quote=False))
    x = [c.index for c in rows]
    names = {
        "read": "read from the cache",
        "written": "written (new)",
        "lost": "lost to a miss",
        "uncached": "uncached input",
    }
    data = [
        {
            "type": "bar",
            "name": names[name],
            "x": x,
            "y": values,
            "marker": {"color": CACHE_COLORS[name]},
            "customdata": hover,
            "hovertemplate": "%{y:,} tokens" + ("<br>%{customdata}" if name == "lost" else ""),
        }
        for name, values in parts.items()
    ]
    return {
        "data": data,
        "layout": _layout(
            barmode="stack", bargap=0, xaxis=_call_axis(profile), yaxis=_count_axis("tokens in the prompt")
        ),
    }


def _forensics_parts(profile: Profile, timeline: bool) -> list[str]:
    """The cache section: the hit rate, what the misses cost by reason, the per-call timeline (when
    ``timeline``), the costliest breaks."""
    from tokprof.pricing.render import dollars, forensics_lines, reason_label

    summary = profile.summary()
    lines = forensics_lines(summary.cache, summary.cost, breaks=0)
    if not lines:
        return []
    out = ["<h2>Cache</h2>", "<ul>" + "".join(f"<li>{html.escape(v)}</li>" for k, v in lines if k.strip()) + "</ul>"]
    if timeline:
        out.append(
            '<p class="muted">Each call\'s prompt as the provider billed it: read from the cache, written, '
            "uncached, and in red the tokens a kept cache would have read (hover for what changed).</p>"
        )
        out.append('<div id="chart-cachetime" class="chart"></div>')
    lost = summary.cache.lost if summary.cache else None
    if lost is not None and lost.breaks:
        rows = "".join(
            f"<tr><td>{b.call}{' (' + html.escape(b.thread) + ')' if b.thread else ''}</td>"
            f"<td>{dollars(b.cost)}</td><td>{b.tokens:,}</td><td>{html.escape(reason_label(b.reason, b.part))}</td>"
            f"<td>{html.escape(b.detail or '')}</td></tr>"
            for b in lost.breaks[:5]
        )
        out.append(
            '<div class="scroll"><table class="whatif breaks"><thead><tr><th>call</th><th>lost</th>'
            f"<th>tokens</th><th>why</th><th>what changed</th></tr></thead><tbody>{rows}</tbody></table></div>"
        )
    return out


def _cost_text(profile: Profile) -> str:
    """The summary's cost and cache lines, as a list."""
    from tokprof.pricing.render import cache_lines, cost_lines

    s = profile.summary()
    models = list(dict.fromkeys((c.cost.model, c.cost.provider) for c in profile.calls if c.cost and c.cost.priced))
    lines = cost_lines(s.cost, models) + cache_lines(s.cache)
    if not lines:
        return ""
    items = "".join(f"<li><b>{html.escape(k.strip())}</b>: {html.escape(v)}</li>" for k, v in lines)
    notes = list(s.cost.notes if s.cost else ()) + list(s.cache.notes if s.cache else ())
    extra = "".join(f'<li class="muted">{html.escape(n)}</li>' for n in notes)
    return f"<ul>{items}{extra}</ul>"


def _cards(profile: Profile) -> str:
    from tokprof.pricing.render import billed_input_lines

    s = profile.summary()
    cards = [
        ("calls", f"{s.calls:,}"),
        *((key, value.split(" tokens")[0]) for key, value in billed_input_lines(s)),  # one called "billed input"
        ("final prompt", f"{s.final_prompt:,}"),
        ("largest prompt", f"{s.largest_prompt:,}"),
    ]
    if s.reported is not None:
        if s.reported.cache_read is not None and s.reported.hit_rate is not None:
            cards.append(("read from the cache, reported", f"{s.reported.hit_rate:.1%}"))
    if s.cost is not None:
        from tokprof.pricing.render import dollars

        if s.cost.total is None:
            cards.append(("cost", "unpriced"))
        else:
            label = "cost" + ("" if s.cost.priced else f" ({s.cost.calls_priced} priced calls)")
            if s.cost.basis != "reported":
                label += " (estimate)"
            cards.append((label, dollars(s.cost.total)))
    out = ['<div class="cards">']
    for key, value in cards:
        out.append(f'<div class="card"><div class="v">{value}</div><div class="k">{html.escape(key)}</div></div>')
    estimate = "" if profile.model.exact else ' <span class="estimate">estimate</span>'
    missing = missing_buckets(s.not_recorded)
    for name in profile.buckets():
        swatch = f'<span class="swatch" style="background:{COLORS[name]}"></span>'
        if recorded(s.buckets_billed[name], name, missing) is None:  # not recorded: never a 0
            out.append(
                f'<div class="card nr"><div class="v">n/r</div><div class="k">{swatch}{LABELS[name]}: not '
                "recorded by the log (its tokens are in unrecorded)</div></div>"
            )
            continue
        label = "" if name == "unrecorded" else estimate  # the unrecorded bucket says "inferred" itself
        out.append(
            f'<div class="card"><div class="v">{s.shares[name]:.1%}</div><div class="k">'
            f"{swatch}{LABELS[name]} ({s.buckets_billed[name]:,}){label}</div></div>"
        )
    out.append("</div>")
    return "".join(out)


def _actions_part(profile: Profile) -> str:
    """What to change (tokprof.analyses.actions): each action's saving, why and how, first on the page."""
    from tokprof.render.actions import NOTHING, TITLE, saving_text

    actions = profile.actions
    if actions is None:
        return ""
    if not actions:
        return f'<section class="actions"><h2>{TITLE}</h2><p class="muted">{html.escape(NOTHING)}.</p></section>'
    items = "".join(
        f"<li><b>{html.escape(a.what)}</b>: {html.escape(saving_text(a))}"
        f'<div class="muted">why: {html.escape(a.why)}</div>'
        + (f'<div class="muted">how: {html.escape(a.how)}</div>' if a.how else "")
        + "</li>"
        for a in actions
    )
    return (
        f'<section class="actions"><h2>{TITLE}</h2><p class="muted">Each saving measured on this log (a replay, '
        "or its calls billed again with the cache kept), most first.</p>"
        f"<ol>{items}</ol></section>"
    )


def _results_figure(costs: ToolResultCosts) -> dict:
    """Per tool: the tokens its results added to the prompts."""
    tools = list(costs.tools)
    names = [t.tool or "(unnamed)" for t in tools]
    color = [COLORS["tool_results"]] * len(tools)
    return _bars(names, [t.tokens for t in tools], color, "tokens added", "tokens added")


def _carry_figure(costs: ToolResultCosts) -> dict:
    """Per tool: its results' carry cost, a chart of its own: in US dollars where the log is priced (each
    resent token at the rate its call paid), else in the tokens resent by later calls."""
    names_of = {id(t): t.tool or "(unnamed)" for t in costs.tools}
    color = [COLORS["tool_results"]] * len(costs.tools)
    if costs.carry_dollars is not None and all(t.carry_dollars is not None for t in costs.tools):
        tools = sorted(costs.tools, key=lambda t: (-(t.carry_dollars or 0.0), t.tool or ""))
        figure = _bars(
            [names_of[id(t)] for t in tools],
            [round(t.carry_dollars or 0.0, 6) for t in tools],
            color,
            "carry cost, US dollars",
            "",
        )
        figure["layout"]["xaxis"].update(tickformat="$.3~f", tickprefix="")
        figure["data"][0]["customdata"] = [t.carry_cost for t in tools]
        figure["data"][0]["hovertemplate"] = "%{y}<br>$%{x:.4f} (%{customdata:,} tokens resent)<extra></extra>"
        return figure
    tools = sorted(costs.tools, key=lambda t: (-t.carry_cost, t.tool or ""))
    return _bars(
        [names_of[id(t)] for t in tools],
        [t.carry_cost for t in tools],
        color,
        "tokens resent (carry cost)",
        "tokens resent",
    )


def _results_parts(costs: ToolResultCosts) -> list[str]:
    from tokprof.pricing.render import dollars

    priced = costs.carry_dollars is not None  # the carry cost in dollars too, where the log is priced
    rows = "".join(
        f"<tr><td>{r.call}{' (' + html.escape(r.thread) + ')' if r.thread else ''}</td>"
        f"<td><code>{html.escape(r.tool or '(unnamed)')}</code></td><td>{r.tokens:,}</td><td>{r.carried_by:,}</td>"
        f"<td>{r.carry_cost:,}</td>" + (f"<td>{html.escape(dollars(r.carry_dollars))}</td>" if priced else "") + "</tr>"
        for r in costs.top
    )
    money = f" ({html.escape(dollars(costs.carry_dollars))})" if priced else ""
    per_tool = ""
    if priced:
        per_tool = (
            '<div class="scroll"><table class="results"><thead><tr><th>tool</th><th>results</th><th>tokens</th>'
            "<th>carry cost</th><th>carry $</th></tr></thead><tbody>"
            + "".join(
                f"<tr><td><code>{html.escape(t.tool or '(unnamed)')}</code></td><td>{t.results:,}</td>"
                f"<td>{t.tokens:,}</td><td>{t.carry_cost:,}</td><td>{html.escape(dollars(t.carry_dollars))}</td></tr>"
                for t in costs.tools[:10]
            )
            + "</tbody></table></div>"
        )
    return [
        "<h2>Which tool results cost most</h2>",
        f'<p class="muted">{costs.results:,} tool results added {costs.tokens:,} tokens; resent by later calls, they '
        f"cost {costs.carry_cost:,} more{money} (the carry cost: each result's tokens times the later calls that "
        "resent it"
        + (", in dollars at the rate each of those calls paid for them" if priced else "")
        + "). These are what to cap or elide first (tokprof whatif).</p>",
        "<h3>Tokens added</h3>",
        '<div id="chart-results" class="chart bars"></div>',
        "<h3>Carry cost</h3>",
        '<p class="muted">Each tool\'s results times the later calls that resent them'
        + (", in dollars at the rate each of those calls paid" if costs.carry_dollars is not None else "")
        + ".</p>",
        '<div id="chart-carry" class="chart bars"></div>',
        per_tool,
        '<div class="scroll"><table class="results"><thead><tr><th>call</th><th>tool</th><th>tokens</th>'
        "<th>resent by</th><th>carry cost</th>"
        + ("<th>carry $</th>" if priced else "")
        + f"</tr></thead><tbody>{rows}</tbody></table></div>",
    ]


class HtmlRenderer:
    """One self-contained HTML file; the fill chart uses the options' window (else the model's) and levels."""

    def render(self, profile: Profile, options: RenderOptions = RenderOptions()) -> str:
        return self.page(profile, options)

    def page(
        self,
        profile: Profile,
        options: RenderOptions,
        extra_parts: list[str] | None = None,
        extra_figures: dict[str, dict] | None = None,
        embedded: dict[str, str] | None = None,
    ) -> str:
        """The report, with sections of other analyses at its end (their HTML, their figures, keyed by
        the id of their ``chart-KEY`` element) and other JSON documents embedded (by script id)."""
        from plotly.offline import get_plotlyjs

        model = profile.model
        exact = model.exact  # the model's counts; an inferred bucket is labelled on its own
        window = options.window or model.context_window or DEFAULT_WINDOW
        levels = list(options.levels)
        figures = {
            "buckets": _buckets_figure(profile),
            "billed": _billed_figure(profile),
            "added": _added_figure(profile),
            "window": _window_figure(profile, window, levels),
        }
        section = profile.catalogue
        catalogue = section.catalogue if section else None
        if section and catalogue and catalogue.tools:
            figures["tools"] = _tools_figure(catalogue)
            over_run = _tools_run_figure(catalogue)
            if over_run:
                figures["toolsrun"] = over_run
        reported = _reported_figure(profile)
        if reported:
            figures["reported"] = reported
        cost = _cost_figure(profile)
        if cost:
            figures["cost"] = cost
        cache = _cache_figure(profile)
        if cache:
            figures["cache"] = cache
        costs = profile.tool_result_costs
        if costs is not None and costs.tools:
            figures["results"] = _results_figure(costs)
            figures["carry"] = _carry_figure(costs)
        timeline = _cache_timeline(profile)
        forensics = _forensics_parts(profile, timeline is not None)
        if timeline and forensics:
            figures["cachetime"] = timeline

        parts = [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>tokprof: {html.escape(profile.source.path)}</title>",
            f"<style>{CSS}</style>",
            # record script errors where a test (or a curious reader) can find them
            "<script>window.__tokprofErrors=[];window.addEventListener('error',function(e){"
            "window.__tokprofErrors.push(String(e.message));document.documentElement.setAttribute("
            "'data-js-errors',window.__tokprofErrors.join(' | '));});</script>",
            f"<script>{get_plotlyjs()}</script>",
            "</head><body>",
            "<h1>Where the prompt tokens went</h1>",
            f'<div class="muted source">{html.escape(profile.source.path)} · model '
            f"{html.escape(model.name)} · tokenizer {html.escape(model.tokenizer)} · template "
            f"{html.escape(model.chat_template)} · "
            + ("exact counts" if exact else '<span class="estimate">estimated counts</span>')
            + "</div>",
            _actions_part(profile),
            "" if exact else f'<p><span class="estimate">Estimate:</span> {html.escape(str(model.method))}.</p>',
            f'<p><span class="estimate">Inferred:</span> {html.escape(profile.inferred)}.</p>'
            if profile.inferred
            else "",
            _cards(profile),
        ]
        if profile.warnings:  # folded: on a phone a long list would come before the first chart
            count = len(profile.warnings)
            parts.append(
                f'<details class="warn"><summary>{count} warning{"s" if count > 1 else ""} about this '
                'log</summary><ul class="warn">'
                + "".join(
                    f"<li>{html.escape(w.message)}"
                    + (f" ({len(w.calls)} calls)" if w.calls else "")
                    + (f": {html.escape(', '.join(w.places[:5]))}" if w.places else "")
                    + "</li>"
                    for w in profile.warnings
                )
                + "</ul></details>"
            )
        parts += forensics
        parts.append("<h2>Tokens per call</h2>")
        subagents = len({c.thread for c in profile.calls}) > 1
        parts.append(
            '<p class="muted">Each call\'s prompt, split into its buckets'
            + (" (the main conversation; each subagent's prompts are a line of their own)" if subagents else "")
            + ".</p>"
        )
        parts.append('<div id="chart-buckets" class="chart"></div>')
        parts.append("<h2>Billed input so far</h2>")
        parts.append('<p class="muted">The input billed up to each call: every prompt added up.</p>')
        parts.append('<div id="chart-billed" class="chart"></div>')
        parts.append("<h2>What each call added</h2>")
        parts.append(
            '<p class="muted">Each call\'s prompt minus the previous prompt of its conversation, per bucket; '
            "hover for the messages it added. A jump with no message to explain it is content the log does "
            "not record; a drop is a rewrite or a compaction.</p>"
        )
        parts.append('<div id="chart-added" class="chart"></div>')
        if section and catalogue and "tools" in figures:
            parts.append("<h2>Tool catalogue</h2>")
            text = (
                f"{catalogue.total:,} tokens per request: {catalogue.total - catalogue.scaffolding:,} "
                f"for the tools and {catalogue.scaffolding:,} of scaffolding. Tools never called in red."
            )
            if section.unused_waste is not None:
                text += f" Unused tools cost {section.unused_waste:,} tokens over the run."
            parts.append(f'<p class="muted">{html.escape(text)}</p>')
            parts.append("<h3>Per request</h3>")
            parts.append('<div id="chart-tools" class="chart bars"></div>')
            if "toolsrun" in figures:
                parts.append("<h3>Over the run</h3>")
                parts.append(
                    '<p class="muted">Each definition\'s tokens times the requests that carried it.</p>'
                    '<div id="chart-toolsrun" class="chart bars"></div>'
                )
            if section.unknown_tool_calls:
                parts.append(
                    "<p>Calls to tools not in the catalogue:</p><ul>"
                    + "".join(
                        f"<li><code>{html.escape(u.name)}</code> × {u.calls}"
                        + (f" (closest: <code>{html.escape(u.closest)}</code>)" if u.closest else "")
                        + "</li>"
                        for u in section.unknown_tool_calls
                    )
                    + "</ul>"
                )
        if cost or (profile.summary().cost is not None):
            parts.append("<h2>What it cost</h2>")
            parts.append(_cost_text(profile))
            if cost:
                parts.append('<div id="chart-cost" class="chart"></div>')
        if cache:
            parts.append("<h2>Prompt cache</h2>")
            parts.append(
                '<p class="muted">Each prompt, and the cache reads the provider\'s rules predict from what it '
                "shares with the previous prompt of its conversation, beside the reported ones.</p>"
            )
            parts.append('<div id="chart-cache" class="chart"></div>')
        parts.append("<h2>Context window</h2>")
        parts.append(
            f'<p class="muted">Each prompt as a share of a {window:,}-token window, with lines at '
            + " and ".join(f"{level:.0%}" for level in levels)
            + ".</p>"
        )
        parts.append('<div id="chart-window" class="chart"></div>')
        if "reported" in figures:
            parts.append("<h2>Computed versus reported</h2>")
            parts.append('<div id="chart-reported" class="chart"></div>')
        if "results" in figures and costs is not None:
            parts += _results_parts(costs)
        parts += extra_parts or []
        figures.update(extra_figures or {})
        data = _in_script(json.dumps(profile.to_dict(), ensure_ascii=False))
        parts.append(f'<script id="tokprof-profile" type="application/json">{data}</script>')
        for name, text in (embedded or {}).items():
            safe_text = _in_script(text)
            parts.append(f'<script id="{html.escape(name)}" type="application/json">{safe_text}</script>')
        figs = _in_script(json.dumps(figures, ensure_ascii=False))
        parts.append(
            "<script>(function(){var figs=" + figs + ";var config={responsive:true,displaylogo:false,"
            f"displayModeBar:window.innerWidth>={NARROW}?'hover':false}};"
            "var jobs=Object.keys(figs).map(function(k){return Plotly.newPlot('chart-'+k,figs[k].data,"
            "figs[k].layout,config);});Promise.all(jobs).then(function(){document.documentElement.setAttribute("
            "'data-charts-rendered',String(jobs.length));});})();</script>"
        )
        parts.append("</body></html>")
        return "\n".join(parts) + "\n"
