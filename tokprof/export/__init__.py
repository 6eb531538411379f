"""Per-call records into the dashboards teams run: OTLP spans (:mod:`tokprof.export.otlp`, the
``otel`` extra) and Prometheus text exposition for node_exporter's textfile collector
(:mod:`tokprof.export.prometheus`, no dependency)."""
