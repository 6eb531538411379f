"""The pipeline's layers, enforced: a module imports only modules of its own layer or below, so data
flows one way (log -> trace -> model -> attribution -> profile -> analyses -> outputs -> runs -> facade
-> front ends). A new module must be given its layer here (docs/architecture.md says which). The front
ends import the internal modules that own what they call (as coverage.py's cmdline does), and from
``tokprof`` itself only its public names."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

from conftest import ROOT

PACKAGE = ROOT / "tokprof"

#: Layers from the bottom; a module is in the layer of the longest prefix of its name listed here.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("tokprof.base", "tokprof.version")),
    ("trace", ("tokprof.trace",)),
    ("formats", ("tokprof.formats",)),
    ("transforms", ("tokprof.transforms",)),
    ("models", ("tokprof.models",)),
    ("attribution", ("tokprof.attribution",)),
    ("profile", ("tokprof.profiling",)),
    ("analyses", ("tokprof.analyses",)),
    ("outputs", ("tokprof.render", "tokprof.export")),
    ("runs", ("tokprof.runs", "tokprof.names")),
    (
        "facade",
        (
            "tokprof.api",
            "tokprof.mcp.api",
            "tokprof.live",
            "tokprof.live_record",
            "tokprof.live_collect",
            "tokprof",
        ),
    ),
    ("front ends", ("tokprof.frontends", "tokprof.__main__")),
]
#: Feature packages: one folder per feature (pricing, MCP), as coverage.py keeps one module per report. A
#: feature's modules sit at the stages of the pipeline they work at, each named here (the package's own
#: ``__init__`` is a docstring, at the bottom), so the feature keeps the one-way flow inside and out.
FEATURES: dict[str, str] = {
    "tokprof.pricing": "base",
    "tokprof.pricing.billing": "base",
    "tokprof.pricing.genai": "models",
    "tokprof.pricing.table": "models",
    "tokprof.pricing.models": "models",
    "tokprof.pricing.cost": "analyses",
    "tokprof.pricing.spend": "analyses",
    "tokprof.pricing.render": "outputs",
    "tokprof.mcp": "base",
    "tokprof.mcp.config": "base",
    "tokprof.mcp.connect": "base",
    "tokprof.mcp.budgets": "analyses",
    "tokprof.mcp.rollup": "analyses",
    "tokprof.mcp.report": "analyses",
    "tokprof.mcp.render": "outputs",
    "tokprof.mcp.api": "facade",
}
FEATURE_PACKAGES = sorted({name for name in FEATURES if name.count(".") == 1})
#: What the front ends alone may import: the facade's machinery and each other.
FRONT = ("tokprof.api", "tokprof.frontends")
#: The top level holds the facade, the two data types every stage passes on (the trace, the profile),
#: the version and ``python -m tokprof``; everything else lives in the folder of its layer.
TOP_LEVEL = {
    *("__init__", "__main__", "version", "api", "live", "live_record", "live_collect", "names"),
    *("trace", "profiling"),
}


@cache
def syntax(path: Path) -> ast.Module:
    """A module's syntax tree, parsed once for every test here."""
    return ast.parse(path.read_text(encoding="utf-8"))


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(name: str) -> int:
    if name in FEATURES:
        return [stage for stage, _ in LAYERS].index(FEATURES[name])
    if any(name.startswith(package + ".") for package in FEATURE_PACKAGES):
        raise LookupError(name)  # a feature's module is placed by name, never by its folder
    best, found = -1, None
    for number, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            below = name.startswith(prefix + ".") and prefix != "tokprof"  # the package itself: its __init__ only
            if (name == prefix or below) and len(prefix) > best:
                best, found = len(prefix), number
    if found is None:
        raise LookupError(name)
    return found


def imports(path: Path) -> set[str]:
    """The tokprof modules a file imports, at any depth of its code (deferred imports count too)."""
    found = set()
    for node in ast.walk(syntax(path)):
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.level == 0
            and node.module.split(".")[0] == "tokprof"
        ):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "tokprof")
    return found


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_a_module_imports_nothing_above_its_layer(path):
    name = module_name(path)
    try:
        own = layer(name)
    except LookupError:
        pytest.fail(f"{name} has no layer: give it one in tests/test_layers.py (docs/architecture.md)")
    above = {m for m in imports(path) if layer(m) > own}
    assert not above, f"{name} ({LAYERS[own][0]}) imports {sorted(above)} from above its layer"
    if own < layer("tokprof.api"):  # the facade's own modules (api, mcp.api, live) are one room
        front = {m for m in imports(path) if any(m == f or m.startswith(f + ".") for f in FRONT)}
        assert not front, f"{name} imports the front ends or the facade: {sorted(front)}"


def test_the_layers_name_real_modules():
    names = {module_name(p) for p in MODULES}
    for _, prefixes in LAYERS:
        for prefix in prefixes:
            assert any(n == prefix or n.startswith(prefix + ".") for n in names), prefix
    assert set(FEATURES) <= names, sorted(set(FEATURES) - names)
    assert set(FEATURES.values()) <= {stage for stage, _ in LAYERS}


