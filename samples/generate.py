"""Generate samples/incident_session.json, a deterministic sample agent session for tokprof.

The session is an SRE incident investigation: an agent and the on-call engineer chase elevated
5xx on checkout after a deploy (root cause: a renamed connection-pool config key silently shrank
the DB pool from 50 to 10), mitigate it, file tickets and hand off.  The output is tokprof's
native transcript form, an OpenAI Chat Completions request body ({model, tools, messages}).

The session's fixed text (system prompt, tool definitions, user turns, tool calls, replies) is data
in the sibling module incident_story.py; the tool results are rendered here from a small model of
the incident, with noise from random.Random(SEED) only, so two runs give byte-identical files.

Usage: python samples/generate.py [-o PATH]
"""

import argparse
import json
import math
import random
import re
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.dont_write_bytecode = True  # importing the story must not leave __pycache__ in samples/
sys.path.insert(0, str(Path(__file__).resolve().parent))
from incident_story import SYSTEM, TOOLS, TRACE_ID, TURNS  # noqa: E402  (the session's fixed text)

SEED = 48213
MODEL = "Qwen/Qwen2.5-7B-Instruct"
DAY = datetime(2026, 3, 14, tzinfo=timezone.utc)


def at(clock: str) -> datetime:
    """'HH:MM' or 'HH:MM:SS' on the incident day, UTC."""
    parts = [int(p) for p in clock.split(":")] + [0]
    return DAY.replace(hour=parts[0], minute=parts[1], second=parts[2])


def parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def iso(t: datetime, ms: bool = False) -> str:
    text = t.strftime("%Y-%m-%dT%H:%M:%S")
    return text + (f".{t.microsecond // 1000:03d}Z" if ms else "Z")


# --- the incident, as a tiny world model -------------------------------------------------------

DEPLOY = (at("08:41"), at("08:47"))  # checkout v2.41.0 rolls out with pool size 10
FIX = (at("09:31"), at("09:38"))  # config override db.pool.maxSize=50, rolling restart
FAILOVER = at("09:42")  # DBA team fails payments-db over to its replica
PODS, SURGE, MAX_CONN, OTHER_CLIENTS = 12, 3, 800, 60


def ramp(t: datetime, start: datetime, end: datetime) -> float:
    return min(1.0, max(0.0, (t - start) / (end - start)))


def bad(t: datetime) -> float:
    """Fraction of checkout pods running with the 10-connection pool."""
    return ramp(t, *DEPLOY) - ramp(t, *FIX)


def rps(t: datetime) -> float:
    hour = (t - DAY).total_seconds() / 3600 % 24
    return 25 + 160 * max(0.0, math.sin(math.pi * (hour - 5) / 18))


def checkout_conns(t: datetime) -> int:
    """orders-db connections held by checkout (Hikari keeps minimumIdle = maximumPoolSize)."""
    for (start, end), old, new in ((DEPLOY, 50, 10), (FIX, 10, 50)):
        if start <= t < end:
            done = round(PODS * ramp(t, start, end))
            return (PODS - done) * old + min(PODS, done + SURGE) * new
    return PODS * (10 if bad(t) > 0.5 else 50)


class World:
    def __init__(self, rng: random.Random):
        self.rng = rng
        self.rs = {"old": "5c8d7f9b6", "new": "6f7d9b8c4d", "fix": "7b4f6d9c85"}
        self.pods = {key: [f"checkout-{h}-{self.suffix()}" for _ in range(PODS)] for key, h in self.rs.items()}
        self.tickets = {"INC": 20931, "OPS": 7712}
        self.traced_at, self.traced_pod = at("09:16:31"), self.pods["new"][3]

    def suffix(self, n: int = 5) -> str:
        return "".join(self.rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(n))

    def hexid(self, n: int) -> str:
        return "".join(self.rng.choice("0123456789abcdef") for _ in range(n))

    def pod_at(self, t: datetime) -> str:
        key = "old" if t < DEPLOY[1] else "new" if t < FIX[1] else "fix"
        return self.rng.choice(self.pods[key])


# --- tool results ------------------------------------------------------------------------------

WINDOWS = {"5m": (300, 10), "15m": (900, 15), "1h": (3600, 30), "6h": (21600, 180), "24h": (86400, 600)}  # s, step


