"""Models loaded once per process: each name and chat template is resolved the first time it is
asked for and kept, so that a worker profiling many sessions loads its model once."""

from __future__ import annotations

from tokprof.models import auto_model, label, resolve_model
from tokprof.models.base import ChatModel

_LOADED: dict[tuple[str, str | None], ChatModel] = {}


def chat_model(name: str | None, chat_template: str | None, log_models: list[str | None] | None) -> ChatModel:
    """A loaded model, once per process for each name and template; chosen from the log's model
    names when ``name`` is None (and then labelled with why)."""
    selected = None
    if name is None:
        name, selected = auto_model(log_models or [])
    key = (name, chat_template)
    if key not in _LOADED:
        _LOADED[key] = resolve_model(name, chat_template)
    return label(_LOADED[key], selected)
