"""The fixed text of the session in incident_session.json; generate.py renders the tool results.

SYSTEM is the agent's system prompt and TOOLS its twelve tool definitions (page_oncall,
rollback_deployment, run_sql_readonly and update_status_page are never called).  TURNS has one row
per user turn: (clock time UTC, user text, rounds, final reply).  Once the agent calls get_metrics,
a tool that does not exist, as agents do, and gets an error back before it finds query_metrics.  Each round is one assistant
message carrying tool calls, given as (tool name, arguments); the calls of a round run in parallel
and each gets its own tool message.  A turn with no rounds is answered directly.
"""

SYSTEM = """You are Sentinel, the SRE assistant for Acme Retail's production platform (cluster prod-eu-west-1). \
You work alongside the human on-call engineer during incidents: you gather evidence with your tools, explain what \
it shows, propose next steps and keep the record straight. The human on call owns every decision.

## Environment
- Services run on Kubernetes, one namespace per service. Customer traffic enters through edge-gateway; the \
purchase path is cart -> checkout -> pricing, inventory, payments-api. checkout stores orders in orders-db \
(PostgreSQL 15, max_connections 800); payments-api uses payments-db.
- Metrics live in Prometheus, logs in Loki, traces in Tempo, alerts in Alertmanager routed to PagerDuty and \
Slack. Deploys go through the pipeline; configuration overrides live in configsvc.
- All times are UTC. Today's incident channel is #inc-checkout.

## On-call procedures
1. Read before you act. Start from alerts, recent deployments and service status; confirm a hypothesis with at \
least two independent signals (for example logs and metrics) before calling it the root cause.
2. Never run a state-changing tool (rollback_deployment, page_oncall, update_status_page) without the engineer's \
explicit go-ahead in this conversation. Offer the exact action and wait.
3. run_sql_readonly is for replicas only and only when the engineer asks for it.
4. Severity: SEV1 = checkout or payments fully down; SEV2 = a customer-facing error rate above 5% or p99 above \
2 s for 10 minutes; SEV3 = degraded with a workaround; SEV4 = no customer impact.
5. Every incident gets an INC ticket once mitigated, with impact, timeline, root cause (or best hypothesis) and \
follow-ups as OPS tickets. Tickets need the reporter's employee number; if the engineer has told you which number \
to use, always use it.
6. Remember facts the engineer tells you (maintenance, changes made by hand, decisions) and take them into \
account; they often explain signals you would otherwise misread.
7. Customer-facing communication is owned by the incident commander; draft text when asked, post only when told.

## Formatting
- Lead with the finding in one sentence, then the evidence as short bullets citing the tool and time range.
- Keep answers under about 200 words unless asked for a summary or a timeline. Use HH:MM UTC for times.
- Say how confident you are and what would change your mind. Mark guesses as guesses.
- Quote log lines and commands in backticks; never invent ticket numbers, versions or values you have not seen.
- End with the next step you recommend, or a question if you need a decision."""


# --- tool definitions -------------------------------------------------------------------------


def tool(name: str, description: str, params: dict, required: list[str]) -> dict:
    props = {k: v if isinstance(v, dict) else {"type": v[0], "description": v[1]} for k, v in params.items()}
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": props, "required": required, "additionalProperties": False},
        },
    }


