"""MCP servers, one feature in one folder: find the servers agents configure, list their tools, price them.

Its modules keep the pipeline's one-way flow, each at its stage (tests/test_layers.py): ``config`` and
``connect`` read the configuration and ask the servers (base; ``connect`` uses the MCP SDK, the top-level
package ``mcp``, through absolute imports), ``budgets``, ``rollup`` and ``report`` price the servers' tools
(analyses), ``render`` writes the report (outputs), ``api`` is what ``tokprof mcp`` calls (facade).
docs/architecture.md places it.
"""
