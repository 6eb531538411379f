"""The public API of ``tokprof mcp``: find configured MCP servers, list their tools, price them.

Re-exported by :mod:`tokprof`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Union

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
    *,
    model: str | None = None,
    chat_template: PathLike | None = None,
    naming: str | None = None,
    log: PathLike | None = None,
    input_format: str | None = None,
    trust_project: Trust = False,
    timeout: float = DEFAULT_TIMEOUT,
    environ: Mapping[str, str] | None = None,
) -> McpReport:
    """What each MCP server's tools cost per request under ``model`` (default: tokprof's default
    model), priced as ``tokprof tools`` prices a catalogue; with ``log``, how often each tool was
    called there and what the never-called ones cost over it. ``servers`` are configurations (which
    are started, see :func:`list_mcp_servers`) or listings already made. ``timeout`` bounds the whole
    run: the model and the log are loaded first, the servers get four fifths of the time left to start
    and list (a server's own time-out applies when it is shorter), and pricing must end within it."""
    from tokprof.mcp.report import NAMINGS
    from tokprof.mcp.report import mcp_report as _report
    from tokprof.runs.inputs import read_log
    from tokprof.runs.options import Options
    from tokprof.runs.profile import profile
    from tokprof.models import DEFAULT_MODEL
    from tokprof.models.loaded import chat_model

    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < 1e9:
        raise TokprofError(f"timeout: expected a positive number of seconds, found {timeout!r}")
    deadline = time.monotonic() + timeout
    if naming is not None and naming not in NAMINGS:
        raise TokprofError(f"unknown naming {naming!r}: expected one of {', '.join(NAMINGS)}")
    trace = read_log(log, Options(input_format=input_format)) if log is not None else None
    profiled = profile(trace) if trace is not None else None  # the log's own model: its carry, its prices
    chat = chat_model(model or DEFAULT_MODEL, None if chat_template is None else os.fspath(chat_template), None)
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
    return replace(report, cut_list=cut_list(profiled, definitions, called, agent=agent))
