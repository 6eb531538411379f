"""``tokprof collect``: agents' OpenTelemetry into warehouse tables (docs/collect.md)."""