def metric_row(w: World, metric: str, t: datetime) -> list:
    g, f = w.rng.gauss, bad(t)
    if metric == "http_5xx_rate":
        total = max(1.0, rps(t) * (1 + g(0, 0.04)))
        frac = 0.0012 + abs(g(0, 0.0004)) + f * max(0.0, 0.115 + g(0, 0.011))
        if FAILOVER <= t < FAILOVER + timedelta(minutes=1):
            frac += 0.008
        err = total * frac
        return [
            f"{total:.1f}",
            f"{err:.2f}",
            f"{100 * frac:.2f}",
            f"{err * 0.18:.2f}",
            f"{err * 0.74:.2f}",
            f"{err * 0.08:.2f}",
        ]
    if metric == "http_latency_ms":
        slow = f > 0.08 or FAILOVER <= t < FAILOVER + timedelta(minutes=1)
        p99 = 3040 + g(0, 12) if f > 0.08 else 1380 + g(0, 90) if slow else 205 + g(0, 14)
        p95 = 3005 + g(0, 6) if f > 0.3 else 160 + g(0, 10) + 900 * f
        return [f"{62 + g(0, 3):.0f}", f"{p95:.0f}", f"{p99:.0f}"]
    if metric == "db_pool_active":
        normal = 15 + 4 * math.sin((t - DAY).total_seconds() / 700) + g(0, 1.5)
        at_limit = round(PODS * f)
        pending = max(0, round(31 + 9 * f + g(0, 6))) if f > 0.05 else 0
        avg = f * 10 + (1 - f) * (normal - 4)
        return [at_limit, 10 if f >= 1 else round(normal), f"{avg:.1f}", pending, 10 if f > 0 else 50]
    if metric == "pg_connections":
        mine = max(0, checkout_conns(t) - w.rng.randint(0, 3))
        other = OTHER_CLIENTS + w.rng.randint(-3, 3)
        return [mine + other, mine, other, MAX_CONN]
    raise KeyError(metric)


METRIC_COLUMNS = {
    "http_5xx_rate": ["rps_total", "rps_5xx", "pct_5xx", "rps_500", "rps_503", "rps_504"],
    "http_latency_ms": ["p50", "p95", "p99"],
    "db_pool_active": ["pods_at_limit", "active_max", "active_avg", "pending_max", "pool_size_min"],
    "pg_connections": ["total", "from_checkout", "from_others", "max_connections"],
}


def query_metrics(w: World, now: datetime, metric: str, service: str, window: str, aggregation: str) -> str:
    span, step = WINDOWS[window]
    end, count = now.replace(second=now.second - now.second % min(step, 60)), span // step
    cols = METRIC_COLUMNS[metric]
    lines = [
        f"# prometheus-prod  metric={metric}  service={service}  aggregation={aggregation}",
        f"# window={window}  step={step}s  points={count}  end={iso(end)}",
        "timestamp              " + "  ".join(f"{c:>13}" for c in cols),
    ]
    for i in range(count):
        t = end - timedelta(seconds=step * (count - 1 - i))
        lines.append(iso(t) + "   " + "  ".join(f"{v:>13}" for v in metric_row(w, metric, t)))
    return "\n".join(lines)


JAVA_STACK = """org.springframework.transaction.CannotCreateTransactionException: Could not open JDBC Connection for transaction
\tat org.springframework.jdbc.datasource.DataSourceTransactionManager.doBegin(DataSourceTransactionManager.java:309)
\tat org.springframework.transaction.support.AbstractPlatformTransactionManager.startTransaction(AbstractPlatformTransactionManager.java:531)
\tat org.springframework.transaction.support.AbstractPlatformTransactionManager.getTransaction(AbstractPlatformTransactionManager.java:405)
\tat org.springframework.transaction.interceptor.TransactionAspectSupport.invokeWithinTransaction(TransactionAspectSupport.java:386)
\tat org.springframework.transaction.interceptor.TransactionInterceptor.invoke(TransactionInterceptor.java:119)
\tat org.springframework.aop.framework.ReflectiveMethodInvocation.proceed(ReflectiveMethodInvocation.java:184)
\tat org.springframework.aop.framework.CglibAopProxy$DynamicAdvisedInterceptor.intercept(CglibAopProxy.java:765)
\tat com.acme.checkout.service.CheckoutService$$SpringCGLIB$$0.placeOrder(<generated>)
\tat com.acme.checkout.api.OrderController.checkout(OrderController.java:61)
\tat org.springframework.web.servlet.FrameworkServlet.service(FrameworkServlet.java:885)
\t... 48 common frames omitted
Caused by: java.sql.SQLTransientConnectionException: HikariPool-1 - Connection is not available, request timed out after 3000ms (total=10, active=10, idle=0, waiting={waiting})
\tat com.zaxxer.hikari.pool.HikariPool.createTimeoutException(HikariPool.java:686)
\tat com.zaxxer.hikari.pool.HikariPool.getConnection(HikariPool.java:179)
\tat com.zaxxer.hikari.pool.HikariPool.getConnection(HikariPool.java:144)
\tat com.zaxxer.hikari.HikariDataSource.getConnection(HikariDataSource.java:127)
\tat org.springframework.jdbc.datasource.DataSourceTransactionManager.doBegin(DataSourceTransactionManager.java:265)
\t... 59 common frames omitted"""

