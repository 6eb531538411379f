"""The ``tokprof collect`` command: its options, parsed into :class:`CollectOptions` for :func:`run`."""

from __future__ import annotations

import importlib.util
from typing import Annotated, Optional

import typer

from tokprof.base.errors import TokprofError

HELP = (
    "Take the OpenTelemetry your agents already send (Claude Code's api_request events, Codex, Gemini CLI, "
    "Copilot CLI and GenAI spans of SDK-instrumented apps) over OTLP/HTTP, and write one row per model call "
    "into Parquet tables a warehouse queries in place: DEST is a folder or an s3:// prefix, partitioned "
    "day=YYYY-MM-DD/agent=NAME/, the same columns as 'tokprof profile DIR -f parquet' writes (docs/collect.md)."
    "\n\nPoint an agent at it with OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 and "
    "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf (or http/json). SIGTERM or Ctrl-C writes what is held and exits."
)
EXAMPLES = (
    "Examples:\n\n  tokprof collect tables/\n\n"
    "  tokprof collect s3://team-telemetry/agents/ --collector-id collect-2 --hash-users\n\n"
    "  TOKPROF_COLLECT_TOKEN=s3cret tokprof collect /data/agents/ --host 0.0.0.0 --keep aggregates\n\n"
    "See docs/collect.md for the SQL (DuckDB, ClickHouse) and the Grafana dashboard."
)


def collect(
    destination: Annotated[
        str, typer.Argument(metavar="DEST", help="A folder, or a URL prefix such as s3://bucket/path/.")
    ],
    host: Annotated[
        str, typer.Option("--host", metavar="ADDRESS", help="The address to listen on (beyond loopback: --token).")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", metavar="PORT", min=0, max=65535, help="The port (4318: OTLP/HTTP's; 0: any free).")
    ] = 4318,
    token: Annotated[
        Optional[str],
        typer.Option(
            "--token",
            metavar="TOKEN",
            envvar="TOKPROF_COLLECT_TOKEN",
            show_envvar=False,
            help="The token every request must carry (Authorization: Bearer TOKEN); required beyond the loopback "
            "interface. Also TOKPROF_COLLECT_TOKEN.",
        ),
    ] = None,
    collector_id: Annotated[
        Optional[str],
        typer.Option(
            "--collector-id",
            metavar="NAME",
            help="This collector's name in file names (default: the host name); each collector writing one "
            "prefix needs its own.",
        ),
    ] = None,
    keep: Annotated[
        str,
        typer.Option(
            "--keep",
            metavar="WHAT",
            help="calls: a row per call, without prompt text (default); text: with the prompt's text when the "
            "telemetry carries it; aggregates: only sums by day, agent, user, project and model.",
        ),
    ] = "calls",
    hash_users: Annotated[
        bool, typer.Option("--hash-users", help="Write user ids (e-mails, account ids) as SHA-256 hashes.")
    ] = False,
    salt: Annotated[
        Optional[str],
        typer.Option(
            "--hash-salt",
            metavar="SALT",
            envvar="TOKPROF_COLLECT_SALT",
            show_envvar=False,
            help="A secret put before each user id it hashes (also TOKPROF_COLLECT_SALT).",
        ),
    ] = None,
    batch_rows: Annotated[
        int, typer.Option("--batch-rows", metavar="N", min=1, help="Write a batch at this many rows.")
    ] = 10_000,
    batch_seconds: Annotated[
        float,
        typer.Option("--batch-seconds", metavar="S", min=0.1, help="Write a batch this long after its first row."),
    ] = 60.0,
    max_body: Annotated[
        int, typer.Option("--max-body", metavar="BYTES", min=1024, help="A request's body at most (more: 413).")
    ] = 16 * 1024 * 1024,
    spool: Annotated[
        str,
        typer.Option("--spool", metavar="DIR", help="Where batches wait while DEST cannot be written."),
    ] = ".tokprof-spool",
    spool_mb: Annotated[
        int, typer.Option("--spool-mb", metavar="MB", min=1, help="The spool's size at most (then 503).")
    ] = 512,
    model: Annotated[
        Optional[str],
        typer.Option("--model", "-m", metavar="MODEL", help="The model that counts captured prompt content."),
    ] = None,
) -> int:
    """Receive agents' OpenTelemetry and write per-call Parquet tables."""
    from tokprof.frontends.collect.server import CollectOptions, run

    if keep not in ("calls", "text", "aggregates"):
        raise TokprofError(f"--keep {keep}: expected calls, text or aggregates")
    missing = [name for name in ("pyarrow", "google.protobuf") if importlib.util.find_spec(name.split(".")[0]) is None]
    if missing or importlib.util.find_spec("opentelemetry.proto") is None:
        raise TokprofError("tokprof collect needs pyarrow and opentelemetry-proto: pip install 'tokprof[collect]'")
    if "://" in destination and importlib.util.find_spec("fsspec") is None:
        raise TokprofError(f"{destination}: a URL needs fsspec (and s3fs for s3://): pip install 'tokprof[s3]'")
    options = CollectOptions(
        destination=destination,
        host=host,
        port=port,
        token=token,
        collector=collector_id or "",
        keep=keep,
        hash_users=hash_users,
        salt=salt or "",
        max_rows=batch_rows,
        max_seconds=batch_seconds,
        max_body=max_body,
        spool=spool,
        spool_bytes=spool_mb * 1024 * 1024,
        model=model,
    )
    return run(options)
