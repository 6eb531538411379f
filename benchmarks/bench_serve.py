"""A bounded load test of `tokprof serve` on 127.0.0.1, replaying agent conversations as a harness would.

The server runs as `python -m tokprof serve --port 0` in a process of its own (its memory is read
from /proc). Each client replays a 300-call conversation of generate_session.py (`--calls`), one
request per call, each request carrying the whole prompt so far (an extending request); a client
that reaches the end starts a new conversation (another seed: a new first message).

1. Sequential: one client replays one conversation. Per call, the request's latency (the client's
   round trip) against the baseline the issue sets: rendering the call's prompt once with the
   chat template and tokenizing only what it adds to the previous call's render, timed in this
   process. The ratio of the medians, and the median of the per-call ratios (limit: 3).
2. Load: `--requests` requests (default 2,000) from `--concurrency` clients (default 4): throughput,
   latency percentiles, and the server's resident memory at each tenth of the run and its peak.
3. The library in this process (``Model.count`` replaying the same conversation: what the HTTP layer
   adds), and a fresh count (no conversation to extend) of the last call's prompt against the last
   extending request: what the reuse saves.

Usage: python benchmarks/bench_serve.py [--calls 300] [--requests 2000] [--concurrency 4] [--model qwen2.5]
       [--conversations 4]
Prints Markdown tables. `--conversations` is the server's cache bound: the default keeps as many
conversations as there are clients, so that the second round of conversations evicts the first
and the memory measured is the bound's, not growth.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate_session import records, session  # noqa: E402


def bodies(calls: int, seed: int, model: str) -> list[bytes]:
    """One request body per call of a generated conversation, encoded as a harness sends them."""
    return [
        json.dumps(dict(r, model=model), ensure_ascii=False).encode("utf-8")
        for r in records(session(calls, 720, 16, seed))
    ]


def _status(pid: int) -> tuple[int, int]:
    values = {}
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                key, _, rest = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    values[key] = int(rest.split()[0]) * 1024
    except OSError:  # ended meanwhile
        pass
    return values.get("VmRSS", 0), values.get("VmHWM", 0)


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (the server's workers)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                    if int(stat.read().rsplit(")", 1)[1].split()[1]) == pid:
                        found.append(int(entry))
            except (OSError, ValueError, IndexError):
                pass
    return found


def rss(pid: int) -> tuple[int, int]:
    """(resident, sum of the peaks resident) bytes of a process and its children (the server and its
    worker processes)."""
    total = peak = 0
    for one in [pid, *children(pid)]:
        now, high = _status(one)
        total += now
        peak += high
    return total, peak


class Server:
    def __init__(self, model: str, conversations: int, *options: str):
        command = [
            sys.executable,
            "-m",
            "tokprof",
            "serve",
            "--port",
            "0",
            "--quiet",
            "--model",
            model,
            "--conversations",
            str(conversations),
            "--timeout",
            "600",
            *options,
        ]
        env = dict(os.environ)
        env.pop("TOKPROF_SERVE_TOKEN", None)
        self.process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
        assert self.process.stderr is not None
        line = self.process.stderr.readline()
        if " on http://" not in line:
            raise SystemExit(f"the server did not start: {line}{self.process.stderr.read()}")
        address = line.split(" on http://")[1].split(" ")[0]
        self.host, port = address.rsplit(":", 1)
        self.port = int(port)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)


def post(connection: http.client.HTTPConnection, body: bytes) -> tuple[float, dict]:
    started = time.perf_counter()
    connection.request("POST", "/v1/count", body, {"Content-Type": "application/json"})
    response = connection.getresponse()
    data = response.read()
    elapsed = time.perf_counter() - started
    if response.status != 200:
        raise SystemExit(f"status {response.status}: {data[:300]!r}")
    return elapsed, json.loads(data)


def baseline(calls: list[bytes], model_name: str) -> list[float]:
    """Per call: one render of its prompt with the template, and tokenizing what it adds to the
    previous call's render (after their common prefix)."""
    from tokprof.formats.prompts import read_prompt
    from tokprof.models import resolve_model
    from tokprof.base.textdiff import common_prefix

    chat = resolve_model(model_name)
    fmt = chat.prompt_format
    shape = fmt.shapes[0]
    out, previous = [], ""
    for body in calls:
        doc = json.loads(body)
        prompt = read_prompt(doc["messages"], doc.get("tools"))
        messages, tools = fmt.prepare(prompt.messages, shape), prompt.tools
        best = float("inf")
        for _ in range(3):  # the least of three: the machine's cores are shared
            started = time.perf_counter()
            text = fmt.render(messages, tools, True)
            rendered = time.perf_counter() - started
            common = common_prefix(previous, text)
            started = time.perf_counter()
            chat.counter.token_starts(text[common:])
            best = min(best, rendered + time.perf_counter() - started)
        out.append(best)
        previous = text
    return out