CHECKOUT_ERRORS = [  # (weight, logger, message, with stack trace)
    (
        3,
        "c.a.c.web.ApiExceptionHandler",
        "503 SERVICE_UNAVAILABLE POST /v1/checkout: Could not open JDBC Connection for transaction",
        True,
    ),
    (
        5,
        "c.a.c.web.ApiExceptionHandler",
        "503 SERVICE_UNAVAILABLE GET /v1/checkout/sessions/{sid}: HikariPool-1 - "
        "Connection is not available, request timed out after 3000ms (stack suppressed, 1 of {k} in 10s)",
        False,
    ),
    (
        2,
        "c.a.c.service.CheckoutService",
        "placeOrder failed cart={cart} customer={cust}: "
        "CannotCreateTransactionException, order not created, idempotency key released",
        False,
    ),
    (
        1,
        "c.a.c.outbox.OutboxRelay",
        "outbox poll failed: HikariPool-1 - Connection is not available, "
        "request timed out after 3000ms; retrying in 5s",
        False,
    ),
]


def log_prefix(w: World, t: datetime, level: str, logger: str) -> str:
    thread = f"nio-8080-exec-{w.rng.randint(1, 64)}"
    return f"{w.pod_at(t)} | {iso(t, ms=True)} {level:>5} 1 --- [{thread:>15}] {logger:<34}: "


def checkout_errors(w: World, since: datetime, until: datetime, limit: int) -> list[str]:
    lines, t, traced = [], until - timedelta(seconds=70), False
    weights = [e[0] for e in CHECKOUT_ERRORS]
    while True:
        t += timedelta(milliseconds=w.rng.randint(40, 1400))
        _, logger, msg, stack = w.rng.choices(CHECKOUT_ERRORS, weights)[0]
        trace = TRACE_ID if stack and not traced else w.hexid(32)
        msg = msg.format(sid=w.hexid(12), k=w.rng.randint(80, 240), cart=w.hexid(8), cust=w.rng.randint(10**6, 10**7))
        entry = [log_prefix(w, t, "ERROR", logger) + f"[req={w.hexid(8)} trace={trace}] {msg}"]
        if stack:
            entry += JAVA_STACK.replace("{waiting}", str(w.rng.randint(24, 47))).split("\n")
        if len(lines) + len(entry) > limit or t > until:
            return lines
        lines += entry
        if trace == TRACE_ID:
            traced, w.traced_at, w.traced_pod = True, t, entry[0].split(" | ")[0]


HIKARI_CONFIG = [
    ("connectionTimeout", "3000"),
    ("idleTimeout", "600000"),
    ("maxLifetime", "1800000"),
    ("maximumPoolSize", "{size}"),
    ("minimumIdle", "{size}"),
    ("leakDetectionThreshold", "0"),
    ("jdbcUrl", "jdbc:postgresql://{db}.prod.internal:5432/{dbname}"),
    ("poolName", '"HikariPool-1"'),
]


def startup_lines(
    w: World, pod: str, t: datetime, app: str, version: str, size: int, db: str, unknown: str | None
) -> list[str]:
    def line(level: str, logger: str, msg: str) -> str:
        nonlocal t
        t += timedelta(milliseconds=w.rng.randint(3, 900))
        return f"{pod} | {iso(t, ms=True)} {level:>5} 1 --- [           main] {logger:<34}: {msg}"

    main = "".join(part.title() for part in app.split("-")) + "Application"
    out = [
        line("INFO", f"c.a.{app.split('-')[0]}.{main}", f"Starting {main} v{version} using Java 21.0.2 with PID 1"),
        line(
            "INFO",
            "c.a.config.ConfigLoader",
            f"Loaded {w.rng.randint(140, 156)} properties from configsvc (profile=prod, revision=r-88412)",
        ),
    ]
    if unknown:
        out.append(
            line(
                "WARN",
                "c.a.config.ConfigBinder",
                f"Unknown configuration property 'db.pool.max_size' (value "
                f"'{unknown}') ignored; did you mean 'db.pool.maxSize'? (acme-config 3.0 uses camelCase keys)",
            )
        )
    out.append(
        line(
            "INFO",
            "c.a.config.ConfigBinder",
            f"Bound {w.rng.randint(120, 139)} properties, {1 if unknown else 0} unknown, 0 invalid",
        )
    )
    out.append(line("INFO", "com.zaxxer.hikari.HikariConfig", "HikariPool-1 - configuration:"))
    for key, value in HIKARI_CONFIG:
        value = value.format(size=size, db=db, dbname=db.split("-")[0])
        out.append(line("INFO", "com.zaxxer.hikari.HikariConfig", f"{key:.<32}{value}"))
    out.append(line("INFO", "com.zaxxer.hikari.HikariDataSource", "HikariPool-1 - Starting..."))
    out.append(
        line(
            "INFO",
            "com.zaxxer.hikari.pool.HikariPool",
            f"HikariPool-1 - Added connection org.postgresql.jdbc.PgConnection@{w.hexid(8)}",
        )
    )
    out.append(line("INFO", "com.zaxxer.hikari.HikariDataSource", "HikariPool-1 - Start completed."))
    out.append(line("INFO", "o.s.b.w.embedded.tomcat.TomcatWebServer", "Tomcat started on port 8080 (http)"))
    out.append(
        line("INFO", f"c.a.{app.split('-')[0]}.{main}", f"Started {main} in {w.rng.uniform(18, 26):.2f} seconds")
    )
    return out


