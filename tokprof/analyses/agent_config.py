"""The configuration change that applies a cut, for the agent that wrote the log, as its documentation
gives it (docs/advice.md cites each page). An agent or a change no documentation covers gets no guess:
:func:`drop_tools`, :func:`drop_server` and :func:`cap_results` say so instead."""

from __future__ import annotations

from collections.abc import Sequence

#: The documentation each change rests on, by agent (log format).
DOCS = {
    "claude-code": (
        "https://code.claude.com/docs/en/permissions",
        "https://code.claude.com/docs/en/settings",
        "https://code.claude.com/docs/en/cli-reference",
        "https://code.claude.com/docs/en/mcp",
        "https://code.claude.com/docs/en/env-vars",
    ),
    "codex": ("https://developers.openai.com/codex/mcp", "https://developers.openai.com/codex/config-reference"),
    "gemini-cli": (
        "https://geminicli.com/docs/reference/configuration",
        "https://geminicli.com/docs/tools/mcp-server",
    ),
}
AGENTS = {"claude-code": "Claude Code", "codex": "Codex", "gemini-cli": "Gemini CLI"}
MCP_PREFIX = "mcp__"


def agent_of(fmt: str) -> str | None:
    """The agent whose configuration applies to a log of this format (None: no agent tokprof knows)."""
    return fmt if fmt in AGENTS else None


def _names(names: Sequence[str]) -> str:
    return ", ".join(f'"{n}"' for n in names)


def _arguments(names: Sequence[str]) -> str:
    """Names as a command line's quoted arguments, one each."""
    return " ".join(f'"{n}"' for n in names)


def _mcp_parts(name: str) -> tuple[str, str] | None:
    """(server, tool) of an ``mcp__server__tool`` name."""
    if not name.startswith(MCP_PREFIX):
        return None
    server, sep, tool = name[len(MCP_PREFIX) :].partition("__")
    return (server, tool) if sep and server and tool else None


def _unknown(fmt: str, what: str) -> str:
    agent = AGENTS.get(fmt)
    if agent is None:
        return f"tokprof knows no documented setting of the agent that wrote this log ({fmt}) that {what}"
    return f"{agent}'s documentation gives no setting that {what}"


def drop_tools(fmt: str, tools: Sequence[str]) -> str:
    """The change that removes these tools' definitions from every request."""
    if not tools:
        return ""
    if fmt == "claude-code":
        return (
            f'Claude Code: add {_names(tools)} to "permissions.deny" in .claude/settings.json (a rule naming a tool '
            f"alone removes it), or start claude with --disallowedTools {_arguments(tools)}"
        )
    mcp = [(_mcp_parts(t), t) for t in tools]
    if fmt == "codex" and all(parts is not None for parts, _ in mcp):
        servers: dict[str, list[str]] = {}
        for parts, _ in mcp:
            assert parts is not None
            servers.setdefault(parts[0], []).append(parts[1])
        return "Codex: " + "; ".join(
            f"disabled_tools = [{_names(names)}] under [mcp_servers.{server}] in ~/.codex/config.toml"
            for server, names in servers.items()
        )
    if fmt == "gemini-cli":
        if all(parts is not None for parts, _ in mcp):
            servers = {}
            for parts, _ in mcp:
                assert parts is not None
                servers.setdefault(parts[0], []).append(parts[1])
            return "Gemini CLI: " + "; ".join(
                f'"excludeTools": [{_names(names)}] under "mcpServers"."{server}" in .gemini/settings.json'
                for server, names in servers.items()
            )
        return f'Gemini CLI: add {_names(tools)} to "tools"."exclude" in .gemini/settings.json'
    return _unknown(fmt, "removes a tool that is not an MCP server's")


def drop_server(fmt: str, server: str) -> str:
    """The change that removes an MCP server (all of its tools) from every request."""
    if fmt == "claude-code":
        return (
            f'Claude Code: add "mcp__{server}" to "permissions.deny" in .claude/settings.json, or remove the '
            f'server ("claude mcp remove {server}", or its entry in .mcp.json; a server of .mcp.json: "{server}" in '
            '"disabledMcpjsonServers")'
        )
    if fmt == "codex":
        return f"Codex: enabled = false under [mcp_servers.{server}] in ~/.codex/config.toml"
    if fmt == "gemini-cli":
        return (
            f'Gemini CLI: add "{server}" to "mcp"."excluded" in .gemini/settings.json, or remove '
            f'"mcpServers"."{server}"'
        )
    return _unknown(fmt, "removes an MCP server")


def cap_results(fmt: str, tools: Sequence[str]) -> str:
    """The change that caps these tools' results, where the agent documents one; what no setting caps is named."""
    out: list[str] = []
    uncapped: list[str] = []
    if fmt == "claude-code":
        mcp = [t for t in tools if t.startswith(MCP_PREFIX)]
        if mcp:
            out.append("Claude Code: MAX_MCP_OUTPUT_TOKENS (environment) caps MCP tools' results, in tokens")
        if "Bash" in tools:
            out.append("Claude Code: BASH_MAX_OUTPUT_LENGTH (environment) caps Bash's output, in characters")
        uncapped = [t for t in tools if not t.startswith(MCP_PREFIX) and t != "Bash"]
    elif fmt == "codex":
        out.append("Codex: tool_output_token_limit in ~/.codex/config.toml caps each tool output kept in the history")
    elif fmt == "gemini-cli":
        out.append(
            'Gemini CLI: "tools"."truncateToolOutputThreshold" in .gemini/settings.json truncates large tool outputs, '
            "in characters (default 40,000)"
        )
    else:
        uncapped = list(tools)
    if uncapped:
        out.append(_unknown(fmt, f"caps {', '.join(uncapped)}") + ": ask for less (narrower reads, filtered output)")
    return "; ".join(out)


def elide_results(fmt: str) -> str:
    """The change that drops old tool results from later prompts, where the agent documents one."""
    return (
        _unknown(fmt, "drops old tool results from later prompts")
        + " (calling the Anthropic API yourself: context editing's clear_tool_uses does it)"
    )
