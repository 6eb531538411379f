"""The HTML report's layout in a real browser (headless Chromium), at a phone's width and a desktop's:
the page never scrolls sideways, the call axes end where the calls do, labels and legends print over
nothing, tables fit, and warnings are folded away from the first chart. Screenshots of both widths
are left in the test's temporary folder for a person to look at."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from conftest import FIXTURES, ROOT
from tokprof.frontends.cli import main

SAMPLE = ROOT / "samples" / "incident_session.json"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (Debian package chromium)")

#: Measures the page once plotly has drawn every chart.
MEASURE = """() => {
 function box(e){var r=e.getBoundingClientRect();return [r.left,r.top,r.right,r.bottom];}
 function shown(e){return !!e && getComputedStyle(e).display!=='none' && e.getBoundingClientRect().width>0;}
 var charts={};
 document.querySelectorAll('.chart').forEach(function(gd){
  if(!gd._fullLayout){return;}
  var legend=gd.querySelector('.legend'), bar=gd.querySelector('.modebar');
  var plot=gd.querySelector('.draglayer .nsewdrag');  // the plot area
  function labels(sel){return Array.prototype.map.call(gd.querySelectorAll(sel),box).filter(function(b){return b[2]>b[0];});}
  charts[gd.id]={xrange:gd._fullLayout.xaxis?gd._fullLayout.xaxis.range:null,
   annotations:Array.prototype.map.call(gd.querySelectorAll('.annotation'),box),
   legend:shown(legend)?box(legend):null, modebar:shown(bar)?box(bar):null,
   plot:plot?box(plot):null, xticks:labels('.xtick text'), yticks:labels('.ytick text'),
   top:gd.getBoundingClientRect().top+window.scrollY};
 });
 var actions=document.querySelector('section.actions');
 return {width:window.innerWidth, scroll:document.documentElement.scrollWidth, charts:charts,
  tables:Array.prototype.map.call(document.querySelectorAll('table'),function(t){return box(t)[2];}),
  actionsTop:actions?actions.getBoundingClientRect().top+window.scrollY:null,
  openWarnings:document.querySelectorAll('details.warn[open]').length,
  warnings:document.querySelectorAll('details.warn li').length,
  errors:document.documentElement.getAttribute('data-js-errors')};
}"""


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright (the test extra)")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-quic",
            ],
        )
        yield launched
        launched.close()


def measure(browser, page_file, tmp_path, width: int) -> dict:
    """The page's layout in a viewport ``width`` pixels wide, with a screenshot of the whole page."""
    page = browser.new_page(viewport={"width": width, "height": 1000})
    try:
        page.goto(page_file.as_uri())
        page.wait_for_function("document.documentElement.hasAttribute('data-charts-rendered')", timeout=60000)
        page.screenshot(path=str(tmp_path / f"{page_file.stem}-{width}.png"), full_page=True)
        layout = page.evaluate(MEASURE)
    finally:
        page.close()
    assert layout["errors"] is None, layout["errors"]
    return layout


def overlap(a, b) -> bool:
    return a[0] < b[2] - 1 and b[0] < a[2] - 1 and a[1] < b[3] - 1 and b[1] < a[3] - 1


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pages")
    report, whatif = folder / "report.html", folder / "whatif.html"
    assert main(["report", str(SAMPLE), "-o", str(report)]) == 0
    assert (
        main(
            [
                "whatif",
                str(SAMPLE),
                "-p",
                "compact:80",
                "-p",
                "cap:2000",
                "--html",
                str(whatif),
                "-o",
                str(folder / "whatif.txt"),
                "--no-progress",
            ]
        )
        == 0
    )
    return report, whatif


