"""Generate samples/retention_session.json: a session in which what matters is said once.

The seed experiment of tokprof's what-if analysis, as a log: an agent and an engineer work through
a payments outage over 24 turns. In the first turn the engineer states a standing rule ("never
restart a payments database without paging the DBA on call"); in turn 9 a tool result names the
affected shard, once (``pay-shard-7``); every turn after that adds large tool output about other
things. A sliding window is far cheaper than full history and forgets both; keeping the user's own
messages verbatim keeps the rule but not the shard (a tool result). ``tokprof whatif
samples/retention_session.json --facts samples/retention_facts.txt`` shows it
(docs/whatif.md#what-a-policy-forgets).

Deterministic: random.Random(SEED) only, so two runs give byte-identical files. The output is
tokprof's native transcript form (an OpenAI Chat Completions body).

Usage: python samples/retention.py [-o PATH]
"""

import argparse
import json
import random
from pathlib import Path

SEED = 7031
MODEL = "Qwen/Qwen2.5-7B-Instruct"
RULE = "Never restart a payments database without paging the DBA on call first."
SHARD = "pay-shard-7"
SERVICES = ["ledger", "fraud-scorer", "payouts", "card-vault", "refunds", "settlement", "webhooks", "risk-api"]

SYSTEM = (
    "You are Keel, the payments platform assistant. You investigate incidents with the tools you have, say "
    "what you found and what you are unsure of, and never change production without the engineer's go-ahead."
)


def tool(name: str, description: str, params: dict) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {k: {"type": "string", "description": v} for k, v in params.items()},
                "required": list(params),
            },
        },
    }


TOOLS = [
    tool(
        "query_metrics",
        "Run a PromQL query over the last hour and return the series, one sample a minute.",
        {"query": "The PromQL expression."},
    ),
    tool(
        "get_logs",
        "Fetch the last log lines of one service, oldest first, one line per entry.",
        {"service": "The service name.", "pattern": "A substring the lines must hold."},
    ),
    tool(
        "describe_shards",
        "List the payments database shards with their health and replication lag.",
        {"cluster": "The database cluster."},
    ),
]


def metrics(rng: random.Random, service: str) -> str:
    lines = [f"series {service}_http_requests_errors_total (per second), last 60 minutes:"]
    level = rng.uniform(0.2, 3.0)
    for minute in range(60):
        level = max(0.0, level + rng.uniform(-0.4, 0.45))
        lines.append(f"  t-{60 - minute:02d}m  {level:.3f}")
    return "\n".join(lines)


def logs(rng: random.Random, service: str) -> str:
    lines = []
    for _ in range(45):
        pod = f"{service}-{rng.randrange(16**5):05x}"
        lines.append(
            f"{pod} level={rng.choice(['info', 'warn', 'error'])} request_id=r-{rng.randrange(10**6):06d} "
            f'latency_ms={rng.randrange(3, 2400)} msg="{rng.choice(["upstream timeout", "retrying", "ok", "slow query", "pool wait"])}"'
        )
    return "\n".join(lines)


def shards(rng: random.Random) -> str:
    rows = ["shard          role     health    lag_s  connections"]
    for n in range(1, 13):
        health = "DEGRADED" if n == 7 else "ok"
        rows.append(
            f"pay-shard-{n:<4} primary  {health:<8}  {rng.uniform(0, 0.4) if n != 7 else 41.7:5.1f}  "
            f"{rng.randrange(40, 400)}"
        )
    rows.append(f"summary: 1 of 12 shards degraded ({SHARD}: replication lag 41.7 s, writes failing over)")
    return "\n".join(rows)


def session() -> dict:
    rng = random.Random(SEED)
    messages: list[dict] = [
        {"role": "system", "content": SYSTEM},
        {
            "role": "user",
            "content": "Payments are failing for some customers since 09:40. "
            f"One rule for today: {RULE} Can you start with the error rates?",
        },
    ]
    n = 0

    def call(name: str, arguments: dict, result: str, reply: str) -> None:
        nonlocal n
        n += 1
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{n:03d}",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(arguments)},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"call_{n:03d}", "content": result})
        messages.append({"role": "assistant", "content": reply})

    for turn in range(24):
        service = SERVICES[turn % len(SERVICES)]
        if turn:
            ask = (
                "Which shard is it again, and what do we do next?"
                if turn == 23
                else f"Look at {service} next: metrics and logs."
            )
            messages.append({"role": "user", "content": ask})
        if turn == 8:
            call(
                "describe_shards",
                {"cluster": "payments-eu"},
                shards(rng),
                "One shard is degraded: 41.7 s of replication lag, and writes to it fail over. That matches the errors.",
            )
        elif turn == 23:
            call(
                "query_metrics",
                {"query": "sum(rate(payments_failed_total[5m]))"},
                metrics(rng, "payments"),
                "Failures are still elevated. I would page the DBA before touching the database.",
            )
        else:
            call(
                "query_metrics",
                {"query": f"rate({service}_http_requests_errors_total[5m])"},
                metrics(rng, service),
                f"{service}: error rate noisy but not the cause.",
            )
            messages.append({"role": "user", "content": "And its logs?"})
            call(
                "get_logs",
                {"service": service, "pattern": ""},
                logs(rng, service),
                f"{service} logs show retries and pool waits, downstream of the database.",
            )
    return {"model": MODEL, "timestamp": "2026-06-02T09:55:00Z", "tools": TOOLS, "messages": messages}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default=str(Path(__file__).resolve().parent / "retention_session.json"))
    args = parser.parse_args()
    Path(args.output).write_text(json.dumps(session(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
