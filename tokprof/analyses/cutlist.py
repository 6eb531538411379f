"""The cut list (#47.3): per tool and per MCP server (``mcp__server__tool`` names), what its definition cost
over the run and what its results carried into later prompts, in dollars where the log is priced; the
saving a replay of the log proves for cutting it, where one was replayed; and the configuration change
that applies the cut for the agent that wrote the log (:mod:`tokprof.analyses.agent_config`).

Dollars of a part of the prompt are its tokens at the run's mean price of an input token (the input, cache
write and cache read dollars over the billed input tokens): the prompt's parts share its bill, and a
definition read from the cache costs what the rest of the cached prompt does. They are labelled so; a
saving is only ever what a replay proves (``saving``), never this figure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tokprof.analyses import agent_config
from tokprof.attribution.catalogue import Catalogue
from tokprof.profiling import Profile

#: A cut: drop the tool (never called), cap its results (they carry into later prompts), or none.
DROP, CAP, KEEP = "drop", "cap", "none"
NOT_REPLAYED = "not replayed: no replay of one tool's cut yet (tokprof whatif replays the cuts of every tool)"


@dataclass(frozen=True)
class Cut:
    """One tool's (or one MCP server's) row of the cut list."""

    name: str  # the tool, or for a server "mcp__SERVER"
    kind: str  # "tool" or "server"
    calls: int
    definition_tokens: int | None  # over the run (None: the log does not record its definition)
    result_tokens: int  # what its results added
    carry_tokens: int  # its results' tokens resent by later calls
    definition_dollars: float | None  # at the run's mean input price (None: unpriced or not recorded)
    carry_dollars: float | None
    cut: str  # DROP, CAP or KEEP
    how: str
    saving_dollars: float | None = None  # what a replay of the cut proves (None: not replayed or unpriced)
    saving_tokens: int | None = None
    replay: str | None = None  # the policy replayed
    not_replayed: str | None = None  # why there is no replayed saving

    @property
    def cost_dollars(self) -> float | None:
        parts = [d for d in (self.definition_dollars, self.carry_dollars) if d is not None]
        return round(sum(parts), 6) if parts else None

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "kind": self.kind,
            "calls": self.calls,
            "definition_tokens": self.definition_tokens,
            "result_tokens": self.result_tokens,
            "carry_tokens": self.carry_tokens,
            "definition_dollars": self.definition_dollars,
            "carry_dollars": self.carry_dollars,
            "cost_dollars": self.cost_dollars,
            "cut": self.cut,
            "saving_dollars": self.saving_dollars,
            "saving_tokens": self.saving_tokens,
            "replay": self.replay,
            "not_replayed": self.not_replayed,
            "how": self.how,
        }


@dataclass
class CutList:
    """The rows, costliest first (tools, then servers), and how their dollars were made."""

    rows: list[Cut] = field(default_factory=list)
    price_per_token: float | None = None  # the run's mean price of an input token, US dollars
    unpriced: str | None = None  # why there are no dollars
    estimate: bool = False  # the counts are a proxy's
    agent: str | None = None  # the agent whose configuration the changes are for
    definitions_recorded: bool = True  # the log records tool definitions (else every definition is n/r)

    def to_dict(self) -> dict:
        return {
            "definitions_recorded": self.definitions_recorded,
            "price_per_input_token": self.price_per_token,
            "unpriced": self.unpriced,
            "estimate": self.estimate,
            "agent": self.agent,
            "rows": [r.to_dict() for r in self.rows],
        }


def mean_input_price(profile: Profile) -> tuple[float | None, str | None]:
    """The run's mean price of an input token (its input, cache write and cache read dollars over its
    billed input), or None and why not."""
    summary = profile.summary()
    cost = summary.cost
    if cost is None or cost.total is None:
        return None, "the log is not priced" + (
            f": {cost.unpriced[0].reason}" if cost is not None and cost.unpriced else ""
        )
    if not cost.priced:
        return None, "some calls have no price: " + "; ".join(u.reason for u in cost.unpriced)
    prompt = summary.reported.billed_input if summary.reported is not None else summary.billed_input
    dollars = (cost.input or 0.0) + (cost.cache_write or 0.0) + (cost.cache_read or 0.0)
    if not prompt:
        return None, "no input tokens"
    return dollars / prompt, None


def _dollars(tokens: int | None, price: float | None) -> float | None:
    return None if tokens is None or price is None else round(tokens * price, 6)


def _server(name: str) -> str | None:
    if not name.startswith(agent_config.MCP_PREFIX):
        return None
    server, sep, tool = name[len(agent_config.MCP_PREFIX) :].partition("__")
    return server if sep and server and tool else None


def run_definitions(catalogues: Sequence[Catalogue]) -> dict[str, int]:
    """Per tool, its definitions' tokens over the run, added up over the catalogues that carried it."""
    definitions: dict[str, int] = {}
    for catalogue in catalogues:
        for tool in catalogue.tools:
            if tool.run_cost is not None:
                definitions[tool.name] = definitions.get(tool.name, 0) + tool.run_cost
    return definitions