def sequential(server: Server, calls: list[bytes]) -> tuple[list[float], list[dict]]:
    connection = http.client.HTTPConnection(server.host, server.port, timeout=600)
    latencies, answers = [], []
    for body in calls:
        elapsed, answer = post(connection, body)
        latencies.append(elapsed)
        answers.append(answer)
    connection.close()
    return latencies, answers


def load(server: Server, conversations: list[list[list[bytes]]], requests: int) -> dict:
    """``requests`` requests from one client per entry of ``conversations`` (each a list of conversations
    it replays in turn), sampling the server's memory."""
    lock = threading.Lock()
    done = [0]
    latencies: list[float] = []
    reused = [0]
    samples: list[tuple[int, int]] = []  # (requests done, resident bytes)
    stop = threading.Event()

    def client(mine: list[list[bytes]], share: int) -> None:
        connection = http.client.HTTPConnection(server.host, server.port, timeout=600)
        sent = 0
        for calls in mine:
            for body in calls:
                if sent == share:
                    connection.close()
                    return
                elapsed, answer = post(connection, body)
                sent += 1
                with lock:
                    latencies.append(elapsed)
                    done[0] += 1
                    reused[0] += bool(answer["reused"])
        connection.close()

    def monitor() -> None:
        while not stop.is_set():
            samples.append((done[0], rss(server.process.pid)[0]))
            stop.wait(0.25)

    shares = [requests // len(conversations) + (i < requests % len(conversations)) for i in range(len(conversations))]
    watcher = threading.Thread(target=monitor)
    watcher.start()
    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(mine, share)) for mine, share in zip(conversations, shares)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    stop.set()
    watcher.join()
    samples.append((done[0], rss(server.process.pid)[0]))
    return {
        "elapsed": elapsed,
        "latencies": latencies,
        "reused": reused[0],
        "samples": samples,
        "peak": rss(server.process.pid)[1],
        "done": done[0],
    }


# -- hostile inputs: time per byte and per message, /health during a heavy count, big bodies -------
def _message(i: int, words: int = 4) -> dict:
    return {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} " * words}


