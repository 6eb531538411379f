"""The HTML report: written atomically, carries the profile's data, and renders in a real browser."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from conftest import FIXTURES, ROOT
from tokprof.frontends.cli import main

SAMPLE = ROOT / "samples" / "incident_session.json"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def embedded_profile(text: str) -> dict:
    match = re.search(r'<script id="tokprof-profile" type="application/json">(.*?)</script>', text, re.S)
    assert match
    return json.loads(match.group(1))


@pytest.fixture(scope="module")
def sample_report(tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "report.html"
    assert main(["report", str(SAMPLE), "-o", str(path)]) == 0
    return path


def test_report_carries_the_profile(sample_report, sample_profile):
    text = sample_report.read_text(encoding="utf-8")
    assert not re.search(r"<script[^>]*\ssrc=", text)  # plotly.js is embedded, nothing is fetched
    doc = embedded_profile(text)
    expected = json.loads(sample_profile.read_text(encoding="utf-8"))
    assert doc == expected
    assert 'id="chart-buckets"' in text and 'id="chart-tools"' in text and 'id="chart-window"' in text


def test_profile_html_option_and_reported_chart(tmp_path, capsys):
    html = tmp_path / "r.html"
    assert main(["profile", str(FIXTURES / "good_records.jsonl"), "--html", str(html), "-f", "csv"]) == 0
    text = html.read_text(encoding="utf-8")
    assert 'id="chart-reported"' in text
    assert embedded_profile(text)["summary"]["billed_input_reported"] == 610 + 760 + 820


def figures(text: str) -> dict:
    match = re.search(r"var figs=(\{.*?\});var config", text, re.S)
    assert match
    return json.loads(match.group(1))


def test_axes_read_as_whole_calls_and_round_counts(sample_report):
    figs = figures(sample_report.read_text(encoding="utf-8"))
    assert set(figs) == {"buckets", "billed", "added", "tools", "toolsrun", "window", "results", "carry"}
    for name in ("buckets", "billed", "added", "window"):
        axis = figs[name]["layout"]["xaxis"]
        assert axis["tickformat"] == "d" and isinstance(axis["dtick"], int) and axis["dtick"] >= 1
    for name, fig in figs.items():  # one axis per chart (#47.5): never two scales on one chart
        assert "yaxis2" not in fig["layout"] and all("yaxis" not in t for t in fig["data"]), name
    for name in ("tools", "toolsrun", "results", "carry"):  # a row per tool: names never overlap
        (bars,) = figs[name]["data"]
        assert bars["orientation"] == "h" and "f" not in figs[name]["layout"]["xaxis"]["tickformat"]
    assert figs["tools"]["layout"]["xaxis"]["title"]["text"] == "tokens per request"
    assert figs["toolsrun"]["layout"]["xaxis"]["title"]["text"] == "tokens over the run"
    bars = figs["tools"]["data"][0]
    colours = dict(zip(bars["y"], bars["marker"]["color"]))
    unused = [n for n in bars["y"] if n.endswith("(unused)")]
    assert unused and all(colours[n] == "#d1242f" for n in unused)  # never called: red, the text says so
    added = figs["added"]["data"]
    assert {t["name"] for t in added} >= {"tool results", "conversation"}
    assert any(note == "adds 1 assistant, 1 tool" for t in added for note in t["customdata"])


def test_the_window_is_the_log_models(tmp_path, capsys):
    log = json.loads((FIXTURES / "good_transcript.json").read_text())
    log["model"] = "gpt-4.1"
    path = tmp_path / "log.json"
    path.write_text(json.dumps(log))
    out = tmp_path / "r.html"
    assert main(["report", str(path), "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert embedded_profile(text)["model"]["context_window"] > 128000  # genai-prices' window for gpt-4.1
    assert "share of a 1,0" in text


def test_failed_report_leaves_existing_file_alone(tmp_path, capsys):
    target = tmp_path / "report.html"
    target.write_text("old")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert main(["report", str(bad), "-o", str(target)]) == 2
    assert target.read_text() == "old"
    assert sorted(tmp_path.iterdir()) == sorted([bad, target])  # no temporary file left behind


def test_bad_window_options(tmp_path, capsys):
    assert (
        main(
            [
                "report",
                str(FIXTURES / "good_transcript.json"),
                "-o",
                str(tmp_path / "r.html"),
                "--fill-lines",
                "seventy",
            ]
        )
        == 2
    )
    assert "--fill-lines" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


@pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (Debian package chromium)")
def test_report_renders_in_chromium(sample_report, tmp_path):
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--virtual-time-budget=20000",
        "--dump-dom",
        sample_report.as_uri(),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=180)
    dom = result.stdout
    assert "<html" in dom, result.stderr[-2000:]
    root = re.search(r"<html[^>]*>", dom).group(0)  # the page records script errors and rendered charts here
    assert "data-js-errors" not in root, root
    # tokens per call, billed so far, what each call added, tools per request and over the run, window,
    # results added and carried
    assert 'data-charts-rendered="8"' in root
    assert dom.count('class="main-svg"') >= 3  # plotly drew its SVG layers


@pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (Debian package chromium)")
def test_whatif_report_renders_in_chromium(tmp_path):
    page = tmp_path / "whatif.html"
    assert (
        main(
            [
                "whatif",
                str(SAMPLE),
                "-p",
                "compact:30",
                "-p",
                "cap:2000",
                "--html",
                str(page),
                "-o",
                str(tmp_path / "w.txt"),
                "--no-progress",
            ]
        )
        == 0
    )
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--virtual-time-budget=20000",
        "--dump-dom",
        page.as_uri(),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=180)
    root = re.search(r"<html[^>]*>", result.stdout).group(0)
    assert "data-js-errors" not in root, root
    assert 'data-charts-rendered="10"' in root  # the profile's eight, billed input per policy, prompts per call


def test_names_from_the_log_cannot_end_or_open_a_script_element(tmp_path):
    """A tool or model name with ``<!--<script>`` or ``</script>`` in it stays data: the JSON inside the
    report's script elements holds no ``<``, and reads back to the same names."""
    hostile = "get_logs<!--<script></script>&"
    log = json.loads(SAMPLE.read_text(encoding="utf-8"))
    text = json.dumps(log).replace('"get_logs"', json.dumps(hostile))
    assert hostile in text
    path = tmp_path / "log.json"
    path.write_text(text, encoding="utf-8")
    out = tmp_path / "report.html"
    assert main(["report", str(path), "-o", str(out)]) == 0
    html_text = out.read_text(encoding="utf-8")
    scripts = re.findall(r'<script id="[^"]*" type="application/json">(.*?)</script>', html_text, re.S)
    assert scripts and not any("<" in s or ">" in s for s in scripts)
    assert hostile in json.dumps(embedded_profile(html_text), ensure_ascii=False)
    assert "<!--<script>" not in html_text
