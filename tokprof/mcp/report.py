"""What each configured MCP server costs on every request, priced as the model sees its tools.

The servers' tools, named as the agent exposes them, are one catalogue, priced by
:func:`tokprof.analyses.tools.catalogue_cost` exactly as ``tokprof tools --tools`` prices it: every
tool marginally (the catalogue with it less the catalogue without it). A server's cost is the sum of
its tools' marginal costs, so the servers and the catalogue's scaffolding (what the template adds once
whenever any tool exists) add up to the whole catalogue's cost, and no tool is counted alone.

What is priced is capped (:func:`caps`): at most :data:`MAX_TOOLS` tools and :data:`MAX_CATALOGUE` of
definitions (their JSON), taken in the servers' order; a tool past either cap is not priced, and
the report lists it (``skipped``) with the reason. Pricing takes time linear in what is priced.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from tokprof.analyses.tools import catalogue_cost
from tokprof.base.errors import InputError
from tokprof.formats.toolsfile import normalise_tool, normalise_tools
from tokprof.mcp.config import ServerConfig
from tokprof.mcp.connect import Failure, Listing
from tokprof.models.base import ChatModel, ModelInfo
from tokprof.trace import Trace
from tokprof.analyses.cutlist import CutList

SCHEMA_VERSION = 1
NAMINGS = ("claude-code", "codex", "plain")
LARGEST = 3
MIB = 1024 * 1024
#: The most tools priced (``TOKPROF_MCP_MAX_TOOLS`` sets another).
MAX_TOOLS = 5000
#: The most of the tools' definitions priced, their JSON in bytes (``TOKPROF_MCP_MAX_CATALOGUE``, in MiB).
MAX_CATALOGUE = 16 * MIB


def caps() -> tuple[int, int]:
    """(tools, bytes of definitions) priced at most: ``TOKPROF_MCP_MAX_TOOLS`` and
    ``TOKPROF_MCP_MAX_CATALOGUE`` (MiB) when they are positive whole numbers, else the defaults."""
    tools = os.environ.get("TOKPROF_MCP_MAX_TOOLS", "").strip()
    size = os.environ.get("TOKPROF_MCP_MAX_CATALOGUE", "").strip()
    return (
        int(tools) if tools.isdigit() and int(tools) > 0 else MAX_TOOLS,
        int(size) * MIB if size.isdigit() and int(size) > 0 else MAX_CATALOGUE,
    )


#: How closed providers put tools in front of the model, for the estimate's label.
PROVIDER_RENDERING = {
    "anthropic": "Anthropic renders tool definitions into a system preamble of its own that it does not publish; "
    "the count is an estimate (a proxy tokenizer and template), labelled so",
    "openai": "OpenAI renders function tools into a TypeScript-like namespace in the system message that it does not "
    "publish in full; the count is an estimate (o200k tokens of the proxy rendering), labelled so",
}


def exposed_name(naming: str, server: str, tool: str) -> str:
    """The name the agent gives the model: ``mcp__<server>__<tool>`` in Claude Code (characters outside
    ``[A-Za-z0-9_-]`` become ``_``), ``<server>__<tool>`` in Codex, the server's own name otherwise."""
    if naming == "claude-code":
        clean = re.sub(r"[^A-Za-z0-9_-]", "_", server)
        return f"mcp__{clean}__{tool}"
    if naming == "codex":
        return f"{server}__{tool}"
    return tool


def naming_for(servers: Sequence[ServerConfig]) -> str:
    """The naming of the agent the servers are configured for (Claude Code's when mixed or not known)."""
    agents = {s.agent for s in servers}
    if agents == {"codex"}:
        return "codex"
    if agents and agents <= {"cursor", "vscode", "gemini", "claude-desktop"}:
        return "plain"
    return "claude-code"


@dataclass(frozen=True)
class McpTool:
    name: str  # as the agent exposes it
    server: str
    listed_name: str  # as the server lists it
    marginal: int
    description_tokens: int
    parameter_tokens: int
    calls: int | None = None  # in the log, when one is given
    run_cost: int | None = None  # marginal × the log's requests

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "server": self.server,
            "listed_name": self.listed_name,
            "marginal": self.marginal,
            "description_tokens": self.description_tokens,
            "parameter_tokens": self.parameter_tokens,
            "calls": self.calls,
            "run_cost": self.run_cost,
        }


@dataclass(frozen=True)
class McpServer:
    name: str
    origin: str
    agent: str
    transport: str
    server_info: str | None
    tools: int
    tokens: int  # per request: the sum of its tools' marginal costs
    share: float | None  # of the whole catalogue's cost
    largest: tuple[str, ...]  # its costliest tools, exposed names
    prompts: int | None
    resources: int | None
    calls: int | None = None
    never_called_cost: int | None = None  # over the log: its tools that were never called, × requests

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "origin": self.origin,
            "agent": self.agent,
            "transport": self.transport,
            "server_info": self.server_info,
            "tools": self.tools,
            "tokens": self.tokens,
            "share": self.share,
            "largest_tools": list(self.largest),
            "prompts": self.prompts,
            "resources": self.resources,
            "calls": self.calls,
            "never_called_cost": self.never_called_cost,
        }


