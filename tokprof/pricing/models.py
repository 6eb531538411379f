"""The models genai-prices' bundled data knows, by the name a log gives them (offline; never updated from
here): the provider, the model id and its context window, and the closest known name to a misspelt one.
Names are matched as genai-prices matches them (``gpt-5.1-codex`` is ``gpt-5.1``), after a provider
prefix such as ``openai/`` is taken as the provider."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from tokprof.pricing.genai import snapshot
from tokprof.pricing.table import entry


@dataclass(frozen=True)
class KnownModel:
    provider: str  # genai-prices' provider id
    model: str  # genai-prices' model id
    context_window: int | None


@lru_cache(maxsize=512)
def known(name: str | None) -> KnownModel | None:
    """The model a log's model name is, in the public data; None when it is not there (from the
    table of the models logs name, :mod:`tokprof.pricing.table`: genai-prices is loaded only
    for a name the table has not seen)."""
    if not name:
        return None
    found = entry(name)
    if found is None:
        return None
    return KnownModel(found.provider.id, found.model.id, found.model.context_window)


def context_window(names: list[str | None]) -> int | None:
    """The context window of the model a log names, when every name it gives has the same known one."""
    windows = {k.context_window for n in set(names) if n and (k := known(n)) is not None}
    windows.discard(None)
    return windows.pop() if len(windows) == 1 else None


def closest(name: str, providers: tuple[str, ...]) -> str | None:
    """The model id of these providers closest to a name that is not one (a misspelling), or None."""
    import difflib

    data = snapshot()
    if data is None:
        return None
    ids = [m.id for p in data.providers if p.id in providers for m in p.models]
    close = difflib.get_close_matches(name.lower().rsplit("/", 1)[-1], ids, n=1, cutoff=0.6)
    return close[0] if close else None
