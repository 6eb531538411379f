"""``tokprof mcp``: what each configured MCP server's tools cost per request. A thin client of
:mod:`tokprof.mcp.api` (``find_mcp_servers``, ``mcp_report``); registered on the
command line by :mod:`tokprof.frontends.cli`."""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Sequence
from typing import Annotated, Optional

import typer

from tokprof.frontends.cli_common import (
    EXIT_FAIL,
    EXIT_OK,
    EXIT_USAGE,
    ChatTemplate,
    ModelName,
    esc,
    format_option,
    one_line,
    render,
    render_options,
    write_outputs,
)
from tokprof.base.errors import TokprofError
from tokprof.mcp.config import AGENTS, ServerConfig
from tokprof.base.text import visible

MCP_HELP: str = (
    "What each configured MCP server costs per request: starts (or reaches) the servers the agents are configured "
    "with, lists their tools (initialize and tools/list only, never tools/call), and prices them as the model sees "
    "them, each tool marginally, as tokprof tools does. Configuration is read from Claude Code (.mcp.json, "
    "~/.claude.json), Claude Desktop, Cursor, VS Code, Codex (~/.codex/config.toml) and Gemini CLI, or from --file "
    "and --server. Servers from a project's own configuration (a cloned repository's .mcp.json) start only with "
    "--trust-project or after a yes at the terminal. Needs the mcp extra: pip install 'tokprof[mcp]'. Exit codes: "
    "0 every server listed, 1 some failed, 2 none listed or bad input. See docs/mcp.md."
)
EXAMPLES: str = esc(
    "Examples:\n\n  tokprof mcp --list\n\n  tokprof mcp --trust-project -o catalogue.json\n\n"
    "  tokprof mcp --server 'notes=python notes_server.py' --server docs=http://127.0.0.1:8000/mcp\n\n"
    "  tokprof mcp --log ~/.claude/projects/-home-me-app/3f2a.jsonl"
)


def _ask(servers: Sequence[ServerConfig]) -> bool:
    """At a terminal (not in CI), ask before starting servers from the project's own configuration."""
    if not sys.stdin.isatty() or not sys.stderr.isatty() or os.environ.get("CI"):
        return False
    print("These MCP servers come from the project's own configuration; starting them runs:", file=sys.stderr)
    for server in servers:
        print(f"  {visible(server.name)} ({visible(server.origin)}): {visible(server.describe())}", file=sys.stderr)
    try:
        answer = input("Start them? [y/N] ")
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


def mcp(
    list_only: Annotated[
        bool,
        typer.Option(
            "--list",
            help="Show the servers found, from where, and what each would "
            "start (no environment or header values); start nothing.",
        ),
    ] = False,
    server: Annotated[
        Optional[list[str]],
        typer.Option(
            "--server",
            metavar="NAME=COMMAND|URL",
            help="A server: NAME=COMMAND ARG... (stdio) or NAME=URL (streamable HTTP; sse+URL for SSE). Repeatable; "
            "replaces the agents' configuration.",
        ),
    ] = None,
    file: Annotated[
        Optional[list[str]],
        typer.Option(
            "--file",
            metavar="FILE",
            help="A configuration file in any agent's layout (mcpServers, servers, Codex "
            "TOML). Repeatable; replaces the agents' configuration.",
        ),
    ] = None,
    agent: Annotated[
        Optional[list[str]],
        typer.Option(
            "--agent", metavar="NAME", help=f"Read only this agent's configuration: {', '.join(AGENTS)}. Repeatable."
        ),
    ] = None,
    project: Annotated[
        Optional[str],
        typer.Option(
            "--project", metavar="DIR", help="The project whose configuration to read (default: the working directory)."
        ),
    ] = None,
    trust_project: Annotated[
        bool, typer.Option("--trust-project", help="Start servers from the project's own configuration without asking.")
    ] = False,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            metavar="SECONDS",
            help="The whole run: the servers get four fifths of it to start and list, pricing the rest.",
        ),
    ] = 30.0,
    naming: Annotated[
        Optional[str],
        typer.Option(
            "--naming",
            metavar="claude-code|codex|plain",
            help="Tool names as this agent exposes them (default: the configured agent's; Claude Code's when mixed).",
        ),
    ] = None,
    log: Annotated[
        Optional[str],
        typer.Option(
            "--log",
            metavar="FILE",
            help="An agent log: how often each tool was called there, what the never-called cost.",
        ),
    ] = None,
    model: ModelName = None,
    chat_template: ChatTemplate = None,
    fmt: Annotated[str, format_option("mcp")] = "table",
    output: Annotated[
        Optional[str],
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="Write the listed tools to FILE in the --tools format (for tokprof tools/profile/check --tools).",
        ),
    ] = None,
) -> int:
    """What each configured MCP server's tools cost per request."""
    from tokprof.mcp.api import find_mcp_servers, mcp_report
    from tokprof.runs.options import Options

    if not 0 < timeout < math.inf:  # NaN too
        raise TokprofError("--timeout: give a positive number of seconds")
    found = find_mcp_servers(project, agents=agent, files=file or (), servers=server or ())
    options = render_options(fmt, None)
    if list_only:
        if output:
            raise TokprofError("--list starts nothing, so it has no catalogue to write with -o")
        write_outputs([(None, render(found, fmt, options))])
        return EXIT_OK
    for problem in found.problems:
        print(f"tokprof: warning: {one_line(problem)}", file=sys.stderr)
    report = mcp_report(
        found,
        Options(model=model, chat_template=chat_template),
        naming=naming,
        log=log,
        trust_project=True if trust_project else _ask,
        timeout=timeout,
    )
    outputs: list[tuple[Optional[str], str]] = []
    if output and report.tools:
        outputs.append((output, json.dumps(report.catalogue_document(), indent=2, ensure_ascii=False) + "\n"))
    elif output:
        print(f"tokprof: warning: no server listed a tool: {visible(output)} not written", file=sys.stderr)
    outputs.append((None, render(report, fmt, options)))
    read = tuple(dict.fromkeys(s.origin for s in found.servers if s.origin != "--server"))  # the configurations read
    write_outputs(outputs, (log, chat_template, *(str(f) for f in file or ()), *found.searched, *read))
    if not report.servers:
        return EXIT_USAGE
    return EXIT_FAIL if report.failures else EXIT_OK