SINCE = ("string", "Start of the time range, RFC 3339 UTC (e.g. 2026-03-14T08:30:00Z).")
TOOLS = [
    tool(
        "get_logs",
        "Fetch log lines for one service from the central log store (Loki, 14 days retention). Lines "
        "are returned oldest first, prefixed with the pod name; multi-line entries such as stack traces count one "
        "line per physical line toward the limit. When more lines match than the limit, the most recent are kept.",
        {
            "service": ("string", "Service name as registered in the service catalogue, e.g. checkout, payments-api."),
            "since": SINCE,
            "until": ("string", "End of the time range, RFC 3339 UTC. Defaults to now."),
            "level": ("string", "Minimum level to include: DEBUG, INFO, WARN or ERROR. Defaults to INFO."),
            "query": ("string", "Optional RE2 regular expression matched against the raw line."),
            "limit": ("integer", "Maximum lines to return, 1-500. Defaults to 100."),
        },
        ["service", "since"],
    ),
    tool(
        "query_metrics",
        "Query a Prometheus metric for one service over a window ending now. Returns a table with "
        "one row per step (5m: 10s, 15m: 15s, 1h: 30s, 6h: 3m, 24h: 10m). Known metrics: http_5xx_rate, "
        "http_latency_ms, db_pool_active, pg_connections (databases are services too, e.g. orders-db).",
        {
            "metric": ("string", "Metric name, e.g. http_5xx_rate or db_pool_active."),
            "service": ("string", "Service or database name."),
            "window": {
                "type": "string",
                "enum": ["5m", "15m", "1h", "6h", "24h"],
                "description": "Length of the window ending now.",
            },
            "aggregation": ("string", "How to combine series across pods: sum, avg, max, min, p50, p95, p99 or rate."),
        },
        ["metric", "service", "window"],
    ),
    tool(
        "list_deployments",
        "List deployments recorded by the deploy pipeline, newest first, with version, commit, "
        "author, approver, rollout strategy, outcome and the merged pull requests they contain.",
        {
            "service": ("string", "Service name. Omit to list deployments of every service."),
            "environment": ("string", "prod, staging or dev. Defaults to prod."),
            "since": SINCE,
            "limit": ("integer", "Maximum deployments to return. Defaults to 20."),
        },
        [],
    ),
    tool(
        "get_service_status",
        "Current state of a Kubernetes service: rollout state, replica counts, HPA, SLO "
        "burn, dependency health, and optionally per-pod details and recent cluster events.",
        {
            "service": ("string", "Service name."),
            "include_pods": ("boolean", "Include one entry per pod. Defaults to true."),
            "include_events": ("boolean", "Include recent Kubernetes and SLO events. Defaults to true."),
        },
        ["service"],
    ),
    tool(
        "search_runbooks",
        "Semantic search over the SRE runbook library. Returns the best match in full and titles of further matches.",
        {
            "query": ("string", "What you are looking for, in plain words or error text."),
            "limit": ("integer", "Maximum results. Defaults to 5."),
            "team": ("string", "Restrict to runbooks owned by this team."),
        },
        ["query"],
    ),
    tool(
        "create_ticket",
        "File a Jira ticket. Use project INC for the incident record and OPS for follow-up work. "
        "The reporter must be a human employee number; the ticket is assigned to the owning team.",
        {
            "project": ("string", "INC or OPS."),
            "title": ("string", "One-line summary."),
            "description": ("string", "Markdown body: impact, timeline, evidence, next steps."),
            "severity": ("string", "SEV1 (critical) to SEV4 (minor)."),
            "service": ("string", "Owning service."),
            "employee_id": ("string", "Reporter's employee number, format E-NNNNN."),
            "labels": {"type": "array", "items": {"type": "string"}, "description": "Free-form labels."},
        },
        ["project", "title", "description", "severity", "service", "employee_id"],
    ),
    tool(
        "page_oncall",
        "Page the on-call engineer of a team through PagerDuty. Only with explicit confirmation "
        "from the human on call; every page wakes someone up.",
        {
            "team": ("string", "Team schedule name, e.g. dba-oncall, payments-oncall."),
            "summary": ("string", "What is happening and what you need from them."),
            "urgency": ("string", "high (phone call) or low (push notification)."),
            "incident_ticket": ("string", "Related INC ticket, if any."),
        },
        ["team", "summary"],
    ),
    tool(
        "rollback_deployment",
        "Roll a service back to an earlier version through the deploy pipeline. Destructive; "
        "requires explicit confirmation. Use dry_run first to see the plan and estimated duration.",
        {
            "service": ("string", "Service name."),
            "target_version": ("string", "Version to roll back to."),
            "reason": ("string", "Why; recorded in the audit log."),
            "dry_run": ("boolean", "Only print the plan. Defaults to true."),
        },
        ["service", "target_version", "reason"],
    ),
    tool(
        "get_trace",
        "Fetch one distributed trace from Tempo as a span tree with timings, status and, optionally, "
        "the attributes of failed spans.",
        {
            "trace_id": ("string", "32 hex digit trace id, as logged in trace= fields."),
            "include_attributes": ("boolean", "Include attributes of error spans. Defaults to true."),
            "max_depth": ("integer", "Maximum span depth to show. Defaults to 10."),
        },
        ["trace_id"],
    ),
    tool(
        "run_sql_readonly",
        "Run a read-only SQL statement on a database replica (never the primary). Statements "
        "are executed in a READ ONLY transaction with a timeout; results are truncated to max_rows.",
        {
            "database": ("string", "Database name, e.g. orders-db."),
            "query": ("string", "One SELECT statement."),
            "timeout_seconds": ("integer", "Statement timeout. Defaults to 10."),
            "max_rows": ("integer", "Row limit for the result. Defaults to 200."),
        },
        ["database", "query"],
    ),
    tool(
        "update_status_page",
        "Post an update to the public status page (status.acme.shop). Customer-visible; "
        "requires approval from the incident commander.",
        {
            "component": ("string", "Status page component, e.g. Checkout, Payments."),
            "status": ("string", "operational, degraded_performance, partial_outage or major_outage."),
            "title": ("string", "Headline."),
            "message": ("string", "Customer-facing text."),
            "incident_id": ("string", "Existing status page incident to update, if any."),
        },
        ["component", "status", "message"],
    ),
    tool(
        "get_alert_history",
        "Alerts from Alertmanager, newest first, with state, value, severity and where they were routed.",
        {
            "service": ("string", "Service name. Omit for every service."),
            "since": SINCE,
            "state": ("string", "firing, resolved or any. Defaults to any."),
            "limit": ("integer", "Maximum alerts. Defaults to 50."),
        },
        [],
    ),
]

EMPLOYEE = "E-48213"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"

INC_DESCRIPTION = """## Impact
checkout returned 503 for ~11-12% of requests from ~08:45 to 09:38 UTC (p99 pinned at 3 s). Roughly 45k failed \
requests, a share of them order submissions. Knock-on alerts on cart and edge-gateway.

## Timeline (UTC)
- 08:41-08:47 checkout v2.41.0 rolled out (fast-track, canary skipped)
- 08:50 CheckoutDBPoolPendingThreads; 08:52 CheckoutHigh5xxRate paged
- 09:25 root cause confirmed from pool metrics and startup logs
- 09:31 configsvc override db.pool.maxSize=50 (r-88419), rolling restart
- 09:38 rollout complete, 5xx back to baseline
- 09:42 unrelated: planned payments-db failover by the DBA team (~40 s of payments-api errors)

## Root cause
PR #4127 migrated config keys to camelCase for acme-config 3.0. The prod override in configsvc still used \
`db.pool.max_size=50`, which acme-config 3.0 ignores (`Unknown configuration property ... ignored`), so every pod \
fell back to the repo default `maximumPoolSize=10`. checkout holds a connection across the payments call \
(OPS-6650), so 10 per pod saturated at ~11 rps per pod.

## Mitigation
Set `db.pool.maxSize=50` in configsvc and restarted checkout. Old key left in place for v2.40.3 compatibility.

## Follow-ups
To be filed as OPS tickets: config-key validation in CI, orders-db connection budget vs HPA max."""

BUDGET_DESCRIPTION = """Found during INC-20931. orders-db has max_connections=800. checkout keeps 50 connections per \
pod (Hikari minimumIdle = maximumPoolSize), so 12 pods hold 600 and other clients ~60: steady state ~660 (82%). \
The rolling restart peaked at 689/800 and fired PostgresConnectionsHigh. checkout HPA max is 16, i.e. 800 from \
checkout alone, which would exhaust the database at peak.

Interim: checkout HPA max capped at 13 on 2026-03-14 (16 x 50 + 60 > 800).

Options: PgBouncer (transaction pooling) in front of orders-db; lower the pool to ~40 per pod after OPS-6650 \
(stop holding the connection across the payments call); minimumIdle below maximumPoolSize; raise \
max_connections with DBA sign-off. Acceptance: HPA max back to 16 with connections < 85% at full scale."""