@dataclass(frozen=True)
class McpSkipped:
    """A listed tool that was not priced, and why (a cap)."""

    server: str
    listed_name: str
    size: int  # its definition's JSON, in bytes
    reason: str

    def to_dict(self) -> dict:
        return {"server": self.server, "listed_name": self.listed_name, "bytes": self.size, "reason": self.reason}


@dataclass(frozen=True)
class McpFailure:
    name: str
    origin: str
    reason: str
    stderr_tail: str

    def to_dict(self) -> dict:
        return {"name": self.name, "origin": self.origin, "reason": self.reason, "stderr_tail": self.stderr_tail}


@dataclass(frozen=True)
class McpReport:
    """The configured servers' catalogue: its cost per request, per server and per tool."""

    model: ModelInfo
    naming: str
    listed_at: str  # ISO 8601, UTC
    total: int  # the whole catalogue per request
    scaffolding: int  # what the template adds once for any tools
    servers: tuple[McpServer, ...]
    tools: tuple[McpTool, ...]
    failures: tuple[McpFailure, ...]
    estimate: str | None  # how the provider renders tools and what is not known, for closed models
    log: str | None = None
    requests: int | None = None
    skipped: tuple[McpSkipped, ...] = ()  # listed, not priced: past a cap

    def definitions(self) -> list[dict]:
        """The listed tools in the ``--tools`` format (OpenAI function tools, exposed names)."""
        return [dict(t) for t in self._definitions]

    _definitions: tuple[dict, ...] = ()
    #: with a log: per tool and server, what it cost over the log and how to cut it (tokprof.analyses.cutlist)
    cut_list: CutList | None = None

    def to_dict(self) -> dict:
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": "mcp",
            "model": self.model.to_dict(),
            "naming": self.naming,
            "listed_at": self.listed_at,
            "total": self.total,
            "scaffolding": self.scaffolding,
            "estimate": self.estimate,
            "log": self.log,
            "requests": self.requests,
            "servers": [s.to_dict() for s in self.servers],
            "tools": [t.to_dict() for t in self.tools],
            "failures": [f.to_dict() for f in self.failures],
            "skipped": [t.to_dict() for t in self.skipped],
            **({"cut_list": self.cut_list.to_dict()} if self.cut_list is not None else {}),
        }

    def skipped_line(self) -> str | None:
        """The tools not priced, in one line (None when every listed tool is)."""
        if not self.skipped:
            return None
        reasons = Counter(t.reason for t in self.skipped)
        servers = len({t.server for t in self.skipped})
        why = "; ".join(f"{n:,} {reason}" for reason, n in reasons.most_common())
        return (
            f"{len(self.skipped):,} listed tool{'s' if len(self.skipped) != 1 else ''} of {servers} "
            f"server{'s' if servers != 1 else ''} not priced (nor in the catalogue): {why}"
        )

    def catalogue_document(self) -> dict:
        """What ``-o catalogue.json`` writes: readable by ``--tools`` (the ``tools`` list), with where
        the definitions came from and when."""
        return {
            "tools": self.definitions(),
            "source": f"tool definitions from the configured MCP servers at {self.listed_at}",
            "servers": {s.name: [t.name for t in self.tools if t.server == s.name] for s in self.servers},
        }


def _estimate(model: ChatModel) -> str | None:
    info = model.describe()
    if info.exact:
        return None
    lower = info.name.lower()
    vendor = "anthropic" if "claude" in lower else "openai" if lower.startswith(("gpt", "o1", "o3", "o4")) else None
    base = PROVIDER_RENDERING.get(
        vendor or "", "the provider's tool rendering is not published; the count is an estimate"
    )
    return f"{base} ({info.method})" if info.method else base


