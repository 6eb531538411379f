"""``tokprof mcp``: configuration of every agent found, real MCP servers (written with the SDK, started on stdio
and on streamable HTTP at 127.0.0.1) listed, failures reported one line each, and the servers' tools priced
exactly as ``tokprof tools --tools`` prices the same definitions."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
from dataclasses import FrozenInstanceError
from pathlib import Path

import shlex

import pytest

pytest.importorskip("mcp")

from conftest import ROOT

import tokprof
import tokprof.mcp.api as api
from tokprof.frontends.cli import main
from tokprof.base.errors import TokprofError
from tokprof.mcp.config import ServerConfig
from tokprof.mcp.connect import Failure, Listing, list_servers

#: The interpreter as a --server command line names it (the clone's path may hold a space).
PY = shlex.quote(sys.executable)

# A server written with the SDK's MCPServer: argv = tool count, description length, and an optional
# environment variable it needs (it exits with a message on standard error when it is not set).
SERVER = """
import os, sys

count, size = int(sys.argv[1]), int(sys.argv[2])
need = sys.argv[3] if len(sys.argv) > 3 else None
if need and not os.environ.get(need):
    print(f"{need} is not set", file=sys.stderr)
    sys.exit(1)
from mcp.server.mcpserver import MCPServer
app = MCPServer("test-server")

def add(i):
    def tool(query: str, limit: int = 10) -> str:
        return ""
    text = f"Tool number {i}. Searches the things it knows about." + " More detail." * size
    app.add_tool(tool, name=f"tool_{i}", description=text)

for i in range(count):
    add(i)

@app.prompt()
def greeting() -> str:
    return "hello"

if len(sys.argv) > 5 and sys.argv[5] == "auth":  # streamable HTTP that wants "Authorization: Bearer s3cret"
    import uvicorn
    inner = app.streamable_http_app()

    async def guarded(scope, receive, send):
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != b"Bearer s3cret":
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return
        await inner(scope, receive, send)

    uvicorn.run(guarded, host="127.0.0.1", port=int(sys.argv[4]), log_level="error")
elif len(sys.argv) > 5:
    app.run("sse", host="127.0.0.1", port=int(sys.argv[4]))
elif len(sys.argv) > 4:
    app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[4]))
else:
    app.run()
"""

# A low-level SDK server whose tools/list answers three tools a page, with a cursor.
PAGINATED = """
import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

TOOLS = [types.Tool(name=f"page_tool_{i}", description=f"Paged tool {i}.",
                    input_schema={"type": "object", "properties": {"x": {"type": "string"}}}) for i in range(8)]

async def list_tools(ctx, params):
    start = int(params.cursor) if params is not None and params.cursor else 0
    end = start + 3
    return types.ListToolsResult(tools=TOOLS[start:end], next_cursor=str(end) if end < len(TOOLS) else None)

server = Server("paged", on_list_tools=list_tools)

async def main():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())

