"""What the command line does to start fast, apart from importing the pipeline only when a command
runs (``tokprof.frontends.cli``): typer's costs that tokprof's options do not need.

- typer 0.29 checks every parameter's value with a pydantic ``TypeAdapter``, built when a command
  runs: importing pydantic and building one adapter per option costs about 0.14 s per command. A
  value that is already what the option takes (text for a text option, digits in range for a whole
  number, texts for a list of texts) is taken as it is, as the adapter would take it; any other value
  (a float, a flag's text from an environment variable, a number out of range) goes to typer's own adapter,
  so its checks and messages are typer's.
- typer's rich help formatter imports rich's Markdown (markdown-it, pygments) and traceback (attrs,
  rich.pretty) modules, about 0.07 s, though tokprof's help is rich markup and never shows a
  traceback: while it loads, those two are placeholders that load the real module on first use.

Both are no-ops when typer's internals are not the ones described (another typer release).
"""

from __future__ import annotations

import re
import sys
import types
from dataclasses import dataclass
from typing import Any

_DIGITS = re.compile(r"[0-9]+")
#: No fast value: typer's adapter decides.
_NO = object()


def plain_value(annotation: Any, info: Any, value: Any) -> Any:
    """``value`` as typer's adapter would return it, for the plain cases; else :data:`_NO`."""
    if annotation is str:
        return value if type(value) is str else _NO
    if annotation is bool:
        return value if type(value) is bool else _NO
    if annotation is int:
        number = int(value) if type(value) is str and _DIGITS.fullmatch(value) else value
        if type(number) is not int or getattr(info, "clamp", None):
            return _NO
        low, high = getattr(info, "min", None), getattr(info, "max", None)
        if (low is not None and number < low) or (high is not None and number > high):
            return _NO
        return number
    if annotation == list[str]:
        if isinstance(value, (list, tuple)) and all(type(item) is str for item in value):
            return list(value)
    return _NO


def fast_coercion() -> bool:
    """Take plain values without pydantic (see the module's docstring); False when typer is another."""
    try:
        from typer import core
        from typer._coercion import RuntimeParam, build_runtime_param
    except ImportError:
        return False
    parameter = getattr(core, "_TyperParameter", None)
    if parameter is None or not hasattr(parameter, "get_runtime_param") or getattr(parameter, "_tokprof_fast", False):
        return getattr(parameter, "_tokprof_fast", False)

    @dataclass(frozen=True)
    class PlainRuntimeParam(RuntimeParam):
        descriptor: Any = None

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            fast = plain_value(self.annotation, self.parameter_info, value)
            if fast is not _NO:
                return fast
            return build_runtime_param(self.descriptor)._coerce_value(value, param=param, ctx=ctx)

    def get_runtime_param(self: Any) -> Any:
        if self._runtime_param is None:
            described = self.type_descriptor
            info = described.parameter_info
            simple = (
                described.file_annotation is None
                and getattr(info, "parser", None) is None
                and (described.annotation in (str, int, bool) or described.annotation == list[str])
            )
            self._runtime_param = (
                PlainRuntimeParam(parameter_info=info, annotation=described.annotation, descriptor=described)
                if simple
                else build_runtime_param(described)
            )
        return self._runtime_param

    parameter.get_runtime_param = get_runtime_param
    parameter._tokprof_fast = True
    return True


def _placeholder(module: str, name: str, methods: tuple[str, ...]) -> type:
    """A class standing for ``module.name``: making one (or calling one of ``methods``) imports the
    real module and hands over to its class."""

    def real() -> Any:
        import importlib

        return getattr(importlib.import_module(module), name)

    def new(cls: type, *args: Any, **kwargs: Any) -> Any:
        return real()(*args, **kwargs)

    namespace: dict[str, Any] = {"__new__": new, "__module__": module}
    for method in methods:
        namespace[method] = classmethod(lambda cls, *a, _m=method, **k: getattr(real(), _m)(*a, **k))
    return type(name, (), namespace)


def light_rich_help() -> None:
    """Load typer's rich help formatter with placeholders for rich's Markdown and Traceback (see the
    module's docstring); nothing when it is loaded already, or when either real module is."""
    stubs = {"rich.markdown": ("Markdown", ()), "rich.traceback": ("Traceback", ("from_exception",))}
    if "typer.rich_utils" in sys.modules or any(name in sys.modules for name in stubs):
        return
    placed = {}
    for module, (name, methods) in stubs.items():
        stub = types.ModuleType(module)
        setattr(stub, name, _placeholder(module, name, methods))
        placed[module] = sys.modules[module] = stub
    try:
        import typer.rich_utils  # noqa: F401
    except Exception:  # noqa: BLE001 - another typer: its formatter loads as it would have
        sys.modules.pop("typer.rich_utils", None)
    finally:
        for module, stub in placed.items():
            if sys.modules.get(module) is stub:
                del sys.modules[module]


def command_named(app: Any, args: list[str]) -> Any:
    """The registration of the command ``args`` runs, when it names one (None: help, a typo, shell
    completion, an option first: the whole command line is built as usual). typer builds every
    command's options (their signatures, annotations and help) before it runs one, about 0.1 s for
    tokprof's thirteen; building only the one that runs gives it the same options and help."""
    import os

    if not args or args[0].startswith("-") or any(k.endswith("_COMPLETE") for k in os.environ):
        return None
    registered = getattr(app, "registered_commands", None)
    if not isinstance(registered, list) or getattr(app, "registered_groups", None):
        return None
    found = [c for c in registered if _name(c) == args[0]]
    return found[0] if len(found) == 1 else None


def _name(info: Any) -> str | None:
    if getattr(info, "name", None):
        return str(info.name)
    callback = getattr(info, "callback", None)
    return callback.__name__.lower().replace("_", "-") if callback is not None else None