def cut_list(
    profile: Profile,
    definitions: Mapping[str, int],
    called: Mapping[str, int],
    replays: Mapping[str, tuple[str, float | None, int]] | None = None,
    agent: str | None = None,
) -> CutList:
    """The cut list of a profiled log: ``definitions`` per tool its definitions' tokens over the run
    (:func:`run_definitions`; none: the log records none), ``called`` how often the model called each tool,
    ``replays`` by tool name the replayed cut (policy, dollars saved or None, tokens saved). ``agent``: whose
    settings the changes are (a log format, :data:`agent_config.AGENTS`), when not the log's own."""
    fmt = profile.source.format
    if agent_config.agent_of(fmt) is None and agent is not None:
        fmt = agent
    price, unpriced = mean_input_price(profile)
    results: dict[str, tuple[int, int]] = {}
    costs = profile.tool_result_costs
    for cost in costs.tools if costs is not None else ():
        if cost.tool:
            results[cost.tool] = (cost.tokens, cost.carry_cost)
    names = sorted(set(definitions) | set(called) | set(results))
    replays = replays or {}
    rows: list[Cut] = []
    for name in names:
        calls = called.get(name, 0)
        added, carried = results.get(name, (0, 0))
        defined = definitions.get(name)
        if defined is not None and calls == 0:
            cut, how = DROP, agent_config.drop_tools(fmt, [name])
        elif carried > 0:
            cut, how = CAP, agent_config.cap_results(fmt, [name])
        else:
            cut, how = KEEP, ""
        replayed = replays.get(name)
        rows.append(
            Cut(
                name=name,
                kind="tool",
                calls=calls,
                definition_tokens=defined,
                result_tokens=added,
                carry_tokens=carried,
                definition_dollars=_dollars(defined, price),
                carry_dollars=_dollars(carried, price),
                cut=cut,
                how=how,
                saving_dollars=replayed[1] if replayed else None,
                saving_tokens=replayed[2] if replayed else None,
                replay=replayed[0] if replayed else None,
                not_replayed=None if replayed or cut == KEEP else NOT_REPLAYED,
            )
        )
    rows.sort(key=lambda r: (-((r.definition_tokens or 0) + r.carry_tokens), r.name))
    servers: dict[str, list[Cut]] = {}
    for row in rows:
        server = _server(row.name)
        if server is not None:
            servers.setdefault(server, []).append(row)
    server_rows = []
    for server, tools in servers.items():
        recorded = [t.definition_tokens for t in tools if t.definition_tokens is not None]
        defined = sum(recorded) if recorded else None
        calls = sum(t.calls for t in tools)
        carried = sum(t.carry_tokens for t in tools)
        unused = [t.name for t in tools if t.cut == DROP]
        if calls == 0 and defined is not None:
            cut, how = DROP, agent_config.drop_server(fmt, server)
        elif unused:
            cut, how = DROP, agent_config.drop_tools(fmt, unused)
        elif carried > 0:
            cut, how = CAP, agent_config.cap_results(fmt, [t.name for t in tools if t.carry_tokens])
        else:
            cut, how = KEEP, ""
        server_rows.append(
            Cut(
                name=agent_config.MCP_PREFIX + server,
                kind="server",
                calls=calls,
                definition_tokens=defined,
                result_tokens=sum(t.result_tokens for t in tools),
                carry_tokens=carried,
                definition_dollars=_dollars(defined, price),
                carry_dollars=_dollars(carried, price),
                cut=cut,
                how=how,
                not_replayed=None if cut == KEEP else NOT_REPLAYED,
            )
        )
    server_rows.sort(key=lambda r: (-((r.definition_tokens or 0) + r.carry_tokens), r.name))
    return CutList(
        rows=rows + server_rows,
        price_per_token=price,
        unpriced=unpriced,
        estimate=not profile.model.exact,
        agent=agent_config.AGENTS.get(fmt),
        definitions_recorded=bool(definitions),
    )
