"""A tool catalogue on its own, for static review: OpenAI, Anthropic and MCP tool definitions.

Accepted shapes, all turned into OpenAI function tools ``{"type": "function", "function":
{"name", "description", "parameters"}}`` (the shape chat templates expect):

* a JSON list of tools, each one of
  - OpenAI Chat Completions: ``{"type": "function", "function": {"name", "description", "parameters"}}``
  - flat (OpenAI Responses API): ``{"type": "function", "name", "description", "parameters"}``
  - Anthropic: ``{"name", "description", "input_schema"}``
  - MCP: ``{"name", "description", "inputSchema"}``
* an object holding such a list under ``tools`` (an MCP ``tools/list`` result, or a request body),
  or under ``result.tools`` (the whole JSON-RPC response).
"""

from __future__ import annotations

from typing import Any

from tokprof.base.errors import InputError
from tokprof.formats.fields import expect_list, expect_object, optional_string
from tokprof.formats.jsonfile import load


def normalise_tool(path: str, where: str, tool: Any) -> dict:
    tool = expect_object(path, where, tool, "a tool object")
    body = tool["function"] if isinstance(tool.get("function"), dict) else tool
    name = body.get("name")
    label = f"{where} ({name})" if isinstance(name, str) and name else where
    if not isinstance(name, str) or not name:
        raise InputError(path, f"{where}.name", "missing: every tool needs a name")
    description = optional_string(path, f"{label}.description", body.get("description"))
    field = next((k for k in ("parameters", "input_schema", "inputSchema") if k in body), None)
    schema = body.get(field) if field else None
    if field is not None:
        expect_object(path, f"{label}.{field}", schema, "a JSON schema object")
    function: dict[str, Any] = {"name": name}
    if description is not None:
        function["description"] = description
    function["parameters"] = schema if schema is not None else {"type": "object", "properties": {}}
    return {"type": "function", "function": function}


def normalise_tools(path: str, where: str, tools: Any) -> list[dict]:
    tools = expect_list(path, where or None, tools, "a list of tool definitions")
    out, names = [], set()
    for i, tool in enumerate(tools):
        item = normalise_tool(path, f"{where}[{i}]" if where else f"tools[{i}]", tool)
        name = item["function"]["name"]
        if name in names:
            raise InputError(path, f"{where or 'tools'}[{i}].name", f"duplicate tool name {name!r}")
        names.add(name)
        out.append(item)
    return out


def read_tools_file(path: str) -> list[dict]:
    with load(path, "tools file") as doc:
        if doc.lines is not None:
            raise InputError(path, None, "expected one JSON list of tool definitions, found JSON lines")
    value = doc.value
    where = ""
    if isinstance(value, dict):
        if isinstance(value.get("result"), dict) and "tools" in value["result"]:
            value, where = value["result"]["tools"], "result.tools"
        elif "tools" in value:
            value, where = value["tools"], "tools"
        else:
            raise InputError(path, None, "expected a list of tool definitions, or an object with 'tools'")
    tools = normalise_tools(path, where, value)
    if not tools:
        raise InputError(path, where or None, "the list of tool definitions is empty")
    return tools


#: What ``tokprof mcp -o`` writes in a catalogue's ``source``, so that a profile can say where its tools came from.
MCP_SOURCE = "tool definitions from the configured MCP servers at "


def tools_file_source(path: str) -> str | None:
    """A catalogue file's ``source`` when ``tokprof mcp -o`` wrote it, else None."""
    with load(path) as doc:
        value = doc.value
    source = value.get("source") if isinstance(value, dict) else None
    return source if isinstance(source, str) and source.startswith(MCP_SOURCE) and len(source) < 120 else None


def read_system_file(path: str) -> str:
    from tokprof.formats.jsonfile import read_text

    return read_text(path, "system prompt")