def test_the_top_level_holds_the_facade_and_the_data_types_only():
    top = {p.stem for p in PACKAGE.glob("*.py")}
    assert top == TOP_LEVEL, f"put {sorted(top - TOP_LEVEL)} in the folder of its layer (docs/architecture.md)"


def private_names(path: Path) -> set[str]:
    """The underscore names a file imports from the facade (``from tokprof.api import _prompt``)."""
    found = set()
    for node in ast.walk(syntax(path)):
        if isinstance(node, ast.ImportFrom) and node.module in ("tokprof", "tokprof.api"):
            found.update(a.name for a in node.names if a.name.startswith("_") and a.name != "__version__")
    return found


@pytest.mark.parametrize(
    "path", [p for p in MODULES if layer(module_name(p)) == len(LAYERS) - 1], ids=lambda p: module_name(p)
)
def test_the_front_ends_use_no_private_name_of_the_facade(path):
    assert not private_names(path), f"{module_name(path)} imports {sorted(private_names(path))} from the facade"


FRONT_ENDS = [p for p in MODULES if layer(module_name(p)) == len(LAYERS) - 1]


def test_the_front_ends_import_only_public_names_of_tokprof():
    """``from tokprof import X``: X is one of tokprof's public names."""
    import tokprof

    for path in FRONT_ENDS:
        for node in ast.walk(syntax(path)):
            if isinstance(node, ast.ImportFrom) and node.module == "tokprof" and node.level == 0:
                wrong = {a.name for a in node.names} - set(tokprof.__all__)
                assert not wrong, f"{module_name(path)} imports {sorted(wrong)} from tokprof: not public names"


# -- The import graph: no cycles, no private names across modules ----------------------------------------------------

MODULE_NAMES = {module_name(p): p for p in MODULES}


def target(name: str, path: Path, node: ast.ImportFrom) -> str:
    """The module an ``from X import ...`` reads, relative imports resolved."""
    if not node.level:
        return node.module or ""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    package = package[: len(package) - (node.level - 1)]
    return ".".join(package + ([node.module] if node.module else []))


def edges(name: str, path: Path) -> dict[str, int]:
    """The tokprof modules a module imports, each with the first line that does: at any depth of its code,
    deferred and type-checking imports too (a cycle hidden in a function is still a cycle). ``from pkg import
    mod`` names the module ``pkg.mod``; importing ``pkg.mod`` runs ``pkg/__init__.py`` first, which is not
    counted as an edge (a package's face importing its own modules is not a cycle)."""
    found: dict[str, int] = {}
    for node in ast.walk(syntax(path)):
        if isinstance(node, ast.ImportFrom):
            module = target(name, path, node)
            if module.split(".")[0] != "tokprof":
                continue
            for alias in node.names:
                full = f"{module}.{alias.name}"
                to = full if full in MODULE_NAMES else module
                if to != name and to in MODULE_NAMES:
                    found.setdefault(to, node.lineno)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULE_NAMES and alias.name != name:
                    found.setdefault(alias.name, node.lineno)
    return found


GRAPH = {name: edges(name, path) for name, path in MODULE_NAMES.items()}


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def describe(component: list[str]) -> str:
    members = set(component)
    links = [f"{a} -> {b} (line {line})" for a in component for b, line in sorted(GRAPH[a].items()) if b in members]
    return f"{', '.join(component)}: " + "; ".join(links)


def test_the_cycle_finder_finds_a_cycle_and_names_it():
    graph = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3, "d": 4}, "d": {}, "e": {"e": 5}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_no_module_imports_itself_back():
    """No import cycle between tokprof's modules, at any depth of their code (a deferred import inside a function
    counts: it hides a cycle rather than breaking it). A shared piece goes to the lower module or a small new one."""
    found = cycles(GRAPH)
    assert not found, "import cycles:\n" + "\n".join(describe(c) for c in found)


def private_imports(name: str, path: Path) -> list[str]:
    """``from tokprof.x import _name`` (x another module): a private name used across modules. Also
    ``module._name`` read through an imported tokprof module."""
    found = []
    tree = syntax(path)
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = target(name, path, node)
            if module.split(".")[0] != "tokprof":
                continue
            for alias in node.names:
                full = f"{module}.{alias.name}"
                if full in MODULE_NAMES:
                    aliases[alias.asname or alias.name] = full
                elif module != name and alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{name}:{node.lineno} imports {alias.name} from {module}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULE_NAMES and alias.asname:
                    aliases[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and aliases[node.value.id] != name
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            found.append(f"{name}:{node.lineno} reads {node.attr} of {aliases[node.value.id]}")
    return found


def test_no_module_uses_another_modules_private_names():
    """A name with a leading underscore is its module's own: what two modules share is given a public name
    (in the lower module, or a small module of its own)."""
    found = [line for name, path in MODULE_NAMES.items() for line in private_imports(name, path)]
    assert not found, "private names used across modules:\n" + "\n".join(found)