def startup_logs(w: World, service: str, limit: int) -> list[str]:
    spec = {
        "checkout": (w.pods["new"], DEPLOY[0], "2.41.0", 10, "orders-db", "50"),
        "inventory": (
            [f"inventory-58b9c7d4f-{w.suffix()}" for _ in range(8)],
            at("07:55"),
            "1.18.2",
            10,
            "inventory-db",
            "40",
        ),
        "search-api": (
            [f"search-api-7c6d5f8b9-{w.suffix()}" for _ in range(6)],
            at("06:30"),
            "5.2.0",
            20,
            "catalog-db",
            None,
        ),
    }[service]
    pods, start, version, size, db, unknown = spec
    lines = []
    for i, pod in enumerate(pods):
        t = start + timedelta(seconds=28 * i + w.rng.randint(5, 20))
        lines += startup_lines(w, pod, t, service, version, size, db, unknown)
    return lines[:limit]


FAILOVER_EVENTS = [  # level, caller, msg, err; the first two happen as connections are killed
    (
        "warn",
        "store/pg.go:211",
        "query failed",
        "FATAL: terminating connection due to administrator command (SQLSTATE 57P01)",
    ),
    ("warn", "store/pool.go:64", "retrying", "pgx: conn closed; attempt {n}/3"),
    ("error", "store/pg.go:118", "acquire conn", "dial tcp 10.42.7.15:5432: connect: connection refused"),
    ("error", "api/authorize.go:87", "authorize failed", "store: no healthy primary (payments-db-a read-only)"),
]


def payments_logs(w: World, since: datetime, until: datetime, limit: int) -> list[str]:
    def entry(t: datetime, **fields) -> tuple[datetime, str]:
        return t, json.dumps({"ts": iso(t, ms=True), **fields})

    out, t = [], since
    while True:  # a quiet background of ordinary warnings, before and after the failover
        t += timedelta(milliseconds=w.rng.randint(20000, 150000))
        if t >= until:
            break
        if not FAILOVER - timedelta(seconds=5) <= t < FAILOVER + timedelta(seconds=50):
            out.append(
                entry(
                    t,
                    level="warn",
                    caller="api/authorize.go:142",
                    msg="issuer slow",
                    issuer=w.rng.choice(["visa-eu", "mc-eu", "amex"]),
                    latency_ms=w.rng.randint(1200, 2600),
                    req_id=w.hexid(16),
                )
            )
    t = FAILOVER + timedelta(milliseconds=w.rng.randint(200, 900))
    while t < FAILOVER + timedelta(seconds=41):
        level, caller, msg, err = w.rng.choice(
            FAILOVER_EVENTS[:2] if t < FAILOVER + timedelta(seconds=6) else FAILOVER_EVENTS[1:]
        )
        out.append(
            entry(
                t,
                level=level,
                caller=caller,
                msg=msg,
                req_id=w.hexid(16),
                err=err.replace("{n}", str(w.rng.randint(1, 3))),
            )
        )
        t += timedelta(milliseconds=w.rng.randint(150, 1600))
    for msg in (
        "topology change: new primary payments-db-b (10.42.7.22), old primary demoted",
        "pool reset complete: 40/40 connections to payments-db-b",
        "error rate back under threshold (0.3% over 30s)",
    ):
        t += timedelta(milliseconds=w.rng.randint(800, 4000))
        out.append(entry(t, level="warn", caller="store/failover.go:53", msg=msg))
    return [line for _, line in sorted(out)][-limit:]


def get_logs(
    w: World,
    now: datetime,
    service: str,
    since: str,
    until: str = "",
    level: str = "INFO",
    query: str = "",
    limit: int = 100,
) -> str:
    start, end = parse(since), parse(until) if until else now
    if service == "checkout" and level == "ERROR":
        lines = checkout_errors(w, start, end, limit)
        matched = int((end - start).total_seconds() * 2.3)
    elif service == "payments-api":
        lines, matched = payments_logs(w, start, end, limit), None
    else:
        lines = [x for x in startup_logs(w, service, 10**6) if re.search(query or ".", x)]
        matched, lines = len(lines), lines[-limit:]
    total = f"{matched:,}" if matched else str(len(lines))
    head = f"# loki  service={service}  level>={level}  query={query or '*'}  range={iso(start)}..{iso(end)}"
    return "\n".join([head, f"# {total} matching lines; showing {len(lines)} (newest last)"] + lines)


