"""The base layer: what every stage may use (errors, safe text, bounded reads, atomic writes, the cache
folder, JSON text, schema checks, what a call was billed, MCP server configurations)."""
