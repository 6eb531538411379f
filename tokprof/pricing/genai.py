"""genai-prices' bundled data (offline; never updated from here) and its lookup of a model by the name a
log gives it: a provider prefix such as ``openai/`` names the provider, and genai-prices' own matching does
the rest (``gpt-5.1-codex`` is ``gpt-5.1``). Used by the table of the models logs name
(:mod:`tokprof.pricing.table`), by :mod:`tokprof.pricing.models` and by pricing."""

from __future__ import annotations

from typing import Any


def snapshot() -> Any:
    """genai-prices' bundled data, or None when the package is not installed."""
    try:
        from genai_prices import data_snapshot
    except ImportError:  # pragma: no cover - a dependency, but the rest of tokprof works without it
        return None
    return data_snapshot.get_snapshot()


def find(name: str) -> tuple[Any, Any]:
    """genai-prices' provider and model for a log's model name (a provider prefix such as ``openai/``
    names the provider); raises LookupError when it has none."""
    data = snapshot()
    if data is None:
        raise LookupError("genai-prices is not installed")
    provider, ref = None, name
    if "/" in name:
        prefix, rest = name.split("/", 1)
        if any(p.id == prefix for p in data.providers):
            provider, ref = prefix, rest
    try:
        return data.find_provider_model(ref, None, provider, None)
    except ValueError as exc:
        raise LookupError(str(exc)) from None