CI_DESCRIPTION = """Found during INC-20931. PR #4127 renamed config keys for acme-config 3.0 but the prod override \
in configsvc kept the old key `db.pool.max_size`; acme-config logged a WARN and ignored it, so checkout ran with the \
repo default pool size of 10 and failed ~11% of requests for ~50 minutes.

Proposal:
1. CI check: resolve the effective config for each environment (repo defaults + configsvc overrides) and fail on \
unknown keys, especially keys matching a rename table.
2. acme-config: make unknown keys fatal at startup in prod (or at least export a metric and alert).
3. Deploy policy: changes touching config schema cannot use fast-track / skip canary.
Same latent issue found in inventory 1.18.2 (owners fixing it, tracked by their team)."""

T = TRACE_ID
TURNS = [
    (
        "09:12",
        "Hi Sentinel, I'm on call today. PagerDuty woke me up for CheckoutHigh5xxRate about 20 minutes ago "
        "and it's still firing. Can you help me figure out what's going on?",
        [
            [("get_alert_history", {"service": "checkout", "since": "2026-03-14T03:12:00Z"})],
            [("get_service_status", {"service": "checkout", "include_pods": True, "include_events": True})],
        ],
        "Checkout is degraded right now; the page is real and it has company.\n\n"
        "- `get_alert_history` (03:12-09:12): **CheckoutHigh5xxRate** firing since 08:52 (11.9%), "
        "**CheckoutP99LatencyHigh** since 08:53 (3.04 s) and **CheckoutDBPoolPendingThreads** since 08:50 (38 "
        "pending). CheckoutPodRestarts (03:41-03:46) resolved long ago; the TLS cert alert is a standing info alert.\n"
        "- `get_service_status`: all 12 pods Running and Ready on v2.41.0 with 0 restarts, so no crash loop. 1h "
        "availability is 88.4% against 99.9%; the SLO fast-burn event fired at 08:52. Dependencies all report ok.\n"
        "- The pods are ~31 minutes old: a rollout finished at 08:47, right before the errors started.\n\n"
        "The pool-pending alert firing first (08:50) is the most interesting signal: requests are queuing for DB "
        "connections. Working hypothesis: something in the 08:47 rollout reduced DB capacity. Confidence is low, "
        "this is only alert ordering so far.\n\nNext: check what was deployed, then pull the error logs.",
    ),
    (
        "09:14",
        "Before we dig in, a standing rule for this shift: file every ticket under my employee number "
        "E-48213. Not the team default account, not anyone else's number. E-48213 for everything we file today.",
        [],
        "Understood: every ticket I file this shift, INC or OPS, goes in with `employee_id` **E-48213**, never the "
        "team default account. I'll show you the main fields when I file so you can check them.",
    ),
    (
        "09:15",
        "Was there a deploy this morning?",
        [[("list_deployments", {"service": "checkout", "environment": "prod", "limit": 8})]],
        "Yes: **checkout v2.41.0** started at 08:41 and finished at 08:47, about five minutes before the page.\n\n"
        "- Author m.lindqvist, approved by j.okafor, strategy `rolling (canary skipped: fast-track)`. Every earlier "
        "release in the list used a 10% canary for 15 minutes.\n"
        '- It contains **#4127 "Migrate config keys to camelCase for acme-config 3.0"** (renames '
        "`db.pool.max_size` -> `db.pool.maxSize` and the connection-timeout key), #4131 (acme-config 3.0.1) and "
        "#4119 (delivery window on the confirmation page).\n"
        "- The previous release, v2.40.3 (03-12), was clean; v2.39.2 on 03-04 was rolled back, unrelated as far as "
        "I can tell.\n\n"
        "A rename of the DB pool key, shipped without a canary, lines up suspiciously well with the pool-pending "
        "alert. Next I'd confirm it in the logs.",
    ),
    (
        "09:17",
        "Pull the checkout error logs since the deploy.",
        [
            [
                (
                    "get_logs",
                    {
                        "service": "checkout",
                        "since": "2026-03-14T08:47:00Z",
                        "until": "2026-03-14T09:17:00Z",
                        "level": "ERROR",
                        "limit": 100,
                    },
                )
            ]
        ],
        "The errors are DB connection pool timeouts and nothing else.\n\n"
        "- `get_logs` checkout ERROR 08:47-09:17: ~4,100 matching lines; the newest 100 all come from v2.41.0 pods "
        "(`checkout-6f7d9b8c4d-*`).\n"
        "- Every entry is `HikariPool-1 - Connection is not available, request timed out after 3000ms` or a "
        "consequence of it: 503s on `POST /v1/checkout` and `GET /v1/checkout/sessions/*`, `placeOrder failed ... "
        "order not created`, and the outbox relay failing to poll.\n"
        "- The stack traces say `(total=10, active=10, idle=0, waiting=25-34)`: the pool has **10** connections, all "
        "busy, with dozens of threads queued.\n"
        "- No SQL errors, nothing from orders-db itself, no payments or inventory failures.\n\n"
        "So requests don't fail in the database; they fail waiting for one of 10 connections. Production is "
        "supposed to run 50 per pod. Trace `4bf92f3577b34da6a3ce929d0e0e4736` is one failing checkout if you want "
        "the timing breakdown.",
    ),
    (
        "09:19",
        "How bad is it in numbers? Error rate and latency.",
        [
            [("get_metrics", {"name": "http_5xx_rate", "service": "checkout", "range": "1h"})],
            [
                (
                    "query_metrics",
                    {"metric": "http_5xx_rate", "service": "checkout", "window": "1h", "aggregation": "rate"},
                ),
                (
                    "query_metrics",
                    {"metric": "http_latency_ms", "service": "checkout", "window": "1h", "aggregation": "p99"},
                ),
            ],
        ],
        "About one checkout request in nine is failing, and p99 is pinned at the 3 s pool timeout.\n\n"
        "- `http_5xx_rate` 08:19-09:19: 0.1-0.2% until 08:41, climbing during the rollout to **~11-13%** from 08:47 "
        "(about 15 failed requests/s out of ~130 rps). ~74% of the 5xx are 503, 18% are 500 and 8% are 504 from "
        "the gateway.\n"
        "- `http_latency_ms`: p99 ~200 ms before the deploy, **~3,040 ms** since 08:42; p95 also ~3 s while p50 is "
        "unchanged at ~60 ms. Requests that get a connection are fast; the rest wait the full 3 s.\n\n"
        "This meets SEV2 (5xx above 5% for more than 10 minutes). Over the 30 minutes since 08:47 that is roughly "
        "27,000 failed requests.",
    ),
    (
        "09:20",
        "Is it all pods or a subset? Could it be one bad node?",
        [],
        "All pods, not a node. At 09:12 all 12 pods were on v2.41.0 (replica set 6f7d9b8c4d) across several nodes, "
        "and the error logs come from many different pods of that replica set. The stack traces from every pod "
        "report `total=10`, so they all have the same pool size. A node problem would also show up as CPU or memory "
        "pressure or restarts, and the pods have 0 restarts with normal CPU (310-780m). High confidence this is "
        "fleet-wide and tied to the release.",
    ),
    (
        "09:21",
        "Grab that trace you mentioned.",
        [[("get_trace", {"trace_id": T, "include_attributes": True})]],
        "The request spent 3,000 ms of its 3,053 ms waiting for a DB connection.\n\n"
        "- cart, pricing and inventory calls all finished within the first ~43 ms and returned OK.\n"
        "- `CheckoutService.placeOrder [tx]` starts at 45 ms and blocks in `HikariPool.getConnection` for "
        "3,000.4 ms, then fails with `SQLTransientConnectionException` (pool.total=10, active=10, waiting=41).\n"
        "- The gateway returns 503 at 3,053 ms. The request never reached orders-db or payments-api.\n\n"
        "This confirms the pool is the bottleneck, not the database or a dependency. It doesn't tell us *why* the "
        "pool is 10; next I'd check the runbook and the effective pool config.",
    ),
    (
        "09:23",
        "Do we have a runbook for this?",
        [
            [
                (
                    "search_runbooks",
                    {
                        "query": "checkout HikariPool connection is not available request timed out pool exhaustion",
                        "limit": 5,
                    },
                )
            ]
        ],
        'Yes: **RB-112 "checkout: DB connection pool exhaustion"** matches our symptoms (3 s timeouts, p99 pinned '
        "at 3 s, pending threads). Key points:\n\n"
        "- checkout holds its DB connection across the payments-api authorisation (~700 ms, OPS-6650), so prod "
        "needs ~50 per pod. **The repo default in application.yaml is 10 and prod relies on the configsvc "
        "override.**\n"
        "- Diagnosis: all pods at the limit in `db_pool_active` means the pool is the bottleneck; confirm the "
        "effective `maximumPoolSize` in startup logs; keep orders-db under 85% of its 800 connections.\n"
        "- Mitigation: fix the override with `configctl` and do a rolling restart (~7 min), or roll back (~25 min "
        "for checkout because of cache warm-up). Never above 60 per pod without a DBA.\n\n"
        "That fits #4127: if the configsvc override still says `db.pool.max_size`, acme-config 3.0 would ignore it "
        "and fall back to 10. Shall I verify with pool metrics and startup logs?",
    ),
    (
        "09:25",
        "Yes, check it.",
        [
            [
                (
                    "query_metrics",
                    {"metric": "db_pool_active", "service": "checkout", "window": "1h", "aggregation": "max"},
                )
            ],
            [
                (
                    "get_logs",
                    {
                        "service": "checkout",
                        "since": "2026-03-14T08:40:00Z",
                        "until": "2026-03-14T08:50:00Z",
                        "level": "INFO",
                        "query": "ConfigBinder|HikariConfig|HikariPool|Started",
                        "limit": 120,
                    },
                )
            ],
        ],
        "Confirmed: v2.41.0 ignores the prod override and runs with a 10-connection pool.\n\n"
        "- `db_pool_active` 08:25-09:25: before 08:41 the pool size was 50 with at most 11-19 active per pod and 0 "
        "pending. Since 08:47 all 12 pods sit at the limit (10/10 active) with 30-50 threads pending.\n"
        "- Startup logs 08:41-08:48: every v2.41.0 pod logs `WARN ConfigBinder: Unknown configuration property "
        "'db.pool.max_size' (value '50') ignored; did you mean 'db.pool.maxSize'?` followed by "
        "`maximumPoolSize.................10`. connectionTimeout is 3000 as intended.\n\n"
        "**Root cause (high confidence):** #4127 renamed the key in the repo, but the prod override in configsvc is "
        "still `db.pool.max_size=50`, so acme-config 3.0 drops it and the repo default of 10 applies. At ~11 rps per "
        "pod with connections held ~0.9 s, 10 is not enough.",
    ),
    (
        "09:26",
        "Ugh, the rename PR. How did this get past staging?",
        [],
        "Most likely because staging never depended on the override. My guess, not verified: staging has no "
        "configsvc pool override and has always run on the repo default of 10 with a fraction of prod traffic, so "
        "the pool was never under pressure. The WARN line would have shown up there too, but nobody alerts on "
        "warnings at startup.\n\nThe fast-track deploy then skipped the 15-minute canary, which would have caught "
        "it: a single canary pod at normal per-pod load hits the 10-connection limit within a minute.\n\nTwo gaps "
        "worth follow-ups: unknown config keys should fail CI (or startup) when they look like renamed keys, and "
        "fast-track should never skip the canary for config-schema changes.",
    ),
    (
        "09:27",
        "What are the options for mitigation?",
        [],
        "Two realistic options:\n\n"
        "1. **Config override (recommended).** Set the new key in configsvc (`db.pool.maxSize=50`) and do a rolling "
        "restart. Per RB-112 that takes ~7 minutes, and errors drop pod by pod as new pods come up with 50. Low "
        "risk: it restores the pre-deploy value, and orders-db carried the same ~600 connections from checkout "
        "until this morning.\n"
        "2. **Roll back to v2.40.3.** I can run `rollback_deployment` (dry run first) if you want, but RB-112 puts "
        "a full checkout rollback at ~25 minutes because of cache warm-up, and it also backs out #4119.\n\n"
        "Not recommended: going above 50 as a buffer; the runbook caps it at 60 without a DBA and it wouldn't help. "
        "Which one do you want?",
    ),
    (
        "09:28",
        "Rollback at 25 minutes is too slow. I'll do the override. Give me the exact commands so I can paste them.",
        [],
        "```\nconfigctl get checkout prod db.pool           # expect db.pool.max_size=50 and no maxSize\n"
        'configctl set checkout prod db.pool.maxSize=50 --reason "INC: v2.41.0 ignores db.pool.max_size"\n'
        "configctl get checkout prod db.pool.maxSize   # confirm 50 at the new revision\n"
        "kubectl rollout restart deploy/checkout -n checkout\n"
        "kubectl rollout status deploy/checkout -n checkout --timeout=15m\n```\n\n"
        "Leave `db.pool.max_size` in place for now: it's harmless, and v2.40.3 still reads it if we ever roll back. "
        "Each new pod should log `maximumPoolSize.................50` and no ConfigBinder warning. Tell me when "
        "the restart is running and I'll watch it.",
    ),
    (
        "09:29",
        "Should I page the DBA team before I bump the pool back to 50? That's 600 connections at once.",
        [],
        "I don't think a page is needed. 12 x 50 = 600 from checkout is exactly what orders-db carried until 08:41, "
        "about 660 of 800 with the other clients. The restart is rolling with maxSurge 3, so for a few minutes we "
        "hold up to three extra pods' worth: I'd expect a peak near 690, briefly above the 85% threshold, so "
        "PostgresConnectionsHigh may fire as a warning and then clear.\n\nIf you want to be careful, drop a "
        "low-urgency FYI in #dba instead of paging. I can page dba-oncall with `page_oncall` if you tell me to, "
        "but I wouldn't.",
    ),
    (
        "09:34",
        "Override pushed at 09:31 (configsvc revision r-88419) and the rolling restart is running. How's it going?",
        [[("get_service_status", {"service": "checkout", "include_pods": True, "include_events": True})]],
        "The restart is a bit past a third of the way: 8 pods are on the new replica set `7b4f6d9c85`, 7 old pods "
        "are still running.\n\n"
        "- `get_service_status` at 09:34: `rolling_update`, 15 pods (12 + surge 3), 14 ready; the newest pod is "
        "still warming up. 0 restarts, no failed probes.\n"
        "- Events show the new replica set scaling up from 09:31 in ~20 s steps, in line with RB-112's ~7 minutes; "
        "expect completion around 09:38.\n\nWhen it's done I'll check the 5xx rate.",
    ),
    (
        "09:39",
        "Should be done now. Error rate?",
        [
            [
                (
                    "query_metrics",
                    {"metric": "http_5xx_rate", "service": "checkout", "window": "15m", "aggregation": "rate"},
                )
            ]
        ],
        "Mitigated: checkout 5xx is back at baseline.\n\n"
        "- `http_5xx_rate` 09:24-09:39 (15 s steps): ~10-15% until 09:31, then falling step by step as pods were "
        "replaced, and 0.1-0.2% since 09:38.\n"
        "- The drop tracks the rollout exactly, which confirms the root cause: the only thing that changed was the "
        "pool size.\n\nI'd watch for another 10-15 minutes before calling it resolved; the checkout alerts should "
        "resolve on their next evaluation.",
    ),
    (
        "09:40",
        "Write me a three-line update for #inc-checkout.",
        [],
        "**09:40 UTC, checkout 5xx (SEV2):** checkout v2.41.0 (08:47) ignored the prod DB pool override after a "
        "config-key rename, leaving 10 connections per pod instead of 50; ~11% of checkout requests failed with 503 "
        "from ~08:45.\n**Mitigation:** `db.pool.maxSize=50` set in configsvc at 09:31 and checkout restarted; error "
        "rate at baseline since 09:38.\n**Next:** monitoring; INC ticket and follow-ups to come.",
    ),
    (
        "09:50",
        "FYI the payments DB was failed over to the replica at 09:42 by the DBA team. Planned maintenance "
        "they forgot to announce in #ops-announce. Nothing for us to do, just so you know.",
        [],
        "Noted: **payments-db was failed over to its replica at 09:42 by the DBA team** (planned). A failover "
        "usually means a short burst of connection errors in payments-api and, through it, a few failed payment "
        "calls from checkout around 09:42-09:43. If anything shows up at that time I'll attribute it to the failover "
        "rather than to our pool issue, and I'll put it in the INC timeline as an unrelated concurrent event.",
    ),
    (
        "09:52",
        "Speaking of which, payments-api shows a little error spike on the dashboard. Can you confirm that's "
        "just the failover?",
        [
            [
                (
                    "get_logs",
                    {
                        "service": "payments-api",
                        "since": "2026-03-14T09:35:00Z",
                        "until": "2026-03-14T09:52:00Z",
                        "level": "WARN",
                        "limit": 80,
                    },
                )
            ]
        ],
        "Yes, it's the failover, and it lasted about 40 seconds.\n\n"
        "- `get_logs` payments-api WARN+ 09:35-09:52: before 09:42 only the usual `issuer slow` warnings. From "
        "09:42:00 to ~09:42:40: `terminating connection due to administrator command (SQLSTATE 57P01)`, `connection "
        "refused` to 10.42.7.15:5432, `no healthy primary (payments-db-a read-only)`, and retries.\n"
        "- Then `topology change: new primary payments-db-b`, `pool reset complete: 40/40` and `error rate back "
        "under threshold`. Nothing since.\n\n"
        "That matches the 09:42 failover you mentioned. Some checkout payments in that window will have failed, so "
        "expect a small, separate blip in checkout 5xx at 09:42 that has nothing to do with the pool.",
    ),
    (
        "09:54",
        "Does the failover matter for checkout's pool? Checkout doesn't talk to the payments DB directly, right?",
        [],
        "Right: checkout's pool connects to orders-db, and payments are an HTTP call to payments-api, so the "
        "failover can't change checkout's pool or its connections. Two small indirect effects: during the ~40 s at "
        "09:42 authorisations failed or were slow, so a few orders failed with payment errors; and because "
        "placeOrder holds its orders-db connection across the payments call (OPS-6650), slow authorisations "
        "briefly raise connection hold time. Harmless with 50 per pod; it would have hurt at 10. Nothing to change.",
    ),
    (
        "09:56",
        "OK, let's file the incident ticket now. SEV2, checkout.",
        [
            [
                (
                    "create_ticket",
                    {
                        "project": "INC",
                        "title": "checkout 5xx ~11% for 50 min: v2.41.0 ignored DB pool "
                        "override after config-key rename",
                        "description": INC_DESCRIPTION,
                        "severity": "SEV2",
                        "service": "checkout",
                        "employee_id": EMPLOYEE,
                        "labels": ["checkout", "config", "hikari", "deploy"],
                    },
                )
            ]
        ],
        "Filed **INC-20931** (SEV2, checkout) with reporter **E-48213**, as you asked: "
        "https://jira.acme.internal/browse/INC-20931. It's assigned to team-checkout and covers impact, timeline "
        "(with the 09:42 payments-db failover marked unrelated), root cause and mitigation.\n\nFollow-ups aren't "
        "filed yet; I'd suggest OPS tickets for config-key validation and for the canary skip.",
    ),
    (
        "09:58",
        "Should we update the status page?",
        [],
        "Customer impact was real (~11% of checkout requests failed for ~50 minutes), so a retrospective notice is "
        "reasonable. But the status page is customer-facing and needs the incident commander's approval. I can "
        "post it with `update_status_page` (component Checkout, resolved) once you or the IC confirm, or draft the "
        "text first.",
    ),
    (
        "09:59",
        "Hold off on posting, the comms team owns the status page today. Give me draft text I can send them.",
        [],
        "Draft for comms:\n\n> **Checkout errors (resolved)**\n> Between 08:45 and 09:38 UTC on 14 March, some "
        "customers saw errors when placing orders or loading the checkout page. The issue was caused by a "
        "configuration change in our checkout service and has been fixed. Orders that failed during this time were "
        "not charged; customers can retry. We're sorry for the inconvenience.\n\nOne thing to verify before "
        'sending: "not charged" holds for the pool errors (they fail before payment), but for the few payment '
        "failures during the 09:42 failover comms should check with payments.",
    ),
    (
        "10:02",
        "Were there any other alerts this morning I should know about? And check orders-db handled the "
        "reconnect storm OK.",
        [
            [
                ("get_alert_history", {"since": "2026-03-14T07:00:00Z", "state": "any"}),
                (
                    "query_metrics",
                    {"metric": "pg_connections", "service": "orders-db", "window": "1h", "aggregation": "max"},
                ),
            ]
        ],
        "Nothing new: everything else was a knock-on effect of checkout or the payments failover, and orders-db "
        "held up.\n\n"
        "- `get_alert_history` since 07:00: CartUpstreamTimeouts (09:05-09:38) and EdgeErrorBudgetBurn "
        "(08:58-09:40, paged) are downstream of checkout's 503s. PaymentsDBReplicationLag (09:39-09:41) and "
        "PaymentsApiErrors (09:42-09:43) are the DBA failover you told me about. PostgresConnectionsHigh on "
        "orders-db fired 09:36-09:38 (689/800) during our restart, as expected. KafkaConsumerLag on notifications "
        "(07:12-07:31) is unrelated. All checkout alerts resolved by 09:38; only the standing TLS cert info alert "
        "is still firing.\n"
        "- `pg_connections` orders-db 09:02-10:02: ~180 while checkout ran with 10 per pod, a peak of ~690 during "
        "the surge at 09:36-09:37, now **~660/800 (82%)**. No errors.\n\n"
        "Worth noting: 82% at steady state with 12 pods leaves little headroom.",
    ),
    (
        "10:04",
        "Wait, 660 out of 800 at 12 pods. What happens when the HPA scales checkout up this afternoon?",
        [],
        "It would run out of connections. The checkout HPA allows up to 16 pods: 16 x 50 = 800 from checkout alone, "
        "plus ~60 from other clients, ~860 > max_connections 800. Hikari keeps minimumIdle = 50, so new pods would "
        "fail to fill their pools and other clients (outbox, reporting jobs) would get `too many clients already`; "
        "the first thing to break might not even be checkout. 14 pods (760) already leaves almost nothing.\n\n"
        "Afternoon peak is ~45% above current traffic, so 14-16 pods is plausible. This predates today's deploy; "
        "the incident just made it visible. Options: cap HPA max at 13 for now, lower the pool to ~40 (16 x 40 + "
        "60 = 700) once OPS-6650 shortens hold times, or put PgBouncer in front of orders-db.",
    ),
    (
        "10:06",
        "For today I'll ask checkout to cap HPA max at 13 until someone looks properly. File a follow-up for "
        "the connection budget, and another one for validating config keys in CI so a rename like #4127 can't "
        "silently drop an override again. Both under my number.",
        [
            [
                (
                    "create_ticket",
                    {
                        "project": "OPS",
                        "title": "orders-db connection budget: checkout HPA max x pool size exceeds max_connections",
                        "description": BUDGET_DESCRIPTION,
                        "severity": "SEV3",
                        "service": "checkout",
                        "employee_id": EMPLOYEE,
                        "labels": ["INC-20931", "capacity", "orders-db"],
                    },
                ),
                (
                    "create_ticket",
                    {
                        "project": "OPS",
                        "title": "Fail CI on unknown or renamed config keys (acme-config 3.0)",
                        "description": CI_DESCRIPTION,
                        "severity": "SEV3",
                        "service": "configsvc",
                        "employee_id": EMPLOYEE,
                        "labels": ["INC-20931", "config", "ci"],
                    },
                ),
            ]
        ],
        "Filed both, reporter **E-48213**:\n\n"
        "- **OPS-7712** orders-db connection budget (SEV3, team-checkout), with the HPA cap of 13 noted as the "
        "interim measure.\n"
        "- **OPS-7713** Fail CI on unknown or renamed config keys (SEV3, team-configsvc), including startup "
        "behaviour and the fast-track/canary policy.\n\nBoth reference INC-20931.",
    ),
    (
        "10:11",
        "Did any other service that deployed this morning pick up the same config library change?",
        [
            [("list_deployments", {"environment": "prod", "since": "2026-03-14T06:00:00Z"})],
            [
                (
                    "get_logs",
                    {
                        "service": "inventory",
                        "since": "2026-03-14T07:50:00Z",
                        "level": "INFO",
                        "query": "ConfigBinder|maximumPoolSize",
                        "limit": 60,
                    },
                ),
                (
                    "get_logs",
                    {
                        "service": "search-api",
                        "since": "2026-03-14T06:25:00Z",
                        "level": "INFO",
                        "query": "ConfigBinder|maximumPoolSize",
                        "limit": 60,
                    },
                ),
            ],
        ],
        "Yes: **inventory has the same latent bug**; search-api is fine.\n\n"
        "- `list_deployments` since 06:00: search-api 5.2.0 (06:30), inventory 1.18.2 (07:55) and checkout 2.41.0 "
        "(08:41) all moved to acme-config 3.0.1 with key migrations; notifications 0.33.1 (08:10) didn't touch "
        "config.\n"
        "- inventory: all 8 pods log `Unknown configuration property 'db.pool.max_size' (value '40') ignored` and "
        "run with `maximumPoolSize 10` instead of 40. It isn't failing yet (lower load, short transactions), but it "
        "may at the afternoon peak.\n"
        "- search-api: `0 unknown` on every pod and `maximumPoolSize 20`, so its override was migrated.\n\n"
        "I'd have the inventory owners apply the same fix now (`db.pool.maxSize=40` plus a rolling restart).",
    ),
    (
        "10:15",
        "I pinged the inventory owners, they're pushing the override now and will track it themselves. Can "
        "you check the 24h trend of checkout 5xx, to be sure this didn't start before the deploy?",
        [
            [
                (
                    "query_metrics",
                    {"metric": "http_5xx_rate", "service": "checkout", "window": "24h", "aggregation": "rate"},
                )
            ]
        ],
        "It started with the deploy; the previous 24 hours were clean.\n\n"
        "- `http_5xx_rate` 24h (10-minute steps): 0.1-0.2% all of yesterday, overnight and this morning, "
        "including yesterday afternoon's peak of ~200 rps. The first elevated point is 08:45 (rollout in progress, "
        "~8%), ~9-12% from 08:55 to 09:25, ~5% at 09:35 mid-restart, and baseline again from 09:45.\n"
        "- The small 09:42 failover blip doesn't show at 10-minute resolution.\n\nNothing precedes the deploy.",
    ),
    (
        "10:18",
        "Summarize the timeline so far for the incident channel.",
        [],
        "**Timeline (UTC, 14 March)**\n"
        "- 08:41 checkout v2.41.0 rollout starts (fast-track, canary skipped); includes #4127 config-key rename\n"
        "- 08:45 5xx starts climbing as v2.41.0 pods take traffic with a 10-connection pool\n"
        "- 08:47 rollout complete; all 12 pods at pool size 10\n"
        "- 08:50 CheckoutDBPoolPendingThreads; 08:52 CheckoutHigh5xxRate (paged); 08:58 EdgeErrorBudgetBurn; "
        "09:05 CartUpstreamTimeouts\n"
        "- 09:12 investigation starts; 09:25 root cause confirmed (ignored `db.pool.max_size` override)\n"
        "- 09:31 `db.pool.maxSize=50` set in configsvc (r-88419), rolling restart\n"
        "- 09:36-09:38 PostgresConnectionsHigh on orders-db (689/800) during the surge\n"
        "- 09:38 restart complete, 5xx back to baseline\n"
        "- 09:42 unrelated: planned payments-db failover by the DBA team, ~40 s of payments-api errors\n"
        "- 09:56 INC-20931 filed; 10:06 OPS-7712 (connection budget) and OPS-7713 (config-key CI check)\n"
        "- 10:11 same latent misconfiguration found in inventory 1.18.2; owners applying the override",
    ),
    (
        "10:20",
        "Who approved v2.41.0, and was the canary really skipped?",
        [],
        "Approved by **j.okafor**, authored by m.lindqvist. Yes, the deployment record's strategy is `rolling "
        "(canary skipped: fast-track)`, while every other checkout deploy in the list (v2.39.1 through v2.40.3) "
        "used `canary 10% 15m, then rolling`. The record doesn't say why it was fast-tracked; that's a question for "
        "the postmortem, asked without blame. A canary would very likely have caught this within minutes.",
    ),
    (
        "10:21",
        "What should go in the postmortem action items?",
        [],
        "1. **Config-key validation** in CI and fatal unknown keys at startup (OPS-7713).\n"
        "2. **Fast-track policy:** config-schema or library-major changes can't skip the canary.\n"
        "3. **Connection budget** for orders-db vs HPA max (OPS-7712); HPA capped at 13 meanwhile.\n"
        "4. **Hold time:** stop holding the orders-db connection across the payments call (OPS-6650), which is why "
        "the pool has to be 50 in the first place.\n"
        "5. **Detection:** alert on startup `Unknown configuration property` warnings and on effective pool size "
        "differing from the expected value.\n"
        "6. **Runbook RB-112:** add the key-rename failure mode and the `configctl` commands we used.\n"
        "7. **Comms:** DBA maintenance (the 09:42 payments-db failover) should be announced in #ops-announce.\n"
        "8. **inventory:** confirm their override is fixed and tracked by their team.",
    ),
    (
        "10:23",
        "Can you add the root cause details to INC-20931?",
        [],
        "I can't edit existing tickets; my ticket tool only creates new ones. Here's a comment to paste into "
        "INC-20931:\n\n> Root cause confirmed 09:25. v2.41.0 (#4127) renamed `db.pool.max_size` to "
        "`db.pool.maxSize`; the prod override in configsvc still used the old key, which acme-config 3.0 ignores "
        "with a startup WARN. All 12 pods ran with the repo default `maximumPoolSize=10` instead of 50; since "
        "placeOrder holds its connection across the payments call (~0.9 s), the pool saturated at ~11 rps per pod "
        "and requests timed out after 3 s waiting for a connection (503). Evidence: startup logs, db_pool_active "
        "(all pods at limit 08:47-09:31), trace 4bf92f35...4736 (3,000 ms in getConnection). Fixed by "
        "`db.pool.maxSize=50` (r-88419) at 09:31; baseline from 09:38.",
    ),
    (
        "10:24",
        "Now that the override is in, should we roll back v2.41.0 anyway, just to be safe?",
        [],
        "I'd keep v2.41.0. With the override it runs exactly as v2.40.3 did (pool 50, same error rate and latency "
        "for the last 45 minutes), so a rollback removes no remaining risk. It would cost ~25 minutes of cache "
        "warm-up with reduced capacity and back out #4119. The remaining cleanup is in configsvc: once we're sure "
        "nobody will roll back to a 2.40.x build, delete the old `db.pool.max_size` key so there's only one source "
        "of truth. If you still want it, I can run `rollback_deployment` as a dry run first so you can see the plan.",
    ),
    (
        "10:26",
        "What's the rough customer impact? How many checkout requests failed?",
        [],
        "Roughly **45,000 failed requests** between 08:42 and 09:38, from the 5xx rate (~11.5% of ~130 rps for "
        "about 50 minutes at full effect, plus the ramps on both ends). That counts all checkout endpoints, "
        "including session reads that clients retry. About a quarter to a third of the error log lines were order "
        "submissions (`POST /v1/checkout` and `placeOrder failed`), so very roughly 10-15k failed order attempts, "
        "many of which were probably retried successfully. For a real number, ask analytics to compare orders "
        "created against checkout sessions started in that window. Add a handful of payment failures at 09:42 from "
        "the failover.",
    ),
    (
        "10:28",
        "Remind me, when exactly did the DBA team fail over the payments DB, and did it overlap with our restart?",
        [],
        "**09:42**, as you told me at 09:50, and the payments-api logs agree: errors from 09:42:00 to about "
        "09:42:40, then the new primary payments-db-b. Our rolling restart ran 09:31-09:38, so there was no "
        "overlap: the failover came about four minutes after checkout was fully restarted and back at baseline. "
        "The PaymentsDBReplicationLag alert (09:39-09:41) was its run-up. For the postmortem, any checkout errors "
        "at 09:42 belong to the failover, not to the pool fix.",
    ),
    (
        "10:30",
        "Should we page payments on-call about those failover errors?",
        [],
        "No. It was planned DBA maintenance, the errors lasted ~40 s and payments-api recovered on its own (pool "
        "reset 40/40, error rate back under threshold). A page would wake someone for a resolved, explained event. "
        "A non-urgent note to the DBA team about announcing maintenance is enough, and it's in the postmortem "
        "actions. If you disagree I can page payments-oncall with low urgency once you confirm.",
    ),
    (
        "10:32",
        "OK, I'm going to mark the incident mitigated. Anything I'm forgetting?",
        [],
        "Nearly there. Done: root cause, mitigation, INC-20931, OPS-7712 and OPS-7713 (all under E-48213), timeline "
        "and channel update. Still open:\n\n"
        "- Confirm the HPA cap of 13 is actually applied (you were going to ask checkout).\n"
        "- Confirm inventory's override and restart are done.\n"
        "- Send the status page draft to comms.\n"
        "- Paste the root-cause comment into INC-20931.\n"
        "- Schedule the postmortem (within 5 business days for SEV2).\n"
        "- Later, remove the old `db.pool.max_size` key from configsvc.\n"
        "- Hand-off notes for the next on-call.",
    ),
    (
        "10:35",
        "Checkout team confirmed HPA max is 13 now. Inventory override is done too. Write the handoff "
        "summary for the next on-call. Priya takes over at 11:00.",
        [],
        "**Handoff to Priya, 11:00 UTC, 14 March**\n\n"
        "**Status:** INC-20931 (SEV2, checkout) mitigated at 09:38, monitoring. No alerts firing except the standing "
        "TLS cert info alert.\n\n"
        "**What happened:** checkout v2.41.0 (08:41-08:47, fast-track, canary skipped) renamed the DB pool config "
        "key; the prod override still used the old key and was ignored, so pods ran with 10 connections instead of "
        "50. ~11% of checkout requests failed with 503 from 08:45 to 09:38 (~45k requests).\n\n"
        "**Fix in place:** `db.pool.maxSize=50` in configsvc (r-88419), checkout restarted 09:31-09:38. Old key "
        "`db.pool.max_size` still present on purpose.\n\n"
        "**Watch:**\n- checkout HPA max is temporarily **13** (orders-db connection budget, OPS-7712); if checkout "
        "runs hot at peak, don't raise it without the DBA team: 16 pods x 50 exceeds max_connections 800.\n"
        "- orders-db at ~660/800 connections in steady state.\n"
        "- inventory had the same bug; its override is fixed (inventory team tracks it).\n\n"
        "**Unrelated:** planned payments-db failover by the DBA team at 09:42, ~40 s of payments-api errors, "
        "recovered.\n\n"
        "**Tickets (reporter E-48213):** INC-20931, OPS-7712, OPS-7713. Postmortem to be scheduled.",
    ),
    (
        "10:37",
        "Quick sanity check: which tickets did we file today and under whose number?",
        [],
        "Three, all with reporter **E-48213**, your number, per your standing rule from 09:14:\n\n"
        "- **INC-20931** (SEV2, checkout): the incident record\n"
        "- **OPS-7712** (SEV3, checkout): orders-db connection budget vs HPA max\n"
        "- **OPS-7713** (SEV3, configsvc): fail CI on unknown or renamed config keys\n\n"
        "No ticket for inventory (their team tracks it) and nothing posted to the status page.",
    ),
    (
        "10:38",
        "Last thing, that TLS cert alert. Is that ours?",
        [],
        "It's on checkout but unrelated to the incident: `TLSCertExpiringSoon` says the api.acme.shop certificate "
        "expires in 13 days (threshold 14), firing since 00:00 at info severity. cert-manager normally renews at 30 "
        "days before expiry, so the fact that it hasn't is worth a look by someone during business hours. I'd put "
        "it in the handoff for Priya. If you want a ticket, I'll file it under E-48213 like the others.",
    ),
    (
        "10:39",
        "Add it to the handoff verbally, I'll tell Priya. Thanks Sentinel, that's all for now.",
        [],
        "Sounds good. Where we are: checkout mitigated and stable, three tickets filed under E-48213, "
        "inventory fixed, HPA capped at 13, comms has the draft. Good luck with the postmortem, and enjoy the rest "
        "of your day.",
    ),
]