def hostile(kind: str, size: int, nonce: int = 0, words: int = 4) -> tuple[bytes, int]:
    """A request body of ``kind`` grown to about ``size`` (bytes, or messages for "many messages"),
    and its number of messages. The shapes that were quadratic (#33): a tool call's arguments of
    ``[`` x201 (refused: nested too deep), or x150 (counted), then ``"``, then ``\\"`` repeated; many
    short messages; and one long message. ``nonce`` makes the first message another conversation's."""
    first = {"role": "user", "content": f"go {nonce}"}
    if kind == "many messages":
        messages = [first] + [_message(i, words) for i in range(1, size)]
    elif kind.startswith("quadratic arguments"):
        depth = 201 if "201" in kind else 150
        arguments = "[" * depth + '"' + '\\"' * (size // 4)
        call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": arguments}}
        messages = [
            first,
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": "done"},
        ]
    else:  # one long message
        messages = [{"role": "user", "content": f"{nonce} " + "word " * (size // 5)}]
    return json.dumps({"messages": messages}).encode(), len(messages)


def timed(server: Server, body: bytes, path: str = "/v1/count") -> tuple[float, int]:
    connection = http.client.HTTPConnection(server.host, server.port, timeout=900)
    started = time.perf_counter()
    connection.request("POST", path, body, {"Content-Type": "application/json"})
    response = connection.getresponse()
    response.read()
    connection.close()
    return time.perf_counter() - started, response.status


def health_latency(server: Server) -> float:
    connection = http.client.HTTPConnection(server.host, server.port, timeout=60)
    started = time.perf_counter()
    connection.request("GET", "/health")
    connection.getresponse().read()
    connection.close()
    return time.perf_counter() - started


def worst_case(server: Server) -> None:
    print("| input | size | messages | status | time (s) | µs per KB | µs per message | per-KB time / smallest's |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    plans = {
        "quadratic arguments, [ x201": (64_000, 256_000, 1_024_000),
        "quadratic arguments, [ x150": (64_000, 256_000, 1_024_000),
        "many messages": (2_000, 8_000, 32_000, 64_000),
        "one long message": (256_000, 1_024_000, 4_096_000),
    }
    nonce = 0
    for kind, sizes in plans.items():
        first = None
        for size in sizes:
            nonce += 1
            body, messages = hostile(kind, size, nonce)
            elapsed, status = timed(server, body)  # a new conversation's first request: a fresh count
            per_kb = elapsed * 1e6 / (len(body) / 1000)
            first = first or per_kb
            print(
                f"| {kind} | {len(body):,} B | {messages:,} | {status} | {elapsed:.2f} | {per_kb:.0f} | "
                f"{elapsed * 1e6 / messages:.0f} | {per_kb / first:.2f} |"
            )
    print()


def health_during_heavy(server: Server) -> None:
    idle = [health_latency(server) for _ in range(50)]
    body, messages = hostile("many messages", 24_000, 99, words=20)
    done: list[float] = []
    heavy = threading.Thread(target=lambda: done.append(timed(server, body)[0]))
    heavy.start()
    time.sleep(0.3)  # the heavy count under way in a worker
    during = []
    while heavy.is_alive() and len(during) < 2000:
        during.append(health_latency(server))
        time.sleep(0.01)
    heavy.join()
    print("| /health latency (ms) | median | p95 | max | samples |")
    print("| --- | ---: | ---: | ---: | ---: |")
    print(
        f"| idle | {statistics.median(idle) * 1000:.1f} | {percentile(idle, 0.95) * 1000:.1f} | "
        f"{max(idle) * 1000:.1f} | {len(idle)} |"
    )
    if during:
        print(
            f"| while a {len(body) / 1e6:.1f} MB count of {messages:,} messages runs ({done[0]:.1f} s) | "
            f"{statistics.median(during) * 1000:.1f} | {percentile(during, 0.95) * 1000:.1f} | "
            f"{max(during) * 1000:.1f} | {len(during)} |"
        )
    print()


def big_bodies(server: Server, clients: int = 24, size: int = 19_000_000) -> None:
    """``clients`` bodies of ``size`` bytes at once: what the server and its workers hold at the peak,
    and how many were counted or refused (--max-inflight-bytes)."""
    count = size // 1000  # messages of about 1 KB (fewer than 65,533: see docs/serve.md, Speed)
    body, messages = hostile("many messages", count, words=100)
    while len(body) > size:
        count = int(count * size / len(body) * 0.99)
        body, messages = hostile("many messages", count, words=100)
    statuses: list[str] = []
    lock = threading.Lock()
    peak = [rss(server.process.pid)[0]]
    own = [_status(server.process.pid)[0]]  # the server's process alone
    stop = threading.Event()

    def client() -> None:
        connection = http.client.HTTPConnection(server.host, server.port, timeout=900)
        connection.request("POST", "/v1/count", body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        data = response.read()
        connection.close()
        kind = "" if response.status == 200 else f" {json.loads(data)['error']['type']}"
        with lock:
            statuses.append(f"{response.status}{kind}")

    def monitor() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], rss(server.process.pid)[0])
            own[0] = max(own[0], _status(server.process.pid)[0])
            stop.wait(0.05)

    watcher = threading.Thread(target=monitor)
    watcher.start()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    before = peak[0]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stop.set()
    watcher.join()
    counts = {status: statuses.count(status) for status in sorted(set(statuses))}
    print(f"| {clients} concurrent bodies of {len(body) / 1e6:.1f} MB ({messages:,} messages) | value |")
    print("| --- | ---: |")
    print(f"| answers by status | {', '.join(f'{k}: {v}' for k, v in counts.items())} |")
    print(f"| server and workers' memory before | {before / 2**20:.0f} MiB |")
    print(f"| server and workers' peak memory (sampled every 50 ms) | {peak[0] / 2**20:.0f} MiB |")
    print(f"| the server's process alone, peak | {own[0] / 2**20:.0f} MiB |\n")


def hostile_part(model: str) -> None:
    print("hostile inputs ...", file=sys.stderr)
    server = Server(model, 32, "--timeout", "120")
    try:
        timed(server, hostile("many messages", 10)[0])  # the workers warmed up
        worst_case(server)
        health_during_heavy(server)
    finally:
        server.stop()


def bodies_part(model: str) -> None:
    print("big bodies at once ...", file=sys.stderr)
    server = Server(model, 32, "--timeout", "60")
    try:
        big_bodies(server)
    finally:
        server.stop()


def _cpu(function, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        started = time.process_time()
        function()
        times.append(time.process_time() - started)
    return statistics.median(times)


def targets_part(model_name: str, messages: int = 600) -> None:
    """Issue #32's serve targets, as ratios measured in one run. (1) A fresh conversation of
    ``messages`` messages counted by ``Model.count`` (what a server worker runs for a request that
    extends nothing; a fresh attributor, the model loaded), in CPU seconds, against its L1: one
    render of that prompt with the template plus one tokenization (limit 5x). (2) The server's
    round trip for an extending request of that conversation against a fresh small request (a new
    conversation's first request, 7 messages) (limit 1.5x), medians of five."""
    import tokprof
    from tokprof.formats.prompts import read_prompt

    model = tokprof.get_model(model_name)
    chat = model.chat
    fmt = chat.prompt_format
    conversation = bodies(messages // 2 + 20, 3000, model_name)
    at = next(i for i, b in enumerate(conversation) if len(json.loads(b)["messages"]) >= messages)
    doc = json.loads(conversation[at])
    prompt = read_prompt(doc["messages"], doc.get("tools"))

    def limit() -> None:
        chat.counter.token_starts(fmt.render(fmt.prepare(prompt.messages, fmt.shapes[0]), prompt.tools, True))

    def fresh() -> None:
        type(model)(chat).count(doc["messages"], doc["tools"])  # a new attributor: nothing to extend

    l1, work = _cpu(limit), _cpu(fresh)
    print(f"| serve targets (#32), {model_name} | value | limit |\n| --- | ---: | ---: |")
    print(f"| fresh count of {len(doc['messages'])} messages, CPU | {work * 1000:.0f} ms | |")
    print(f"| its L1 (one render + one tokenization), CPU | {l1 * 1000:.1f} ms | |")
    print(f"| fresh / L1 | {work / l1:.1f}x | 5x |")
    smalls = [b for seed in range(5) for b in bodies(6, 4000 + seed, model_name) if len(json.loads(b)["messages"]) == 7]
    server = Server(model_name, 8)
    try:
        connection = http.client.HTTPConnection(server.host, server.port, timeout=600)
        extending = []
        for i, body in enumerate(conversation[: at + 6]):
            elapsed, answer = post(connection, body)
            if i > at and answer["reused"]:
                extending.append(elapsed)
        small = [post(connection, body)[0] for body in smalls]
    finally:
        server.stop()
    print(
        f"| extending request at {len(doc['messages'])} messages, round trip | {statistics.median(extending) * 1000:.1f} ms | |"
    )
    print(f"| fresh small request (7 messages), round trip | {statistics.median(small) * 1000:.1f} ms | |")
    print(f"| extending / fresh small | {statistics.median(extending) / statistics.median(small):.2f}x | 1.5x |\n")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="calls per conversation")
    parser.add_argument("--requests", type=int, default=2000, help="requests of the load test")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--model", default="qwen2.5")
    parser.add_argument("--conversations", type=int, help="the server's cache bound (default: --concurrency)")
    parser.add_argument(
        "--part",
        choices=("all", "load", "hostile", "bodies", "targets"),
        default="all",
        help="the replay and load test, the hostile inputs, the big bodies at once, issue #32's targets, or all",
    )
    args = parser.parse_args()
    if not 0 < args.requests <= 100_000 or not 0 < args.concurrency <= 64 or not 1 < args.calls <= 2000:
        raise SystemExit("bounded runs only: --requests up to 100,000, --concurrency up to 64, --calls up to 2,000")

    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.python_implementation()} "
        f"{platform.python_version()}; model {args.model}\n"
    )
    if args.part in ("all", "hostile"):
        hostile_part(args.model)
    if args.part in ("all", "bodies"):
        bodies_part(args.model)
    if args.part in ("all", "targets"):
        targets_part(args.model)
    if args.part in ("hostile", "bodies", "targets"):
        return 0
    rounds = -(-args.requests // (args.concurrency * args.calls))  # conversations each client needs
    print(f"generating {args.concurrency * rounds + 1} conversations of {args.calls} calls ...", file=sys.stderr)
    first = bodies(args.calls, 1000, args.model)
    plan = [
        [bodies(args.calls, 2000 + 100 * c + r, args.model) for r in range(rounds)] for c in range(args.concurrency)
    ]

    print("timing the baseline ...", file=sys.stderr)
    base = baseline(first, args.model)
    server = Server(args.model, args.conversations or args.concurrency)
    try:
        print("sequential replay ...", file=sys.stderr)
        idle = rss(server.process.pid)[0]
        latencies, answers = sequential(server, first)
        print(f"load test: {args.requests} requests, {args.concurrency} clients ...", file=sys.stderr)
        result = load(server, plan, args.requests)
    finally:
        server.stop()

    print("the library in process, and a fresh count of the last prompt ...", file=sys.stderr)
    import tokprof

    library = tokprof.get_model(args.model)  # Model.count replaying the same conversation, in this process
    in_process = []
    for body in first:
        doc = json.loads(body)
        started = time.perf_counter()
        library.count(doc["messages"], doc["tools"])
        in_process.append(time.perf_counter() - started)
    last = json.loads(first[-1])
    started = time.perf_counter()
    fresh = tokprof.get_model(args.model).count(last["messages"], last["tools"])
    fresh_time = time.perf_counter() - started
    assert fresh.as_dict() == answers[-1]["buckets"], "the server's last count differs from a fresh count"

    extending = list(range(1, len(first)))  # every call but the first extends the conversation
    assert all(answers[i]["reused"] for i in extending)
    lat = [latencies[i] for i in extending]
    bas = [base[i] for i in extending]
    ratios = [latency / b for latency, b in zip(lat, bas)]
    print(
        f"conversations of {args.calls} calls "
        f"(final prompt {answers[-1]['total']:,} tokens, body {len(first[-1]):,} bytes)\n"
    )
    print("| sequential replay (1 client) | median (ms) | p95 (ms) |")
    print("| --- | ---: | ---: |")
    print(
        f"| extending request, round trip | {statistics.median(lat) * 1000:.1f} | {percentile(lat, 0.95) * 1000:.1f} |"
    )
    print(
        f"| baseline: render once + tokenize what it adds | {statistics.median(bas) * 1000:.1f} | "
        f"{percentile(bas, 0.95) * 1000:.1f} |"
    )
    print(f"| ratio of the medians (limit 3) | {statistics.median(lat) / statistics.median(bas):.2f} | |")
    print(f"| median of per-call ratios | {statistics.median(ratios):.2f} | |")
    inner = [in_process[i] for i in extending]
    print(
        f"| the library in process: Model.count of the same requests | {statistics.median(inner) * 1000:.1f} | "
        f"{percentile(inner, 0.95) * 1000:.1f} |"
    )
    print(f"| fresh count of the last prompt, in process | {fresh_time * 1000:.0f} | |")
    print(f"| fresh / last extending request | {fresh_time / latencies[-1]:.0f}x | |\n")

    load_lat = result["latencies"]
    print(f"| load test ({result['done']} requests, {args.concurrency} clients) | value |")
    print("| --- | ---: |")
    print(f"| throughput | {result['done'] / result['elapsed']:.1f} requests/s |")
    print(
        f"| latency median / p95 / max | {statistics.median(load_lat) * 1000:.0f} / "
        f"{percentile(load_lat, 0.95) * 1000:.0f} / {max(load_lat) * 1000:.0f} ms |"
    )
    print(f"| median latency / median baseline | {statistics.median(load_lat) / statistics.median(bas):.1f} |")
    print(f"| requests that extended a conversation | {result['reused']} of {result['done']} |")
    print(f"| server memory idle (model loaded) | {idle / 2**20:.0f} MiB |")
    print(f"| server peak memory | {result['peak'] / 2**20:.0f} MiB |\n")

    samples = result["samples"]
    print("| requests done | " + " | ".join(f"{int(result['done'] * k / 10)}" for k in range(1, 11)) + " |")
    print("| --- |" + " ---: |" * 10)
    row = []
    for k in range(1, 11):
        target = result["done"] * k / 10
        found = next((r for d, r in samples if d >= target), samples[-1][1])
        row.append(f"{found / 2**20:.0f}")
    print("| server memory (MiB) | " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
