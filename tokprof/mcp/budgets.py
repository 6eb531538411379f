"""Budgets per MCP server and per MCP tool (``[budgets.mcp]``), checked on a catalogue's tool costs.

The servers are read from the tool names as the agent exposes them: ``mcp__<server>__<tool>``
(Claude Code) or ``<server>__<tool>`` (Codex). A server's tokens are the sum of its tools' marginal
costs, so a committed ``catalogue.json`` (``tokprof mcp -o``) checked with ``tokprof check --tools``
needs no server started in CI; the baseline's per-tool costs give each server's baseline.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tokprof.transforms.config import McpBudgets

FAIL, PASS = "fail", "pass"


def server_of(tool: str) -> str | None:
    """The MCP server in a tool's exposed name, or None for a tool of no server (a built-in)."""
    if tool.startswith("mcp__"):
        server, sep, rest = tool[5:].partition("__")
        return server if sep and server and rest else None
    server, sep, rest = tool.partition("__")
    return server if sep and server and rest else None


def server_tokens(tools: Mapping[str, int]) -> dict[str, int]:
    """Tokens per request per server: the sum of its tools' marginal costs."""
    out: dict[str, int] = {}
    for name, marginal in tools.items():
        server = server_of(name)
        if server is not None:
            out[server] = out.get(server, 0) + marginal
    return dict(sorted(out.items()))


@dataclass(frozen=True)
class ServerResult:
    """One server (or one MCP tool, ``kind`` "tool") against its budget and the baseline."""

    kind: str  # "server" or "tool"
    name: str
    tokens: int | None  # None: gone since the baseline
    max: float | None
    baseline: int | None
    status: str
    reasons: tuple[str, ...] = ()

    @property
    def change(self) -> int | None:
        return None if self.tokens is None or self.baseline is None else self.tokens - self.baseline

    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "name": self.name,
            "tokens": self.tokens,
            "max": self.max,
            "baseline": self.baseline,
            "change": self.change,
            "status": self.status,
            "reasons": list(self.reasons),
        }


def _one(kind: str, name: str, tokens: int | None, limit: float | None, base: int | None) -> ServerResult:
    reasons = []
    if tokens is not None and limit is not None and tokens > limit:
        reasons.append(f"{tokens:,} tokens per request, over the max of {limit:,.0f}")
    if base is None and tokens is not None:
        reasons.append("added since the baseline" if kind == "server" else "new since the baseline")
    elif tokens is None:
        reasons.append("removed since the baseline")
    elif base is not None and tokens != base:
        reasons.append(f"{tokens - base:+,} tokens per request against the baseline's {base:,}")
    failed = tokens is not None and limit is not None and tokens > limit
    return ServerResult(kind, name, tokens, limit, base, FAIL if failed else PASS, tuple(reasons))


def evaluate_servers(
    budgets: McpBudgets, tools: Mapping[str, int], baseline_tools: Mapping[str, int] | None
) -> list[ServerResult]:
    """Every server (and every MCP tool with a budget) now and in the baseline, judged against its budget."""
    now = server_tokens(tools)
    before = server_tokens(baseline_tools) if baseline_tools is not None else {}
    results = []
    for name in sorted(set(now) | set(before)):
        base = before.get(name) if baseline_tools is not None else None
        if baseline_tools is None and budgets.for_server(name) is None:
            continue
        results.append(_one("server", name, now.get(name), budgets.for_server(name), base))
    if budgets.tools:
        for name in sorted(n for n in tools if server_of(n) is not None):
            limit = budgets.for_tool(name)
            if limit is not None:
                base = baseline_tools.get(name) if baseline_tools is not None else None
                results.append(_one("tool", name, tools[name], limit, base))
    return [r for r in results if r.kind == "tool" or r.reasons or r.max is not None]
