"""A small MCP server for trying `tokprof mcp` (needs the mcp extra: pip install 'tokprof[mcp]').

    tokprof mcp --server "incidents=python samples/mcp_server.py" --server "docs=python samples/mcp_server.py docs"

Its tools do nothing: tokprof only lists them (initialize and tools/list), it never calls a tool.
"""

import sys
from typing import Literal

from mcp.server.mcpserver import MCPServer

app = MCPServer("tokprof-sample")

if sys.argv[1:] == ["docs"]:

    @app.tool()
    def search_docs(query: str, limit: int = 5) -> str:
        """Search the runbooks and the service documentation. Returns the best matching sections, each with its
        title, its path and a short excerpt."""
        return ""
else:

    @app.tool()
    def get_logs(service: str, level: Literal["debug", "info", "warn", "error"] = "info", limit: int = 200) -> str:
        """Fetch recent log lines for a service. Returns at most `limit` lines, newest first."""
        return ""

    @app.tool()
    def query_metrics(metric: str, window: Literal["5m", "1h", "24h"] = "1h") -> str:
        """Query a metric series (latency, error rate, saturation) for the given window."""
        return ""

    @app.tool()
    def create_ticket(
        title: str, body: str, severity: Literal["sev1", "sev2", "sev3"] = "sev3", labels: list[str] | None = None
    ) -> str:
        """File an incident ticket in the tracker. The title should name the service and the symptom; the body
        should hold the timeline, the evidence and the next steps."""
        return ""


app.run()
