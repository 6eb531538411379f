"""Per MCP server, from a log alone: the tool names carry the server (``mcp__github__create_issue``), so
the calls, the tokens their results added and those results' carry cost (in tokens, and in US dollars
where the log is priced) roll up per server with no configuration (``mcp_servers`` in the tools report)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from tokprof.mcp.budgets import server_of
from tokprof.attribution.tool_results import ToolResultCosts
from tokprof.attribution.catalogue import Catalogue
from tokprof.pricing.billing import money


@dataclass(frozen=True)
class ServerUse:
    server: str
    tools_called: int  # distinct tools of it the model called
    calls: int
    result_tokens: int  # what its results added to the prompts, as the attribution counts them
    carry_cost: int  # those tokens times the later requests that carried them
    carry_dollars: float | None = None  # the carry cost in US dollars (None: not priced)

    def to_dict(self) -> dict:
        return {
            "server": self.server,
            "tools_called": self.tools_called,
            "calls": self.calls,
            "result_tokens": self.result_tokens,
            "carry_cost": self.carry_cost,
            "carry_dollars": self.carry_dollars,
        }


class _Dollars:
    """Carry costs in dollars added up per server: None for a server one of whose tools is not priced."""

    def __init__(self) -> None:
        self.sums: dict[str, float | None] = {}

    def add(self, server: str, value: float | None) -> None:
        before = self.sums.get(server, 0.0)
        self.sums[server] = None if before is None or value is None else before + value

    def of(self, server: str) -> float | None:
        value = self.sums.get(server)
        return None if value is None else money(value)


def server_rollup(called: Mapping[str, int], costs: ToolResultCosts | None) -> list[ServerUse]:
    """One row per server the log's tool names carry, costliest carry first; empty when none do.
    ``called``: how many times the model called each tool (``ToolFacts.called``)."""
    calls: Counter = Counter()
    tools: dict[str, set[str]] = {}
    for name, n in called.items():
        server = server_of(name) if name.startswith("mcp__") else None
        if server is not None:
            calls[server] += n
            tools.setdefault(server, set()).add(name)
    tokens: Counter = Counter()
    carry: Counter = Counter()
    dollars = _Dollars()
    for cost in costs.tools if costs is not None else ():
        server = server_of(cost.tool) if cost.tool and cost.tool.startswith("mcp__") else None
        if server is not None:
            tokens[server] += cost.tokens
            carry[server] += cost.carry_cost
            dollars.add(server, cost.carry_dollars)
    rows = [
        ServerUse(s, len(tools.get(s, ())), calls[s], tokens[s], carry[s], dollars.of(s))
        for s in set(calls) | set(tokens)
    ]
    return sorted(rows, key=lambda r: (-r.carry_cost, r.server))


def rollup_from_results(costs: ToolResultCosts | None) -> list[ServerUse]:
    """The same rollup from a profile's tool result costs alone (a saved profile keeps no trace): a call
    is counted by its result."""
    rows: dict[str, list[int]] = {}
    dollars = _Dollars()
    for cost in costs.tools if costs is not None else ():
        server = server_of(cost.tool) if cost.tool and cost.tool.startswith("mcp__") else None
        if server is not None:
            row = rows.setdefault(server, [0, 0, 0, 0])
            row[0] += 1
            row[1] += cost.results
            row[2] += cost.tokens
            row[3] += cost.carry_cost
            dollars.add(server, cost.carry_dollars)
    out = [ServerUse(s, r[0], r[1], r[2], r[3], dollars.of(s)) for s, r in rows.items()]
    return sorted(out, key=lambda r: (-r.carry_cost, r.server))


#: The row of the catalogue's tools that no MCP server's name carries (the agent's own tools).
NOT_MCP = "(not MCP)"


@dataclass(frozen=True)
class ServerCatalogue:
    """One MCP server's part of a log's tool catalogue, and what the log did with its tools."""

    server: str  # or NOT_MCP
    tools: int  # its tools in the catalogue
    unused: int  # of them, never called
    definitions: int  # tokens per request: its tools' marginal costs (the counting model's own counts)
    calls: int  # calls the model made to its tools
    result_tokens: int
    carry_cost: int
    carry_dollars: float | None = None  # the carry cost in US dollars (None: not priced)

    def to_dict(self) -> dict:
        return {
            "server": self.server,
            "tools": self.tools,
            "unused": self.unused,
            "definitions": self.definitions,
            "calls": self.calls,
            "result_tokens": self.result_tokens,
            "carry_cost": self.carry_cost,
            "carry_dollars": self.carry_dollars,
        }


def catalogue_rollup(catalogue: Catalogue, costs: ToolResultCosts | None) -> list[ServerCatalogue]:
    """One row per MCP server of a catalogue (every tool definition a request carried: called or not),
    the costliest definitions first, then one row of the tools of no server; empty when no tool name
    carries a server."""
    rows: dict[str, list[int]] = {}
    for tool in catalogue.tools:
        row = rows.setdefault(server_of(tool.name) or NOT_MCP, [0, 0, 0, 0, 0, 0])
        row[0] += 1
        row[1] += bool(tool.unused)
        row[2] += tool.marginal
        row[3] += tool.calls or 0
    dollars = _Dollars()
    priced = costs is not None and costs.carry_dollars is not None
    for cost in costs.tools if costs is not None else ():
        server = (server_of(cost.tool) if cost.tool else None) or NOT_MCP
        if server in rows:
            rows[server][4] += cost.tokens
            rows[server][5] += cost.carry_cost
            dollars.add(server, cost.carry_dollars)
    if set(rows) <= {NOT_MCP}:
        return []
    out = [
        ServerCatalogue(
            name, row[0], row[1], row[2], row[3], row[4], row[5], (dollars.of(name) or 0.0) if priced else None
        )
        for name, row in rows.items()
    ]
    return sorted(out, key=lambda r: (r.server == NOT_MCP, -r.definitions, r.server))
