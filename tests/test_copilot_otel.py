"""GitHub Copilot CLI's OpenTelemetry file export with usage redacted (#48.2): its calls are reported,
each call's figures are not recorded (n/r, never 0, not priced), and the run's totals come from the
file's ``gen_ai.client.token.usage`` metric records. A hand-made file of the real shape, and the
shared example when present (../shared/corpus, skipped when absent)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import ROOT
from tokprof.frontends.cli import main

CORPUS = ROOT.parent / "shared" / "corpus" / "otel" / "copilot-cli_file-exporter_phase2.jsonl"
REDACTED = "[REDACTED]"


def span(n: int) -> dict:
    return {
        "type": "span",
        "traceId": "0aa2e47d130605500f9fb3589828bceb",
        "spanId": f"{n:016x}",
        "name": "chat claude-opus-4.6",
        "startTime": [1785772223 + 10 * n, 288000000],
        "attributes": {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "github",
            "gen_ai.request.model": "claude-opus-4.6",
            "gen_ai.conversation.id": "ff420841",
            "gen_ai.usage.input_tokens": REDACTED,
            "gen_ai.usage.output_tokens": REDACTED,
            "gen_ai.response.id": f"msg_{n}",
        },
        "status": {"code": 0},
    }


def metric(calls: int, sums: tuple[float, float], end: int, types: tuple[str, str] = (REDACTED, REDACTED)) -> dict:
    points = []
    for kind, total in zip(types, sums):
        attrs = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "claude-opus-4.6", "gen_ai.token.type": kind}
        points.append(
            {
                "attributes": attrs,
                "startTime": [1785772221, 532640070],
                "endTime": [end, 0],
                "value": {"count": calls, "sum": total, "min": 1.0, "max": total},
            }
        )
    return {"type": "metric", "name": "gen_ai.client.token.usage", "unit": "{token}", "dataPoints": points}


def write(path: Path, records: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


def run(args: list[str], capsys) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_redacted_usage_reports_the_calls_and_the_metric_totals(tmp_path, capsys):
    # cumulative records: the last one holds the run (3 calls), the first only its start
    records = [
        span(0),
        metric(1, (22812.0, 81.0), 1785772281),
        span(1),
        span(2),
        metric(3, (81279.0, 563.0), 1785772341),
    ]
    log = write(tmp_path / "copilot.jsonl", records)
    code, out, err = run(["profile", log, "--no-progress"], capsys)
    assert code == 0, err
    assert "(3 calls" in out
    rows = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit() and "n/r" in line]
    assert len(rows) == 3 and all(cell == "n/r" for row in rows for cell in row[1:])
    assert "billed input    not recorded" in out and " 0 tokens" not in out and "$0" not in out
    assert "81,279 input and 563 output tokens over 3 calls" in " ".join(out.split())
    code, text, err = run(["profile", log, "--no-progress", "-f", "json"], capsys)
    found = json.loads(text)
    assert found["summary"]["calls"] == 3
    assert all(c["reported"] is None and c["messages"] == 0 for c in found["calls"])
    assert all(c["cost"]["priced"] is False and "neither" in c["cost"]["reason"] for c in found["calls"])
    (note,) = [w for w in found["warnings"] if w["code"] == "usage-from-metrics"]
    assert "81,279 input" in note["message"] and "redacted" in note["message"]
    # figures not recorded are null in the JSON, never 0, and a saved profile of them loads again
    assert all(c["total"] is None and c["cumulative"] is None and c["computed"] is None for c in found["calls"])
    assert all(set(c["buckets"].values()) == {None} for c in found["calls"])
    summary = found["summary"]
    assert summary["billed_input"] is None and summary["largest_prompt"] is None
    assert set(summary["buckets_billed"].values()) == {None}
    saved = tmp_path / "saved.json"
    saved.write_text(text, encoding="utf-8")
    code, again, err = run(["profile", str(saved), "--no-progress", "-f", "json"], capsys)
    assert code == 0 and again == text, err


def test_named_token_types_and_delta_records_add_up(tmp_path, capsys):
    records = [
        span(0),
        metric(1, (100.0, 7.0), 1785772281, types=("input", "output")),
        span(1),
        {**metric(1, (250.0, 9.0), 1785772341, types=("input", "output"))},
    ]
    for point in records[3]["dataPoints"]:
        point["startTime"] = [1785772281, 0]  # a delta record: its own window
    log = write(tmp_path / "delta.jsonl", records)
    code, out, err = run(["profile", log, "--no-progress"], capsys)
    assert code == 0, err
    text = " ".join(out.split())
    assert "350 input and 16 output tokens over 2 calls" in text and "redacted too" not in text


def test_without_the_metric_there_is_still_nothing_to_profile(tmp_path, capsys):
    log = write(tmp_path / "bare.jsonl", [span(0), span(1)])
    code, out, err = run(["profile", log, "--no-progress"], capsys)
    assert code == 2 and "nothing to profile" in err and "Traceback" not in err


def test_a_bad_metric_sum_is_one_line(tmp_path, capsys):
    bad = metric(1, (100.0, 7.0), 1785772281)
    bad["dataPoints"][0]["value"]["sum"] = "lots"
    log = write(tmp_path / "bad.jsonl", [span(0), bad])
    code, out, err = run(["profile", log, "--no-progress"], capsys)
    assert code == 2 and "line 2: dataPoints[0].value.sum" in err and len(err.strip().splitlines()) == 1


@pytest.mark.skipif(not CORPUS.exists(), reason="the shared corpus is not here")
def test_the_shared_copilot_export(capsys):
    code, text, err = run(["profile", str(CORPUS), "--no-progress", "-f", "json"], capsys)
    assert code == 0, err
    found = json.loads(text)
    assert found["summary"]["calls"] == 21
    assert all(c["reported"] is None and not c["cost"]["priced"] for c in found["calls"])
    (note,) = [w for w in found["warnings"] if w["code"] == "usage-from-metrics"]
    assert "749,425 input and 5,219 output tokens over 21 calls" in note["message"]


def test_whatif_and_check_refuse_figures_not_recorded(tmp_path, capsys):
    """A replay or a budget on calls whose figures are not known would show or pass on 0: one line, exit 2."""
    records = [span(0), span(1), metric(2, (50000.0, 300.0), 1785772341)]
    log = write(tmp_path / "copilot.jsonl", records)
    for args in (["whatif", log, "--no-progress"], ["check", log, "--config", str(ROOT / "samples" / "tokprof.toml")]):
        code, out, err = run(args, capsys)
        assert code == 2 and "no call records its prompt or its usage" in err, (args, err)
        assert len(err.strip().splitlines()) == 1 and out == ""


def test_the_csv_leaves_figures_not_recorded_empty(tmp_path, capsys):
    log = write(tmp_path / "copilot.jsonl", [span(0), span(1), metric(2, (50000.0, 300.0), 1785772341)])
    code, out, err = run(["profile", log, "--no-progress", "-f", "csv"], capsys)
    assert code == 0, err
    header, *rows = [line.split(",") for line in out.strip().splitlines() if not line.startswith("#")]
    assert len(rows) == 2
    for row in rows:
        cells = dict(zip(header, row))
        assert all(cells[name] == "" for name in ("system", "conversation", "total", "cumulative", "computed"))
        assert cells["messages"] == "0" and cells["reported_prompt"] == "" and cells["cache_miss"] == ""