anyio.run(main)
"""
HANGS = "import time\ntime.sleep(120)\n"
EXITS = "import sys\nprint('fatal: no configuration', file=sys.stderr)\nsys.exit(3)\n"
GARBAGE = "import sys, time\nprint('Starting server... ok', flush=True)\ntime.sleep(120)\n"


@pytest.fixture
def scripts(tmp_path) -> dict[str, Path]:
    out = {}
    for name, text in {
        "server": SERVER,
        "paged": PAGINATED,
        "hangs": HANGS,
        "exits": EXITS,
        "garbage": GARBAGE,
    }.items():
        path = tmp_path / f"{name}.py"
        path.write_text(text, encoding="utf-8")
        out[name] = path
    return out


def stdio(name: str, script: Path, *args: str, env: dict | None = None, project: bool = False) -> ServerConfig:
    return ServerConfig(
        name=name,
        transport="stdio",
        origin="test",
        agent="claude-code",
        project=project,
        command=sys.executable,
        args=(str(script), *args),
        env=tuple((env or {}).items()),
    )


def by_name(results) -> dict:
    return {r.server.name: r for r in results}


# -- listing real servers ---------------------------------------------------------------------------------
def test_servers_listed_in_parallel_failures_one_line_each(scripts):
    servers = [  # the SDK's servers: twelve tools and a prompt; paginated; huge descriptions, with a needed variable
        stdio("twelve", scripts["server"], "12", "2"),
        stdio("paged", scripts["paged"]),
        stdio("hangs", scripts["hangs"]),
        stdio("exits", scripts["exits"]),
        stdio("garbage", scripts["garbage"]),
        stdio("needs_env", scripts["server"], "3", "3000", "TOKEN_FOR_TEST", env={"TOKEN_FOR_TEST": "${MY_TOKEN}"}),
        stdio("env_missing", scripts["server"], "3", "0", "OTHER", env={"OTHER": "${NOT_SET_ANYWHERE}"}),
        ServerConfig(name="absent", transport="stdio", origin="test", agent="file", command="/no/such/server"),
    ]
    started = time.monotonic()
    # A time-out long enough for ten Python servers starting at once on a loaded machine; the hang costs it once.
    results = by_name(list_servers(servers, timeout=12, environ={"MY_TOKEN": "s3cret", "PATH": "/usr/bin:/bin"}))
    elapsed = time.monotonic() - started
    assert elapsed < 12 * 3, "servers are asked in parallel: one hang costs its time-out once"
    assert [len(results[n].tools) for n in ("twelve", "needs_env")] == [12, 3]
    paged = results["paged"]
    assert isinstance(paged, Listing) and paged.pages == 3 and len(paged.tools) == 8
    assert results["twelve"].prompts == 1 and results["paged"].prompts is None
    assert len(results["needs_env"].tools[0]["description"]) > 30000
    assert set(results["twelve"].tools[0]) == {"name", "description", "inputSchema"}
    hangs, exits, garbage = results["hangs"], results["exits"], results["garbage"]
    assert isinstance(hangs, Failure) and "no answer within 12 s" in hangs.reason
    assert isinstance(exits, Failure) and "exited" in exits.reason and "fatal: no configuration" in exits.stderr_tail
    assert isinstance(garbage, Failure) and "not JSON-RPC" in garbage.reason and "Starting server" in garbage.reason
    assert "NOT_SET_ANYWHERE" in results["env_missing"].reason
    assert "cannot start" in results["absent"].reason
    for failure in (hangs, exits, garbage, results["env_missing"], results["absent"]):
        assert "\n" not in failure.reason


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def _serve(scripts, *args: str):
    """A server script on HTTP at 127.0.0.1 (streamable HTTP; with "sse" last, SSE), on a free port."""
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, str(scripts["server"]), *args[:3], str(port), *args[3:]],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60  # a Python server starting on a loaded machine: not a measure of speed
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                if process.poll() is not None:
                    pytest.fail("the HTTP server exited")
                if time.monotonic() > deadline:
                    pytest.fail("the HTTP server did not listen within 60 s")
                time.sleep(0.05)
        yield port
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@pytest.fixture
def http_server(scripts):
    """The 300-tool server on streamable HTTP at 127.0.0.1, on a free port."""
    with _serve(scripts, "300", "0", "") as port:
        yield f"http://127.0.0.1:{port}/mcp"


def test_sse_server_listed(scripts, capsys):
    with _serve(scripts, "4", "0", "", "sse") as port:
        report = run_json(["mcp", "--server", f"legacy=sse+http://127.0.0.1:{port}/sse"], capsys)
        assert report["servers"][0]["transport"] == "sse" and report["servers"][0]["tools"] == 4


def test_http_headers_expanded_and_sent_never_printed(scripts, tmp_path, monkeypatch, capsys):
    with _serve(scripts, "2", "0", "", "auth") as port:
        config = _write(
            tmp_path / "mcp.json",
            json.dumps(
                {
                    "mcpServers": {
                        "guarded": {
                            "type": "http",
                            "url": f"http://127.0.0.1:{port}/mcp",
                            "headers": {"Authorization": "Bearer ${API_TOKEN}"},
                        }
                    }
                }
            ),
        )
        monkeypatch.setenv("API_TOKEN", "s3cret")
        report = run_json(["mcp", "--file", str(config)], capsys)
        assert report["servers"][0]["tools"] == 2 and "s3cret" not in json.dumps(report)
        monkeypatch.setenv("API_TOKEN", "wrong")
        code = main(["mcp", "--file", str(config)])
        out = capsys.readouterr().out
        assert code == 2 and "failed: guarded" in out and "wrong" not in out


def run_json(args: list[str], capsys, expect: int = 0) -> dict:
    code = main([*args, "-f", "json"])
    out, err = capsys.readouterr()
    assert code == expect, err
    return json.loads(out)


def _same_figures(report: dict, tools: dict) -> None:
    catalogue = tools["catalogues"][0]
    assert report["total"] == catalogue["total"] and report["scaffolding"] == catalogue["scaffolding"]
    assert [(t["name"], t["marginal"], t["description_tokens"]) for t in report["tools"]] == [
        (t["name"], t["marginal"], t["description_tokens"]) for t in catalogue["tools"]
    ]
    assert sum(s["tokens"] for s in report["servers"]) + report["scaffolding"] == report["total"]


def test_http_server_of_300_tools_priced_as_tools_prices_them(http_server, tmp_path, capsys):
    catalogue = tmp_path / "catalogue.json"
    report = run_json(["mcp", "--server", f"big={http_server}", "-o", str(catalogue)], capsys)
    assert report["servers"][0]["tools"] == 300 and report["servers"][0]["transport"] == "http"
    assert report["tools"][0]["name"] == "mcp__big__tool_0"
    _same_figures(report, run_json(["tools", "--tools", str(catalogue), "--no-progress"], capsys))


def test_no_tool_listed_says_the_catalogue_is_not_written(scripts, tmp_path, capsys):
    catalogue = tmp_path / "catalogue.json"
    code = main(["mcp", "--server", f"none={PY} {shlex.quote(str(scripts['server']))} 0 0", "-o", str(catalogue)])
    err = capsys.readouterr().err
    assert code in (0, 2) and not catalogue.exists()
    assert "not written" in err  # before: silence, and CI found no catalogue later


def test_stdio_servers_priced_as_tools_prices_them(scripts, tmp_path, capsys):
    catalogue = tmp_path / "catalogue.json"
    python = PY
    report = run_json(
        [
            "mcp",
            "--server",
            f"one={python} {shlex.quote(str(scripts['server']))} 1 0",
            "--server",
            f"twelve={python} {shlex.quote(str(scripts['server']))} 12 1",
            "--server",
            f"huge={python} {shlex.quote(str(scripts['server']))} 1 2000",
            "-o",
            str(catalogue),
        ],
        capsys,
    )
    assert [s["tools"] for s in report["servers"]] == [1, 12, 1]
    assert report["model"]["exact"] is True and report["estimate"] is None
    assert abs(sum(s["share"] for s in report["servers"]) + report["scaffolding"] / report["total"] - 1) < 1e-4
    huge = next(s for s in report["servers"] if s["name"] == "huge")
    assert huge["tokens"] > 4000 and huge["largest_tools"] == ["mcp__huge__tool_0"]
    doc = json.loads(catalogue.read_text())
    assert doc["source"].startswith("tool definitions from the configured MCP servers at ")
    _same_figures(report, run_json(["tools", "--tools", str(catalogue), "--no-progress"], capsys))
    codex = run_json(
        ["mcp", "--server", f"one={python} {shlex.quote(str(scripts['server']))} 1 0", "--naming", "codex"], capsys
    )
    assert codex["tools"][0]["name"] == "one__tool_0"


def test_closed_model_is_a_labelled_estimate(scripts, capsys):
    report = run_json(
        ["mcp", "--server", f"one={PY} {shlex.quote(str(scripts['server']))} 2 0", "-m", "claude-sonnet-4-5"], capsys
    )
    assert report["model"]["exact"] is False and "Anthropic" in report["estimate"]
    main(["mcp", "--server", f"one={PY} {shlex.quote(str(scripts['server']))} 2 0", "-m", "gpt-4o"])
    assert "ESTIMATE" in capsys.readouterr().out


def test_failures_exit_one_and_say_why(scripts, capsys):
    code = main(
        [
            "mcp",
            "--server",
            f"one={PY} {shlex.quote(str(scripts['server']))} 1 0",
            "--server",
            f"exits={PY} {shlex.quote(str(scripts['exits']))}",
        ]
    )
    out = capsys.readouterr().out
    assert code == 1
    assert "failed: exits (--server): exited" in out and "fatal: no configuration" in out
    assert main(["mcp", "--server", f"exits={PY} {shlex.quote(str(scripts['exits']))}"]) == 2


# -- configuration of every agent ------------------------------------------------------------------
def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def agent_configs(home: Path, project: Path) -> None:
    """One file per place an agent keeps servers, written by hand in each agent's documented layout."""
    _write(project / ".mcp.json", json.dumps({"mcpServers": {"proj": {"command": "npx", "args": ["-y", "proj-mcp"]}}}))
    _write(
        home / ".claude.json",
        json.dumps(
            {
                "mcpServers": {
                    "github": {
                        "type": "http",
                        "url": "https://api.example/mcp",
                        "headers": {"Authorization": "Bearer ${GH_TOKEN}"},
                    }
                },
                "projects": {
                    str(project.resolve()): {
                        "mcpServers": {
                            "local": {"command": "uvx", "args": ["local-mcp"], "env": {"API_KEY": "hunter2"}}
                        }
                    }
                },
            }
        ),
    )
    _write(
        home / "Library/Application Support/Claude/claude_desktop_config.json",
        json.dumps({"mcpServers": {"desktop_mac": {"command": "node", "args": ["d.js"]}}}),
    )
    _write(
        home / ".config/Claude/claude_desktop_config.json",
        json.dumps({"mcpServers": {"desktop_linux": {"command": "node", "args": ["l.js"]}}}),
    )
    _write(project / ".cursor/mcp.json", json.dumps({"mcpServers": {"cursor_proj": {"url": "http://127.0.0.1:9/mcp"}}}))
    _write(home / ".cursor/mcp.json", json.dumps({"mcpServers": {"cursor_user": {"command": "cursor-mcp"}}}))
    _write(
        project / ".vscode/mcp.json",
        '{\n  // comments are allowed\n  "servers": {"vs_proj": {"type": "sse", "url": "http://127.0.0.1:9/sse"},},\n}',
    )
    _write(
        home / ".config/Code/User/settings.json",
        '{"editor.fontSize": 14, /* a comment */ "mcp": {"servers": {"vs_user": {"type": "stdio", "command": "vs"}}}}',
    )
    _write(
        home / ".codex/config.toml",
        '[mcp_servers.codex_docs]\ncommand = "docs-mcp"\nargs = ["--stdio"]\n'
        'env = { DOCS_TOKEN = "abc123" }\n\n[mcp_servers.codex_http]\nurl = "https://codex.example/mcp"\n',
    )
    _write(
        project / ".gemini/settings.json",
        json.dumps({"mcpServers": {"gem_proj": {"httpUrl": "http://127.0.0.1:9/mcp"}}}),
    )
    _write(
        home / ".gemini/settings.json",
        json.dumps(
            {
                "mcpServers": {
                    "gem_user": {"url": "http://127.0.0.1:9/sse"},
                    "gem_off": {"command": "x", "disabled": True},
                }
            }
        ),
    )


