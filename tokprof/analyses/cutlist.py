"""The cut list (#47.3): per tool and per MCP server (``mcp__server__tool`` names), what its definition cost
over the run and what its results carried into later prompts, in dollars where the log is priced; the
saving a replay of the log proves for cutting it (a cap: :class:`tokprof.transforms.cuts.CapTools`; a drop of
tools never called: :class:`tokprof.transforms.cuts.DropTools`), where one was replayed; and the configuration change
that applies the cut for the agent that wrote the log (:mod:`tokprof.analyses.agent_config`).

A carry in dollars is the profile's (``tool_result_costs.tools[].carry_dollars``: each resent token at the
rate its call paid). A definition in dollars is its tokens at the run's mean price of an input token (the
input, cache write and cache read dollars over the billed input tokens): the prompt's parts share its bill,
and a definition read from the cache costs what the rest of the cached prompt does; so is a carry the
profile did not price. They are costs, labelled so; a saving is only ever what a replay proves
(``saving``: the costliest caps and drops are replayed, each as a policy of its own, :mod:`tokprof.transforms.cuts`),
never these figures.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tokprof.analyses import agent_config
from tokprof.attribution.catalogue import Catalogue
from tokprof.profiling import Profile
from tokprof.trace import Trace

if TYPE_CHECKING:
    from tokprof.pricing.cost import UserPrice
    from tokprof.models.base import ChatModel

#: A cut: drop the tool (never called), cap its results (they carry into later prompts), or none.
DROP, CAP, KEEP = "drop", "cap", "none"
#: Why a cut has no replayed saving.
NOT_REPLAYED = "not replayed: tokprof whatif -p cap:C replays a cap of every tool's results"
DROP_NOT_REPLAYED = "not replayed: tokprof whatif -p drop-tools:NAME replays dropping it"


def _not_replayed(cut: str) -> str | None:
    return DROP_NOT_REPLAYED if cut == DROP else NOT_REPLAYED if cut == CAP else None


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


def _carry(tokens: int, paid: float | None, price: float | None) -> float | None:
    """A carry in dollars: at the rate each call paid (the profile's ``carry_dollars``), else at the mean price."""
    return round(paid, 6) if paid is not None else _dollars(tokens, price)


def _sum(values: Iterable[float | None]) -> float | None:
    found = list(values)
    return None if any(v is None for v in found) else round(sum(v or 0.0 for v in found), 6)


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
    carry_paid: dict[str, float | None] = {}  # the carry in dollars at the rate each call paid, where priced
    costs = profile.tool_result_costs
    for cost in costs.tools if costs is not None else ():
        if cost.tool:
            results[cost.tool] = (cost.tokens, cost.carry_cost)
            carry_paid[cost.tool] = cost.carry_dollars
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
                carry_dollars=_carry(carried, carry_paid.get(name), price),
                cut=cut,
                how=how,
                saving_dollars=replayed[1] if replayed else None,
                saving_tokens=replayed[2] if replayed else None,
                replay=replayed[0] if replayed else None,
                not_replayed=None if replayed else _not_replayed(cut),
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
                carry_dollars=_sum(t.carry_dollars for t in tools),
                cut=cut,
                how=how,
                not_replayed=_not_replayed(cut),
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


#: How many caps, and how many drops, a cut list replays, the costliest first (each replay is a pass over the log).
REPLAYED_CUTS = 3
REPLAYED_DROPS = 6
#: The characters a replayed cap keeps of each result (as ``cap:4000``, whatif's default cap).
CAP_CHARS = 4000


def cap_candidates(cuts: CutList) -> list[tuple[Cut, tuple[str, ...]]]:
    """The caps to replay, the most carried first, each with the tools whose results it cuts (a server: its
    tools), at most :data:`REPLAYED_CUTS`."""
    rows = sorted(
        (r for r in cuts.rows if r.cut == CAP and r.carry_tokens > 0), key=lambda r: (-r.carry_tokens, r.name)
    )
    out = []
    for row in rows[:REPLAYED_CUTS]:
        if row.kind == "server":
            server = row.name[len(agent_config.MCP_PREFIX) :]
            tools = tuple(r.name for r in cuts.rows if r.kind == "tool" and _server(r.name) == server)
        else:
            tools = (row.name,)
        out.append((row, tools))
    return out


def drop_candidates(cuts: CutList) -> list[tuple[Cut, tuple[str, ...]]]:
    """The drops to replay, the costliest definitions first, each with the tools it takes out of every request
    (a tool never called; a server: its tools never called, all of them where none was), at most
    :data:`REPLAYED_DROPS`. Only a drop whose definitions the log records: a replay drops what the prompts carry."""
    rows = sorted(
        (r for r in cuts.rows if r.cut == DROP and r.definition_tokens),
        key=lambda r: (-(r.definition_tokens or 0), r.kind != "server", r.name),
    )
    out = []
    for row in rows[:REPLAYED_DROPS]:
        if row.kind == "server":
            server = row.name[len(agent_config.MCP_PREFIX) :]
            tools = tuple(r.name for r in cuts.rows if r.kind == "tool" and _server(r.name) == server and r.cut == DROP)
        else:
            tools = (row.name,)
        if tools:
            out.append((row, tools))
    return out


def with_replays(cuts: CutList, replays: Mapping[str, tuple[str, float | None, int]]) -> CutList:
    """The cut list with what the replays of its cuts proved (by row name: the policy, dollars saved or None,
    tokens saved); a row not replayed keeps its reason, or says how many of its kind were."""
    done = {kind: sum(1 for r in cuts.rows if r.name in replays and r.cut == kind) for kind in (CAP, DROP)}
    rows = []
    for row in cuts.rows:
        found = replays.get(row.name)
        if found is not None:
            row = dataclasses.replace(
                row, replay=found[0], saving_dollars=found[1], saving_tokens=found[2], not_replayed=None
            )
        elif row.cut == CAP and row.not_replayed == NOT_REPLAYED and done[CAP]:
            row = dataclasses.replace(row, not_replayed=f"not replayed: the {done[CAP]} costliest caps were")
        elif row.cut == DROP and row.not_replayed == DROP_NOT_REPLAYED and done[DROP]:
            row = dataclasses.replace(row, not_replayed=f"not replayed: the {done[DROP]} costliest drops were")
        rows.append(row)
    return dataclasses.replace(cuts, rows=rows)


def replayed(
    cuts: CutList, trace: Trace, chat: "ChatModel", prices: "Mapping[str, UserPrice] | None" = None
) -> CutList:
    """The cut list with what replays prove: the costliest caps (:func:`cap_candidates`) and drops
    (:func:`drop_candidates`), each a policy of its own (:mod:`tokprof.transforms.cuts`) replayed by
    ``tokprof whatif``'s one replay (:func:`tokprof.analyses.whatif.whatif`), the log's baseline made once."""
    from tokprof.analyses.whatif import whatif
    from tokprof.attribution.attributor import RenderError
    from tokprof.transforms.cuts import CapTools, DropTools
    from tokprof.transforms.policies import Policy

    candidates: list[tuple[Cut, Policy]] = [(row, CapTools(tools, CAP_CHARS)) for row, tools in cap_candidates(cuts)]
    candidates += [(row, DropTools(tuple(sorted(tools)))) for row, tools in drop_candidates(cuts)]
    if not candidates:
        return cuts
    try:
        report = whatif(trace, chat, [p for _, p in candidates], prices=prices)
    except RenderError:  # a cut prompt the template cannot render: the cut list without replays
        return cuts
    results = {p.policy: p for p in report.policies}
    found = {}
    for row, policy in candidates:
        result = results.get(policy.spec)
        if result is not None:
            found[row.name] = (policy.spec, result.cost_saving, result.saving)
    return with_replays(cuts, found)
