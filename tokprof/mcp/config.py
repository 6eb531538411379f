"""Where agents keep their MCP server configuration, read into one neutral shape: :func:`discover`
reads the configuration files (the table in docs/mcp.md), :func:`parse_server_option` reads
``--server``, and :func:`expand` fills ``${VAR}`` references when a server is about to start.
Nothing here starts a server."""

from __future__ import annotations

import json
import os
import re
import shlex
import tomllib
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tokprof.base.bounded as bounded
from tokprof.base.errors import InputError, TokprofError

AGENTS = ("claude-code", "claude-desktop", "cursor", "vscode", "codex", "gemini")
TRANSPORTS = ("stdio", "http", "sse")
HIDDEN = "***"
#: An argument or query parameter name that says its value is a secret (``--api-key``, ``token=``).
_SECRET_NAME = re.compile(r"(?i)(token|secret|passw|api[-_]?key|auth|credential|^key$|^--?key$)")


def shown_args(args: tuple[str, ...]) -> tuple[str, ...]:
    """Arguments as ``--list`` shows them: the value of a secret-named ``--name=value``/``NAME=value``,
    or the argument after a secret-named flag, hidden."""
    out: list[str] = []
    for i, arg in enumerate(args):
        name, eq, _ = arg.partition("=")
        if eq and name and _SECRET_NAME.search(name):
            out.append(f"{name}={HIDDEN}")
        elif i and args[i - 1].startswith("-") and "=" not in args[i - 1] and _SECRET_NAME.search(args[i - 1]):
            out.append(HIDDEN)
        else:
            out.append(arg)
    return tuple(out)


def shown_url(url: str | None) -> str | None:
    """A URL as ``--list`` shows it: a password and the query's values hidden (tokens travel there)."""
    if not url:
        return url
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.partition(':')[0]}:{HIDDEN}@{host}" if ":" in user else netloc
    query = (
        "&".join(
            f"{key}={HIDDEN}" if eq else key
            for key, eq, _ in (pair.partition("=") for pair in parts.query.split("&") if pair)
        )
        if parts.query
        else ""
    )
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc, query=query))


@dataclass(frozen=True)
class ServerConfig:
    """One configured MCP server. ``env`` and ``headers`` keep their values for starting the server;
    :meth:`describe` (what ``--list`` prints) shows their names only."""

    name: str
    transport: str  # stdio, http (streamable HTTP) or sse
    origin: str  # the file it came from, or "--server"
    agent: str  # an entry of AGENTS, or "file" / "command-line"
    project: bool = False  # from a project's own configuration: starts only when trusted
    command: str | None = None
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    timeout: float | None = None  # a per-server start-up time-out the configuration sets, in seconds

    def describe(self) -> str:
        """What starting it would run or reach, without any environment or header value, URL query
        value or password, or secret-named argument's value."""
        if self.transport == "stdio":
            what = " ".join(shlex.quote(a) for a in (self.command or "", *shown_args(self.args)))
        else:
            what = f"{self.transport} {shown_url(self.url)}"
        extra = []
        if self.env:
            extra.append("env " + ", ".join(k for k, _ in self.env))
        if self.headers:
            extra.append("headers " + ", ".join(k for k, _ in self.headers))
        if self.cwd:
            extra.append(f"cwd {self.cwd}")
        return what + (f" ({'; '.join(extra)})" if extra else "")

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "transport": self.transport,
            "origin": self.origin,
            "agent": self.agent,
            "project": self.project,
            "command": self.command,
            "args": list(shown_args(self.args)),
            "env": sorted(k for k, _ in self.env),
            "headers": sorted(k for k, _ in self.headers),
            "cwd": self.cwd,
            "url": shown_url(self.url),
        }


@dataclass(frozen=True)
class Discovery:
    """The servers found, in the order found, and what could not be read (one line each)."""

    servers: tuple[ServerConfig, ...]
    problems: tuple[str, ...] = ()
    searched: tuple[str, ...] = field(default=())