TRACE_SPANS = [  # (depth, service, span, start ms, duration ms, status)
    (0, "edge-gateway", "POST /v1/checkout", 0.0, 3052.6, "ERROR 503"),
    (1, "checkout", "OrderController.checkout", 1.9, 3046.1, "ERROR"),
    (2, "checkout", "CartClient.getCart", 2.6, 6.9, "OK"),
    (3, "cart", "GET /v1/carts/{id}", 3.4, 5.8, "OK"),
    (4, "cart", "redis GET cart:{id}", 4.0, 0.9, "OK"),
    (2, "checkout", "PricingClient.quote", 10.1, 17.6, "OK"),
    (3, "pricing", "POST /v2/quotes", 10.8, 15.9, "OK"),
    (4, "pricing", "redis MGET price:*", 12.0, 1.4, "OK"),
    (4, "pricing", "promotions.evaluate", 13.9, 6.2, "OK"),
    (2, "checkout", "InventoryClient.check", 28.4, 14.1, "OK"),
    (3, "inventory", "GET /v1/stock:batch", 29.1, 12.8, "OK"),
    (4, "inventory", "SELECT stock_levels", 30.6, 4.3, "OK"),
    (2, "checkout", "CheckoutService.placeOrder [tx]", 44.9, 3003.0, "ERROR"),
    (3, "checkout", "HikariPool.getConnection", 45.3, 3000.4, "ERROR timeout"),
    (2, "checkout", "ApiExceptionHandler.handle", 3047.2, 0.6, "OK"),
]


def get_trace(w: World, now: datetime, trace_id: str, include_attributes: bool = True, max_depth: int = 10) -> str:
    start = w.traced_at - timedelta(milliseconds=3047)
    lines = [
        f"trace {trace_id}  root=edge-gateway POST /v1/checkout  start={iso(start, ms=True)}",
        f"duration=3052.6ms  spans={len(TRACE_SPANS)}  errors=4  sampled_by=tail(error)",
        "",
        f"{'service':<14}{'span':<46}{'start_ms':>10}{'dur_ms':>10}  status",
    ]
    for depth, service, span, offset, dur, status in TRACE_SPANS:
        lines.append(f"{service:<14}{'  ' * depth + span:<46}{offset:>10.1f}{dur:>10.1f}  {status}")
    if include_attributes:
        lines += [
            "",
            "attributes of error spans:",
            "  HikariPool.getConnection: db.system=postgresql db.name=orders pool.name=HikariPool-1",
            "    pool.total=10 pool.active=10 pool.idle=0 pool.waiting=41 timeout_ms=3000",
            "    exception.type=java.sql.SQLTransientConnectionException",
            "    exception.message=HikariPool-1 - Connection is not available, request timed out after 3000ms",
            f"  CheckoutService.placeOrder [tx]: tx.propagation=REQUIRED tx.isolation=READ_COMMITTED "
            f"cart.id={w.hexid(8)} items=3",
            f"  OrderController.checkout: http.status_code=503 k8s.pod={w.traced_pod} app.version=2.41.0",
            "  edge-gateway: http.route=/v1/checkout client.region=eu-west-1 user_agent=acme-ios/7.12.0",
        ]
    return "\n".join(lines)


RUNBOOK = """## RB-112 checkout: DB connection pool exhaustion (HikariCP)
Owner: team-checkout   Last reviewed: 2026-01-20   Severity guide: SEV2 if 5xx > 5% for 10 min

### Symptoms
- `HikariPool-1 - Connection is not available, request timed out after 3000ms` in checkout logs
- 503 from checkout, p99 pinned at ~3 s (the pool connectionTimeout)
- `hikaricp_connections_pending` > 0 sustained; alert CheckoutDBPoolPendingThreads

### Background
checkout opens its transaction in CheckoutService.placeOrder and holds the connection across
the payments-api authorisation call (p50 ~700 ms), tracked in OPS-6650. Pool sizing therefore
has to cover roughly `rps_per_pod x 0.9 s` plus headroom. Production runs 50 per pod; the repo
default in application.yaml is 10 (sized for staging) and prod relies on the configsvc override.

### Diagnosis
1. Check pool metrics: `db_pool_active` per pod. If active == pool size on all pods, the pool is
   the bottleneck, not the database.
2. Confirm the effective pool size in startup logs (`HikariConfig ... maximumPoolSize`).
3. Check orders-db: `pg_connections` vs max_connections (800). Do not raise pool sizes if the
   DB is above 85%; page #dba-oncall instead.
4. Look for slow queries holding connections (pg_stat_activity via run_sql_readonly on the
   replica only).

### Mitigation
- Config problem: push the correct override via configsvc (`configctl set checkout prod
  db.pool.maxSize=<n>`), then `kubectl rollout restart deploy/checkout -n checkout`.
  Rolling restart takes ~7 min (maxSurge 3, readiness gated on cache warm-up of new pods only).
- Bad release: rollback via deploy tooling; full rollback of checkout takes ~25 min because
  every pod re-warms the catalogue cache.
- Never raise the pool above 60 per pod without a DBA: 16 pods (HPA max) x 50 is already the
  whole orders-db connection budget.
"""


