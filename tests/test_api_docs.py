"""docs/api.md documents every public function with its real signature: each ``### `name(...)` ``
heading under "Functions" is the function's signature as ``inspect`` reads it, and every public
function has one. ``TOKPROF_REGENERATE=1 pytest tests/test_api_docs.py`` rewrites the headings."""

from __future__ import annotations

import inspect
import os
import re

import tokprof
from conftest import ROOT

API = ROOT / "docs" / "api.md"
HEADING = re.compile(r"^### `(\w+)\((.*)\)(?: -> (.+))?`$", re.M)


def _type(annotation) -> str:
    """An annotation as the docs write it: ``budgets.CheckResult`` is ``CheckResult``."""
    return re.sub(r"\b[a-z_]+\.(?=[A-Z])", "", str(annotation).strip(chr(39)))


def signature(function) -> str:
    """``name(a: T = 1, *, b: U | None = None) -> R``, annotations as written in the source."""
    sig = inspect.signature(function)
    parts, star = [], False
    for p in sig.parameters.values():
        if p.kind is p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        text = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name
        if p.kind is p.VAR_POSITIONAL:
            star = True
        if p.annotation is not p.empty:
            text += f": {_type(p.annotation)}"
        if p.default is not p.empty:
            default = f'"{p.default}"' if isinstance(p.default, str) else repr(p.default)
            text += f" = {default}"
        parts.append(text)
    returns = "" if sig.return_annotation is sig.empty else f" -> {_type(sig.return_annotation)}"
    return f"{function.__name__}({', '.join(parts)}){returns}"


def public_functions() -> list[str]:
    return sorted(name for name in tokprof.__all__ if inspect.isfunction(getattr(tokprof, name)))


def test_every_public_function_is_documented_with_its_real_signature():
    text = API.read_text(encoding="utf-8")
    if os.environ.get("TOKPROF_REGENERATE"):
        text = HEADING.sub(
            lambda m: (
                f"### `{signature(getattr(tokprof, m.group(1)))}`" if m.group(1) in public_functions() else m.group(0)
            ),
            text,
        )
        API.write_text(text, encoding="utf-8")
    documented = {m.group(1): m.group(0)[5:-1] for m in HEADING.finditer(text)}
    for name in public_functions():
        assert name in documented, f"docs/api.md does not document tokprof.{name}"
        assert documented[name] == signature(getattr(tokprof, name)), f"docs/api.md: the signature of {name}"