def catalogue_definitions(
    listings: Sequence[Listing], naming: str, skipped: list[McpSkipped] | None = None
) -> tuple[list[dict], list[tuple[str, str]]]:
    """The tools in the ``--tools`` format, in the servers' order, and (server, listed name) for each.
    A name another server already took is prefixed ``<server>__`` (as Gemini CLI does). Tools past
    the caps (:func:`caps`) are left out, and added to ``skipped`` when it is given."""
    most_tools, most_bytes = caps()
    out: list[dict] = []
    owners: list[tuple[str, str]] = []
    taken: set[str] = set()
    size = 0
    for listing in listings:
        for tool in listing.tools:
            weight = len(json.dumps(tool, ensure_ascii=False).encode("utf-8", "surrogatepass"))
            reason = None
            if len(out) >= most_tools:
                reason = f"past the {most_tools:,} tools priced (TOKPROF_MCP_MAX_TOOLS)"
            elif size + weight > most_bytes:
                reason = f"past the {_mib(most_bytes)} of definitions priced (TOKPROF_MCP_MAX_CATALOGUE, MiB)"
            if reason is not None:
                if skipped is not None:
                    skipped.append(McpSkipped(listing.server.name, tool["name"], weight, reason))
                continue
            size += weight
            name = exposed_name(naming, listing.server.name, tool["name"])
            if name in taken:
                name = f"{listing.server.name}__{tool['name']}"
            taken.add(name)
            out.append(normalise_tool("MCP servers", listing.server.name, {**tool, "name": name}))
            owners.append((listing.server.name, tool["name"]))
    return out, owners


def _mib(size: int) -> str:
    return f"{size // MIB:,} MiB" if size % MIB == 0 else f"{size:,} bytes"


def checked(results: Sequence[Listing | Failure]) -> list[Listing | Failure]:
    """A server whose listing is not a valid tool catalogue (a tool without a name, a schema that is not an
    object, a name twice) is a failure, not the end of the report."""
    out: list[Listing | Failure] = []
    for result in results:
        if isinstance(result, Listing):
            try:
                normalise_tools(result.server.name, "tools", [dict(t) for t in result.tools])
            except InputError as exc:
                out.append(
                    Failure(result.server, f"listed tools that are not valid definitions: {exc.where}: {exc.what}")
                )
                continue
        out.append(result)
    return out


def mcp_report(
    model: ChatModel,
    results: Sequence[Listing | Failure],
    listed_at: str,
    naming: str | None = None,
    trace: Trace | None = None,
    deadline: float | None = None,
) -> McpReport:
    """The report of the servers' listings, priced under ``model``; ``deadline`` (``time.monotonic()``)
    bounds the pricing: past it, a :class:`TimeoutError` saying how far it got."""
    results = checked(results)
    listings = [r for r in results if isinstance(r, Listing)]
    failures = tuple(
        McpFailure(f.server.name, f.server.origin, f.reason, f.stderr_tail) for f in results if isinstance(f, Failure)
    )
    naming = naming or naming_for([r.server for r in results])
    skipped: list[McpSkipped] = []
    definitions, owners = catalogue_definitions(listings, naming, skipped)
    total = scaffolding = 0
    costs = []
    if definitions:
        if deadline is not None and time.monotonic() >= deadline:
            raise TimeoutError(f"no time was left to price the {len(definitions):,} tools listed")
        catalogue = catalogue_cost(model, definitions, deadline=deadline)
        total, scaffolding, costs = catalogue.total, catalogue.scaffolding, catalogue.tools
    calls: Counter | None = None
    requests = None
    if trace is not None:
        calls = Counter(tc["function"]["name"] for tc in trace.tool_calls())
        requests = len(trace.calls)
    tools = tuple(
        McpTool(
            name=cost.name,
            server=owner[0],
            listed_name=owner[1],
            marginal=cost.marginal,
            description_tokens=cost.description_tokens,
            parameter_tokens=cost.parameter_tokens,
            calls=calls.get(cost.name, 0) if calls is not None else None,
            run_cost=cost.marginal * requests if requests is not None else None,
        )
        for cost, owner in zip(costs, owners)
    )
    servers = tuple(_server(listing, tools, total, requests) for listing in listings)
    report = McpReport(
        model=model.describe(),
        naming=naming,
        listed_at=listed_at,
        total=total,
        scaffolding=scaffolding,
        servers=servers,
        tools=tools,
        failures=failures,
        estimate=_estimate(model),
        log=trace.path if trace is not None else None,
        requests=requests,
        skipped=tuple(skipped),
        _definitions=tuple(definitions),
    )
    return report


def _server(listing: Listing, tools: tuple[McpTool, ...], total: int, requests: int | None) -> McpServer:
    mine = [t for t in tools if t.server == listing.server.name]
    tokens = sum(t.marginal for t in mine)
    largest = tuple(t.name for t in sorted(mine, key=lambda t: (-t.marginal, t.name))[:LARGEST])
    calls = None if requests is None else sum(t.calls or 0 for t in mine)
    never = None if requests is None else sum(t.run_cost or 0 for t in mine if t.calls == 0)
    config = listing.server
    return McpServer(
        name=config.name,
        origin=config.origin,
        agent=config.agent,
        transport=config.transport,
        server_info=listing.server_info,
        tools=len(mine),
        tokens=tokens,
        share=round(tokens / total, 6) if total else None,
        largest=largest,
        prompts=listing.prompts,
        resources=listing.resources,
        calls=calls,
        never_called_cost=never,
    )