# -- reading one entry ---------------------------------------------------------------------------------
def _strings(value: Any, path: str, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(path, where, "expected a list of strings")
    return tuple(value)


def _mapping(value: Any, path: str, where: str) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise InputError(path, where, "expected an object of names and strings")
    out = []
    for key, item in value.items():
        if isinstance(item, (int, float)) and not isinstance(item, bool):
            item = str(item)
        if not isinstance(item, str):
            raise InputError(path, f"{where}.{key}", "expected a string")
        out.append((str(key), item))
    return tuple(out)


def _entry(name: str, raw: Any, path: str, where: str, agent: str, project: bool) -> ServerConfig:
    if not isinstance(raw, dict):
        raise InputError(path, where, "expected a server object")
    kind = raw.get("type") or raw.get("transport")
    url = raw.get("httpUrl") or raw.get("url") or raw.get("serverUrl")
    if kind in ("streamable-http", "streamableHttp", "http") or raw.get("httpUrl"):
        transport = "http"
    elif kind == "sse":
        transport = "sse"
    elif url and not raw.get("command"):
        # Gemini CLI's "url" is SSE; the other agents' bare "url" is streamable HTTP (SSE needs "type": "sse")
        transport = "sse" if agent == "gemini" else "http"
    else:
        transport = "stdio"
    timeout = raw.get("timeout") or raw.get("startup_timeout_sec")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        timeout = None
    elif agent == "gemini":  # milliseconds there
        timeout = timeout / 1000
    headers = _mapping(raw.get("headers") or raw.get("http_headers"), path, f"{where}.headers")
    if agent == "codex" and isinstance(raw.get("bearer_token_env_var"), str):
        headers += (("Authorization", "Bearer ${" + raw["bearer_token_env_var"] + "}"),)
    if transport == "stdio":
        command = raw.get("command")
        if not isinstance(command, str) or not command:
            raise InputError(path, where, "a stdio server needs a command (or a url for an HTTP server)")
        return ServerConfig(
            name=name,
            transport="stdio",
            origin=path,
            agent=agent,
            project=project,
            command=command,
            args=_strings(raw.get("args"), path, f"{where}.args"),
            env=_mapping(raw.get("env"), path, f"{where}.env"),
            cwd=raw.get("cwd") if isinstance(raw.get("cwd"), str) else None,
            timeout=timeout,
        )
    if not isinstance(url, str) or not url:
        raise InputError(path, where, f"a {transport} server needs a url")
    return ServerConfig(
        name=name,
        transport=transport,
        origin=path,
        agent=agent,
        project=project,
        url=url,
        headers=headers,
        timeout=timeout,
    )


def _servers(table: Any, path: str, where: str, agent: str, project: bool) -> list[ServerConfig]:
    if table is None:
        return []
    if not isinstance(table, dict):
        raise InputError(path, where, "expected an object of servers")
    out = []
    for name, raw in table.items():
        if (
            isinstance(raw, dict)
            and raw.get("disabled") is True
            or isinstance(raw, dict)
            and raw.get("enabled") is False
        ):
            continue
        out.append(_entry(str(name), raw, path, f"{where}.{name}", agent, project))
    return out


# -- reading files -----------------------------------------------------------------------------------------
_JSONC = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/|,(?=\s*[}\]])', re.DOTALL)


