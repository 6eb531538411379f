"""Ask configured MCP servers for their tools, with the official MCP Python SDK (the ``mcp`` extra).

Per server: ``initialize``, then ``tools/list`` (every page), and ``prompts/list`` / ``resources/list``
(counted, every page) when the server offers them. Never ``tools/call``. Servers are asked in
parallel; one that cannot be started, exits, does not answer within its time-out, or answers with
something that is not JSON-RPC is a :class:`Failure` (one line, and the tail of its standard error);
the others go on.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tokprof.base.errors import TokprofError
from tokprof.mcp.config import MissingVariable, ServerConfig, expanded

INSTALL_HINT = "the MCP client needs the mcp extra: pip install 'tokprof[mcp]'"
DEFAULT_TIMEOUT = 30.0
MAX_PAGES = 1000  # a server whose cursor never ends is answering garbage
_TAIL_LINES = 5


@dataclass(frozen=True)
class Listing:
    """What one server listed: its tools as MCP definitions (``name``, ``description``, ``inputSchema``)."""

    server: ServerConfig
    tools: tuple[dict, ...]
    prompts: int | None  # None: the server offers no prompts
    resources: int | None
    server_info: str | None  # the name and version the server gives
    pages: int
    seconds: float


@dataclass(frozen=True)
class Failure:
    """A server that gave no tool list, and why, in one line; with the end of its standard error."""

    server: ServerConfig
    reason: str
    stderr_tail: str = ""


def require_sdk() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise TokprofError(INSTALL_HINT) from None


def list_servers(
    servers: Sequence[ServerConfig],
    timeout: float = DEFAULT_TIMEOUT,
    environ: Mapping[str, str] | None = None,
    workspace: str | None = None,
) -> list[Listing | Failure]:
    """Each server's listing or failure, in the order given; all asked at once."""
    require_sdk()
    import anyio

    environ = dict(os.environ if environ is None else environ)
    results: list[Listing | Failure | None] = [None] * len(servers)

    async def main() -> None:
        async with anyio.create_task_group() as group:
            for i, server in enumerate(servers):
                group.start_soon(
                    _one_into, results, i, server, server.timeout or timeout, environ, workspace or os.getcwd()
                )

    quiet = logging.getLogger("mcp")
    level, propagate = quiet.level, quiet.propagate
    quiet.setLevel(logging.CRITICAL + 1)  # the SDK logs a server's bad lines with tracebacks: they are reported here
    quiet.propagate = False
    try:
        anyio.run(main)
    finally:
        quiet.setLevel(level)
        quiet.propagate = propagate
    return [r if r is not None else Failure(s, "no answer") for r, s in zip(results, servers)]


async def _one_into(results: list, i: int, server: ServerConfig, timeout: float, environ: dict, workspace: str) -> None:
    try:
        ready = expanded(server, environ, workspace)
    except MissingVariable as exc:
        results[i] = Failure(server, str(exc))
        return
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
        results[i] = await _ask(server, ready, timeout, errlog)


def _tail(errlog: Any) -> str:
    try:
        errlog.flush()
        errlog.seek(0)
        lines = [line.rstrip() for line in errlog.read().splitlines() if line.strip()]
    except (OSError, ValueError):
        return ""
    return "\n".join(lines[-_TAIL_LINES:])


