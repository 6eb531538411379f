"""What ``tokprof mcp`` does, as functions: find configured MCP servers, list their tools, price them
(:mod:`tokprof.frontends.mcp_cli` calls them; internal, not re-exported by :mod:`tokprof`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Union

from tokprof.mcp.report import McpReport
from tokprof.base.errors import TokprofError
from tokprof.base.text import did_you_mean
from tokprof.mcp.config import (
    AGENTS,
    Discovery,
    ServerConfig,
    discover,
    parse_server_option,
    read_config_file,
)
from tokprof.mcp.connect import DEFAULT_TIMEOUT, Failure, Listing, list_servers
from tokprof.runs.options import DEFAULTS, Options
from tokprof.trace import Trace

if TYPE_CHECKING:
    from tokprof.analyses.cutlist import CutList

PathLike = Union[str, "os.PathLike[str]"]
#: Whether servers from a project's own configuration may start: True, False, or a function asked
#: with those servers (the command line asks at a terminal).
Trust = Union[bool, Callable[[Sequence[ServerConfig]], bool]]
#: The share of ``mcp_report``'s time-out the servers get to start and list; the rest is for pricing.
LISTING_SHARE = 0.8
UNTRUSTED = (
    "not started: it comes from the project's own configuration ({origin}); "
    "start it with --trust-project (trust_project=True) once you have read what it runs"
)


def find_mcp_servers(
    project: PathLike | None = None,
    *,
    home: PathLike | None = None,
    agents: Sequence[str] | None = None,
    files: Sequence[PathLike] = (),
    servers: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
) -> Discovery:
    """The MCP servers configured for ``project`` (default: the working directory): from the agents'
    own files (``agents``: any of :data:`tokprof.mcp.config.AGENTS`, default all), unless ``files``
    (configuration files in any agent's layout) or ``servers`` (``NAME=COMMAND ARG...`` /
    ``NAME=URL``) are given, which replace them. Starts nothing."""
    for agent in agents or ():
        if agent not in AGENTS:
            raise TokprofError(
                f"unknown agent {agent!r}{did_you_mean(agent, AGENTS)}: expected one of {', '.join(AGENTS)}"
            )
    if files or servers:
        found: list[ServerConfig] = []
        for file in files:
            found += read_config_file(os.fspath(file))
        found += [parse_server_option(spec) for spec in servers]
        return Discovery(tuple(found))
    return discover(
        Path(project) if project else None, Path(home) if home else None, environ, tuple(agents) if agents else AGENTS
    )


def _distinct(servers: Sequence[ServerConfig]) -> list[ServerConfig]:
    """One server per name: the first found (a project's file before the user's)."""
    seen: set[str] = set()
    out = []
    for server in servers:
        if server.name not in seen:
            seen.add(server.name)
            out.append(server)
    return out


def list_mcp_servers(
    servers: Sequence[ServerConfig] | Discovery,
    *,
    trust_project: Trust = False,
    timeout: float = DEFAULT_TIMEOUT,
    environ: Mapping[str, str] | None = None,
    workspace: PathLike | None = None,
) -> list[Listing | Failure]:
    """Start (or reach) each server, in parallel, and list its tools: a :class:`Listing` or a
    :class:`Failure` per server, in order. Servers from a project's own configuration start only
    when ``trust_project`` is True or returns True for them; otherwise each is a failure saying so."""
    chosen = _distinct(servers.servers if isinstance(servers, Discovery) else servers)
    if not chosen:
        raise TokprofError(
            "no MCP servers configured: give --server NAME=COMMAND, a configuration file, or "
            "configure an agent (see tokprof mcp --help)"
        )
    untrusted = [s for s in chosen if s.project]
    trusted = trust_project(untrusted) if untrusted and callable(trust_project) else bool(trust_project)
    start = [s for s in chosen if trusted or not s.project]
    started = iter(list_servers(start, timeout, environ, os.fspath(workspace) if workspace else None) if start else [])
    return [
        next(started) if trusted or not s.project else Failure(s, UNTRUSTED.format(origin=s.origin)) for s in chosen
    ]


def mcp_report(
    servers: Sequence[ServerConfig] | Discovery | Sequence[Listing | Failure],
    options: Options = DEFAULTS,
    *,
    naming: str | None = None,
    log: PathLike | None = None,
    trust_project: Trust = False,
    timeout: float = DEFAULT_TIMEOUT,
    environ: Mapping[str, str] | None = None,
) -> McpReport:
    """What each MCP server's tools cost per request under ``options.model`` (default: tokprof's
    default model; ``options.chat_template`` instead of its own template), priced as ``tokprof tools``
    prices a catalogue; with ``log`` (read as ``options.input_format`` says), how often each tool was
    called there and what the never-called ones cost over it. ``servers`` are configurations (which
    are started, see :func:`list_mcp_servers`) or listings already made. ``timeout`` bounds the whole
    run: the model and the log are loaded first, the servers get four fifths of the time left to start
    and list (a server's own time-out applies when it is shorter), and pricing must end within it."""
    from tokprof.mcp.report import NAMINGS
    from tokprof.mcp.report import mcp_report as _report
    from tokprof.runs.inputs import read_log
    from tokprof.runs.model import Model
    from tokprof.runs.profile import profile
    from tokprof.models import DEFAULT_MODEL
    from tokprof.models.loaded import chat_model

    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < 1e9:
        raise TokprofError(f"timeout: expected a positive number of seconds, found {timeout!r}")
    deadline = time.monotonic() + timeout
    if naming is not None and naming not in NAMINGS:
        raise TokprofError(f"unknown naming {naming!r}: expected one of {', '.join(NAMINGS)}")
    trace = read_log(log, Options(input_format=options.input_format)) if log is not None else None
    profiled = profile(trace) if trace is not None else None  # the log's own model: its carry, its prices
    if isinstance(options.model, Model):
        chat = options.model.chat
    else:
        chat = chat_model(options.model or DEFAULT_MODEL, options.template, None)
    items: list = list(servers.servers if isinstance(servers, Discovery) else servers)
    results: list[Listing | Failure]
    if items and all(isinstance(i, (Listing, Failure)) for i in items):
        results = items
    else:
        listing = max(LISTING_SHARE * (deadline - time.monotonic()), 0.001)
        bounded = [replace(s, timeout=min(s.timeout or listing, listing)) for s in items]
        results = list_mcp_servers(bounded, trust_project=trust_project, timeout=listing, environ=environ)
    listed_at = datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    try:
        report = _report(chat, results, listed_at, naming, trace, deadline)
    except TimeoutError as exc:
        listed = sum(len(r.tools) for r in results if isinstance(r, Listing))
        raise TokprofError(
            f"the servers listed {listed:,} tools, but pricing them did not end within the time-out of "
            f"{timeout:g} s ({exc}): raise --timeout, or price fewer (TOKPROF_MCP_MAX_TOOLS)"
        ) from None
    except TokprofError:
        raise
    except Exception as exc:  # a template failing on the catalogue prompt
        raise TokprofError(f"the chat template failed on the MCP servers' tool catalogue: {exc}") from None
    if trace is None or profiled is None:
        return report
    from collections import Counter

    from tokprof.analyses.cutlist import cut_list

    agents = {r.server.agent for r in results}
    agent = {"gemini": "gemini-cli"}.get(next(iter(agents)), next(iter(agents))) if len(agents) == 1 else None
    called = Counter(tc["function"]["name"] for tc in trace.tool_calls())
    definitions = {t.name: t.run_cost for t in report.tools if t.run_cost is not None}
    cuts = cut_list(profiled, definitions, called, agent=agent)
    return replace(report, cut_list=_replayed_drops(cuts, trace, report.definitions()))


def _replayed_drops(cuts: "CutList", trace: Trace, listed: list[dict]) -> "CutList":
    """The cut list with its costliest drops replayed (tokprof.analyses.cutlist.drop_candidates) by
    ``tokprof whatif``'s replay under the log's own model: ``drop-tools`` of each server's tools never
    called. A log that records no tool definitions is replayed with the servers' listed tools supplied
    (as ``--tools`` supplies them), so that the replay has them to drop; one that records them, as it is."""
    from tokprof.analyses.cutlist import drop_candidates, with_replays
    from tokprof.runs.whatif import whatif
    from tokprof.transforms import supply
    from tokprof.transforms.cuts import DropTools

    # a name the policy's string cannot carry (a comma or a colon) is not replayed: its row keeps its reason
    candidates = [(row, tools) for row, tools in drop_candidates(cuts) if not any("," in t or ":" in t for t in tools)]
    if not candidates:
        return cuts
    if all(c.tools is None for c in trace.calls if not c.thread):
        copied = replace(trace, calls=[replace(c) for c in trace.calls], notes=list(trace.notes))
        trace = supply(copied, listed, None)
    specs = [DropTools(tuple(sorted(tools))).spec for _, tools in candidates]
    try:
        replayed = whatif(trace, specs)
    except TokprofError:  # a prompt the template cannot render without them: the cut list without replays
        return cuts
    results = {p.policy: p for p in replayed.policies}
    found = {}
    for (row, _), spec in zip(candidates, specs):
        result = results.get(spec)
        if result is not None:
            found[row.name] = (spec, result.cost_saving, result.saving)
    return with_replays(cuts, found)