def search_runbooks(w: World, now: datetime, query: str, limit: int = 5, team: str = "") -> str:
    others = [
        ("RB-087", "orders-db: max_connections reached / PgBouncer saturation", 0.71),
        ("RB-140", "payments-api: upstream issuer latency and timeouts", 0.58),
        ("RB-031", "Generic: elevated 5xx after a deploy (rollback decision tree)", 0.55),
        ("RB-203", "configsvc: override precedence and key migration notes", 0.52),
    ]
    lines = [f"# {1 + len(others)} results for {query!r}", "", "[1] RB-112 score=0.93", RUNBOOK]
    for i, (rid, title, score) in enumerate(others[: limit - 1], 2):
        lines.append(f"[{i}] {rid} score={score:.2f} -- {title} (excerpt omitted; open with limit=1 and the id)")
    return "\n".join(lines)


def get_service_status(
    w: World, now: datetime, service: str, include_pods: bool = True, include_events: bool = True
) -> str:
    rolling = FIX[0] <= now < FIX[1]
    done = round(PODS * ramp(now, *FIX))
    key = "new" if now < FIX[0] else "fix"
    pods = (
        [("new", p) for p in w.pods["new"][done:]] + [("fix", p) for p in w.pods["fix"][: min(PODS, done + SURGE)]]
        if rolling
        else [(key, p) for p in w.pods[key]]
    )
    status = {
        "service": service,
        "namespace": service,
        "cluster": "prod-eu-west-1",
        "status": "rolling_update" if rolling else "degraded" if bad(now) > 0.5 else "healthy",
        "version": "2.41.0",
        "replicas": {
            "desired": PODS,
            "ready": sum(1 for _ in pods) - (1 if rolling else 0),
            "updated": min(PODS, done + SURGE) if rolling else PODS,
        },
        "hpa": {"min": 8, "max": 16, "current": PODS, "target_cpu": "65%"},
        "slo": {
            "availability_target": "99.9%",
            "availability_1h": "88.41%" if bad(now) > 0.5 else "96.12%",
            "error_budget_remaining_30d": "41.7%" if bad(now) > 0.5 else "38.9%",
        },
        "dependencies": {
            "orders-db": "ok",
            "payments-api": "ok",
            "cart": "ok",
            "inventory": "ok",
            "pricing": "ok",
            "redis-checkout": "ok",
        },
    }
    if include_pods:
        status["pods"] = [
            {
                "name": p,
                "rs": w.rs[k],
                "version": "2.41.0",
                "phase": "Running",
                "ready": not (rolling and i == len(pods) - 1),
                "restarts": 0,
                "age": f"{max(1, (now - FIX[0]).seconds // 60 - w.pods[k].index(p) // 3)}m"
                if k == "fix"
                else "31m"
                if now < FIX[0]
                else "52m",
                "cpu_m": w.rng.randint(310, 780),
                "mem_mi": w.rng.randint(1100, 1480),
                "node": f"ip-10-42-{w.rng.randint(1, 9)}-{w.rng.randint(10, 250)}.eu-west-1.compute.internal",
            }
            for i, (k, p) in enumerate(pods)
        ]
    if include_events:
        status["events"] = (
            [
                {
                    "time": iso(FIX[0] + timedelta(seconds=20 * i)),
                    "reason": "ScalingReplicaSet",
                    "message": f"Scaled up replica set checkout-{w.rs['fix']} to {min(PODS, i + SURGE)}",
                }
                for i in range(0, done + 1)
            ]
            if now >= FIX[0]
            else []
        ) + [
            {"time": iso(DEPLOY[1]), "reason": "DeploymentRollout", "message": "checkout v2.41.0 rollout complete"},
            {"time": iso(at("08:52:30")), "reason": "SLOBurn", "message": "fast burn 14.4x on availability"},
        ]
    return json.dumps(status, indent=2)