def test_configuration_of_every_agent_found(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    agent_configs(home, project)
    found = api.find_mcp_servers(project, home=home, environ={})
    assert not found.problems
    servers = {s.name: s for s in found.servers}
    expected = {
        "proj": ("claude-code", "stdio", True),
        "github": ("claude-code", "http", False),
        "local": ("claude-code", "stdio", False),
        "desktop_mac": ("claude-desktop", "stdio", False),
        "desktop_linux": ("claude-desktop", "stdio", False),
        "cursor_proj": ("cursor", "http", True),
        "cursor_user": ("cursor", "stdio", False),
        "vs_proj": ("vscode", "sse", True),
        "vs_user": ("vscode", "stdio", False),
        "codex_docs": ("codex", "stdio", False),
        "codex_http": ("codex", "http", False),
        "gem_proj": ("gemini", "http", True),
        "gem_user": ("gemini", "sse", False),
    }
    assert {n: (s.agent, s.transport, s.project) for n, s in servers.items()} == expected
    assert servers["codex_docs"].env == (("DOCS_TOKEN", "abc123"),)
    only = api.find_mcp_servers(project, home=home, environ={}, agents=["codex"])
    assert [s.name for s in only.servers] == ["codex_docs", "codex_http"]


def test_list_starts_nothing_and_prints_no_secret(tmp_path, monkeypatch, capsys):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    agent_configs(home, project)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("APPDATA", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.setenv("COLUMNS", "250")
    assert main(["mcp", "--list", "--project", str(project)]) == 0
    out = capsys.readouterr().out
    for name in ("proj", "github", "codex_docs", "gem_user", "vs_user", "desktop_linux"):
        assert name in out
    assert "hunter2" not in out and "abc123" not in out and "Bearer" not in out
    assert "API_KEY" in out and "Authorization" in out
    doc = run_json(["mcp", "--list", "--project", str(project)], capsys)
    assert "hunter2" not in json.dumps(doc) and doc["kind"] == "mcp-list"


def test_list_hides_secrets_written_into_arguments_and_urls(tmp_path, capsys):
    """Tokens pasted into a configuration's args or URL (a common way to configure a server) are not
    printed: the value of a secret-named argument, the one after a secret-named flag, a URL's password
    and query values."""
    config = {
        "mcpServers": {
            "a": {"command": "npx", "args": ["-y", "srv", "--token=tok-111", "--api-key", "key-222", "--port", "8"]},
            "b": {"type": "http", "url": "https://me:pw-333@example.test/mcp?key=key-444&v=1"},
        }
    }
    path = _write(tmp_path / "c.json", json.dumps(config))
    for fmt in ("table", "json"):
        assert main(["mcp", "--list", "--file", str(path), "-f", fmt]) == 0
        out = capsys.readouterr().out
        assert not any(secret in out for secret in ("tok-111", "key-222", "pw-333", "key-444")), out
        assert "--port" in out and "8" in out and "example.test/mcp" in out


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
def test_timeout_must_be_a_finite_positive_number(value, capsys):
    assert main(["mcp", "--server", "w=http://127.0.0.1:9/mcp", "--timeout", value]) == 2  # before: NaN reached anyio
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--timeout" in err


def test_bad_configuration_is_one_line(tmp_path, capsys):
    bad = _write(tmp_path / "bad.json", '{"mcpServers": {"x": {"args": ["a"]}}}')
    assert main(["mcp", "--list", "--file", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.json: mcpServers.x: a stdio server needs a command" in err and "Traceback" not in err
    assert main(["mcp", "--server", "novalue"]) == 2


def test_project_config_refused_without_trust(tmp_path, monkeypatch, capsys):
    project = tmp_path / "clone"
    marker = tmp_path / "ran"
    script = _write(tmp_path / "touch.py", f"open({str(marker)!r}, 'w').write('x')\n" + SERVER)
    _write(
        project / ".mcp.json",
        json.dumps({"mcpServers": {"repo": {"command": sys.executable, "args": [str(script), "2", "0"]}}}),
    )
    monkeypatch.setenv("HOME", str(tmp_path / "empty-home"))
    monkeypatch.setenv("CI", "true")
    assert main(["mcp", "--project", str(project), "--agent", "claude-code"]) == 2
    out = capsys.readouterr().out
    assert "not started" in out and "--trust-project" in out
    assert not marker.exists(), "a project's server must not start without trust"
    report = run_json(["mcp", "--project", str(project), "--agent", "claude-code", "--trust-project"], capsys)
    assert marker.exists() and report["servers"][0]["tools"] == 2


# -- with a log ---------------------------------------------------------------------------------------
def claude_code_log(path: Path) -> Path:
    """A hand-written Claude Code transcript: two requests, one call of mcp__notes__tool_0."""

    def row(kind, uuid, parent, message, **extra):
        return {
            "parentUuid": parent,
            "isSidechain": False,
            "sessionId": "s-1",
            "type": kind,
            "uuid": uuid,
            "timestamp": "2026-01-01T10:00:00.000Z",
            "message": message,
            **extra,
        }

    def use(prompt: int) -> dict:
        return {
            "input_tokens": 3,
            "cache_creation_input_tokens": prompt - 3,
            "cache_read_input_tokens": 0,
            "output_tokens": 5,
        }

    rows = [
        row("user", "u1", None, {"role": "user", "content": "find my notes"}),
        row(
            "assistant",
            "a1",
            "u1",
            {
                "model": "claude-sonnet-4-5-20250929",
                "id": "m1",
                "type": "message",
                "role": "assistant",
                "stop_reason": "tool_use",
                "usage": use(9000),
                "content": [{"type": "tool_use", "id": "t1", "name": "mcp__notes__tool_0", "input": {"query": "x"}}],
            },
            requestId="r1",
        ),
        row(
            "user",
            "u2",
            "a1",
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "three notes"}]},
        ),
        row(
            "assistant",
            "a2",
            "u2",
            {
                "model": "claude-sonnet-4-5-20250929",
                "id": "m2",
                "type": "message",
                "role": "assistant",
                "stop_reason": "end_turn",
                "usage": use(9040),
                "content": [{"type": "text", "text": "Found three."}],
            },
            requestId="r2",
        ),
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_log_counts_calls_and_profile_takes_the_catalogue(scripts, tmp_path, capsys):
    log = claude_code_log(tmp_path / "session.jsonl")
    catalogue = tmp_path / "catalogue.json"
    spec = f"notes={PY} {shlex.quote(str(scripts['server']))} 3 0"
    report = run_json(["mcp", "--server", spec, "--log", str(log), "-o", str(catalogue)], capsys)
    assert report["requests"] == 2
    calls = {t["name"]: t["calls"] for t in report["tools"]}
    assert calls == {"mcp__notes__tool_0": 1, "mcp__notes__tool_1": 0, "mcp__notes__tool_2": 0}
    server = report["servers"][0]
    assert server["calls"] == 1
    assert server["never_called_cost"] == sum(t["marginal"] * 2 for t in report["tools"] if t["calls"] == 0)
    profile = run_json(["profile", str(log), "--tools", str(catalogue), "--no-progress"], capsys)
    assert profile["summary"]["catalogue"]["total"] > 0
    label = next(w["message"] for w in profile["warnings"] if w["code"] == "tools-from-mcp")
    assert label.startswith("tool definitions from the configured MCP servers at 20")


# -- the Python API and the JSON schema --------------------------------------------------------------------
def test_api_returns_frozen_typed_report(scripts):
    report = api.mcp_report([stdio("one", scripts["server"], "2", "0")], tokprof.Options(model="qwen2.5"))
    assert report.servers[0].tools == 2 and report.tools[0].server == "one"
    with pytest.raises(FrozenInstanceError):
        report.servers[0].tokens = 0  # type: ignore[misc]
    with pytest.raises(TokprofError, match="no MCP servers"):
        api.list_mcp_servers([])
    untrusted = api.list_mcp_servers([stdio("p", scripts["server"], "1", "0", project=True)])
    assert isinstance(untrusted[0], Failure) and "not started" in untrusted[0].reason


def test_json_matches_the_published_schema(scripts, capsys):
    from jsonschema import Draft202012Validator

    schema = json.loads((ROOT / "docs" / "schema" / "mcp.schema.json").read_text(encoding="utf-8"))
    doc = run_json(
        [
            "mcp",
            "--server",
            f"one={PY} {shlex.quote(str(scripts['server']))} 2 0",
            "--server",
            f"exits={PY} {shlex.quote(str(scripts['exits']))}",
        ],
        capsys,
        expect=1,
    )
    errors = list(Draft202012Validator(schema).iter_errors(doc))
    assert not errors, [e.message for e in errors[:5]]


def test_missing_sdk_gives_the_install_hint(monkeypatch):
    from tokprof.mcp.connect import require_sdk

    monkeypatch.setitem(sys.modules, "mcp", None)
    with pytest.raises(TokprofError, match=r"pip install 'tokprof\[mcp\]'"):
        require_sdk()


# -- budgets per server in CI, on the committed catalogue -------------------------------------------------
def test_check_budgets_per_server_on_committed_catalogue(scripts, tmp_path, capsys):
    catalogue = tmp_path / "catalogue.json"
    python = PY
    run_json(
        [
            "mcp",
            "--server",
            f"github={python} {shlex.quote(str(scripts['server']))} 3 0",
            "--server",
            f"notes={python} {shlex.quote(str(scripts['server']))} 2 0",
            "-o",
            str(catalogue),
        ],
        capsys,
    )
    config = _write(tmp_path / "tokprof.toml", '[budgets.mcp]\ngithub = 50\n"*" = 100000\ntools = { "*" = 5000 }\n')
    first = run_json(["check", "--tools", str(catalogue), "--config", str(config), "--no-progress"], capsys, expect=1)
    github = next(r for r in first["mcp"] if r["kind"] == "server" and r["name"] == "github")
    assert github["status"] == "fail" and github["max"] == 50 and "over the max of 50" in github["reasons"][0]
    assert next(r for r in first["mcp"] if r["name"] == "notes")["status"] == "pass"
    assert {r["name"] for r in first["mcp"] if r["kind"] == "tool"} >= {"mcp__github__tool_0", "mcp__notes__tool_1"}
    # the baseline is the committed catalogue's costs; CI starts no server
    _write(config, '[budgets.mcp]\n"*" = 100000\n')
    baseline = tmp_path / "baseline.json"
    assert (
        main(
            [
                "check",
                "--tools",
                str(catalogue),
                "--config",
                str(config),
                "--baseline",
                str(baseline),
                "--update-baseline",
                "--no-progress",
            ]
        )
        == 0
    )
    capsys.readouterr()
    doc = json.loads(catalogue.read_text())
    doc["tools"][0]["function"]["description"] += " It also does a great many other things." * 40
    doc["tools"].append(
        {
            "type": "function",
            "function": {
                "name": "mcp__jira__search",
                "description": "Search.",
                "parameters": {"type": "object", "properties": {}},
            },
        }
    )
    catalogue.write_text(json.dumps(doc))
    second = run_json(
        ["check", "--tools", str(catalogue), "--config", str(config), "--baseline", str(baseline), "--no-progress"],
        capsys,
        expect=1,
    )
    servers = {r["name"]: r for r in second["mcp"] if r["kind"] == "server"}
    assert servers["jira"]["reasons"] == ["added since the baseline"]
    assert servers["github"]["change"] > 300 and "against the baseline" in servers["github"]["reasons"][0]
    main(
        [
            "check",
            "--tools",
            str(catalogue),
            "--config",
            str(config),
            "--baseline",
            str(baseline),
            "-f",
            "markdown",
            "--no-progress",
        ]
    )
    markdown = capsys.readouterr().out
    assert "**MCP servers and tools**" in markdown and "| server jira |" in markdown


def test_bad_mcp_budget_is_one_line(tmp_path, capsys):
    config = _write(tmp_path / "tokprof.toml", '[budgets.mcp]\ngithub = "lots"\n')
    tools = _write(tmp_path / "tools.json", json.dumps([{"name": "mcp__a__b", "inputSchema": {"type": "object"}}]))
    assert main(["check", "--tools", str(tools), "--config", str(config), "--no-progress"]) == 2
    assert "budgets.mcp.github: expected a number of tokens per request" in capsys.readouterr().err


def test_tools_rolls_up_mcp_servers_from_a_log_with_no_configuration(tmp_path, capsys):
    log = claude_code_log(tmp_path / "session.jsonl")
    report = run_json(["tools", str(log), "--no-progress"], capsys)
    assert report["mcp_servers"] == [
        {
            "server": "notes",
            "tools_called": 1,
            "calls": 1,
            "result_tokens": report["mcp_servers"][0]["result_tokens"],
            "carry_cost": report["mcp_servers"][0]["carry_cost"],
            "carry_dollars": report["mcp_servers"][0]["carry_dollars"],
        }
    ]
    assert report["mcp_servers"][0]["result_tokens"] > 0
    main(["tools", str(log), "--no-progress"])
    assert "MCP servers" in capsys.readouterr().out


def test_clashing_names_prefixed_and_invalid_listing_is_a_failure():
    from tokprof.mcp.report import mcp_report as price
    from tokprof.models import resolve_model

    def listing(name, tools):
        return Listing(
            ServerConfig(name=name, transport="stdio", origin="test", agent="gemini", command="x"),
            tuple(tools),
            None,
            None,
            None,
            1,
            0.0,
        )

    search = {"name": "search", "description": "Search.", "inputSchema": {"type": "object", "properties": {}}}
    bad = {"name": "broken", "inputSchema": "not a schema"}
    report = price(
        resolve_model("qwen2.5"),
        [listing("a", [search]), listing("b", [search]), listing("c", [bad])],
        "2026-01-01T00:00:00Z",
    )
    assert [t.name for t in report.tools] == ["search", "b__search"] and report.naming == "plain"
    assert report.failures[0].name == "c" and "inputSchema" in report.failures[0].reason


def test_profile_table_rolls_up_mcp_servers(tmp_path, capsys):
    log = claude_code_log(tmp_path / "session.jsonl")
    assert main(["profile", str(log), "--no-progress"]) == 0
    assert "MCP server notes: 1 result(s) from 1 tool(s)" in capsys.readouterr().out


def test_hostile_configuration_is_one_line_each(tmp_path, monkeypatch, capsys):
    home, project = tmp_path / "home", tmp_path / "project"
    _write(project / ".mcp.json", "[" * 100000)
    _write(home / ".codex/config.toml", "x = " + "[" * 100000)
    _write(
        home / ".cursor/mcp.json", json.dumps({"mcpServers": {"\x1b[31mred\x1b[0m": {"command": "\x1b]0;evil\x07"}}})
    )
    for name in ("HOME", "XDG_CONFIG_HOME", "APPDATA", "CODEX_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    assert main(["mcp", "--list", "--project", str(project)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "nested too deeply" in out and "config.toml" in out
    monkeypatch.setenv("HOME", str(tmp_path / "nobody"))
    assert main(["mcp", "--project", str(tmp_path / "nowhere")]) == 2
    assert "no MCP servers configured" in capsys.readouterr().err


def _run_in_terminal(args: list[str], answer: bytes, env: dict, limit: float = 60.0) -> tuple[int, str]:
    """Run tokprof on a pseudo-terminal, answering the first question with ``answer``."""
    import os
    import pty
    import select

    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "tokprof", *args],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=env,
        close_fds=True,
    )
    os.close(follower)
    seen, answered, deadline = b"", False, time.monotonic() + limit
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:  # the terminal closed: the process is done
                    break
                if not chunk:
                    break
                seen += chunk
                if not answered and b"[y/N]" in seen:
                    os.write(leader, answer)
                    answered = True
            elif process.poll() is not None:
                break
        code = process.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
        os.close(leader)
    return code, seen.decode("utf-8", "replace")


@pytest.mark.parametrize("answer, starts", [(b"y\n", True), (b"n\n", False)])
def test_project_servers_start_after_a_yes_at_a_terminal(scripts, tmp_path, answer, starts):
    import os

    project = tmp_path / "clone"
    _write(
        project / ".mcp.json",
        json.dumps({"mcpServers": {"repo": {"command": sys.executable, "args": [str(scripts["server"]), "2", "0"]}}}),
    )
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS")}
    env.update(HOME=str(tmp_path / "empty-home"), PYTHONPATH=str(ROOT), COLUMNS="120")
    code, out = _run_in_terminal(["mcp", "--project", str(project), "--agent", "claude-code"], answer, env)
    assert "come from the project's own configuration" in out and str(scripts["server"]) in out
    if starts:
        assert code == 0 and "repo" in out and "2 tools" in out
    else:
        assert code == 2 and "not started" in out


CODEX_LOG = (
    ROOT.parent
    / "shared"
    / "corpus"
    / "codex_0.58_rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl"
)


@pytest.mark.skipif(not CODEX_LOG.is_file(), reason="the shared corpus is not here")
def test_codex_log_profiled_with_the_listed_catalogue(scripts, tmp_path, capsys):
    catalogue = tmp_path / "catalogue.json"
    run_json(
        [
            "mcp",
            "--server",
            f"notes={PY} {shlex.quote(str(scripts['server']))} 3 0",
            "--naming",
            "codex",
            "-o",
            str(catalogue),
        ],
        capsys,
    )
    profile = run_json(["profile", str(CODEX_LOG), "--tools", str(catalogue), "--no-progress"], capsys)
    assert profile["calls"][0]["buckets"]["tool_definitions"] > 0
    assert [t["name"] for t in profile["summary"]["catalogue"]["tools"]][:1] == ["notes__tool_0"]
    assert any(w["code"] == "tools-from-mcp" for w in profile["warnings"])


# -- huge tool lists (#45 item 10): pricing capped, the cap's skips said, the time-out the whole run's ----------
def test_tools_past_the_cap_are_listed_as_skipped_and_the_rest_priced_as_tools_prices_them(
    scripts, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv(
        "TOKPROF_MCP_MAX_TOOLS", "5"
    )  # a huge list made small: 2,000 tools took 7 s, 100,000 never ended
    listed = list_servers(
        [stdio("twelve", scripts["server"], "12", "0"), stdio("one", scripts["server"], "1", "0")], 60
    )
    found = api.mcp_report(listed, tokprof.Options(model="qwen2.5"))
    report = found.to_dict()
    assert [t["name"] for t in report["tools"]] == [f"mcp__twelve__tool_{i}" for i in range(5)]
    assert [(s["server"], s["listed_name"]) for s in report["skipped"]] == [
        *(("twelve", f"tool_{i}") for i in range(5, 12)),
        ("one", "tool_0"),
    ]
    assert {s["reason"] for s in report["skipped"]} == {"past the 5 tools priced (TOKPROF_MCP_MAX_TOOLS)"}
    assert [s["tools"] for s in report["servers"]] == [5, 0]
    catalogue = tmp_path / "catalogue.json"
    catalogue.write_text(json.dumps(found.catalogue_document()), encoding="utf-8")
    assert len(found.catalogue_document()["tools"]) == 5
    _same_figures(report, run_json(["tools", "--tools", str(catalogue), "--no-progress"], capsys))
    table = " ".join(tokprof.render_report(found, "table", width=100).split())
    assert "not priced: 8 listed tools of 2 servers not priced (nor in the catalogue): 8 past the 5 tools" in table


def _listing(name: str, tools: int, words: int = 0) -> Listing:
    """What a server lists, made by hand (the listing itself is tested against real servers above)."""
    definitions = tuple(
        {"name": f"tool_{i}", "description": f"Tool {i}." + " More detail." * words, "inputSchema": {"type": "object"}}
        for i in range(tools)
    )
    return Listing(
        ServerConfig(name=name, transport="stdio", origin="test", agent="claude-code"),
        definitions,
        None,
        None,
        None,
        1,
        0.0,
    )


def test_a_huge_description_is_skipped_by_its_size(monkeypatch):
    """A 50 MB description took 127 s to price; past the catalogue's cap (1 MiB here) it is not priced."""
    monkeypatch.setenv("TOKPROF_MCP_MAX_CATALOGUE", "1")
    report = api.mcp_report(
        [_listing("huge", 1, 120_000), _listing("two", 2)], tokprof.Options(model="qwen2.5")
    ).to_dict()
    assert [t["name"] for t in report["tools"]] == ["mcp__two__tool_0", "mcp__two__tool_1"]
    (skipped,) = report["skipped"]
    assert skipped["server"] == "huge" and skipped["bytes"] > 1024 * 1024
    assert skipped["reason"] == "past the 1 MiB of definitions priced (TOKPROF_MCP_MAX_CATALOGUE, MiB)"


def test_the_time_out_bounds_the_pricing_too():
    """--timeout bounded only the listing; the pricing after it is inside it now: a run whose time is
    spent before pricing says so in one line."""
    with pytest.raises(TokprofError, match="pricing them did not end within the time-out of 1e-06 s"):
        api.mcp_report([_listing("one", 3)], tokprof.Options(model="qwen2.5"), timeout=1e-6)
    assert api.mcp_report([_listing("one", 3)], tokprof.Options(model="qwen2.5"), timeout=60).total > 0
