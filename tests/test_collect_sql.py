"""docs/collect.md's SQL, run as written on DuckDB and on chdb (ClickHouse's engine, in process) over
tables a real collector wrote; both engines agree, and the figures are the rows' own. The Grafana
dashboard shipped (docs/grafana/tokprof.json) loads and its panels' SQL are the page's queries."""

from __future__ import annotations

import json
import re
from datetime import date
from decimal import Decimal

import pytest
from test_collect import T0, calls_of, claude_logs, collector, kv, post

from conftest import ROOT

duckdb = pytest.importorskip("duckdb")

PAGE = ROOT / "docs" / "collect.md"
DASHBOARD = ROOT / "docs" / "grafana" / "tokprof.json"
NAMES = (
    "spend_by_day",
    "spend_by_user",
    "spend_by_project",
    "spend_by_model",
    "cache_hit_rate",
    "dollars_lost_to_misses",
)


def queries() -> dict[str, str]:
    text = PAGE.read_text(encoding="utf-8")
    return {
        name: sql.strip() for name, sql in re.findall(r"^```sql\n-- tokprof:query (\w+)\n(.*?)^```", text, re.M | re.S)
    }


def views() -> tuple[str, str]:
    """The page's two view definitions (DuckDB's, ClickHouse's)."""
    text = PAGE.read_text(encoding="utf-8")
    found = re.findall(r"^```sql\n(create view calls as\n.*?)^```", text, re.M | re.S)
    assert len(found) == 2, found
    return found[0].strip().rstrip(";"), found[1].strip().rstrip(";")


def spans(model: str, prompts: list[tuple[int, int, int]], session: str, project: str) -> bytes:
    """GenAI spans of one conversation: (prompt, cache read, cache write) per call, a minute apart."""
    out = []
    for i, (prompt, read, write) in enumerate(prompts):
        attrs = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": model,
            "gen_ai.conversation.id": session,
            "gen_ai.usage.input_tokens": prompt,
            "gen_ai.usage.cache_read.input_tokens": read,
            "gen_ai.usage.cache_creation.input_tokens": write,
            "gen_ai.usage.output_tokens": 100,
            "user.id": "cy",
        }
        out.append(
            {
                "traceId": f"{i + 1:032x}",
                "spanId": f"{i + 1:016x}",
                "name": f"chat {model}",
                "startTimeUnixNano": str((T0 + 86_400 + 60 * i) * 10**9),
                "attributes": [kv(k, v) for k, v in attrs.items()],
            }
        )
    resource = {"attributes": [kv("service.name", "sdk-app"), kv("tokprof.project", project)]}
    return json.dumps({"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": out}]}]}).encode()


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    base = tmp_path_factory.mktemp("collect-sql")
    out = base / "tables"
    with collector(out, spool=base / "spool", collector="c1") as (url, _):
        assert post(url + "/v1/logs", claude_logs(3))[0] == 200
        assert post(url + "/v1/logs", claude_logs(2, session="s2", user="bo@example.com"))[0] == 200
        # the third call reads almost nothing: its prefix changed, and it writes 9,000 tokens again
        calls = [(10_000, 0, 9_000), (11_000, 9_000, 1_900), (12_000, 500, 11_000)]
        assert post(url + "/v1/traces", spans("claude-sonnet-4-5-20250929", calls, "conv-1", "api"))[0] == 200
    return out


def normal(value):
    if isinstance(value, Decimal):
        value = float(value)
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, date):
        return value.isoformat()
    return value


def on_duckdb(folder, sql: str) -> list[tuple]:
    view = views()[0].replace("'tables/**/*.parquet'", f"'{folder}/**/*.parquet'")
    connection = duckdb.connect()
    connection.execute(view)
    return [tuple(normal(v) for v in row) for row in connection.execute(sql).fetchall()]


def on_clickhouse(folder, sql: str) -> list[tuple]:
    session_module = pytest.importorskip("chdb.session")
    view = views()[1]
    view = re.sub(r"s3\('[^']*'", f"file('{folder}/**/*.parquet'", view)  # a local folder: file()
    session = session_module.Session()
    try:
        session.query(view)
        found = json.loads(str(session.query(sql, "JSONCompact")))
    finally:
        session.close()
    kinds = [m["type"] for m in found["meta"]]
    return [tuple(normal(_typed(v, k)) for v, k in zip(row, kinds)) for row in found["data"]]


def _typed(value, kind: str):
    """ClickHouse's JSON writes 64-bit integers as strings; decimals and floats as numbers."""
    if isinstance(value, str) and re.search(r"Int64|Int128|UInt64", kind):
        return int(value)
    return value


def test_the_page_has_each_query_once():
    assert tuple(queries()) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_each_query_gives_the_same_rows_on_duckdb_and_clickhouse(tables, name):
    sql = queries()[name]
    assert on_duckdb(tables, sql) == on_clickhouse(tables, sql)


def test_the_figures_are_the_rows_own(tables):
    rows = calls_of(tables)
    sql = queries()
    by_user = {who: (calls, dollars) for who, calls, dollars in on_duckdb(tables, sql["spend_by_user"])}
    ana = [r for r in rows if r["user"] == "ana@example.com"]
    assert by_user["ana@example.com"] == (3, round(sum(r["cost_total"] for r in ana), 6))
    assert set(by_user) == {"ana@example.com", "bo@example.com", "cy"}
    days = on_duckdb(tables, sql["spend_by_day"])
    assert [d[0] for d in days] == ["2026-11-30", "2026-12-01"] and sum(d[1] for d in days) == len(rows) == 8
    projects = dict((p, c) for p, c, _ in on_duckdb(tables, sql["spend_by_project"]))
    assert projects == {"api": 3, "unknown": 5}
    ((reason, calls, written, dollars),) = on_duckdb(tables, sql["dollars_lost_to_misses"])
    missed = [r for r in rows if r["cache_miss"] == "prefix-changed"]
    assert (reason, calls, written) == ("prefix-changed", 1, 11_000) and len(missed) == 1
    assert dollars == round(missed[0]["cost_cache_write"], 6) > 0
    rates = {m: rate for m, _, _, rate in on_duckdb(tables, sql["cache_hit_rate"])}
    sonnet = [r for r in rows if r["model"] == "claude-sonnet-4-5-20250929"]
    expected = sum(r["reported_cache_read"] for r in sonnet) / sum(r["reported_prompt"] for r in sonnet)
    assert rates["claude-sonnet-4-5-20250929"] == round(expected, 4)


def test_the_grafana_dashboard_loads_and_its_panels_are_the_documented_queries():
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    panels = dashboard["panels"]
    assert dashboard["uid"] and dashboard["title"] and len({p["id"] for p in panels}) == len(panels)
    found = [target["rawSql"] for panel in panels for target in panel["targets"]]
    assert sorted(found) == sorted(queries().values())
    for panel in panels:
        assert panel["datasource"]["type"] == "grafana-clickhouse-datasource" and panel["title"]
        assert set(panel["gridPos"]) == {"h", "w", "x", "y"}
    names = [v["name"] for v in dashboard["templating"]["list"]]
    assert "datasource" in names
