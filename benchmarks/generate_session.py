"""Generate a long, deterministic agent session for benchmarking tokprof.

The session is a coding agent working through a backlog: each model call is one assistant message
(tool calls, sometimes two in parallel, or a short report), each tool call gets a tool result of
about ``--result-size`` characters (log lines, JSON, source listings, varied), and every few calls
the user adds a turn. Everything comes from ``random.Random(--seed)``, so two runs with the same
options give byte-identical files.

The defaults give a 331-call session whose final prompt is about 120k Qwen2.5 tokens (about 20
million billed input tokens in all).

Output forms:

* ``transcript`` (default): one OpenAI Chat Completions request body ``{model, tools, messages}``
  whose assistant messages are the calls (calls share their earlier messages);
* ``records``: one request body per call, a JSONL line each (every call carries its own copy of
  the prompt, as a captured log does; the file grows with calls × prompt length).

Usage: python benchmarks/generate_session.py [-o PATH] [--calls 331] [--result-size 720]
       [--tools 16] [--seed 7] [--form transcript|records]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

MODEL = "Qwen/Qwen2.5-7B-Instruct"

WORDS = (
    "request handler cache worker queue retry timeout config service module parser token buffer index "
    "schema column table migration deploy build test fixture coverage lint format error warning trace span "
    "metric latency throughput thread lock pool connection socket client server route endpoint payload header "
    "session user account order invoice payment ledger report export import batch stream event listener "
    "the a an of to in for on with by from and or not is was will should could returns raises uses when if"
).split()
IDENTS = [
    "user_id",
    "order_id",
    "retry_count",
    "max_workers",
    "batch_size",
    "timeout_ms",
    "cache_key",
    "session_token",
    "region",
    "shard",
    "is_active",
    "created_at",
    "updated_at",
    "payload",
    "status",
]
SERVICES = ["api-gateway", "billing", "checkout", "inventory", "search", "notifier", "auth", "ledger"]
FILES = [
    "src/app/handlers.py",
    "src/app/models.py",
    "src/app/cache.py",
    "src/app/queue.py",
    "src/app/config.py",
    "src/app/routes.py",
    "src/app/workers.py",
    "src/app/db.py",
    "tests/test_handlers.py",
    "tests/test_queue.py",
]
PARAM_KINDS = [
    ("path", "string", "A path relative to the repository root."),
    ("query", "string", "What to search for (a regular expression)."),
    ("service", "string", "The service name."),
    ("limit", "integer", "At most this many results."),
    ("since", "string", "Start of the time range, RFC 3339 UTC."),
    ("recursive", "boolean", "Whether to descend into subdirectories."),
]


def sentence(rng: random.Random, n: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n)]
    return " ".join(words).capitalize() + "."


def make_tools(rng: random.Random, count: int) -> list[dict]:
    verbs = ["read", "search", "list", "run", "query", "get", "update", "create", "delete", "inspect"]
    nouns = ["file", "logs", "metrics", "tests", "deployments", "tickets", "traces", "config", "schema", "alerts"]
    tools, names = [], set()
    while len(tools) < count:
        name = f"{rng.choice(verbs)}_{rng.choice(nouns)}"
        if name in names:
            name = f"{name}_{len(tools)}"
        names.add(name)
        params = rng.sample(PARAM_KINDS, rng.randint(1, 4))
        properties = {p: {"type": t, "description": d} for p, t, d in params}
        tools.append(
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": " ".join(sentence(rng, rng.randint(6, 16)) for _ in range(rng.randint(1, 3))),
                    "parameters": {"type": "object", "properties": properties, "required": [params[0][0]]},
                },
            }
        )
    return tools


def tool_result(rng: random.Random, size: int) -> str:
    """About ``size`` characters of tool output, in one of a few styles."""
    style = rng.randrange(4)
    size = max(40, int(size * rng.uniform(0.4, 1.6)))
    lines: list[str] = []
    total = 0
    n = 0
    while total < size:
        n += 1
        if style == 0:  # log lines
            line = (
                f"2026-03-14T09:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999):03d}Z "
                f"{rng.choice(['INFO', 'WARN', 'ERROR', 'DEBUG']):>5} {rng.choice(SERVICES)} "
                f"[{rng.randint(1, 64)}] {sentence(rng, rng.randint(4, 12))} "
                f"{rng.choice(IDENTS)}={rng.randint(0, 99999)}"
            )
        elif style == 1:  # JSON records
            line = json.dumps(
                {
                    rng.choice(IDENTS): rng.randint(0, 10**6),
                    "status": rng.choice(["ok", "failed", "retry"]),
                    "service": rng.choice(SERVICES),
                    "note": sentence(rng, rng.randint(3, 8)),
                }
            )
        elif style == 2:  # a source listing
            indent = "    " * rng.randint(0, 3)
            ident = rng.choice(IDENTS)
            line = rng.choice(
                [
                    f"{n:4d}  {indent}def {rng.choice(WORDS)}_{ident}(self, {ident}, timeout=None):",
                    f"{n:4d}  {indent}{ident} = self.{rng.choice(WORDS)}.get({ident!r}, {rng.randint(0, 100)})",
                    f"{n:4d}  {indent}if {ident} is None:",
                    f'{n:4d}  {indent}    raise ValueError(f"{sentence(rng, 4)} {{{ident}}}")',
                    f"{n:4d}  {indent}# {sentence(rng, rng.randint(4, 10))}",
                    f"{n:4d}  {indent}return {ident}",
                ]
            )
        else:  # a table
            line = " | ".join(f"{rng.choice(IDENTS)}:{rng.randint(0, 9999):>5}" for _ in range(rng.randint(3, 6)))
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)


def arguments(rng: random.Random, tool: dict) -> str:
    args = {}
    for name, spec in tool["function"]["parameters"]["properties"].items():
        if name not in tool["function"]["parameters"]["required"] and rng.random() < 0.5:
            continue
        kind = spec["type"]
        args[name] = (
            rng.randint(1, 200)
            if kind == "integer"
            else rng.random() < 0.5
            if kind == "boolean"
            else rng.choice(FILES + SERVICES)
            if name in ("path", "service")
            else sentence(rng, 3)[:-1]
        )
    return json.dumps(args)


def session(calls: int, result_size: int, n_tools: int, seed: int) -> dict:
    rng = random.Random(seed)
    tools = make_tools(rng, n_tools)
    system = (
        "You are Forge, a coding agent working in the repository of a retail platform. Use the tools to "
        "read code, run tests and inspect production; explain what you find briefly. "
        + " ".join(sentence(rng, rng.randint(8, 20)) for _ in range(12))
    )
    messages: list[dict] = [
        {"role": "system", "content": system},
        {"role": "user", "content": sentence(rng, rng.randint(15, 40))},
    ]
    call_id = 0
    made = 0
    since_user = 0
    while made < calls:
        made += 1
        since_user += 1
        if since_user >= rng.randint(6, 16) or made == calls:  # a short report, then the user's next turn
            messages.append(
                {
                    "role": "assistant",
                    "content": " ".join(sentence(rng, rng.randint(8, 25)) for _ in range(rng.randint(1, 4))),
                }
            )
            if made < calls:
                messages.append({"role": "user", "content": sentence(rng, rng.randint(6, 30))})
            since_user = 0
            continue
        chosen = [rng.choice(tools) for _ in range(1 if rng.random() < 0.8 else 2)]
        tool_calls = []
        for tool in chosen:
            call_id += 1
            tool_calls.append(
                {
                    "id": f"call_{call_id:05d}",
                    "type": "function",
                    "function": {"name": tool["function"]["name"], "arguments": arguments(rng, tool)},
                }
            )
        content = sentence(rng, rng.randint(5, 15)) if rng.random() < 0.3 else None
        messages.append({"role": "assistant", "content": content, "tool_calls": tool_calls})
        for tc in tool_calls:
            messages.append({"role": "tool", "tool_call_id": tc["id"], "content": tool_result(rng, result_size)})
    return {"model": MODEL, "tools": tools, "messages": messages}


def records(doc: dict) -> list[dict]:
    """One request body per call: the messages before each assistant message."""
    out = []
    for i, message in enumerate(doc["messages"]):
        if message["role"] == "assistant":
            out.append({"model": doc["model"], "tools": doc["tools"], "messages": doc["messages"][:i]})
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default="-", help="where to write (default: stdout)")
    parser.add_argument("--calls", type=int, default=331, help="model calls (assistant messages)")
    parser.add_argument("--result-size", type=int, default=720, help="mean characters per tool result")
    parser.add_argument("--tools", type=int, default=16, help="tool definitions in the catalogue")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--form", choices=("transcript", "records"), default="transcript")
    args = parser.parse_args(argv)
    doc = session(args.calls, args.result_size, args.tools, args.seed)
    if args.form == "transcript":
        text = json.dumps(doc, ensure_ascii=False) + "\n"
    else:
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records(doc))
    if args.output == "-":
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
