"""The table of genai-prices' data for the models logs name (tokprof.pricing.table): it prices
every call exactly as genai-prices does, on every model genai-prices has, and a warm table prices a
call without loading genai-prices (or pydantic) at all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import date, timedelta

import pytest

from conftest import ROOT
from tokprof.pricing import cost
from tokprof.pricing.billing import PricedTokens
from tokprof.pricing import table as price_table
from tokprof.pricing.table import Entry, Named, genai_parts, price_parts

USAGES = [
    {"input_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0, "output_tokens": 0},
    {"input_tokens": 1_234, "cache_read_tokens": 0, "cache_write_tokens": 0, "output_tokens": 56},
    {"input_tokens": 150_001, "cache_read_tokens": 120_000, "cache_write_tokens": 20_000, "output_tokens": 3_001},
    {
        "input_tokens": 250_001,
        "cache_read_tokens": 10_000,
        "cache_write_tokens": 200_000,
        "output_tokens": 7,
        "cache_write_1h_tokens": 150_000,
    },
    {"input_tokens": 1_000_003, "cache_read_tokens": 999_000, "cache_write_tokens": 1_000, "output_tokens": 0},
    {
        "input_tokens": 10,
        "cache_read_tokens": 20,
        "cache_write_tokens": 0,
        "output_tokens": 0,
    },  # refused: more read than prompt
]


@pytest.fixture(autouse=True)
def _fresh_table(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKPROF_CACHE_DIR", str(tmp_path / "cache"))
    price_table.clear()
    yield
    price_table.clear()


def _models():
    from genai_prices import data_snapshot

    return [(p, m) for p in data_snapshot.get_snapshot().providers for m in p.models]


def _days(periods) -> list[date | None]:
    days: list[date | None] = [None]
    for period in periods:
        if period.start:
            days += [period.start, period.start - timedelta(days=1)]
    return days


def test_every_model_genai_prices_has_is_priced_as_genai_prices_prices_it():
    """The table's prices for a model, where it keeps them, equal genai-prices' own on every usage
    and day tried; a usage genai-prices refuses, the table leaves to it (None)."""
    written, kept, checked = 0, 0, 0
    for provider, model in _models():
        periods = price_table._periods(provider, model)
        if periods is None:
            continue
        written += 1
        found = Entry(Named(provider.id), Named(model.id), periods)
        if not price_table._agrees(found, provider, model):
            continue  # the table keeps no prices for it: genai-prices prices it itself
        kept += 1
        for day in _days(periods):
            for usage in USAGES:
                mine = price_parts(found, usage, day)
                try:
                    theirs = genai_parts(provider, model, usage, day)
                except (LookupError, ValueError):
                    assert mine is None, (provider.id, model.id, day, usage)
                    continue
                checked += 1
                assert mine == theirs, (provider.id, model.id, day, usage)
    assert written > 1500 and kept > 1500 and checked > 15_000, (written, kept, checked)


@pytest.mark.parametrize(
    "name",
    [
        "claude-sonnet-4-20250514",
        "gpt-4o",
        "gpt-5.1-codex",
        "anthropic/claude-opus-4-1",
        "gemini-2.5-pro",
        "deepseek-chat",
    ],
)
def test_the_models_agents_use_are_in_the_table_with_their_prices(name):
    found = price_table.entry(name)
    assert found is not None
    if name != "deepseek-chat":  # off-peak hours: a time-of-day price, which genai-prices applies itself
        assert found.periods is not None, name


@pytest.mark.parametrize(
    "name",
    [
        "claude-sonnet-4-20250514",
        "gpt-4o",
        "gemini-2.5-pro",
        "deepseek-chat",
        "openai/gpt-4.1-mini",
        "no-such-model-xyz",
    ],
)
@pytest.mark.parametrize("day", [None, date(2025, 3, 1), date(2026, 1, 15)])
def test_a_call_costs_what_genai_prices_says(name, day):
    tokens = PricedTokens(input=30_000, cache_write_5m=5_000, cache_write_1h=2_000, cache_read=200_000, output=900)
    prompt = 237_000

    def priced():
        try:
            return cost.genai_price(name, tokens, prompt, day)
        except LookupError:
            return None

    got = priced()
    from tokprof.pricing.genai import find

    try:
        provider, model = find(name)
    except LookupError:
        assert got is None
        return
    from genai_prices import Usage, calc_price

    usage = cost.genai_usage(tokens, prompt)
    moment = cost._moment(day)
    total = calc_price(Usage(**usage), model.id, provider_id=provider.id, genai_request_timestamp=moment).total_price
    parts = cost.genai_parts(model, Usage(**usage), moment)
    parts["other"] += total - sum(parts.values())
    assert got is not None
    assert (got[0].id, got[1].id) == (provider.id, model.id)
    assert got[2] == {**parts, "total": total}
    price_table.clear()  # the same from the table written to the cache
    assert priced() == got


def test_the_table_is_written_once_per_genai_prices_version_and_read_back(tmp_path):
    price_table.entry("gpt-4o")
    price_table.entry("no-such-model-xyz")
    files = list((tmp_path / "cache" / "prices").iterdir())
    assert [f.name for f in files] == [f"genai-prices-{price_table.genai_version()}-{price_table.TABLE_VERSION}.json"]
    data = json.loads(files[0].read_text())
    assert set(data["names"]) == {"gpt-4o", "no-such-model-xyz"} and data["names"]["no-such-model-xyz"] is None
    first = price_table.entry("gpt-4o")
    price_table.clear()
    assert price_table.entry("gpt-4o") == first


def test_a_damaged_table_is_built_again(tmp_path):
    path = price_table.table_path(price_table.genai_version())
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert price_table.entry("gpt-4o") is not None
    assert "gpt-4o" in json.loads(path.read_text())["names"]


def test_a_damaged_entry_is_made_again(tmp_path):
    first = price_table.entry("gpt-4o")
    path = price_table.table_path(price_table.genai_version())
    data = json.loads(path.read_text())
    data["names"]["gpt-4o"]["periods"][0]["units"][0][5] = "not a number"
    path.write_text(json.dumps(data))
    price_table.clear()
    assert price_table.entry("gpt-4o") == first


def test_the_version_is_genai_prices_own():
    from importlib.metadata import version

    assert price_table.genai_version() == version("genai-prices")


def test_an_unwritable_cache_still_prices(tmp_path, monkeypatch):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file, not a folder")
    monkeypatch.setenv("TOKPROF_CACHE_DIR", str(blocked))
    assert price_table.entry("gpt-4o") is not None


def test_the_cache_follows_xdg_cache_home(tmp_path, monkeypatch):
    monkeypatch.delenv("TOKPROF_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    price_table.entry("gpt-4o")
    assert list((tmp_path / "xdg" / "tokprof" / "prices").glob("genai-prices-*.json"))


def test_a_warm_table_prices_without_loading_genai_prices(tmp_path):
    code = (
        "import sys\n"
        "from tokprof.pricing.cost import genai_price\n"
        "from tokprof.pricing.billing import PricedTokens\n"
        "t = PricedTokens(input=1000, cache_write_5m=0, cache_write_1h=0, cache_read=5000, output=20)\n"
        "print(genai_price('claude-sonnet-4-20250514', t, 6000, None)[2]['total'])\n"
        "print(sorted(m for m in ('genai_prices', 'pydantic', 'httpx', 'httpx2') if m in sys.modules))\n"
    )
    env = {**os.environ, "TOKPROF_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    cold = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    warm = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert cold.splitlines()[0] == warm.splitlines()[0]
    assert "genai_prices" in cold.splitlines()[1]
    assert warm.splitlines()[1] == "[]"
