"""The models tokprof can name: a registry of specifications that model families fill.

A family is a module with ``SPECS``, a list of :class:`ModelSpec`; the families tokprof ships are
listed in :data:`FAMILIES`, and another package can add its own through the ``tokprof.models``
entry point group (each entry point names such a list, or a function returning one), or in its own
process with :func:`register`. A new family
is one module: nothing else changes, neither the command line, whose help and "did you mean" read
the registry, nor the attributor, which sees only :class:`tokprof.models.base.ChatModel`.
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

from tokprof.models.base import ChatModel

#: Modules of the families tokprof ships, in the order a log's model names are matched against them.
FAMILIES = (
    "tokprof.models.harmony",
    "tokprof.models.proxies",
    "tokprof.models.llama",
    "tokprof.models.mistral",
    "tokprof.models.deepseek",
    "tokprof.models.qwen",
)
ENTRY_POINT_GROUP = "tokprof.models"


@dataclass(frozen=True)
class ModelSpec:
    """A model tokprof can load by name."""

    name: str
    summary: str  # one line for help texts and listings: what it is and how it counts
    load: Callable[[], ChatModel]
    aliases: tuple[str, ...] = ()
    exact: bool = True
    #: Whether a model name as logs write it ("Qwen/Qwen3-8B", "claude-sonnet-4-5") is served by this
    #: model: used to choose a model when none is named. None: never chosen by itself.
    serves: Callable[[str], bool] | None = None

    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


def _entry_point_specs() -> list[ModelSpec]:
    from importlib.metadata import entry_points

    found: list[ModelSpec] = []
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            value = entry.load()
            specs = value() if callable(value) else value
            found += [spec for spec in specs if isinstance(spec, ModelSpec)]
        except Exception:  # a broken plug-in costs its models, not tokprof
            continue
    return found


@lru_cache(maxsize=1)
def shipped() -> tuple[ModelSpec, ...]:
    """The models of the families tokprof ships."""
    found: list[ModelSpec] = []
    for module in FAMILIES:
        found += importlib.import_module(module).SPECS
    return tuple(found)


@lru_cache(maxsize=1)
def plugins() -> tuple[ModelSpec, ...]:
    """The models other packages register: read only when a name is not a shipped one (scanning the
    installed packages' entry points costs tens of milliseconds, a third of the CLI's start)."""
    return tuple(_entry_point_specs())


#: Models added by :func:`register` in this process (a family of another package, or a test's).
_ADDED: list[ModelSpec] = []


def register(spec: ModelSpec) -> None:
    """Add a model (or replace the one added under its name), after the shipped families: a family
    defined outside the package, without an entry point."""
    _ADDED[:] = [known for known in _ADDED if known.name != spec.name] + [spec]


def unregister(name: str) -> None:
    """Remove a model :func:`register` added."""
    _ADDED[:] = [known for known in _ADDED if known.name != name]


def added() -> tuple[ModelSpec, ...]:
    return tuple(_ADDED)


def specs() -> tuple[ModelSpec, ...]:
    """Every registered model, the shipped families first."""
    return shipped() + added() + plugins()


def _first(match: Callable[[ModelSpec], bool]) -> ModelSpec | None:
    """The first model that matches, shipped families first; plug-ins read only if none does."""
    for group in (shipped, added, plugins):
        found = next((spec for spec in group() if match(spec)), None)
        if found is not None:
            return found
    return None


def lookup(name: str) -> ModelSpec | None:
    """The model registered under this name or alias (case does not matter)."""
    wanted = name.lower()
    return _first(lambda spec: wanted in spec.names())


def serving(model_name: str) -> ModelSpec | None:
    """The first registered model that serves a model name from a log."""
    return _first(lambda spec: spec.serves is not None and spec.serves(model_name))


def known_names(include_plugins: bool = True) -> list[str]:
    return [spec.name for spec in (specs() if include_plugins else shipped() + added())]


def did_you_mean(name: str) -> str:
    """ " (did you mean X?)" for a name close to a registered one, else ""."""
    candidates = [n for spec in specs() for n in spec.names()]
    close = difflib.get_close_matches(name.lower(), candidates, n=1, cutoff=0.6)
    if not close:
        return ""
    spec = lookup(close[0])
    return f" (did you mean {spec.name if spec else close[0]}?)"
