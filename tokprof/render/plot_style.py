"""The look of the HTML reports' figures (plotly), shared by the profile's report (:mod:`tokprof.render.html`) and
the what-if section (:mod:`tokprof.render.whatif`): colours that read on light and dark backgrounds, the
layout every figure starts from, and the axis of token counts."""

from __future__ import annotations

from typing import Any

FONT = "#8a8f98"  # reads on light and dark backgrounds
GRID = "rgba(138,143,152,0.25)"


def count_axis(title: str, **extra: Any) -> dict:
    """A y axis of token counts, from 0, with plain round numbers (1,000 or 2.5M, never 0.5 or 206f)."""
    axis = {
        "title": {"text": title},
        "gridcolor": GRID,
        "zeroline": False,
        "rangemode": "tozero",
        "tickformat": "~s",
        "tickmode": "auto",
    }
    axis.update(extra)
    return axis


def layout(**extra: Any) -> dict:
    """A figure's layout: transparent, the house font, the legend under the x axis, calls along it."""
    layout = {
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
        "font": {"color": FONT, "family": "system-ui, sans-serif"},
        "margin": {"l": 60, "r": 60, "t": 30, "b": 50},
        "legend": {"orientation": "h", "y": -0.24, "yanchor": "top"},  # under the x axis title
        "hovermode": "x unified",
        "xaxis": {"title": {"text": "call"}, "gridcolor": GRID, "zeroline": False},
        "yaxis": count_axis("tokens"),
    }
    layout.update(extra)
    return layout