def _reason(exc: BaseException) -> str:
    """One line for an exception, or the first leaf of an exception group."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


async def _ask(server: ServerConfig, ready: ServerConfig, timeout: float, errlog: Any) -> Listing | Failure:
    import anyio

    garbage: list[str] = []
    start = time.monotonic()
    result: Listing | Failure | None = None
    try:
        with anyio.fail_after(timeout):
            with anyio.CancelScope() as scope:

                async def on_message(message: Any) -> None:
                    if isinstance(message, Exception):  # a line on standard output that is not JSON-RPC
                        garbage.append(_garbage(message))
                        scope.cancel()

                result = await _session(server, ready, errlog, on_message, start)
    except TimeoutError:
        return Failure(server, f"no answer within {round(timeout, 1):g} s", _tail(errlog))
    except Exception as exc:  # the SDK raises its own errors, OS errors, and groups of them
        if garbage:
            return Failure(server, garbage[0], _tail(errlog))
        return Failure(server, _failure_text(exc), _tail(errlog))
    if garbage or result is None:
        return Failure(server, garbage[0] if garbage else "gave no answer", _tail(errlog))
    return result


def _garbage(exc: Exception) -> str:
    """The line a server wrote to standard output that is not JSON-RPC, shortened."""
    errors = getattr(exc, "errors", None)
    line = None
    try:
        line = errors()[0].get("input") if callable(errors) else None
    except Exception:  # not a pydantic error after all
        line = None
    shown = repr(line[:80] + ("..." if len(line) > 80 else "")) if isinstance(line, str) else _reason(exc)
    return f"wrote something that is not JSON-RPC to standard output: {shown}"


def _failure_text(exc: BaseException) -> str:
    text = _reason(exc)
    if "FileNotFoundError" in text or "No such file" in text:
        return f"cannot start: {text}"
    if "Connection closed" in text or "ClosedResourceError" in text or "EndOfStream" in text:
        return "exited or closed the connection before answering"
    return text


async def _session(server: ServerConfig, ready: ServerConfig, errlog: Any, on_message: Any, start: float) -> Listing:
    from contextlib import AsyncExitStack

    from mcp import ClientSession

    async with AsyncExitStack() as stack:
        read, write = await stack.enter_async_context(_transport(ready, errlog))
        session = await stack.enter_async_context(ClientSession(read, write, message_handler=on_message))
        init = await session.initialize()
        tools, pages = await _all_pages(session.list_tools, "tools")
        caps = init.capabilities
        prompts = len((await _all_pages(session.list_prompts, "prompts"))[0]) if caps.prompts else None
        resources = len((await _all_pages(session.list_resources, "resources"))[0]) if caps.resources else None
        info = init.server_info
        return Listing(
            server=server,
            tools=tuple(_definition(t) for t in tools),
            prompts=prompts,
            resources=resources,
            server_info=f"{info.name} {info.version}".strip() if info else None,
            pages=pages,
            seconds=round(time.monotonic() - start, 3),
        )


async def _all_pages(method: Any, field: str) -> tuple[list, int]:
    from mcp import types

    items: list = []
    cursor = None
    for page in range(1, MAX_PAGES + 1):
        result = await method(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        items += getattr(result, field)
        cursor = result.next_cursor
        if not cursor:
            return items, page
    raise TokprofError(f"{field}/list did not end after {MAX_PAGES} pages")


def _definition(tool: Any) -> dict:
    """What an agent gives the model of a listed tool: its name, description and input schema."""
    out: dict[str, Any] = {"name": tool.name}
    if tool.description is not None:
        out["description"] = tool.description
    out["inputSchema"] = dict(tool.input_schema or {"type": "object", "properties": {}})
    return out


def _transport(server: ServerConfig, errlog: Any) -> Any:
    if server.transport == "stdio":
        from mcp.client.stdio import StdioServerParameters, stdio_client

        assert server.command is not None
        params = StdioServerParameters(
            command=server.command, args=list(server.args), env=dict(server.env) or None, cwd=server.cwd
        )
        return stdio_client(params, errlog=errlog)
    headers = dict(server.headers)
    if server.transport == "sse":
        from mcp.client.sse import sse_client

        return sse_client(server.url or "", headers=headers or None)
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    return _http(streamable_http_client, create_mcp_http_client(headers=headers or None), server.url or "")


def _http(client: Any, http: Any, url: str) -> Any:
    from collections.abc import AsyncIterator
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def both() -> AsyncIterator[tuple[Any, Any]]:  # the HTTP client is ours to close
        async with http, client(url, http_client=http) as streams:
            yield streams[0], streams[1]

    return both()