def _json(path: Path, comments: bool = False) -> Any:
    try:
        text = bounded.read_text(path, "configuration")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(str(path), None, f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    if comments:
        text = _JSONC.sub(lambda m: m.group(0) if m.group(0).startswith('"') else "", text)
    try:
        return json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise InputError(str(path), f"line {exc.lineno} column {exc.colno}", f"not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise InputError(str(path), None, "not valid JSON: nested too deeply") from None


def _top(doc: Any, path: Path) -> dict:
    if not isinstance(doc, dict):
        raise InputError(str(path), None, "expected a JSON object")
    return doc


def read_file(path: Path, agent: str, project: bool = False, project_dir: Path | None = None) -> list[ServerConfig]:
    """The servers one agent's configuration file defines. Raises :class:`InputError` naming the file
    and the entry when it is not what that agent writes."""
    name = str(path)
    if agent == "codex":
        try:
            data = tomllib.loads(bounded.read_text(path, "configuration"))
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(name, None, f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None
        except tomllib.TOMLDecodeError as exc:
            raise InputError(name, None, f"not valid TOML: {exc}") from None
        except RecursionError:
            raise InputError(name, None, "not valid TOML: nested too deeply") from None
        return _servers(data.get("mcp_servers"), name, "mcp_servers", agent, project)
    doc = _top(_json(path, comments=agent in ("vscode", "gemini")), path)
    if agent == "vscode":
        if path.name == "settings.json":
            mcp = doc.get("mcp")
            return _servers(mcp.get("servers") if isinstance(mcp, dict) else None, name, "mcp.servers", agent, project)
        return _servers(doc.get("servers"), name, "servers", agent, project)
    found = _servers(doc.get("mcpServers"), name, "mcpServers", agent, project)
    if agent == "claude-code" and path.name == ".claude.json" and project_dir is not None:
        projects = doc.get("projects")
        entry = projects.get(str(project_dir)) if isinstance(projects, dict) else None
        if isinstance(entry, dict):
            found += _servers(entry.get("mcpServers"), name, f"projects[{project_dir}].mcpServers", agent, project)
    return found


def candidates(project: Path, home: Path, environ: Mapping[str, str]) -> list[tuple[Path, str, bool]]:
    """Every file an agent may keep servers in: (path, agent, the project's own)."""
    appdata = Path(environ["APPDATA"]) if environ.get("APPDATA") else home / "AppData" / "Roaming"
    xdg = Path(environ["XDG_CONFIG_HOME"]) if environ.get("XDG_CONFIG_HOME") else home / ".config"
    support = home / "Library" / "Application Support"
    codex = Path(environ["CODEX_HOME"]) if environ.get("CODEX_HOME") else home / ".codex"
    code_users = [support / "Code" / "User", appdata / "Code" / "User", xdg / "Code" / "User"]
    out: list[tuple[Path, str, bool]] = [
        (project / ".mcp.json", "claude-code", True),
        (home / ".claude.json", "claude-code", False),
    ]
    out += [(d / "Claude" / "claude_desktop_config.json", "claude-desktop", False) for d in (support, appdata, xdg)]
    out += [(project / ".cursor" / "mcp.json", "cursor", True), (home / ".cursor" / "mcp.json", "cursor", False)]
    out += [(project / ".vscode" / "mcp.json", "vscode", True)]
    out += [(d / name, "vscode", False) for d in code_users for name in ("mcp.json", "settings.json")]
    out += [(codex / "config.toml", "codex", False)]
    out += [
        (project / ".gemini" / "settings.json", "gemini", True),
        (home / ".gemini" / "settings.json", "gemini", False),
    ]
    return out


def discover(
    project: Path | None = None,
    home: Path | None = None,
    environ: Mapping[str, str] | None = None,
    agents: tuple[str, ...] = AGENTS,
) -> Discovery:
    """The MCP servers the agents in ``agents`` are configured with, for the project at ``project``
    (default: the working directory) and the user at ``home`` (default: ``$HOME``). A file that
    cannot be read is one line in ``problems``; the other files are still read."""
    environ = os.environ if environ is None else environ
    project = (project or Path.cwd()).resolve()
    home = home or Path(environ.get("HOME") or Path.home())
    servers: list[ServerConfig] = []
    problems: list[str] = []
    searched: list[str] = []
    seen: set[Path] = set()
    for path, agent, own in candidates(project, home, environ):
        if agent not in agents or path in seen:
            continue
        seen.add(path)
        searched.append(str(path))
        if not path.is_file():
            continue
        try:
            servers += read_file(path, agent, own, project)
        except InputError as exc:
            problems.append(str(exc))
    return Discovery(tuple(servers), tuple(problems), tuple(searched))


def parse_server_option(spec: str) -> ServerConfig:
    """``NAME=URL`` (``http://``/``https://``: streamable HTTP; ``sse+http://...``: SSE) or
    ``NAME=COMMAND ARG...`` (split like a shell)."""
    name, sep, rest = spec.partition("=")
    name = name.strip()
    if not sep or not name or not rest.strip():
        raise TokprofError(f"--server {spec!r}: expected NAME=COMMAND [ARG...] or NAME=URL")
    rest = rest.strip()
    if re.match(r"(sse\+)?https?://", rest):
        sse = rest.startswith("sse+")
        return ServerConfig(
            name=name,
            transport="sse" if sse else "http",
            origin="--server",
            agent="command-line",
            url=rest[4:] if sse else rest,
        )
    try:
        words = shlex.split(rest)
    except ValueError as exc:
        raise TokprofError(f"--server {name}: {exc}") from None
    return ServerConfig(
        name=name, transport="stdio", origin="--server", agent="command-line", command=words[0], args=tuple(words[1:])
    )


def read_config_file(path: str) -> list[ServerConfig]:
    """A configuration file the user names: any agent's layout (``mcpServers``, ``servers``,
    ``mcp.servers``, or Codex TOML ``[mcp_servers.*]``)."""
    file = Path(path)
    if not file.is_file():
        raise InputError(path, None, "no such file")
    if file.suffix == ".toml":
        found = read_file(file, "codex")
    else:
        doc = _top(_json(file, comments=True), file)
        agent = "vscode" if "servers" in doc or "mcp" in doc else "claude-code"
        found = read_file(file, agent)
    return [ServerConfig(**{**_fields(s), "agent": "file"}) for s in found]


def _fields(server: ServerConfig) -> dict:
    return {k: getattr(server, k) for k in ServerConfig.__dataclass_fields__}


# -- ${VAR} expansion -----------------------------------------------------------------------------------------
_VAR = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$\{(workspaceFolder)\}")


class MissingVariable(TokprofError):
    pass


def expand(value: str, environ: Mapping[str, str], workspace: str) -> str:
    """``${VAR}``, ``${VAR:-default}`` (Claude Code), ``${env:VAR}`` (Cursor, VS Code) and
    ``${workspaceFolder}``; a variable that is not set and has no default raises :class:`MissingVariable`."""

    def one(match: re.Match) -> str:
        if match.group(3):
            return workspace
        name, default = match.group(1), match.group(2)
        if name in environ:
            return environ[name]
        if default is not None:
            return default
        raise MissingVariable(f"needs the environment variable {name}, which is not set")

    return _VAR.sub(one, value)


def expanded(server: ServerConfig, environ: Mapping[str, str], workspace: str) -> ServerConfig:
    """The server with every ``${VAR}`` in its command, args, env, url and headers filled in."""

    def each(items: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
        return tuple((k, expand(v, environ, workspace)) for k, v in items)

    return ServerConfig(
        **{
            **_fields(server),
            "command": expand(server.command, environ, workspace) if server.command else None,
            "args": tuple(expand(a, environ, workspace) for a in server.args),
            "env": each(server.env),
            "headers": each(server.headers),
            "url": expand(server.url, environ, workspace) if server.url else None,
            "cwd": expand(server.cwd, environ, workspace) if server.cwd else None,
        }
    )
