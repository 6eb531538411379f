"""Per-tool costs from each tool rendered once (tokprof.analyses.tool_pieces): on every shipped
template with tools the spliced catalogues are the real renders, character for character, and the
catalogue's costs are the same as rendering every variant; templates that do not write their tools
on their own fall back to rendering."""

from __future__ import annotations

import pytest

import tokprof
from conftest import tiny_model
from tokprof.analyses.tool_pieces import pieces
from tokprof.analyses.tools import _Counter, _emptied, catalogue_cost
from tokprof.models.registry import known_names


def _tool(name: str, description: str, properties: dict, required: list[str] | None = None) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required or []},
        },
    }


#: Hand-written tools of the shapes agents send: a description of several sentences, none, nested
#: and enumerated parameters, text beyond ASCII.
TOOLS = [
    _tool(
        "read_file",
        "Read a file. Returns its text with line numbers.",
        {
            "path": {"type": "string", "description": "The file's path."},
            "offset": {"type": "integer", "description": "The first line."},
        },
        ["path"],
    ),
    _tool("write_file", "", {"path": {"type": "string"}, "content": {"type": "string"}}, ["path", "content"]),
    _tool(
        "search",
        "Search the code base for a pattern (a regular expression).",
        {
            "pattern": {"type": "string"},
            "glob": {"type": "string", "description": "Files to search, e.g. *.py"},
            "mode": {"type": "string", "enum": ["content", "files", "count"]},
        },
    ),
    _tool(
        "run",
        "Run a shell command. Résumé: it waits — up to 2 minutes.",
        {"command": {"type": "string"}, "env": {"type": "object", "additionalProperties": {"type": "string"}}},
    ),
    _tool(
        "todo",
        "Keep a list of tasks.",
        {
            "items": {
                "type": "array",
                "items": {"type": "object", "properties": {"text": {"type": "string"}, "done": {"type": "boolean"}}},
            }
        },
    ),
]


@pytest.mark.parametrize("name", known_names(include_plugins=False))
def test_every_shipped_template_splices_its_catalogues_exactly(name):
    chat = tokprof.get_model(name).chat
    count = _Counter(chat, "You are a coding agent.", None)
    variants = {k: _emptied(tool) for k, tool in enumerate(TOOLS) if tool["function"]["description"]}
    split = pieces(count._render, TOOLS, variants, count._render(TOOLS))
    assert split is not None, name  # every shipped template writes each tool on its own
    for k in range(len(TOOLS)):
        assert split.without(k) == count._render(TOOLS[:k] + TOOLS[k + 1 :])
        if k in variants:
            assert split.with_variant(k) == count._render(TOOLS[:k] + [variants[k]] + TOOLS[k + 1 :])
    spliced = catalogue_cost(chat, TOOLS, "You are a coding agent.", called={"read_file"})
    assert spliced == catalogue_cost(chat, TOOLS, "You are a coding agent.", called={"read_file"}, splice=False)


NOT_ON_THEIR_OWN = {
    "numbered": "{%- for t in tools %}Tool {{ loop.index }}: {{ t.function.name }}. {{ t.function.description }}\n{%- endfor %}",
    "counted": "{%- if tools %}{{ tools | length }} tools: {% for t in tools %}{{ t.function.name }} {% endfor %}{% endif %}",
    "and before the last": "{%- for t in tools %}{% if loop.last and not loop.first %} and {% elif not loop.first %}, "
    "{% endif %}{{ t.function.name }}{% endfor %}",
    "one length apart": "{%- if tools | length == 4 %}FOUR {% endif %}{% for t in tools %}[{{ t.function.name }}]{% endfor %}",
}


@pytest.mark.parametrize("shape", sorted(NOT_ON_THEIR_OWN))
def test_a_template_that_does_not_write_tools_on_their_own_is_rendered(shape):
    template = NOT_ON_THEIR_OWN[shape] + (
        "{%- for m in messages %}{{- '<|im_start|>' + m.role + '\\n' + (m.content or '') + '<|im_end|>\\n' }}{%- endfor %}"
    )
    model = tiny_model(template)
    count = _Counter(model, "You are a test bot.", None)
    variants = {k: _emptied(tool) for k, tool in enumerate(TOOLS) if tool["function"]["description"]}
    assert pieces(count._render, TOOLS, variants, count._render(TOOLS)) is None
    assert catalogue_cost(model, TOOLS, "You are a test bot.") == catalogue_cost(
        model, TOOLS, "You are a test bot.", splice=False
    )


def test_two_tools_are_rendered():
    model = tiny_model()
    count = _Counter(model, None, None)
    assert pieces(count._render, TOOLS[:2], {}, count._render(TOOLS[:2])) is None


def test_the_tiny_templates_catalogue_splices_and_costs_the_same():
    model = tiny_model()
    tools = [_tool(f"t{i}", f"Tool {i} does a thing.", {}) for i in range(6)]
    count = _Counter(model, "You are a test bot.", None)
    assert pieces(count._render, tools, {0: _emptied(tools[0])}, count._render(tools)) is not None
    assert catalogue_cost(model, tools, "You are a test bot.") == catalogue_cost(
        model, tools, "You are a test bot.", splice=False
    )


def _long_catalogue(n: int) -> list[dict]:
    """Tools whose texts hold what moves token boundaries: newlines before letters and symbols, runs
    of spaces, text beyond ASCII, descriptions longer than a window's margin, and none at all."""
    import random

    rng = random.Random(45)
    pieces_of_text = ["Read it.", "\n", "\n\n- item", "    ", "é", "数据", "{x}", '"q"', "/path", "🙂", "word " * 150]
    out = []
    for i in range(n):
        text = "".join(rng.choice(pieces_of_text) for _ in range(rng.randint(0, 12)))
        out.append(_tool(f"tool_{i}", text, {"q": {"type": "string", "description": rng.choice(pieces_of_text)}}))
    return out


@pytest.mark.parametrize("name", ["qwen2.5", "claude-proxy", "mistral"])
def test_a_long_catalogue_counted_from_windows_costs_what_rendering_each_costs(name):
    """#45 item 10: a tool's variants are counted from a window around it (time linear in the
    catalogue, where counting each whole render grew with its square); the figures stay those of
    rendering every variant whole."""
    chat = tokprof.get_model(name).chat
    tools = _long_catalogue(16)
    assert catalogue_cost(chat, tools, "You are a coding agent.") == catalogue_cost(
        chat, tools, "You are a coding agent.", splice=False
    )