@pytest.mark.parametrize("width", [400, 1280])
def test_report_layout(browser, pages, tmp_path, width):
    layout = measure(browser, pages[0], tmp_path, width)
    assert layout["width"] == width
    assert layout["scroll"] <= width  # nothing makes the page scroll sideways
    assert all(right <= width for right in layout["tables"])  # the costliest results fit, carry cost included
    charts = layout["charts"]
    assert {
        "chart-buckets",
        "chart-billed",
        "chart-added",
        "chart-tools",
        "chart-toolsrun",
        "chart-window",
        "chart-results",
        "chart-carry",
    } <= set(charts)
    for name in ("chart-buckets", "chart-billed", "chart-added", "chart-window"):
        assert charts[name]["xrange"][1] <= 58.5  # the sample's last call is 58: the axis ends there
    crossings = charts["chart-buckets"]["annotations"]
    assert len(crossings) == 2 and not overlap(*crossings)
    nothing_overlaps(charts)
    assert layout["actionsTop"] is not None and layout["actionsTop"] < charts["chart-buckets"]["top"]
    assert charts["chart-buckets"]["top"] < (1700 if width < 600 else 1200)  # the first chart within a screen or so


def nothing_overlaps(charts: dict) -> None:
    """No legend on the plot, the toolbar or another legend; no tick label on another of its axis (#47.5)."""
    for name, chart in charts.items():
        if chart["legend"] and chart["modebar"]:
            assert not overlap(chart["legend"], chart["modebar"]), name
        if chart["legend"] and chart["plot"]:
            assert not overlap(chart["legend"], chart["plot"]), name
        for axis in ("xticks", "yticks"):
            ticks = chart[axis]
            for i, a in enumerate(ticks):
                for b in ticks[i + 1 :]:
                    assert not overlap(a, b), (name, axis, a, b)


def test_warnings_are_folded(browser, tmp_path):
    """A log with warnings (here a cut-off last line) lists them folded (closed) above the first chart."""
    path = tmp_path / "records.jsonl"
    path.write_text(
        (FIXTURES / "good_records.jsonl").read_text(encoding="utf-8") + '{"request": {"mod', encoding="utf-8"
    )
    page = tmp_path / "warned.html"
    assert main(["report", str(path), "-o", str(page)]) == 0
    assert '<details class="warn">' in page.read_text(encoding="utf-8")
    layout = measure(browser, page, tmp_path, 400)
    assert layout["warnings"] >= 1 and layout["openWarnings"] == 0
    assert layout["scroll"] <= 400


def test_whatif_identical_policies_stay_visible(browser, pages, tmp_path):
    """whatif's prompts chart draws a policy whose prompts equal another's dashed, and names it so."""
    text = pages[1].read_text(encoding="utf-8")
    figures = json.loads(re.search(r"var figs=(\{.*?\});var config", text, re.S).group(1))
    names = [line["name"] for line in figures["whatif-prompts"]["data"]]
    assert names[0] == "full"
    assert "compact:80 (same as full)" in names  # the sample never reaches 80% of the window
    layout = measure(browser, pages[1], tmp_path, 400)
    assert layout["scroll"] <= 400
    nothing_overlaps({name: chart for name, chart in layout["charts"].items() if not name.startswith("chart-whatif")})


def test_a_session_with_a_subagent_at_a_phones_width(browser, tmp_path):
    """A priced Claude Code session with a subagent (tests/test_actions.py's): the subagent is a line of its
    own, labelled; "what to change" comes first; n/r cards; nothing overlaps at 400 px."""
    from test_actions import claude_session

    page = tmp_path / "session.html"
    assert main(["report", str(claude_session(tmp_path)), "-o", str(page), "--no-progress"]) == 0
    text = page.read_text(encoding="utf-8")
    figures = json.loads(re.search(r"var figs=(\{.*?\});var config", text, re.S).group(1))
    names = [t["name"] for t in figures["buckets"]["data"]]
    assert "subagent feed1: its prompt" in names and "tool results (main)" in names
    window = [t["name"] for t in figures["window"]["data"]]
    assert window == ["prompt / window (main)", "prompt / window (subagent feed1)"]
    assert text.count('<div class="v">n/r</div>') == 2  # system and tool definitions: not recorded, never 0
    assert "0.0% system" not in text and "system (0)" not in text
    layout = measure(browser, page, tmp_path, 400)
    assert layout["scroll"] <= 400
    nothing_overlaps(layout["charts"])
    assert layout["actionsTop"] < min(chart["top"] for chart in layout["charts"].values())