CHECKOUT_HISTORY = [  # version, started, author, approver, status, strategy
    ("2.41.0", "2026-03-14T08:41", "m.lindqvist", "j.okafor", "succeeded", "rolling (canary skipped: fast-track)"),
    ("2.40.3", "2026-03-12T14:05", "a.basu", "t.nguyen", "succeeded", "canary 10% 15m, then rolling"),
    ("2.40.2", "2026-03-11T10:22", "r.kowalski", "t.nguyen", "succeeded", "canary 10% 15m, then rolling"),
    ("2.40.1", "2026-03-10T16:48", "m.lindqvist", "j.okafor", "succeeded", "canary 10% 15m, then rolling"),
    ("2.40.0", "2026-03-09T09:30", "a.basu", "s.haddad", "succeeded", "canary 10% 15m, then rolling"),
    ("2.39.3", "2026-03-05T13:12", "d.ferreira", "t.nguyen", "succeeded", "canary 10% 15m, then rolling"),
    ("2.39.2", "2026-03-04T11:02", "r.kowalski", "s.haddad", "rolled_back", "canary 10% 15m, then rolling"),
    ("2.39.1", "2026-03-03T15:40", "d.ferreira", "j.okafor", "succeeded", "canary 10% 15m, then rolling"),
]
PRS = [
    "Add Apple Pay express button behind flag",
    "Bump spring-boot to 3.2.3",
    "Fix rounding in multi-currency totals",
    "Log idempotency key on retry",
    "Remove legacy v0 coupon endpoint",
    "Tune cart cache TTL to 90s",
    "Add tracing to PricingClient",
    "Retry inventory check once on 502",
    "Update gift-card validation rules",
    "Move feature flags to flagd",
    "Fix N+1 in order history query",
    "Upgrade postgres driver to 42.7.2",
]
TODAY = {
    "checkout": [
        "#4127 Migrate config keys to camelCase for acme-config 3.0 (db.pool.max_size -> "
        "db.pool.maxSize, db.pool.connection_timeout_ms -> db.pool.connectionTimeoutMs)",
        "#4131 Bump acme-config to 3.0.1",
        "#4119 Show delivery window on order confirmation",
    ],
    "inventory": ["#882 Bump acme-config to 3.0.1", "#879 Migrate config keys to camelCase"],
    "search-api": ["#1520 Bump acme-config to 3.0.1 and migrate keys", "#1517 Boost in-stock items"],
    "notifications": ["#301 Fix SMS template for delivery updates"],
}


def deployment(
    w: World,
    service: str,
    version: str,
    started: str,
    author: str,
    approver: str,
    status: str,
    strategy: str,
    changes: list[str],
) -> dict:
    t = datetime.fromisoformat(started + ":00+00:00")
    return {
        "id": f"dep-{w.rng.randint(30000, 39999)}",
        "service": service,
        "environment": "prod",
        "version": version,
        "commit": w.hexid(40),
        "author": author,
        "approved_by": approver,
        "started": iso(t),
        "finished": iso(t + timedelta(minutes=6, seconds=w.rng.randint(0, 59))),
        "status": status,
        "strategy": strategy,
        "pipeline": f"https://ci.acme.internal/{service}/{w.rng.randint(9000, 9999)}",
        "changes": changes,
    }


def list_deployments(
    w: World, now: datetime, service: str = "", environment: str = "prod", since: str = "", limit: int = 20
) -> str:
    if service == "checkout":
        deps = [
            deployment(
                w,
                "checkout",
                *row,
                changes=TODAY["checkout"]
                if row[0] == "2.41.0"
                else [f"#{w.rng.randint(3900, 4110)} {pr}" for pr in w.rng.sample(PRS, 3)],
            )
            for row in CHECKOUT_HISTORY[:limit]
        ]
    else:
        rows = [
            ("search-api", "5.2.0", "2026-03-14T06:30", "l.moreau", "k.ito"),
            ("inventory", "1.18.2", "2026-03-14T07:55", "p.santos", "k.ito"),
            ("notifications", "0.33.1", "2026-03-14T08:10", "e.varga", "s.haddad"),
            ("checkout", "2.41.0", "2026-03-14T08:41", "m.lindqvist", "j.okafor"),
        ]
        deps = [
            deployment(
                w,
                svc,
                v,
                s,
                a,
                ap,
                "succeeded",
                "canary 10% 15m, then rolling" if svc != "checkout" else "rolling (canary skipped: fast-track)",
                TODAY[svc],
            )
            for svc, v, s, a, ap in rows
        ]
    return json.dumps({"environment": environment, "count": len(deps), "deployments": deps}, indent=2)


ALERTS = [  # name, service, severity, start, end (None = still firing at 'now' unless past end), value, summary
    ("CheckoutHigh5xxRate", "checkout", "page", "08:52:30", "09:37:30", "11.9%", "5xx ratio > 2% for 5m"),
    ("CheckoutP99LatencyHigh", "checkout", "warning", "08:53:00", "09:38:00", "3.04s", "p99 > 1.5s for 5m"),
    ("CheckoutDBPoolPendingThreads", "checkout", "warning", "08:50:30", "09:37:00", "38", "Hikari pending > 5 for 3m"),
    ("CheckoutPodRestarts", "checkout", "info", "03:41:00", "03:46:00", "3", "container restarts > 2 in 10m"),
    ("TLSCertExpiringSoon", "checkout", "info", "00:00:00", None, "13d", "api.acme.shop cert expires in < 14d"),
    ("CartUpstreamTimeouts", "cart", "warning", "09:05:00", "09:38:30", "7.2%", "calls to checkout timing out"),
    ("EdgeErrorBudgetBurn", "edge-gateway", "page", "08:58:00", "09:40:00", "6.1x", "1h burn rate > 6x"),
    ("PostgresConnectionsHigh", "orders-db", "warning", "09:36:00", "09:38:30", "689/800", "connections > 85% of max"),
    ("PaymentsDBReplicationLag", "payments-db", "warning", "09:39:30", "09:41:30", "41s", "replica lag > 30s"),
    ("PaymentsApiErrors", "payments-api", "warning", "09:42:10", "09:43:40", "4.8%", "5xx ratio > 2% for 1m"),
    ("KafkaConsumerLag", "notifications", "warning", "07:12:00", "07:31:00", "182k", "lag > 100k msgs"),
    ("NodeDiskPressure", "k8s-node", "warning", "05:02:00", "05:20:00", "91%", "ip-10-42-3-77 disk > 90%"),
    ("SearchLatencyHigh", "search-api", "warning", "06:34:00", "06:39:00", "1.9s", "p99 > 1.2s for 5m"),
]


