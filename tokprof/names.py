"""The names a caller chooses from: the formats a result renders in, the log formats, the models and
the context policies, for help texts, option checks and "did you mean". Cheap to import (none of
these loads the pipeline), so that a command line can list them in its ``--help``.

Internal (the front ends import it; not exported from :mod:`tokprof`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tokprof.models.registry import ModelSpec

#: The renderers' name of each result type (the kinds :func:`report_formats` also takes by name).
_KINDS = {
    "Profile": "profile",
    "SessionsReport": "sessions",
    "Periods": "periods",
    "RunDiff": "diff",
    "ToolsReport": "tools",
    "WhatIfReport": "whatif",
    "CheckResult": "check",
    "ProbeReport": "probe",
    "McpReport": "mcp",
    "Discovery": "mcp-list",
}


def result_kind(result: Any) -> str | None:
    """The renderers' name for a result's kind (a list of :class:`LocalSession` is ``local``)."""
    if isinstance(result, (list, tuple)) and all(type(r).__name__ == "LocalSession" for r in result):
        return "local"
    return _KINDS.get(type(result).__name__)


def report_formats(result: Any) -> list[str]:
    """The formats :func:`render_report` writes a result in. ``result`` is a result, or the name of
    its kind without one: ``profile``, ``sessions``, ``local``, ``tools``, ``whatif``, ``probe``,
    ``mcp``, ``mcp-list`` or ``check``."""
    from tokprof.render import RENDERERS

    if isinstance(result, str):
        if result not in RENDERERS:
            raise TypeError(f"report_formats: no kind of result is named {result!r}: {', '.join(RENDERERS)}")
        return list(RENDERERS[result])
    kind = result_kind(result)
    if kind is None:
        raise TypeError(f"report_formats: not a tokprof result: {type(result).__name__}")
    return list(RENDERERS[kind])


def registered_models(*, plugins: bool = False) -> tuple[ModelSpec, ...]:
    """The models :func:`get_model` knows by name, the shipped families first, each a
    :class:`ModelSpec` (``name``, ``aliases``, ``exact``, ``summary``: what it is and how it counts);
    with ``plugins`` the ones other packages register too (finding them scans the installed packages)."""
    from tokprof.models import registry

    return registry.specs() if plugins else registry.shipped()


def context_window(name: str) -> int | None:
    """The context window public data (genai-prices) gives a model's name (``claude-sonnet-4-5``),
    None when it does not know it."""
    from tokprof.pricing.models import context_window as known

    return known([name])


def log_formats() -> tuple[str, ...]:
    """The log formats :func:`read_log` takes as ``input_format`` (without one it detects the format)."""
    from tokprof.formats.registry import names

    return names()


def policy_names(*, default: bool = False) -> tuple[str, ...]:
    """The context policies :func:`whatif` replays, as a user writes them (``window:N``, ``cap:C``, …),
    or with ``default`` the ones it replays when given none."""
    from tokprof.transforms.policies import DEFAULT_POLICIES, syntax

    return DEFAULT_POLICIES if default else syntax()


def model_name(name: str | None = None) -> str:
    """The registered model that counts for a model's name: the default model for None; a registered
    name or alias as its name; a closed model's name (``claude-*``, ``gpt-*``) as its proxy, even one
    the public model data does not list (:func:`get_model` refuses a misspelt ``claude-sonet-4-5``,
    naming the closest). :class:`ModelError` for any other name, with the registered model that would
    serve it (``Qwen/Qwen3-8B``: qwen3) or the name it is near: a Hub id is not taken, not even one
    :func:`get_model` loads offline as the model tokprof embeds. Never reads a path or the network
    (directories, ``.gguf`` files and Hub ids are for :func:`get_model` itself)."""
    from tokprof.base.errors import ModelError
    from tokprof.models import DEFAULT_MODEL, proxies, registry

    if name is None or name == "":
        return DEFAULT_MODEL
    spec = registry.lookup(name)
    if spec is not None:
        return spec.name
    proxy = proxies.proxy_for(name)
    if proxy is not None:
        return proxy
    serving = registry.serving(name)
    hint = (
        (f" (name {serving.name} if {serving.name}'s tokenizer and chat template are the model's)")
        if serving is not None
        else registry.did_you_mean(name)
    )
    raise ModelError(f"unknown model {name!r}{hint}")