def get_alert_history(
    w: World, now: datetime, service: str = "", since: str = "", state: str = "any", limit: int = 50
) -> str:
    start = parse(since) if since else now - timedelta(hours=6)
    out = []
    for name, svc, sev, begin, end, value, summary in ALERTS:
        b, e = at(begin), at(end) if end else None
        if (service and svc != service) or b > now or (e and e < start):
            continue
        firing = e is None or e > now
        out.append(
            {
                "id": f"alrt-{w.hexid(10)}",
                "alert": name,
                "service": svc,
                "severity": sev,
                "state": "firing" if firing else "resolved",
                "started": iso(b),
                "resolved": None if firing else iso(e),
                "value": value,
                "summary": summary,
                "notified": ["pagerduty:sre-primary"] if sev == "page" else ["slack:#alerts-" + svc],
                "runbook": f"https://runbooks.acme.internal/{svc}",
                "labels": {"cluster": "prod-eu-west-1", "team": svc.split("-")[0], "env": "prod"},
            }
        )
    out.sort(key=lambda a: a["started"], reverse=True)
    query = {"service": service or "*", "since": iso(start), "state": state}
    return json.dumps({"query": query, "alerts": out[:limit]}, indent=2)


def create_ticket(
    w: World,
    now: datetime,
    project: str,
    title: str,
    description: str,
    severity: str,
    service: str,
    employee_id: str,
    labels: list[str] | None = None,
) -> str:
    number = w.tickets[project]
    w.tickets[project] += 1
    return json.dumps(
        {
            "ticket": f"{project}-{number}",
            "url": f"https://jira.acme.internal/browse/{project}-{number}",
            "status": "Open",
            "severity": severity,
            "service": service,
            "reporter": employee_id,
            "assignee": "team-" + service,
            "created": iso(now),
            "labels": labels or [],
        },
        indent=2,
    )


RENDERERS = {
    f.__name__: f
    for f in (
        get_logs,
        query_metrics,
        list_deployments,
        get_service_status,
        search_runbooks,
        create_ticket,
        get_trace,
        get_alert_history,
    )
}


def unknown_tool(name: str) -> str:
    """What an agent framework answers when the model calls a tool it does not have."""
    available = ", ".join(t["function"]["name"] for t in TOOLS)
    return json.dumps({"error": f"unknown tool '{name}'", "available_tools": available})


# --- assembly ----------------------------------------------------------------------------------


def build() -> dict:
    w = World(random.Random(SEED))
    messages: list[dict] = [{"role": "system", "content": SYSTEM}]
    count = 0
    for clock, user, rounds, reply in TURNS:
        now = at(clock)
        messages.append({"role": "user", "content": user})
        for calls in rounds:
            tool_calls = []
            for name, args in calls:
                count += 1
                tool_calls.append(
                    {
                        "id": f"call_{count:03d}",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)},
                    }
                )
            messages.append({"role": "assistant", "content": None, "tool_calls": tool_calls})
            for call, (name, args) in zip(tool_calls, calls):
                content = RENDERERS[name](w, now, **args) if name in RENDERERS else unknown_tool(name)
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
        messages.append({"role": "assistant", "content": reply})
    return {"model": MODEL, "timestamp": "2026-03-14T09:12:00Z", "tools": TOOLS, "messages": messages}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        default=Path(__file__).resolve().parent / "incident_session.json",
        help="where to write the transcript (default: incident_session.json next to this script)",
    )
    out = parser.parse_args().output
    with open(out, "w", encoding="utf-8", newline="\n") as fh:
        json.dump(build(), fh, indent=1, ensure_ascii=False)
        fh.write("\n")
    # The catalogue and system prompt on their own, for `tokprof tools --tools ... --system ...`.
    # Written in Anthropic's tool format, to show that tokprof reads it.
    anthropic = [
        {
            "name": t["function"]["name"],
            "description": t["function"]["description"],
            "input_schema": t["function"]["parameters"],
        }
        for t in TOOLS
    ]
    with open(out.with_name("tools_anthropic.json"), "w", encoding="utf-8", newline="\n") as fh:
        json.dump(anthropic, fh, indent=1, ensure_ascii=False)
        fh.write("\n")
    out.with_name("system_prompt.txt").write_text(SYSTEM + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
